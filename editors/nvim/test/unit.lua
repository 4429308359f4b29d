-- Unit tests of the plugin's pure modules, in Neovim's own Lua, without a
-- sidecar or a UI: every `unit/*_spec.lua` returns a table of tests, each a
-- function given `t` (`t.eq(what, got, want)`). Run with:
--   nvim -l editors/nvim/test/unit.lua
-- It prints each failure and exits non-zero if there is one.
local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(here, ":h"))

local failures, count = {}, 0
for _, file in ipairs(vim.fn.glob(here .. "/unit/*_spec.lua", false, true)) do
  local spec = dofile(file)
  local names = vim.tbl_keys(spec)
  table.sort(names)
  for _, name in ipairs(names) do
    count = count + 1
    local where = ("%s: %s"):format(vim.fn.fnamemodify(file, ":t"), name)
    local t = {}
    function t.eq(what, got, want)
      if not vim.deep_equal(got, want) then
        failures[#failures + 1] = ("%s: %s: got %s, want %s"):format(where, what, vim.inspect(got), vim.inspect(want))
      end
    end
    local ok, err = pcall(spec[name], t)
    if not ok then
      failures[#failures + 1] = ("%s: %s"):format(where, err)
    end
  end
end

for _, f in ipairs(failures) do
  io.stderr:write(f, "\n")
end
if count == 0 then
  io.stderr:write("no tests found in ", here, "/unit\n")
  os.exit(1)
end
io.stdout:write(("%d tests, %d failures\n"):format(count, #failures))
os.exit(#failures == 0 and 0 or 1)
