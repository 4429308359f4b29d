-- Init file for the tests (crates/ccbridge/tests/nvim_*.rs): the plugin on
-- the runtimepath, as a manual install puts it, and what the plugin tells
-- the user recorded in `_G.test` for the tests to read. `setup()` is called
-- by each test with its own options.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
vim.opt.runtimepath:append(root .. "/test/stubs")
vim.o.swapfile = false
vim.o.more = false
vim.o.shortmess = vim.o.shortmess .. "IF"

_G.test = { notes = {}, events = {} }

vim.notify = function(msg, level)
  table.insert(_G.test.notes, { msg = msg, level = level or vim.log.levels.INFO })
end

-- What is echoed is told too (without a level: INFO).
local echo = vim.api.nvim_echo
vim.api.nvim_echo = function(chunks, history, opts)
  local text = table.concat(vim.tbl_map(function(c)
    return c[1]
  end, chunks))
  table.insert(_G.test.notes, { msg = text, level = vim.log.levels.INFO })
  return echo(chunks, history, opts)
end

vim.api.nvim_create_autocmd("User", {
  pattern = "CCBridge*",
  callback = function(args)
    table.insert(_G.test.events, { name = args.match, data = args.data })
  end,
})

--- Notes whose text contains `needle`.
function _G.test.noted(needle)
  for _, n in ipairs(_G.test.notes) do
    if n.msg:find(needle, 1, true) then
      return n
    end
  end
end

--- The events named `name`, in order.
function _G.test.events_named(name)
  return vim.tbl_filter(function(e)
    return e.name == name
  end, _G.test.events)
end
