--- Open buffers as Claude's "open editors" (`openEditorsChanged`) and their
--- unsaved state (`documentDirtyChanged`). Buffer events arm one timer;
--- the list is built when it fires and sent only if it changed.
local M = {}

local uv = vim.uv or vim.loop
local timer
local fire
local last_list
local dirty = {}
--- The file buffer last entered: "active" while you are in a terminal.
local active

local function bridge()
  return require("ccbridge")
end

local function is_file(buf)
  return vim.api.nvim_buf_is_valid(buf)
    and vim.bo[buf].buftype == ""
    and vim.bo[buf].buflisted
    and vim.api.nvim_buf_get_name(buf) ~= ""
end

--- The loaded buffer editing `path`, if any (by full name, not by
--- `bufnr()`'s pattern matching).
---@param path string?
---@return integer?
function M.buffer_for(path)
  if type(path) ~= "string" or path == "" then
    return nil
  end
  local want = vim.fs.normalize(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.fs.normalize(vim.api.nvim_buf_get_name(buf)) == want then
      return buf
    end
  end
end

--- The tabs as the protocol describes them.
function M.tabs()
  local tabs = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if is_file(buf) then
      local path = vim.api.nvim_buf_get_name(buf)
      local ft = vim.bo[buf].filetype
      tabs[#tabs + 1] = {
        path = path,
        isActive = buf == active,
        isDirty = vim.bo[buf].modified,
        languageId = ft ~= "" and ft or nil,
        label = vim.fn.fnamemodify(path, ":t"),
      }
    end
  end
  return tabs
end

local function report_list()
  local tabs = M.tabs()
  local key = vim.json.encode(tabs)
  if key ~= last_list then
    last_list = key
    bridge().notify("openEditorsChanged", { tabs = tabs })
  end
end

local function report_dirty(buf)
  if not is_file(buf) then
    return
  end
  local path = vim.api.nvim_buf_get_name(buf)
  local now = vim.bo[buf].modified
  if dirty[path] ~= now then
    dirty[path] = now
    bridge().notify("documentDirtyChanged", { path = path, isDirty = now })
  end
end

--- Sends everything again (after the sidecar started).
function M.report_all()
  report_list()
end

function M.reset()
  last_list = nil
  dirty = {}
end

---@param group integer
function M.attach(group)
  if not timer then
    timer = uv.new_timer()
    fire = vim.schedule_wrap(report_list)
  end
  local cur = vim.api.nvim_get_current_buf()
  if is_file(cur) then
    active = cur
  end
  local function arm()
    timer:start(50, 0, fire)
  end
  vim.api.nvim_create_autocmd("BufEnter", {
    group = group,
    callback = function(args)
      if is_file(args.buf) then
        active = args.buf
      end
      arm()
    end,
  })
  vim.api.nvim_create_autocmd(
    { "BufAdd", "BufDelete", "BufWipeout", "BufFilePost", "FileType", "BufWritePost" },
    { group = group, callback = arm }
  )
  vim.api.nvim_create_autocmd("BufModifiedSet", {
    group = group,
    callback = function(args)
      report_dirty(args.buf)
      arm()
    end,
  })
end

return M
