--- The selection and cursor, reported as `selectionChanged`.
---
--- The cost on every cursor move is one autocommand calling `timer:start`
--- (the timer is reused, so nothing is allocated); the position is read
--- when the timer fires. Leaving Visual mode reports the selection at once
--- from the `'<`/`'>` marks, so a quick selection (`Vy`, `viw<Esc>`) is
--- never lost to the debounce, and keeps it `visual_hold_ms` before
--- reporting the bare cursor, so it is still Claude's selection when you
--- jump to Claude's terminal. Terminal, prompt and review buffers report
--- nothing: the last file position stays.
local config = require("ccbridge.config")
local position = require("ccbridge.position")

local M = {}

local uv = vim.uv or vim.loop
local timer
local fire
local last_key
--- `uv.now()` before which a bare cursor is not reported.
local hold_until = 0

local visual_kind = { v = "v", V = "V", ["\22"] = "\22", s = "v", S = "V", ["\19"] = "\22" }

local function bridge()
  return require("ccbridge")
end

local function send(path, sel)
  local s, e = sel.selection.start, sel.selection["end"]
  local key = table.concat({ path, s.line, s.character, e.line, e.character, #sel.text }, ":")
  if key == last_key then
    return
  end
  last_key = key
  bridge().notify("selectionChanged", { filePath = path, text = sel.text, selection = sel.selection })
end

--- The buffer's file path, if it is a file the user edits.
local function file_of(buf)
  if vim.bo[buf].buftype ~= "" then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(buf)
  return name ~= "" and name or nil
end

--- Reports the current selection or cursor (the timer's callback).
function M.flush()
  if not config.options.selection.enabled then
    return
  end
  local win = vim.api.nvim_get_current_win()
  local buf = vim.api.nvim_win_get_buf(win)
  local path = file_of(buf)
  if not path then
    return
  end
  local mode = vim.api.nvim_get_mode().mode
  local kind = visual_kind[mode:sub(1, 1)]
  if kind then
    send(path, position.visual(buf, kind, vim.fn.getpos("v"), vim.fn.getpos(".")))
    return
  end
  local wait = hold_until - uv.now()
  if wait > 0 then
    timer:start(wait, 0, fire)
    return
  end
  local cur = vim.api.nvim_win_get_cursor(win)
  send(path, position.cursor(buf, cur[1], cur[2]))
end

--- Arms the timer: all a cursor move costs. Without a debounce there is
--- nothing to wait for: the position is reported at once.
local function arm()
  local ms = config.options.selection.debounce_ms
  if ms > 0 then
    timer:start(ms, 0, fire)
  else
    M.flush()
  end
end

local function left_visual(args)
  local old = visual_kind[(vim.v.event.old_mode or ""):sub(1, 1)]
  if not old or visual_kind[(vim.v.event.new_mode or ""):sub(1, 1)] then
    -- Entering Visual mode (no cursor move with `V`) or switching kinds.
    return arm()
  end
  local path = file_of(args.buf)
  if not path or not config.options.selection.enabled then
    return
  end
  send(path, position.visual(args.buf, old, vim.fn.getpos("'<"), vim.fn.getpos("'>")))
  hold_until = uv.now() + config.options.selection.visual_hold_ms
  timer:start(config.options.selection.visual_hold_ms, 0, fire)
end

--- Forgets what was sent (the sidecar restarted).
function M.reset()
  last_key = nil
end

---@param group integer
function M.attach(group)
  if not timer then
    timer = uv.new_timer()
    fire = vim.schedule_wrap(M.flush)
  end
  vim.api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI", "BufEnter" }, { group = group, callback = arm })
  vim.api.nvim_create_autocmd("ModeChanged", { group = group, callback = left_visual })
end

return M
