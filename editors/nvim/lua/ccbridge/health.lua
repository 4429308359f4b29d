--- `:checkhealth ccbridge`.
local M = {}

local health = vim.health

function M.check()
  local bridge = require("ccbridge")
  local config = require("ccbridge.config")
  health.start("ccbridge")
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. tostring(vim.version()))
  else
    health.error("Neovim 0.10 or newer is needed", { "Upgrade Neovim" })
  end
  if not bridge.configured then
    health.warn("setup() was not called", { 'Call require("ccbridge").setup() in your config' })
  end

  if #config.remote_problems > 0 then
    health.error("the sidecar does not start: " .. table.concat(config.remote_problems, "; "), {
      "Fix `cmd` and `path_map` in setup() (see :help ccbridge-opt-path_map)",
    })
  end

  local bin = config.options.bin
  local path = vim.fn.exepath(bin)
  if path == "" then
    health.error(("`%s` not found"):format(bin), {
      "Install it: cargo install --path crates/ccbridge (in a ccbridge checkout)",
      "or set `bin` in setup() to its full path",
    })
    return
  end
  health.ok("binary: " .. path)
  local version = vim.system({ path, "--version" }, { text = true }):wait(3000)
  if version.code == 0 then
    health.ok("version: " .. vim.trim(version.stdout or ""))
  else
    health.error("`" .. path .. " --version` failed: " .. vim.trim(version.stderr or ""), {
      "Reinstall ccbridge",
    })
  end

  local S = bridge.state
  if S.status ~= "running" then
    local advice = { "Run :CCBridgeStart" }
    if S.conn == nil and S.status == "stopped" then
      health.warn("the sidecar is not running", advice)
    else
      health.warn("the sidecar is " .. S.status, advice)
    end
    return
  end
  local init = S.init
  if init.protocolVersion == bridge.protocol_version then
    health.ok(("editor protocol %d, port %d, sidecar pid %d"):format(init.protocolVersion, init.port, S.conn:pid()))
  else
    health.error(
      ("the sidecar speaks editor protocol %s, this plugin %d"):format(
        tostring(init.protocolVersion),
        bridge.protocol_version
      ),
      { "Update ccbridge and the plugin together" }
    )
  end
  if init.lockFile == nil or init.lockFile == vim.NIL then
    health.warn("no lock file: Claude finds this Neovim only through CLAUDE_CODE_SSE_PORT", { "Use :CCBridgeClaude" })
  elseif bridge.is_remote() then
    health.ok("lock file (on the sidecar's side, through `cmd`): " .. init.lockFile)
  elseif vim.fn.filereadable(init.lockFile) == 1 then
    health.ok("lock file: " .. init.lockFile)
  else
    health.error("lock file missing: " .. init.lockFile, {
      "Another program removed it; :CCBridgeStop then :CCBridgeStart writes it again",
    })
  end

  if type(init.tools) == "table" then
    health.info(
      ("workspace tools served over MCP at %s (token in require('ccbridge').state.init.tools.token)"):format(
        tostring(init.tools.url)
      )
    )
  end

  local status
  bridge.request("status", nil, function(_, result)
    status = result or {}
  end)
  vim.wait(2000, function()
    return status ~= nil
  end, 10)
  local clients = status and status.clients or {}
  if #clients == 0 then
    health.info(table.concat({
      "no Claude session connected:",
      "  :CCBridgeClaude starts Claude connected to this Neovim;",
      ("  in another terminal: CLAUDE_CODE_SSE_PORT=%d ENABLE_IDE_INTEGRATION=true claude;"):format(init.port),
      "  or run claude in this folder and pick this Neovim with /ide",
    }, "\n"))
  end
  for _, c in ipairs(clients) do
    health.ok(
      ("%s session %d: %s %s, pid %s"):format(
        type(c.agent) == "table" and c.agent.name or "Claude Code",
        c.id,
        c.name or "?",
        c.version or "?",
        tostring(c.pid or "?")
      )
    )
  end
  local tail = S.conn:stderr_tail()
  if #tail > 0 then
    health.info("sidecar's last log lines:\n" .. table.concat(tail, "\n"))
  end
end

return M
