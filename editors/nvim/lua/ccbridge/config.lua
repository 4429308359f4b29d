--- Options, their defaults and their validation. `setup(opts)` merges the
--- user's table over `defaults`; every other module reads `config.options`.
local M = {}

---@class ccbridge.Options
M.defaults = {
  --- The ccbridge binary: a name looked up on `PATH`, or a path.
  bin = "ccbridge",
  --- Extra arguments for `ccbridge serve --stdio` (e.g. `{ "--multi-client" }`).
  args = {},
  --- A command prefix that runs the sidecar elsewhere, e.g.
  --- `{ "ssh", "-T", "host" }` or `{ "docker", "exec", "-i", "box" }`: the
  --- sidecar is then `cmd` + `bin serve --stdio ...`, and `bin` names the
  --- ccbridge of that side. Empty: run `bin` here.
  cmd = {},
  --- Where the two sides name the same folders differently:
  --- `{ { "/home/me/proj", "/srv/proj" } }` (or `{ ["local"] = ..., remote = ... }`).
  --- Paths sent are mapped local → remote, paths received remote → local.
  path_map = {},
  --- Start the sidecar in `setup()`. Else `:CCBridgeStart` (or any command
  --- that needs it) starts it.
  auto_start = true,
  --- The name Claude Code shows ("Connected to …"). Default: "Neovim (<folder>)",
  --- so several editors are told apart in `/ide`.
  ide_name = nil,
  --- Workspace folders for the lock file: a list, or a function returning one.
  --- Default: the current directory (followed on `:cd`).
  workspace_folders = nil,
  --- Sidecar log file (default: its stderr, kept for `:checkhealth`).
  log_file = nil,
  selection = {
    --- Report the selection and cursor to Claude.
    enabled = true,
    --- Quiet time after a cursor move before it is reported (the sidecar
    --- adds its own `--selection-debounce-ms`, default 100).
    debounce_ms = 50,
    --- After leaving Visual mode the selection is kept this long before it
    --- becomes a bare cursor, so it survives a jump to Claude's terminal.
    visual_hold_ms = 300,
  },
  diagnostics = {
    --- Report `vim.diagnostic` to Claude as it changes.
    enabled = true,
    debounce_ms = 50,
    --- Whose diagnostics Claude gets (`initialize.diagnostics`): "auto"
    --- (ccbridge's language servers for a file until Neovim reports on it),
    --- "editor" (Neovim's only; ccbridge starts no language server) or
    --- "ccbridge" (its language servers' only).
    source = "auto",
  },
  diff = {
    --- "tab": a new tab page; "window": splits in the current tab.
    open_in = "tab",
    --- "vertical" (original left, proposal right), "horizontal" (original
    --- above) or "inline" (one buffer, removed lines shown as virtual lines).
    layout = "vertical",
    --- What closing the proposal's window means: "reject", or "dismiss"
    --- (Claude's own prompt in the terminal decides).
    on_close = "reject",
    --- Put the cursor in the proposal (else it stays where it was).
    focus = true,
  },
  tools = {
    --- Ask you to allow the workspace tools' commands (and, in the
    --- `always` approval mode, every tool call). Off: they cannot run
    --- commands at all.
    approve = true,
    --- Where a running command's output shows: "split" (a terminal
    --- buffer below) or "none".
    output = "split",
    --- Height of the output split, as a fraction of the editor.
    height = 0.3,
  },
  --- Reload buffers whose files change on disk (Claude's writes) while a
  --- Claude session is connected. Buffers with unsaved changes are never
  --- reloaded; you get a notice instead.
  reload = true,
  terminal = {
    --- The command `:CCBridgeClaude` runs; its arguments are appended.
    cmd = { "claude" },
    --- "right", "left", "bottom", "top" or "float".
    position = "right",
    --- Width (right/left) or height (bottom/top) as a fraction of the editor.
    size = 0.4,
    --- Close the window when Claude exits with status 0.
    auto_close = true,
    --- Extra environment for the terminal.
    env = {},
  },
}

---@type ccbridge.Options
M.options = vim.deepcopy(M.defaults)

--- `options.path_map`, checked (`remote.normalize`), each local folder
--- under its real name too (`remote.with_real_names`).
M.path_map = {}

--- What is wrong with `cmd` and `path_map`. The sidecar does not start
--- while there is anything: through no prefix or the wrong one it would run
--- where it should not, with a wrong map paths would cross under the wrong
--- names.
M.remote_problems = {}

local one_of = {
  ["diagnostics.source"] = { "auto", "editor", "ccbridge" },
  ["diff.open_in"] = { "tab", "window" },
  ["diff.layout"] = { "vertical", "horizontal", "inline" },
  ["diff.on_close"] = { "reject", "dismiss" },
  ["terminal.position"] = { "right", "left", "bottom", "top", "float" },
  ["tools.output"] = { "split", "none" },
}

--- Options without a default value, and the types they may have.
local optional = {
  ide_name = { "string" },
  workspace_folders = { "table", "function" },
  log_file = { "string" },
  --- Quote the sidecar's words for a remote shell (default: when `cmd`
  --- starts with ssh, which joins them into one shell command).
  cmd_quote = { "boolean" },
}

--- `user` over `defaults`, key by key. A value of the wrong type, outside
--- its set, or an unknown key is reported in `out`; the default stands.
local function merge(defaults, user, prefix, out)
  local result = {}
  for key, default in pairs(defaults) do
    local value, name = user[key], prefix .. key
    if value == nil then
      result[key] = vim.deepcopy(default)
    elseif type(default) == "table" and not vim.islist(default) then
      if type(value) == "table" then
        result[key] = merge(default, value, name .. ".", out)
      else
        out[#out + 1] = ("`%s` must be a table"):format(name)
        result[key] = vim.deepcopy(default)
      end
    elseif name == "terminal.cmd" and type(value) == "string" then
      result[key] = { value }
    elseif type(value) ~= type(default) then
      out[#out + 1] = ("`%s` must be a %s, not a %s"):format(name, type(default), type(value))
      result[key] = vim.deepcopy(default)
    elseif one_of[name] and not vim.tbl_contains(one_of[name], value) then
      out[#out + 1] = ("`%s` must be one of %s"):format(name, table.concat(one_of[name], ", "))
      result[key] = default
    else
      result[key] = value
    end
  end
  for key, value in pairs(user) do
    local types = prefix == "" and optional[key]
    if types then
      if vim.tbl_contains(types, type(value)) then
        result[key] = value
      else
        out[#out + 1] = ("`%s` must be a %s"):format(key, table.concat(types, " or "))
      end
    elseif defaults[key] == nil then
      out[#out + 1] = ("unknown option `%s%s`"):format(prefix, key)
    end
  end
  return result
end

--- Whether `cmd` is a list of strings (a prefix's words).
local function words(cmd)
  if type(cmd) ~= "table" then
    return false
  end
  for _, w in pairs(cmd) do
    if type(w) ~= "string" then
      return false
    end
  end
  return true
end

--- Sets `options` to `user` over the defaults and returns what was wrong
--- with `user` (each bad value is replaced by its default), but for `cmd`
--- and `path_map`, whose problems are kept in `remote_problems`.
---@param user table?
---@return string[] problems
function M.set(user)
  user = user or {}
  -- `cmd` and `path_map` are checked on their own: a mistake there stops
  -- the start (`remote_problems`) instead of being replaced by a default.
  local rest = vim.tbl_extend("force", {}, user)
  rest.cmd, rest.path_map = nil, nil
  local found = {}
  M.options = merge(M.defaults, rest, "", found)
  local remote = {}
  if user.cmd ~= nil then
    if words(user.cmd) then
      M.options.cmd = user.cmd
    else
      remote[#remote + 1] = "`cmd` must be a list of strings"
    end
  end
  if type(user.path_map) == "table" then
    M.options.path_map = user.path_map
  elseif user.path_map ~= nil then
    remote[#remote + 1] = ("`path_map` must be a table, not a %s"):format(type(user.path_map))
  end
  local r = require("ccbridge.remote")
  local map, bad = r.normalize(M.options.path_map)
  M.path_map = r.with_real_names(map, vim.uv.fs_realpath)
  M.remote_problems = vim.list_extend(remote, bad)
  return found
end

return M
