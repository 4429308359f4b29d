--- The workspace tools' commands (docs/editor-protocol.md, `approve` and
--- `commandEvent`): asking the user before one runs, and showing its output
--- live in a terminal buffer (which renders its colours) below the current
--- window. Nothing runs without a yes; a run is asked about with
--- `vim.ui.select`, so a picker plugin that replaces it is used.
local M = {}

local config = require("ccbridge.config")

--- Output views by run id: `{ buf, chan, pending? }`.
local runs = {}

--- Shown instead of a command the sidecar did not render (an older one).
local NOT_SHOWN = "(not shown: this ccbridge is too old to show it safely)"

--- The warning before an approval whose text has characters the sidecar
--- replaced by `⟨U+XXXX⟩` markers (bidi controls, zero-width, control
--- characters), or "".
---@param p table
---@return string
local function warning(p)
  local n = type(p.hiddenCharacters) == "table" and #p.hiddenCharacters or 0
  if n == 0 then
    return ""
  end
  return ("⚠ this contains %d hidden or look-alike character%s, shown as ⟨U+…⟩: read it as shown. "):format(
    n,
    n == 1 and "" or "s"
  )
end

--- `s` on one line: a prompt may show only its first line, so line feeds
--- become markers too.
---@param s string
---@return string
local function one_line(s)
  return (s:gsub("\n", "⟨U+000A⟩"))
end

--- Answers an `approve` request through `reply` once the user chose. Only
--- the sidecar's rendering (`commandShown`, `cwdShown`, `summary`) is shown,
--- never the raw `command`: it may hold characters that draw differently
--- from what runs.
---@param p table  `{id, tool, summary, command?, cwd?, commandShown?, cwdShown?, hiddenCharacters}`
---@param reply fun(result: table)
function M.approve(p, reply)
  local prompt = p.command
      and ("Claude wants to run `%s` in %s"):format(one_line(p.commandShown or NOT_SHOWN), p.cwdShown or "?")
    or ("Claude wants to: %s"):format(p.summary or p.tool or "?")
  vim.ui.select({ "Allow", "Deny" }, { prompt = warning(p) .. prompt .. " " }, function(choice)
    reply({ approved = choice == "Allow" })
  end)
end

--- Sends `data` to the run's terminal, or keeps it until the terminal has
--- drawn its header.
local function send(run, data)
  if run.pending then
    table.insert(run.pending, data)
  else
    vim.api.nvim_chan_send(run.chan, data)
  end
end

--- Neovim before 0.12 loses the lines that scroll off a terminal opened by
--- `nvim_open_term` before its first refresh (its scrollback is made then:
--- neovim/neovim#37573): the header and first lines of a quick command
--- with more lines than the view were blank. Output waits until the header
--- is drawn (a refresh comes every 10 ms), for half a second at most.
local function when_drawn(run, tries)
  if not vim.api.nvim_buf_is_valid(run.buf) then
    return
  end
  local first = vim.api.nvim_buf_get_lines(run.buf, 0, 1, false)[1]
  if (first ~= nil and first ~= "") or tries <= 0 then
    local pending = run.pending or {}
    run.pending = nil
    for _, data in ipairs(pending) do
      vim.api.nvim_chan_send(run.chan, data)
    end
    return
  end
  vim.defer_fn(function()
    when_drawn(run, tries - 1)
  end, 5)
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
  -- The sidecar's rendering: no escape or control character reaches the
  -- terminal from the command.
  vim.api.nvim_chan_send(chan, ("$ %s\r\n(in %s)\r\n"):format((command:gsub("\n", "\r\n")), cwd))
  local run = { buf = buf, chan = chan, pending = {} }
  runs[id] = run
  when_drawn(run, 100)
end

--- Shows a `commandEvent`.
---@param p table
function M.event(p)
  if config.options.tools.output == "none" then
    return
  end
  if p.event == "started" then
    open_view(p.id, p.commandShown or NOT_SHOWN, p.cwdShown or "?")
    return
  end
  local run = runs[p.id]
  if not run or not vim.api.nvim_buf_is_valid(run.buf) then
    return
  end
  if p.event == "output" then
    local data = (p.data or ""):gsub("\r?\n", "\r\n")
    send(run, data)
  elseif p.event == "exited" then
    local how = p.timedOut and "stopped: it ran too long"
      or p.cancelled and "stopped: Claude cancelled it"
      or p.exitCode ~= vim.NIL and p.exitCode ~= nil and ("exit " .. p.exitCode)
      or "ended by a signal"
    send(run, ("\r\n[%s]\r\n"):format(how))
    runs[p.id] = nil
  end
end

--- The command views still open, by run id (for tests and `:CCBridgeStatus`).
function M.running()
  return vim.tbl_keys(runs)
end

return M
