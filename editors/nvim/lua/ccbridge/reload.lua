--- Buffers follow their files when Claude (or anything) writes them.
---
--- While a Claude session is connected, the directory of every loaded file
--- buffer is watched (one `uv.fs_event` per directory: writes through a
--- temporary file and rename replace the file's inode, so the file itself
--- cannot be watched). A change arms one timer; then every changed buffer
--- without unsaved edits is reloaded the way 'autoread' does it (undo
--- history, marks and cursor kept), and a buffer with unsaved edits is left
--- alone with one notice per change. Nothing is watched when no session is
--- connected, but for a file about to be written because its review was
--- accepted (`expect`).
local config = require("ccbridge.config")

local M = {}

local uv = vim.uv or vim.loop
local api = vim.api

---@type table<string, uv.uv_fs_event_t>
local watchers = {}
--- Paths seen changing since the timer was armed.
local changed = {}
local timer
local fire
--- Last notice per path (mtime), so each change is told once.
local told = {}

local function file_buffers()
  local out = {}
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" then
      local name = api.nvim_buf_get_name(buf)
      if name ~= "" then
        out[name] = buf
      end
    end
  end
  return out
end

local function stamp(path)
  local st = uv.fs_stat(path)
  return st and (st.mtime.sec .. "." .. st.mtime.nsec .. ":" .. st.size) or nil
end

--- Reloads `buf` if its file changed and it has no unsaved edits.
local function check(buf, path)
  if not vim.bo[buf].modified then
    api.nvim_buf_call(buf, function()
      -- 'autoread' for this buffer only, for this check only; its local
      -- value (-1: none, the global one applies) is put back as it was.
      local was = vim.fn.getbufvar(buf, "&l:autoread")
      vim.cmd("setlocal autoread")
      pcall(vim.cmd, "silent checktime " .. buf)
      if was == -1 then
        vim.cmd("set autoread<")
      else
        vim.cmd(was == 1 and "setlocal autoread" or "setlocal noautoread")
      end
    end)
    return
  end
  local now = stamp(path)
  if now and told[path] ~= now and vim.fn.getftime(path) > 0 then
    told[path] = now
    vim.notify(
      ("ccbridge: %s changed on disk but has unsaved changes here, so it was not reloaded. :e! takes the file's text, :w keeps yours."):format(
        vim.fn.fnamemodify(path, ":~:.")
      ),
      vim.log.levels.WARN
    )
  end
end

local function flush()
  local paths = changed
  changed = {}
  local bufs = file_buffers()
  for path in pairs(paths) do
    local buf = bufs[path]
    if buf then
      check(buf, path)
    end
  end
end

local function unwatch_all()
  for dir, w in pairs(watchers) do
    w:stop()
    w:close()
    watchers[dir] = nil
  end
end

local function watch(dir)
  if watchers[dir] then
    return
  end
  local w = uv.new_fs_event()
  if not w then
    return
  end
  local ok = w:start(dir, {}, function(err, name)
    if err or not name then
      return
    end
    changed[dir .. "/" .. name] = true
    timer:start(30, 0, fire)
  end)
  if ok then
    watchers[dir] = w
  else
    w:close()
  end
end

--- Watches the directories of the loaded file buffers while a Claude
--- session is connected, and nothing otherwise.
function M.update()
  if not timer then
    timer = uv.new_timer()
    fire = vim.schedule_wrap(flush)
  end
  if not (config.options.reload and require("ccbridge").connected()) then
    unwatch_all()
    return
  end
  local dirs = {}
  for path in pairs(file_buffers()) do
    dirs[vim.fs.dirname(path)] = true
  end
  for dir in pairs(watchers) do
    if not dirs[dir] then
      watchers[dir]:stop()
      watchers[dir]:close()
      watchers[dir] = nil
    end
  end
  for dir in pairs(dirs) do
    watch(dir)
  end
end

--- Paths about to be written, with their stamp then and when to give up.
---@type table<string, { stamp: string?, stop: integer }>
local expected = {}
local expect_timer

local function poll_expected()
  local bufs = file_buffers()
  local now = uv.now()
  for path, e in pairs(expected) do
    local buf = bufs[path]
    if not buf or now > e.stop then
      expected[path] = nil
    elseif stamp(path) ~= e.stamp then
      expected[path] = nil
      check(buf, path)
    end
  end
  if next(expected) == nil and expect_timer then
    expect_timer:stop()
  end
end

--- `path` is about to be written (its review was accepted: Claude, or
--- ccbridge for the workspace tools, writes it next): its buffer follows
--- as soon as it is, whether or not a Claude session is connected (the
--- workspace tools write without one). Checked every 50 ms for 5 s.
---@param path string
function M.expect(path)
  if not config.options.reload then
    return
  end
  path = vim.fs.normalize(vim.fn.fnamemodify(path, ":p"))
  if not file_buffers()[path] then
    return
  end
  expected[path] = { stamp = stamp(path), stop = uv.now() + 5000 }
  if not expect_timer then
    expect_timer = uv.new_timer()
  end
  if not expect_timer:is_active() then
    expect_timer:start(50, 50, vim.schedule_wrap(poll_expected))
  end
end

--- The watched directories (for tests).
---@return table<string, boolean>
function M._watched()
  local out = {}
  for dir in pairs(watchers) do
    out[dir] = true
  end
  return out
end

---@param group integer
function M.attach(group)
  api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufWritePost", "BufWipeout", "BufFilePost" }, {
    group = group,
    callback = function()
      vim.schedule(M.update)
    end,
  })
end

return M
