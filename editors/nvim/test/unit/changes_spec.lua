-- `ccbridge.changes`: the session review's pure parts.
local c = require("ccbridge.changes")

local tests = {}

function tests.a_buffer_with_unsaved_changes_is_refused(t)
  -- Its cursor line is not the file's on disk: with lines inserted above,
  -- the hunk found there would be another one.
  t.eq(
    "unsaved",
    c.refusal({ name = "/ws/src/a.py", buftype = "", modified = true, picked = false }),
    "a.py has unsaved changes: write or undo them first, so the line under the cursor is the file's"
  )
  t.eq("saved", c.refusal({ name = "/ws/src/a.py", buftype = "", modified = false, picked = false }), nil)
  t.eq("no file", c.refusal({ name = "", buftype = "", modified = true, picked = false }), nil)
  -- A quickfix entry names its hunk itself.
  t.eq("on a quickfix entry", c.refusal({ name = "", buftype = "quickfix", modified = true, picked = true }), nil)
  t.eq("picked", c.refusal({ name = "/ws/a.py", buftype = "", modified = true, picked = true }), nil)
end

function tests.hunk_at_finds_the_hunk_of_a_line(t)
  local list = {
    files = {
      {
        path = "/ws/a",
        version = 3,
        hunks = { { key = 1, newStart = 2, newLines = 2 }, { key = 2, newStart = 9, newLines = 0 } },
      },
    },
  }
  t.eq("in", c.hunk_at(list, "/ws/a", 3), { path = "/ws/a", key = 1, version = 3 })
  t.eq("a deletion", c.hunk_at(list, "/ws/a", 9), { path = "/ws/a", key = 2, version = 3 })
  t.eq("outside", c.hunk_at(list, "/ws/a", 4), nil)
  t.eq("another file", c.hunk_at(list, "/ws/b", 3), nil)
end

return tests
