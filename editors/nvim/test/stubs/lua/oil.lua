-- Stand-in for oil.nvim's public API (get_cursor_entry, get_current_dir),
-- answering with `vim.g.test_explorer_entry`. Tests only.
local M = {}
function M.get_cursor_entry()
  return { name = vim.fs.basename(vim.g.test_explorer_entry), type = "file" }
end
function M.get_current_dir()
  return vim.fs.dirname(vim.g.test_explorer_entry) .. "/"
end
return M
