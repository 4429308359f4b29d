--- `:CCBridgeSend`: an @-mention for Claude's prompt (`atMentioned`).
---
--- The target is, in order: the path given as argument; the entry under the
--- cursor in a file explorer (netrw, oil.nvim, neo-tree, nvim-tree); the
--- range (`:'<,'>CCBridgeSend`, lines sent 0-based); the current file. The
--- sidecar queues it until a Claude session is ready.
local M = {}

local api = vim.api

--- Each explorer's entry under the cursor, as an absolute path.
local explorers = {
  netrw = function()
    local dir = vim.b.netrw_curdir
    local ok, word = pcall(vim.fn["netrw#Call"], "NetrwGetWord")
    if not dir or not ok or word == "" or word == "../" or word == "./" then
      return nil
    end
    return vim.fs.joinpath(dir, word)
  end,
  oil = function()
    local ok, oil = pcall(require, "oil")
    if not ok then
      return nil
    end
    local entry, dir = oil.get_cursor_entry(), oil.get_current_dir()
    return entry and dir and vim.fs.joinpath(dir, entry.name) or nil
  end,
  ["neo-tree"] = function()
    local ok, manager = pcall(require, "neo-tree.sources.manager")
    if not ok then
      return nil
    end
    local state = manager.get_state_for_window()
    local node = state and state.tree and state.tree:get_node()
    return node and node.path or nil
  end,
  NvimTree = function()
    local ok, tree = pcall(require, "nvim-tree.api")
    if not ok then
      return nil
    end
    local node = tree.tree.get_node_under_cursor()
    return node and node.absolute_path or nil
  end,
}

--- What `:CCBridgeSend` with these command args would send, or nil and why not.
---@param o { args: string, range: integer, line1: integer, line2: integer }
---@return { filePath: string, lineStart: integer?, lineEnd: integer? }?, string?
function M.target(o)
  if o.args and o.args ~= "" then
    return { filePath = vim.fn.fnamemodify(vim.fn.expand(o.args), ":p"):gsub("(.)/$", "%1") }
  end
  local buf = api.nvim_get_current_buf()
  local explorer = explorers[vim.bo[buf].filetype]
  if explorer then
    local ok, path = pcall(explorer)
    if ok and path then
      return { filePath = vim.fs.normalize(path):gsub("(.)/$", "%1") }
    end
    return nil, "no file or folder under the cursor"
  end
  local name = api.nvim_buf_get_name(buf)
  if vim.bo[buf].buftype ~= "" or name == "" then
    return nil, "this buffer is not a file (give a path: :CCBridgeSend {file})"
  end
  if o.range and o.range > 0 then
    return { filePath = name, lineStart = o.line1 - 1, lineEnd = o.line2 - 1 }
  end
  return { filePath = name }
end

function M.send(o)
  local target, why = M.target(o)
  if not target then
    vim.notify("ccbridge: nothing to send: " .. why, vim.log.levels.WARN)
    return
  end
  local bridge = require("ccbridge")
  bridge.on_ready(function(init, err)
    if not init then
      vim.notify("ccbridge: not sent, the sidecar is not running: " .. tostring(err), vim.log.levels.ERROR)
      return
    end
    bridge.notify("atMentioned", target)
    local where = vim.fn.fnamemodify(target.filePath, ":~:.")
    if target.lineStart then
      where = ("%s:%d-%d"):format(where, target.lineStart + 1, target.lineEnd + 1)
    end
    bridge.event("CCBridgeSent", target)
    vim.api.nvim_echo(
      { { "ccbridge: @" .. where .. (bridge.connected() and "" or " (sent when Claude connects)") } },
      false,
      {}
    )
  end)
end

return M
