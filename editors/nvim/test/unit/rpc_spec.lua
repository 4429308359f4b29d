-- `ccbridge.rpc`: the child's stderr as the lines `:checkhealth` and the
-- exit notice show. The framing with a real sidecar: every test in
-- crates/ccbridge/tests/it/nvim_plugin.rs.
local rpc = require("ccbridge.rpc")

local tests = {}

--- A connection to a child that prints nothing, its stderr fed by hand.
local function conn()
  local c = assert(rpc.spawn({ "true" }, {}, {
    on_request = function() end,
    on_notification = function() end,
    on_exit = function() end,
  }))
  c:wait(5000)
  return c
end

function tests.a_line_written_in_pieces_is_one_line(t)
  local c = conn()
  c:_stderr("error:")
  c:_stderr(" unexpected argument '")
  c:_stderr("--x' found\n\nUsage: ccbridge")
  c:_stderr(" serve\n")
  t.eq("lines", c:stderr_tail(), { "error: unexpected argument '--x' found", "Usage: ccbridge serve" })
end

function tests.the_last_line_without_a_newline_is_kept_at_the_end(t)
  local c = conn()
  c:_stderr("one\ntwo")
  c:_stderr(nil)
  t.eq("lines", c:stderr_tail(), { "one", "two" })
end

function tests.only_the_last_lines_and_their_heads_are_kept(t)
  local c = conn()
  for i = 1, 30 do
    c:_stderr(("line %d\n"):format(i))
  end
  c:_stderr(("x"):rep(5000))
  c:_stderr(("y"):rep(5000) .. "\n")
  local tail = c:stderr_tail()
  t.eq("count", #tail, 20)
  t.eq("first kept", tail[1], "line 12")
  t.eq("long line's length", #tail[20], 1000)
  t.eq("long line's head", tail[20]:gsub("x", ""), "")
end

return tests
