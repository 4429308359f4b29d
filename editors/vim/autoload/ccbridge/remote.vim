vim9script
# The sidecar on another machine (SSH, a container): the command that
# starts it through a prefix (g:ccbridge.cmd), and the paths of the two
# sides (g:ccbridge.path_map).
#
# Every function here is pure (no editor state, no I/O), so each is tested
# on its own (test/remote.vim). ccbridge.vim applies them where messages
# cross the pipe: paths the plugin sends go local → remote, paths it
# receives remote → local. Paths outside every mapping pass unchanged; so
# does everything when the map is empty. The same rules as the Neovim
# plugin's remote.lua.

# `p` without trailing slashes ("/" stays "/").
def Trim(p: string): string
  return substitute(p, '\(.\)/\+$', '\1', '')
enddef

def IsAbsolute(v: any): bool
  return type(v) == v:t_string && v =~ '^/'
enddef

# The user's `path_map` as [{l, r}, ...]: entries are ['/local', '/remote']
# or {local: '/local', remote: '/remote'}. Returns [map, problems]; a bad
# entry is named in `problems` and left out of the map.
export def Normalize(user: any): list<any>
  var map: list<dict<string>> = []
  var problems: list<string> = []
  if type(user) != v:t_list
    return [map, ['`path_map` must be a list of [local, remote] pairs']]
  endif
  var i = 0
  for e in user
    i += 1
    var l: any = v:null
    var r: any = v:null
    if type(e) == v:t_list && len(e) == 2
      [l, r] = e
    elseif type(e) == v:t_dict
      l = get(e, 'local', v:null)
      r = get(e, 'remote', v:null)
    endif
    if IsAbsolute(l) && IsAbsolute(r)
      map->add({l: Trim(l), r: Trim(r)})
    else
      problems->add(printf('`path_map[%d]` must be [<local absolute path>, <remote absolute path>] (or {local: ..., remote: ...}), not %s', i, string(e)))
    endif
  endfor
  return [map, problems]
enddef

# `map` with each local folder also under its real name (`Realpath`:
# Vim's resolve()), for paths going over only: a file opened by its real
# path lies under no folder the user named through a symlink. Paths coming
# back keep the user's name, the one Vim gives the files it opens by it.
export def WithRealNames(map: list<any>, Realpath: func(string): string): list<any>
  var out: list<any> = []
  for m in map
    out->add(m)
    const real = Trim(Realpath(m.l))
    if real !=# m.l && IsAbsolute(real)
      out->add({l: real, r: m.r, out_only: 'yes'})
    endif
  endfor
  return out
enddef

# `path` with the prefix `from` replaced by `to`, or v:null if it does not
# lie there (a whole component: /a/bc is not under /a/b).
def Swap(path: string, from: string, to: string): any
  if path ==# from
    return to
  endif
  const head = from ==# '/' ? '/' : from .. '/'
  if strpart(path, 0, len(head)) ==# head
    const rest = strpart(path, len(head))
    return to ==# '/' ? '/' .. rest : to .. '/' .. rest
  endif
  return v:null
enddef

# `path` renamed by the map from side `from` to side `to` ('l' or 'r'), the
# longest matching prefix first so the most specific mapping wins.
# Anything but a string passes unchanged.
export def Translate(map: list<any>, path: any, from: string, to: string): any
  if type(path) != v:t_string
    return path
  endif
  for m in sort(copy(map), (a, b) => len(b[from]) - len(a[from]))
    if from ==# 'r' && has_key(m, 'out_only')
      continue
    endif
    const p = Swap(path, m[from], m[to])
    if type(p) == v:t_string
      return p
    endif
  endfor
  return path
enddef

# A local path as the sidecar's side names it.
export def ToRemote(map: list<any>, path: any): any
  return Translate(map, path, 'l', 'r')
enddef

# A path of the sidecar's side as this side names it.
export def ToLocal(map: list<any>, path: any): any
  return Translate(map, path, 'r', 'l')
enddef

# `s` quoted for a POSIX shell (what `ssh` hands its command to).
export def ShellQuote(s: string): string
  if s !=# '' && s !~ '[^A-Za-z0-9_./=:,+@%-]'
    return s
  endif
  return "'" .. substitute(s, "'", "'\\\\''", 'g') .. "'"
enddef

# Whether the prefix hands the command to a remote shell as one string
# (`ssh` joins its arguments; `docker exec`, `podman exec`, `env` pass the
# words as they are). `quote` is the user's `cmd_quote`: v:true or v:false
# decide, v:null lets the program's name decide.
export def NeedsQuoting(prefix: list<string>, quote: any): bool
  if type(quote) == v:t_bool
    return quote
  endif
  const prog = empty(prefix) ? '' : fnamemodify(prefix[0], ':t')
  return index(['ssh', 'autossh', 'mosh'], prog) >= 0
enddef

# The whole command line: `prefix` then `argv`, each word of `argv` quoted
# for the remote shell when the prefix needs it.
export def Command(prefix: list<string>, argv: list<string>, quote: any): list<string>
  if empty(prefix)
    return copy(argv)
  endif
  const q = NeedsQuoting(prefix, quote)
  return prefix + mapnew(argv, (_, a) => q ? ShellQuote(a) : a)
enddef

# t[key] = F(t[key]) when `t` has it (in place: callers pass a copy).
def Field(t: any, key: string, F: func)
  if type(t) == v:t_dict && has_key(t, key)
    t[key] = F(t[key])
  endif
enddef

def List(l: any, F: func): any
  return type(l) == v:t_list ? mapnew(l, (_, v) => F(v)) : l
enddef

# `file:///a/b` with its path mapped by F (percent-escapes untouched).
def Uri(u: any, F: func): any
  if type(u) != v:t_string || strpart(u, 0, 7) !=# 'file://'
    return u
  endif
  return 'file://' .. F(strpart(u, 7))
enddef

# Which fields of each message hold paths. `kind` is 'outgoing' (what the
# plugin sends: notifications and its requests' params), 'incoming' (the
# params of the sidecar's requests), 'answer' (the plugin's answers to
# those) or 'result' (the sidecar's answers to the plugin's requests).
def MapFields(kind: string, method: string, v: dict<any>, F: func)
  if kind ==# 'outgoing'
    if method ==# 'initialize' || method ==# 'workspaceChanged'
      Field(v, 'workspaceFolders', (l) => List(l, F))
    elseif method ==# 'selectionChanged' || method ==# 'atMentioned'
      Field(v, 'filePath', F)
    elseif method ==# 'openEditorsChanged'
      for tab in type(get(v, 'tabs', 0)) == v:t_list ? v.tabs : []
        if type(tab) == v:t_dict && !get(tab, 'isUntitled', false)
          Field(tab, 'path', F)
        endif
      endfor
    elseif method ==# 'diagnosticsChanged'
      Field(v, 'path', F)
      Field(v, 'uri', (u) => Uri(u, F))
    elseif method ==# 'documentDirtyChanged' || method ==# 'changeAction'
      Field(v, 'path', F)
    endif
  elseif kind ==# 'incoming'
    if method ==# 'showDiff'
      Field(v, 'oldFilePath', F)
      Field(v, 'newFilePath', F)
    elseif method ==# 'openFile'
      Field(v, 'filePath', F)
    elseif method ==# 'openFiles'
      Field(v, 'paths', (l) => List(l, F))
    elseif method ==# 'saveDocument' || method ==# 'reformatFile'
      Field(v, 'path', F)
    endif
  elseif kind ==# 'answer'
    if method ==# 'openFile'
      Field(v, 'filePath', F)
    elseif method ==# 'openFiles'
      Field(v, 'opened', (l) => List(l, F))
    endif
  elseif kind ==# 'result' && method ==# 'changes'
    for f in type(get(v, 'files', 0)) == v:t_list ? v.files : []
      Field(f, 'path', F)
    endfor
  endif
enddef

# `value` (a message's params or result) with its paths mapped, a copy;
# `value` itself when the map is empty or it holds none.
export def Map(map: list<any>, kind: string, method: string, value: any): any
  if empty(map) || type(value) != v:t_dict
    return value
  endif
  var copy = deepcopy(value)
  const [from, to] = kind ==# 'outgoing' || kind ==# 'answer' ? ['l', 'r'] : ['r', 'l']
  MapFields(kind, method, copy, (p) => Translate(map, p, from, to))
  return copy
enddef
