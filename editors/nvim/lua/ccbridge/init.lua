--- ccbridge for Neovim: Claude Code's IDE integration through the
--- `ccbridge serve --stdio` sidecar.
---
--- This module owns the sidecar's lifetime and the connection state; the
--- features live beside it, one module each (selection, editors,
--- diagnostics, diff, reload, mention, terminal, health). Nothing happens
--- before `setup()`: no autocommands, no commands, no process.
local config = require("ccbridge.config")
local remote = require("ccbridge.remote")
local rpc = require("ccbridge.rpc")

local M = {}

--- The editor protocol version this plugin speaks.
M.protocol_version = 3

---@class ccbridge.State
---@field conn ccbridge.rpc.Conn?
---@field status "stopped"|"starting"|"running"
---@field init table? the sidecar's `initialize` result
---@field clients table<integer, table> connected Claude sessions by id
---@field waiting fun(init: table?, err: string?)[] callbacks for `on_ready`
---@field told table<string, boolean> messages already shown once
---@field failure string? why the last start failed or the sidecar ended (`:CCBridgeStatus` says it)
M.state = { status = "stopped", clients = {}, waiting = {}, told = {} }

local S = M.state
local group

--- Shows `msg` once per key (default: the message itself).
---@param msg string
---@param level integer?
---@param key string?
function M.notify_once(msg, level, key)
  key = key or msg
  if S.told[key] then
    return
  end
  S.told[key] = true
  vim.notify("ccbridge: " .. msg, level or vim.log.levels.WARN)
end

--- Fires `User <name>` with `data`.
function M.event(name, data)
  vim.api.nvim_exec_autocmds("User", { pattern = name, modeline = false, data = data })
end

--- Sends a notification to the sidecar if it runs (state is replayed to
--- Claude by the sidecar, so nothing needs queueing here).
---@param method string
---@param params table
function M.notify(method, params)
  if S.conn and S.status ~= "stopped" then
    S.conn:notify(method, remote.outgoing(config.path_map, method, params))
  end
end

--- Whether the sidecar runs through a prefix (`cmd`), on another machine
--- or in a container: its lock file, pid and disk are not ours.
function M.is_remote()
  return #config.options.cmd > 0
end

--- Sends a request; `cb(err, result)`.
function M.request(method, params, cb)
  if S.conn and S.status ~= "stopped" then
    S.conn:request(method, remote.outgoing(config.path_map, method, params), function(err, result)
      if cb then
        cb(err, remote.result(config.path_map, method, result))
      end
    end)
  elseif cb then
    cb({ code = rpc.GONE, message = "ccbridge is not running" })
  end
end

--- Whether at least one Claude session is connected.
function M.connected()
  return next(S.clients) ~= nil
end

function M.workspace_folders()
  local wf = config.options.workspace_folders
  if type(wf) == "function" then
    wf = wf()
  end
  if type(wf) ~= "table" or #wf == 0 then
    wf = { vim.fn.getcwd() }
  end
  return vim.tbl_map(function(d)
    return vim.fn.fnamemodify(d, ":p"):gsub("(.)/$", "%1")
  end, wf)
end

function M.ide_name()
  return config.options.ide_name or S.ide_name or ("Neovim (%s)"):format(vim.fn.fnamemodify(vim.fn.getcwd(), ":t"))
end

--- The `ideName`s of the other lock files beside ours.
local function names_taken(lock_file)
  local dir, taken = vim.fs.dirname(lock_file), {}
  for name, kind in vim.fs.dir(dir) do
    local path = dir .. "/" .. name
    if kind == "file" and name:match("%.lock$") and path ~= lock_file then
      local ok, lock = pcall(function()
        return vim.json.decode(table.concat(vim.fn.readfile(path), "\n"))
      end)
      if ok and type(lock) == "table" and type(lock.ideName) == "string" then
        taken[lock.ideName] = true
      end
    end
  end
  return taken
end

--- Several Neovims in one folder: the default name gets a number, so
--- Claude's `/ide` list tells them apart ("Neovim (app) [2]").
local function distinct_name(init)
  if config.options.ide_name or type(init.lockFile) ~= "string" or M.is_remote() then
    -- (A remote sidecar's lock directory is not on this disk.)
    return
  end
  S.ide_name = nil
  local base, taken = M.ide_name(), names_taken(init.lockFile)
  if not taken[base] then
    return
  end
  local n = 2
  while taken[("%s [%d]"):format(base, n)] do
    n = n + 1
  end
  S.ide_name = ("%s [%d]"):format(base, n)
  M.notify("workspaceChanged", { ideName = S.ide_name })
end

local function on_request(method, params)
  local handler = require("ccbridge.requests")[method]
  if not handler then
    return nil, { code = -32601, message = "Neovim does not handle " .. method }
  end
  local result, err = handler(remote.incoming(config.path_map, method, params or {}))
  return remote.answer(config.path_map, method, result), err
end

local notifications = {
  clientConnected = function(p)
    S.clients[p.id] = p
    M.event("CCBridgeConnected", p)
    require("ccbridge.reload").update()
  end,
  clientDisconnected = function(p)
    local client = S.clients[p.id] or { id = p.id }
    S.clients[p.id] = nil
    M.event("CCBridgeDisconnected", client)
    require("ccbridge.reload").update()
  end,
  commandEvent = function(p)
    require("ccbridge.commands").event(p)
  end,
  changesChanged = function()
    require("ccbridge.changes").refresh()
  end,
  invalidNotification = function(p)
    M.notify_once(("the sidecar could not use `%s`: %s"):format(p.method, p.message), vim.log.levels.WARN, p.method)
  end,
}

local function on_notification(method, params)
  local handler = notifications[method]
  if handler then
    handler(params or {})
  end
end

local function settle(init, err)
  local waiting = S.waiting
  S.waiting = {}
  for _, cb in ipairs(waiting) do
    cb(init, err)
  end
end

local function on_exit(code, signal, stderr)
  local was = S.status
  S.status, S.conn, S.init, S.ide_name = "stopped", nil, nil, nil
  local clients = S.clients
  S.clients = {}
  for _, client in pairs(clients) do
    M.event("CCBridgeDisconnected", client)
  end
  require("ccbridge.diff").close_all("shutdown")
  require("ccbridge.reload").update()
  settle(nil, "ccbridge exited")
  if not S.stopping and was ~= "stopped" then
    S.failure = ("the sidecar exited (status %d%s)"):format(code, signal ~= 0 and (", signal " .. signal) or "")
    if vim.v.exiting == vim.NIL then
      local tail = table.concat(stderr, "\n")
      vim.notify(
        ("ccbridge: %s.%s\nRun :checkhealth ccbridge, then :CCBridgeStart."):format(
          S.failure,
          tail ~= "" and ("\n" .. tail) or ""
        ),
        vim.log.levels.ERROR
      )
    end
  end
  S.stopping = false
  if S.restart then
    S.restart = false
    M.start()
  end
end

--- The command line that starts the sidecar (after the `cmd` prefix, with
--- the workspace folders as the sidecar's side names them).
function M.command()
  local o = config.options
  local cmd = { o.bin, "serve", "--stdio", "--ide-name", M.ide_name() }
  for _, dir in ipairs(M.workspace_folders()) do
    vim.list_extend(cmd, { "--workspace", remote.to_remote(config.path_map, dir) })
  end
  if o.log_file then
    -- On the sidecar's side: expanded there when remote.
    vim.list_extend(cmd, { "--log-file", M.is_remote() and o.log_file or vim.fn.expand(o.log_file) })
  end
  return remote.command(o.cmd, vim.list_extend(cmd, o.args), o.cmd_quote)
end

--- Runs `cb(init, err)` once the sidecar answered `initialize` (at once if
--- it has), starting it if needed.
---@param cb fun(init: table?, err: string?)
function M.on_ready(cb)
  if S.status == "running" then
    return cb(S.init)
  end
  table.insert(S.waiting, cb)
  if S.status == "stopped" then
    M.start()
  end
end

--- Starts the sidecar (no-op if it runs).
function M.start()
  if S.stopping then
    -- `:CCBridgeStop` then `:CCBridgeStart`: start once it has exited.
    S.restart = true
    return
  end
  if S.status ~= "stopped" then
    return
  end
  local o = config.options
  local prog = M.is_remote() and o.cmd[1] or o.bin
  S.failure = nil
  if #config.remote_problems > 0 then
    -- Paths would cross under the wrong names, or the sidecar would run
    -- where it should not: nothing is started.
    local msg = "not started: " .. table.concat(config.remote_problems, "; ")
    S.failure = msg
    M.notify_once(msg, vim.log.levels.ERROR)
    settle(nil, msg)
    return
  end
  if vim.fn.executable(prog) ~= 1 then
    local msg = M.is_remote() and ("`%s` (the `cmd` prefix) not found"):format(prog)
      or ("`%s` not found: install ccbridge (cargo install --path crates/ccbridge) or set `bin`"):format(o.bin)
    M.notify_once(msg, vim.log.levels.ERROR, "no-binary")
    S.failure = msg
    settle(nil, msg)
    return
  end
  local conn, err = rpc.spawn(M.command(), {}, {
    on_request = on_request,
    on_notification = on_notification,
    on_exit = on_exit,
  })
  if not conn then
    S.failure = "could not start the sidecar: " .. tostring(err)
    settle(nil, err)
    M.notify_once(S.failure, vim.log.levels.ERROR)
    return
  end
  S.conn, S.status = conn, "starting"
  conn:request("initialize", {
    protocolVersion = M.protocol_version,
    ideName = M.ide_name(),
    workspaceFolders = vim.tbl_map(function(d)
      return remote.to_remote(config.path_map, d)
    end, M.workspace_folders()),
    -- Our pid means nothing on the sidecar's side (Claude would find it
    -- dead and delete the lock file): there the sidecar's parent stands
    -- for the editor (the SSH session, `docker exec`), which ends with us.
    pid = (not M.is_remote()) and vim.fn.getpid() or nil,
    capabilities = {
      diff = true,
      openFile = true,
      saveDocument = true,
      closeTab = false,
      reformat = false,
      executeCode = false,
      approve = o.tools.approve,
      -- An agent answered in its terminal (Gemini CLI) writes the
      -- review's text as the user left it.
      reviewText = true,
    },
    -- The session review's list follows `changesChanged`.
    changes = true,
    diagnostics = o.diagnostics.source,
  }, function(e, result)
    if S.conn ~= conn then
      return
    end
    if e and e.code == rpc.GONE then
      -- It exited before answering (an option it does not know, a folder
      -- it cannot watch): `on_exit` says so, with what it printed.
      return
    end
    if e then
      local supported = type(e.data) == "table" and e.data.supported
      if type(supported) == "table" then
        S.failure = (
          "editor protocol mismatch: this plugin speaks version %d, `%s` speaks %s. "
          .. "Update ccbridge and the plugin together (cargo install --path crates/ccbridge "
          .. "in the same checkout)"
        ):format(M.protocol_version, o.bin, table.concat(vim.tbl_map(tostring, supported), ", "))
      else
        S.failure = "the sidecar refused initialize: "
          .. tostring(e.message)
          .. " (is `bin` a ccbridge of another version?)"
      end
      M.notify_once(S.failure, vim.log.levels.ERROR)
      settle(nil, e.message)
      M.stop()
      return
    end
    S.init, S.status = result, "running"
    distinct_name(result)
    M.event("CCBridgeStarted", { port = result.port, lockFile = result.lockFile })
    require("ccbridge.editors").report_all()
    settle(result)
  end)
  -- The editor's state goes out at once: ccbridge accepts it before
  -- `initialize` is answered and replays it to each Claude session.
  require("ccbridge.selection").reset()
  require("ccbridge.selection").flush()
  require("ccbridge.editors").reset()
  require("ccbridge.diagnostics").report_all()
end

--- Stops the sidecar: it removes its lock file; open reviews close.
function M.stop()
  S.restart = false
  if S.conn then
    S.stopping = true
    S.conn:stop(1000)
  end
end

local function user_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd("CCBridgeStart", M.start, { bar = true, desc = "Start the ccbridge sidecar" })
  cmd("CCBridgeStop", M.stop, { bar = true, desc = "Stop the ccbridge sidecar" })
  cmd("CCBridgeStatus", function()
    require("ccbridge.status").show()
  end, { bar = true, desc = "ccbridge: the sidecar, its lock file and the Claude sessions" })
  cmd("CCBridgeSend", function(o)
    require("ccbridge.mention").send(o)
  end, {
    range = true,
    bar = true,
    nargs = "?",
    complete = "file",
    desc = "Send the range, the file, an explorer's entry or a path to Claude",
  })
  cmd("CCBridgeClaude", function(o)
    require("ccbridge.terminal").open(o.fargs, o.bang)
  end, { nargs = "*", bang = true, desc = "Claude Code in a terminal connected to this Neovim" })
  cmd("CCBridgeReject", function()
    require("ccbridge.diff").reject_current()
  end, { bar = true, desc = "Reject the proposal under review" })
  cmd("CCBridgeAccept", function()
    require("ccbridge.diff").accept_current()
  end, { bar = true, desc = "Accept the proposal under review (as edited)" })
  cmd("CCBridgeAcceptHunk", function()
    require("ccbridge.diff").hunk("accept")
  end, { bar = true, desc = "Accept the proposal's hunk under the cursor" })
  cmd("CCBridgeRejectHunk", function()
    require("ccbridge.diff").hunk("reject")
  end, { bar = true, desc = "Reject the proposal's hunk under the cursor" })
  cmd("CCBridgeChanges", function()
    require("ccbridge.changes").show()
  end, { bar = true, desc = "The session review: every file changed while ccbridge runs, in the quickfix list" })
  cmd("CCBridgeChangeRevert", function()
    require("ccbridge.changes").act("revert")
  end, { bar = true, desc = "Revert the changed hunk under the cursor to what it held before" })
  cmd("CCBridgeChangeKeep", function()
    require("ccbridge.changes").act("keep")
  end, { bar = true, desc = "Keep the changed hunk under the cursor" })
end

--- Configures the plugin; see `config.lua` (and the README) for `opts`.
--- Calling it again applies new options (the sidecar restarts if it ran).
---@param opts ccbridge.Options?
function M.setup(opts)
  if vim.fn.has("nvim-0.10") ~= 1 then
    vim.notify("ccbridge needs Neovim 0.10 or newer", vim.log.levels.ERROR)
    return
  end
  local problems = config.set(opts)
  S.told = {}
  if #problems > 0 then
    vim.notify("ccbridge: " .. table.concat(problems, "; ") .. " (defaults used)", vim.log.levels.WARN)
  end
  group = vim.api.nvim_create_augroup("ccbridge", { clear = true })
  user_commands()
  require("ccbridge.selection").attach(group)
  require("ccbridge.editors").attach(group)
  require("ccbridge.diagnostics").attach(group)
  require("ccbridge.reload").attach(group)
  vim.api.nvim_create_autocmd("DirChanged", {
    group = group,
    callback = function()
      if config.options.workspace_folders == nil then
        S.ide_name = nil
        M.notify("workspaceChanged", { workspaceFolders = M.workspace_folders(), ideName = M.ide_name() })
        if S.init then
          distinct_name(S.init)
        end
      end
    end,
  })
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    callback = function()
      if S.conn then
        S.stopping = true
        local conn = S.conn
        conn:stop(500)
        conn:wait(500)
      end
    end,
  })
  M.configured = true
  local running = S.status ~= "stopped"
  if running then
    M.stop()
    vim.wait(1500, function()
      return S.status == "stopped"
    end, 10)
  end
  if config.options.auto_start or running then
    M.start()
  end
end

--- A short status for the statusline: "" when stopped, else Claude's
--- connection and the reviews waiting for you.
function M.statusline()
  return require("ccbridge.status").line()
end

return M
