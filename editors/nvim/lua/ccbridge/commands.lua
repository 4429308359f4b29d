--- The workspace tools' commands (docs/editor-protocol.md, `approve` and
--- `commandEvent`): asking the user before one runs, and showing its output
--- live in a terminal buffer (which renders its colours) below the current
--- window. Nothing runs without a yes; a run is asked about with
--- `vim.ui.select`, so a picker plugin that replaces it is used.
local M = {}

local config = require("ccbridge.config")

--- Output views by run id: `{ buf, chan }`.
local runs = {}

--- Answers an `approve` request through `reply` once the user chose.
---@param p table  `{id, tool, summary, command?, cwd?}`
---@param reply fun(result: table)
function M.approve(p, reply)
  local prompt = p.command and ("Claude wants to run `%s` in %s"):format(p.command, p.cwd or "?")
    or ("Claude wants to: %s"):format(p.summary or p.tool or "?")
  vim.ui.select({ "Allow", "Deny" }, { prompt = prompt .. " " }, function(choice)
    reply({ approved = choice == "Allow" })
  end)
end

local function open_view(id, command, cwd)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  pcall(vim.api.nvim_buf_set_name, buf, ("ccbridge://command/%d"):format(id))
  local chan = vim.api.nvim_open_term(buf, {})
  local height = math.max(3, math.floor(vim.o.lines * config.options.tools.height))
  local back = vim.api.nvim_get_current_win()
  vim.cmd(("botright %dsplit"):format(height))
  vim.api.nvim_win_set_buf(0, buf)
  if vim.api.nvim_win_is_valid(back) then
    vim.api.nvim_set_current_win(back)
  end
  vim.api.nvim_chan_send(chan, ("$ %s\r\n(in %s)\r\n"):format(command, cwd))
  runs[id] = { buf = buf, chan = chan }
end

--- Shows a `commandEvent`.
---@param p table
function M.event(p)
  if config.options.tools.output == "none" then
    return
  end
  if p.event == "started" then
    open_view(p.id, p.command or "", p.cwd or "")
    return
  end
  local run = runs[p.id]
  if not run or not vim.api.nvim_buf_is_valid(run.buf) then
    return
  end
  if p.event == "output" then
    local data = (p.data or ""):gsub("\r?\n", "\r\n")
    vim.api.nvim_chan_send(run.chan, data)
  elseif p.event == "exited" then
    local how = p.timedOut and "stopped: it ran too long"
      or p.cancelled and "stopped: Claude cancelled it"
      or p.exitCode ~= vim.NIL and p.exitCode ~= nil and ("exit " .. p.exitCode)
      or "ended by a signal"
    vim.api.nvim_chan_send(run.chan, ("\r\n[%s]\r\n"):format(how))
    runs[p.id] = nil
  end
end

--- The command views still open, by run id (for tests and `:CCBridgeStatus`).
function M.running()
  return vim.tbl_keys(runs)
end

return M
