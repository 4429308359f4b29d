--- `:CCBridgeStatus` and the statusline component.
local M = {}

local function bridge()
  return require("ccbridge")
end

local function count(t)
  local n = 0
  for _ in pairs(t) do
    n = n + 1
  end
  return n
end

--- "" when the sidecar is stopped; "Claude ○" when no session is connected,
--- "Claude ●" (with a count above one) when some are, and the number of
--- reviews waiting for a verdict.
---@return string
function M.line()
  local S = bridge().state
  if S.status == "stopped" then
    return ""
  end
  if S.status == "starting" then
    return "Claude …"
  end
  local n = count(S.clients)
  local line = n == 0 and "Claude ○" or (n == 1 and "Claude ●" or ("Claude ●" .. n))
  local reviews = #require("ccbridge.diff").pending()
  if reviews > 0 then
    line = line .. (" ◆%d"):format(reviews)
  end
  return line
end

--- The status as lines of text.
---@return string[]
function M.lines()
  local S = bridge().state
  local out = {}
  if S.status == "stopped" then
    out[#out + 1] = S.failure and ("ccbridge: stopped: %s (:CCBridgeStart starts it)"):format(S.failure)
      or "ccbridge: stopped (:CCBridgeStart starts it)"
    return out
  end
  local init = S.init or {}
  out[#out + 1] = ("ccbridge %s (%s, pid %d), editor protocol %s"):format(
    init.serverInfo and init.serverInfo.version or "?",
    S.status,
    S.conn and S.conn:pid() or -1,
    init.protocolVersion or "?"
  )
  out[#out + 1] = ("port %s, lock file %s"):format(init.port or "?", init.lockFile or "none")
  out[#out + 1] = "workspace: " .. table.concat(bridge().workspace_folders(), ", ")
  if type(init.tools) == "table" then
    out[#out + 1] = ("workspace tools (MCP): %s, asking before %s"):format(
      tostring(init.tools.url),
      ({ ["write-only"] = "writes and commands", always = "every call", never = "nothing" })[init.tools.approvalMode]
        or tostring(init.tools.approvalMode)
    )
  end
  local ids = vim.tbl_keys(S.clients)
  table.sort(ids)
  if #ids == 0 then
    out[#out + 1] = "no Claude session connected (:CCBridgeClaude, or run claude with CLAUDE_CODE_SSE_PORT="
      .. tostring(init.port or "?")
      .. ", or /ide in Claude)"
  end
  for _, id in ipairs(ids) do
    local c = S.clients[id]
    out[#out + 1] = ("Claude session %d: %s %s, pid %s"):format(
      id,
      c.name or "?",
      c.version or "?",
      c.pid and tostring(c.pid) or "?"
    )
  end
  for _, r in ipairs(require("ccbridge.diff").pending()) do
    out[#out + 1] = ("review %d waiting: %s"):format(r.id, vim.fn.fnamemodify(r.path, ":~:."))
  end
  return out
end

function M.show()
  vim.api.nvim_echo({ { table.concat(M.lines(), "\n") } }, true, {})
end

return M
