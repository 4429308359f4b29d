--- The sidecar's requests to the editor (docs/editor-protocol.md, "ccbridge →
--- editor"), one function each: params in, result (or nil and an error) out.
local M = {}

local function err(message)
  return nil, { code = 1, message = message }
end

M.showDiff = function(p)
  return require("ccbridge.diff").show(p)
end

M.approve = function(p)
  return require("ccbridge.rpc").later(function(reply)
    require("ccbridge.commands").approve(p, reply)
  end)
end

M.reviewText = function(p)
  local text = require("ccbridge.diff").text(p.id)
  return { contents = text == nil and vim.NIL or text }
end

M.closeDiff = function(p)
  require("ccbridge.diff").close(p.id, p.reason)
  return vim.NIL
end

--- A window to open files in: the current one if it shows a normal
--- buffer, else the most recently used such window in this tab, else a
--- new split beside the current window (e.g. when only Claude's terminal
--- is open).
local function file_window()
  local function usable(win)
    local cfg = vim.api.nvim_win_get_config(win)
    local buf = vim.api.nvim_win_get_buf(win)
    return cfg.relative == "" and vim.bo[buf].buftype == "" and not vim.wo[win].diff
  end
  local cur = vim.api.nvim_get_current_win()
  if usable(cur) then
    return cur
  end
  local prev = vim.fn.win_getid(vim.fn.winnr("#"))
  if prev ~= 0 and usable(prev) then
    return prev
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if usable(win) then
      return win
    end
  end
  vim.cmd("leftabove vsplit")
  return vim.api.nvim_get_current_win()
end

M.openFile = function(p)
  if type(p.filePath) ~= "string" or p.filePath == "" then
    return err("openFile needs a filePath")
  end
  local back = vim.api.nvim_get_current_win()
  local win = file_window()
  vim.api.nvim_set_current_win(win)
  local ok, e = pcall(vim.cmd.edit, vim.fn.fnameescape(p.filePath))
  if not ok then
    vim.api.nvim_set_current_win(back)
    return err(tostring(e))
  end
  local buf = vim.api.nvim_get_current_buf()
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if p.startLine then
    local l1 = math.max(1, math.min(p.startLine, #lines))
    vim.api.nvim_win_set_cursor(win, { l1, 0 })
  elseif p.startText and p.startText ~= "" then
    for i, line in ipairs(lines) do
      local col = line:find(p.startText, 1, true)
      if col then
        vim.api.nvim_win_set_cursor(win, { i, col - 1 })
        break
      end
    end
  end
  if p.makeFrontmost == false and vim.api.nvim_win_is_valid(back) then
    vim.api.nvim_set_current_win(back)
  end
  return { filePath = vim.api.nvim_buf_get_name(buf), languageId = vim.bo[buf].filetype, lineCount = #lines }
end

M.openFiles = function(p)
  local opened = {}
  for _, path in ipairs(p.paths or {}) do
    local buf = vim.fn.bufadd(path)
    vim.bo[buf].buflisted = true
    opened[#opened + 1] = path
  end
  return { opened = opened }
end

M.saveDocument = function(p)
  local buf = require("ccbridge.editors").buffer_for(p.path)
  if not buf then
    return err("Document not open: " .. tostring(p.path))
  end
  local ok, e = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd("silent write")
  end)
  if not ok then
    return err(tostring(e))
  end
  return vim.NIL
end

return M
