--- The sidecar on another machine (SSH, a container): the command that
--- starts it through a prefix, and the paths of the two sides.
---
--- Every function here is pure (no editor state, no I/O), so each is tested
--- on its own. `init.lua` applies them where messages cross the pipe: paths
--- the plugin sends go local → remote, paths it receives remote → local.
--- Paths outside every mapping pass unchanged; so does everything when the
--- map is empty.
local M = {}

--- Strips trailing slashes ("/" stays "/").
local function trim(p)
  return (p:gsub("(.)/+$", "%1"))
end

--- The user's `path_map` as `{ {l, r}, ... }`, longest local (then remote)
--- prefix first so the most specific mapping wins. Entries are
--- `{ "/local", "/remote" }` or `{ ["local"] = "/local", remote = "/remote" }`.
--- Returns the map and the problems found (bad entries are left out).
---@param user table?
---@return { l: string, r: string }[] map
---@return string[] problems
function M.normalize(user)
  local map, problems = {}, {}
  for i, e in ipairs(user or {}) do
    local l = type(e) == "table" and (e["local"] or e[1]) or nil
    local r = type(e) == "table" and (e.remote or e[2]) or nil
    if type(l) ~= "string" or type(r) ~= "string" or l:sub(1, 1) ~= "/" or r:sub(1, 1) ~= "/" then
      problems[#problems + 1] = ("`path_map[%d]` must be { local = <absolute path>, remote = <absolute path> }"):format(
        i
      )
    else
      map[#map + 1] = { l = trim(l), r = trim(r) }
    end
  end
  return map, problems
end

--- `map` with each local folder also under its real name, for paths that
--- name it through a symlink: Neovim names buffers by the real path (it
--- resolves symlinks), so a map naming the project through a link would
--- match none of them. The real name (`realpath` of the local folder, nil
--- where it cannot be resolved) takes the entry's place, and paths coming
--- back get it; the user's name stays for paths going over only.
---@param map { l: string, r: string }[]
---@param realpath fun(path: string): string?
---@return { l: string, r: string, out_only: boolean? }[]
function M.with_real_names(map, realpath)
  local out = {}
  for _, m in ipairs(map) do
    local real = realpath(m.l)
    if type(real) == "string" and trim(real) ~= m.l then
      out[#out + 1] = { l = trim(real), r = m.r }
      out[#out + 1] = { l = m.l, r = m.r, out_only = true }
    else
      out[#out + 1] = m
    end
  end
  return out
end

--- `path` with the prefix `from` replaced by `to`, if it lies there.
local function swap(path, from, to)
  if path == from then
    return to
  end
  local head = from == "/" and "/" or (from .. "/")
  if path:sub(1, #head) == head then
    local rest = path:sub(#head + 1)
    return to == "/" and ("/" .. rest) or (to .. "/" .. rest)
  end
end

local function longest_first(map, key)
  local sorted = vim.list_extend({}, map)
  table.sort(sorted, function(a, b)
    return #a[key] > #b[key]
  end)
  return sorted
end

--- `path` renamed by the map's entries from side `from` to side `to`
--- (`"l"` or `"r"`), the longest matching prefix first.
---@param map { l: string, r: string }[]
---@param path any
---@param from "l"|"r"
---@param to "l"|"r"
local function translate(map, path, from, to)
  if type(path) ~= "string" then
    return path
  end
  for _, m in ipairs(longest_first(map, from)) do
    local p = not (m.out_only and from == "r") and swap(path, m[from], m[to])
    if p then
      return p
    end
  end
  return path
end

--- A local path as the remote side names it.
---@param map { l: string, r: string }[]
---@param path any
function M.to_remote(map, path)
  return translate(map, path, "l", "r")
end

--- A remote path as this side names it.
---@param map { l: string, r: string }[]
---@param path any
function M.to_local(map, path)
  return translate(map, path, "r", "l")
end

--- `s` quoted for a POSIX shell (what `ssh` hands its command to).
---@param s string
function M.shell_quote(s)
  if s ~= "" and not s:find("[^%w%-%._/=:,+@%%]") then
    return s
  end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- Whether the prefix hands the command to a remote shell as one string
--- (`ssh` does; `docker exec`, `podman exec`, `env` pass the words as they are).
---@param prefix string[]
---@param quote boolean?  the user's `cmd_quote` (nil: decide by the program)
function M.needs_quoting(prefix, quote)
  if quote ~= nil then
    return quote
  end
  local prog = prefix[1] and vim.fs.basename(prefix[1]) or ""
  return prog == "ssh" or prog == "autossh" or prog == "mosh"
end

--- The whole command line: `prefix` then `argv`, each word of `argv` quoted
--- for the remote shell when the prefix needs it.
---@param prefix string[]
---@param argv string[]
---@param quote boolean?
---@return string[]
function M.command(prefix, argv, quote)
  if #prefix == 0 then
    return vim.list_extend({}, argv)
  end
  local out = vim.list_extend({}, prefix)
  local q = M.needs_quoting(prefix, quote)
  for _, a in ipairs(argv) do
    out[#out + 1] = q and M.shell_quote(a) or a
  end
  return out
end

--- Replaces `t[key]` by `f(t[key])`, in place (callers pass a copy).
local function map_field(t, key, f)
  if type(t) == "table" and t[key] ~= nil then
    t[key] = f(t[key])
  end
end

local function map_list(list, f)
  if type(list) ~= "table" then
    return list
  end
  local out = {}
  for i, v in ipairs(list) do
    out[i] = f(v)
  end
  return out
end

--- `file:///a/b` mapped by `f` (only plain paths; percent-escapes untouched).
local function map_uri(uri, f)
  if type(uri) ~= "string" or uri:sub(1, 7) ~= "file://" then
    return uri
  end
  return "file://" .. f(uri:sub(8))
end

--- What the plugin sends (notifications and its own requests' params),
--- by method: which fields hold paths.
local function workspace_folders(p, f)
  map_field(p, "workspaceFolders", function(l)
    return map_list(l, f)
  end)
end

local outgoing = {
  initialize = workspace_folders,
  workspaceChanged = workspace_folders,
  selectionChanged = function(p, f)
    map_field(p, "filePath", f)
  end,
  atMentioned = function(p, f)
    map_field(p, "filePath", f)
  end,
  openEditorsChanged = function(p, f)
    for _, tab in ipairs(p.tabs or {}) do
      if not tab.isUntitled then
        map_field(tab, "path", f)
      end
    end
  end,
  diagnosticsChanged = function(p, f)
    map_field(p, "path", f)
    map_field(p, "uri", function(u)
      return map_uri(u, f)
    end)
  end,
  documentDirtyChanged = function(p, f)
    map_field(p, "path", f)
  end,
  changeAction = function(p, f)
    map_field(p, "path", f)
  end,
}

--- What the sidecar asks of the editor: the params' paths.
local incoming = {
  showDiff = function(p, f)
    map_field(p, "oldFilePath", f)
    map_field(p, "newFilePath", f)
  end,
  openFile = function(p, f)
    map_field(p, "filePath", f)
  end,
  openFiles = function(p, f)
    map_field(p, "paths", function(l)
      return map_list(l, f)
    end)
  end,
  saveDocument = function(p, f)
    map_field(p, "path", f)
  end,
  reformatFile = function(p, f)
    map_field(p, "path", f)
  end,
}

--- The editor's answers to those requests: their paths go back remote.
local answers = {
  openFile = function(r, f)
    map_field(r, "filePath", f)
  end,
  openFiles = function(r, f)
    map_field(r, "opened", function(l)
      return map_list(l, f)
    end)
  end,
}

--- The sidecar's answers to the plugin's requests: their paths come local.
local results = {
  changes = function(r, f)
    for _, file in ipairs(type(r) == "table" and r.files or {}) do
      map_field(file, "path", f)
    end
  end,
}

local function apply(table_, map, method, value, dir)
  local fn = table_[method]
  if #map == 0 or not fn or type(value) ~= "table" then
    return value
  end
  local copy = vim.deepcopy(value)
  fn(copy, function(p)
    return dir(map, p)
  end)
  return copy
end

--- Params the plugin sends, local → remote.
function M.outgoing(map, method, params)
  return apply(outgoing, map, method, params, M.to_remote)
end

--- Params of a request from the sidecar, remote → local.
function M.incoming(map, method, params)
  return apply(incoming, map, method, params, M.to_local)
end

--- The plugin's answer to a request from the sidecar, local → remote.
function M.answer(map, method, result)
  return apply(answers, map, method, result, M.to_remote)
end

--- The sidecar's answer to a request of the plugin, remote → local.
function M.result(map, method, result)
  return apply(results, map, method, result, M.to_local)
end

return M
