--- The session review (docs/editor-protocol.md, `changes`): every file
--- changed in the workspace while ccbridge runs (by an agent in auto mode,
--- a `claude` started elsewhere, a command), against what it held before.
--- `:CCBridgeChanges` puts it in the quickfix list, one entry per hunk;
--- `:CCBridgeChangeRevert` and `:CCBridgeChangeKeep` act on the hunk under
--- the cursor, in the file (refused while it has unsaved changes) or on its
--- quickfix entry. A decision names the hunk's key and the file's version,
--- so it reaches that hunk only and never a file that changed since the
--- list was made. The list follows `changesChanged` while it is the current
--- quickfix list.
local M = {}

local TITLE = "ccbridge: changes"

local function ccbridge()
  return require("ccbridge")
end

--- The quickfix items for `list` (the sidecar's `changes` answer).
---@param list table
---@return table[]
function M.items(list)
  local out = {}
  for _, f in ipairs(list.files or {}) do
    local state = f.reviewed and "reviewed" or "not reviewed"
    if #f.hunks == 0 then
      table.insert(out, {
        filename = f.path,
        lnum = 1,
        text = ("%s, %s"):format(f.status, state),
        user_data = { path = f.path, version = f.version },
      })
    end
    for i, h in ipairs(f.hunks) do
      table.insert(out, {
        filename = f.path,
        lnum = math.max(1, h.newLines > 0 and h.newStart + 1 or h.newStart),
        text = ("hunk %d: +%d -%d%s, %s"):format(i, h.newLines, h.oldLines, h.kept and " (kept)" or "", state),
        user_data = { path = f.path, key = h.key, version = f.version },
      })
    end
  end
  return out
end

--- Fetches the list; `cb(list)` (nothing on an error, which is shown).
local function fetch(cb)
  ccbridge().request("changes", vim.empty_dict(), function(err, list)
    if err then
      vim.notify("ccbridge: " .. tostring(err.message), vim.log.levels.WARN)
      return
    end
    cb(list)
  end)
end

local function ours()
  return vim.fn.getqflist({ title = 0 }).title == TITLE
end

--- Shows the session review in the quickfix list.
function M.show()
  fetch(function(list)
    vim.fn.setqflist({}, " ", { title = TITLE, items = M.items(list) })
    vim.cmd("botright copen")
  end)
end

--- Brings the quickfix list up to date, if it is the session review.
function M.refresh()
  if not ours() then
    return
  end
  fetch(function(list)
    if ours() then
      vim.fn.setqflist({}, "r", { title = TITLE, items = M.items(list) })
    end
  end)
end

--- The hunk `line` (0-based) of `path` falls in, in `list`.
---@return table?  `{path, key, version}`
function M.hunk_at(list, path, line)
  for _, f in ipairs(list.files or {}) do
    if f.path == path then
      for _, h in ipairs(f.hunks) do
        local last = h.newStart + math.max(h.newLines, 1) - 1
        if line >= h.newStart and line <= last then
          return { path = f.path, key = h.key, version = f.version }
        end
      end
    end
  end
end

--- Why the hunk under the cursor of this buffer cannot be decided, or nil.
--- The list's lines are the file's on disk: in a buffer with unsaved
--- changes the cursor's line may be another line there (lines inserted
--- above it), and the decision would reach the wrong hunk. A quickfix
--- entry names its hunk itself, so it is never refused.
---@param buf {name: string, buftype: string, modified: boolean, picked: boolean} the buffer (`picked`: the target is the quickfix entry under the cursor)
---@return string?
function M.refusal(buf)
  if buf.picked or buf.buftype ~= "" or buf.name == "" or not buf.modified then
    return nil
  end
  return ("%s has unsaved changes: write or undo them first, so the line under the cursor is the file's"):format(
    vim.fn.fnamemodify(buf.name, ":t")
  )
end

--- Keeps or reverts the hunk under the cursor.
---@param action "keep"|"revert"
function M.act(action)
  local target
  if vim.bo.buftype == "quickfix" then
    local item = vim.fn.getqflist({ items = 0 }).items[vim.fn.line(".")]
    target = item and item.user_data
    if type(target) ~= "table" or not target.key then
      target = nil
    end
  end
  local refused = M.refusal({
    name = vim.api.nvim_buf_get_name(0),
    buftype = vim.bo.buftype,
    modified = vim.bo.modified,
    picked = target ~= nil,
  })
  if refused then
    vim.notify("ccbridge: " .. refused, vim.log.levels.WARN)
    return
  end
  local path = vim.fn.resolve(vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ":p"))
  local line = vim.fn.line(".") - 1
  fetch(function(list)
    target = target or M.hunk_at(list, path, line)
    if not target then
      vim.notify("ccbridge: no changed hunk here (:CCBridgeChanges lists them)", vim.log.levels.WARN)
      return
    end
    ccbridge().request("changeAction", {
      action = action,
      path = target.path,
      key = target.key,
      version = target.version,
    }, function(err)
      if err then
        vim.notify("ccbridge: " .. tostring(err.message), vim.log.levels.WARN)
        return
      end
      if action == "revert" then
        -- The file changed on disk: buffers showing it reload.
        vim.cmd("checktime")
      end
      M.refresh()
    end)
  end)
end

return M
