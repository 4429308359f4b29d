vim9script
# ccbridge for Vim, the core: options, the sidecar's lifetime, the JSON-RPC
# connection (a Vim channel in `lsp` mode on the child's stdin/stdout),
# Claude's sessions, the status, events and messages.
#
# The features live beside it, one script each: context.vim (selection,
# open buffers, unsaved state), diagnostics.vim, review.vim (diffs),
# reload.vim, mention.vim (:CCBridgeSend), terminal.vim (:CCBridgeClaude),
# requests.vim (the sidecar's requests), tools.vim (approvals and command
# output of the workspace tools), changes.vim (the session review).

import autoload 'ccbridge/changes.vim'
import autoload 'ccbridge/context.vim'
import autoload 'ccbridge/diagnostics.vim' as diags
import autoload 'ccbridge/frames.vim'
import autoload 'ccbridge/remote.vim'
import autoload 'ccbridge/review.vim'
import autoload 'ccbridge/reload.vim'
import autoload 'ccbridge/requests.vim'
import autoload 'ccbridge/tools.vim'

# The editor protocol version this plugin speaks (docs/editor-protocol.md):
# 3 adds the other agents (`agents` in the initialize result, `agent` in
# showDiff and clientConnected), all optional here.
const PROTOCOL = 3
# The error code a request gets when the sidecar is gone before it answered
# (its exit is the news: OnExit reports it).
const GONE = -32099

# ---------------------------------------------------------------- options

const DEFAULTS = {
  bin: 'ccbridge',
  args: [],
  # The sidecar on another machine: `cmd` is the prefix it is started
  # through (['ssh', '-T', 'devbox']), `bin` then names the ccbridge there;
  # `cmd_quote` quotes the words after the prefix for a remote shell
  # (v:null: when the prefix is ssh, autossh or mosh); `path_map` is
  # [[local, remote], ...] (remote.vim).
  cmd: [],
  cmd_quote: v:null,
  path_map: [],
  auto_start: false,
  ide_name: '',
  workspace_folders: [],
  log_file: '',
  selection: {enabled: true, debounce_ms: 50, visual_hold_ms: 300},
  diagnostics: {enabled: true, debounce_ms: 50, source: 'auto'},
  diff: {open_in: 'tab', layout: 'vertical', on_close: 'reject', focus: true},
  tools: {approve: true, output: 'split', height: 0.3},
  reload: true,
  reload_interval_ms: 500,
  terminal: {
    cmd: ['claude'],
    cmds: {gemini: ['gemini'], qwen: ['qwen'], codex: ['codex']},
    position: 'right',
    size: 0.4,
    auto_close: true,
    env: {},
  },
}

const ONE_OF = {
  'diagnostics.source': ['auto', 'editor', 'ccbridge'],
  'diff.open_in': ['tab', 'window'],
  'diff.layout': ['vertical', 'horizontal'],
  'diff.on_close': ['reject', 'dismiss'],
  'terminal.position': ['right', 'left', 'bottom', 'top'],
  'tools.output': ['split', 'none'],
}

# Dictionaries whose keys are the user's (not options of their own).
const FREE = ['terminal.env', 'terminal.cmds']

var options: dict<any> = deepcopy(DEFAULTS)
# string(g:ccbridge) the options were last read from.
var options_from = "\x01"

def TypeName(v: any): string
  const t = type(v)
  if t == v:t_bool
    return 'boolean (v:true/v:false or 1/0)'
  elseif t == v:t_number || t == v:t_float
    return 'number'
  elseif t == v:t_string
    return 'string'
  elseif t == v:t_list
    return 'list'
  elseif t == v:t_dict
    return 'dictionary'
  endif
  return typename(v)
enddef

# `user` over `defaults`, key by key; what is wrong goes to `problems` and
# the default stands.
def Merge(defaults: dict<any>, user: dict<any>, prefix: string, problems: list<string>): dict<any>
  var result: dict<any> = {}
  for [key, default] in items(defaults)
    const name = prefix .. key
    if !has_key(user, key)
      result[key] = deepcopy(default)
      continue
    endif
    const value = user[key]
    const want = type(default)
    if want == v:t_dict && index(FREE, name) < 0
      if type(value) == v:t_dict
        result[key] = Merge(default, value, name .. '.', problems)
      else
        problems->add(printf('`%s` must be a dictionary', name))
        result[key] = deepcopy(default)
      endif
    elseif name == 'terminal.cmd' && type(value) == v:t_string
      result[key] = [value]
    elseif name == 'workspace_folders' && type(value) == v:t_func
      result[key] = value
    elseif (name == 'cmd' || name == 'path_map') && type(value) != want
      # Kept as given, not replaced by the default: Start refuses it and
      # says why (a sidecar run here instead of there, or paths crossing
      # unmapped, would be wrong in a way a warning does not stop).
      result[key] = value
    elseif name == 'cmd_quote'
      # Three states: v:null (by the prefix's program), true, false.
      if type(value) == v:t_bool || type(value) == v:t_none
        result[key] = value
      elseif type(value) == v:t_number && (value == 0 || value == 1)
        result[key] = value == 1
      else
        problems->add('`cmd_quote` must be v:true, v:false or v:null')
        result[key] = v:null
      endif
    elseif want == v:t_bool && type(value) == v:t_number && (value == 0 || value == 1)
      result[key] = value == 1
    elseif want == v:t_float && type(value) == v:t_number
      result[key] = 1.0 * value
    elseif type(value) != want
      problems->add(printf('`%s` must be a %s', name, TypeName(default)))
      result[key] = deepcopy(default)
    elseif has_key(ONE_OF, name) && index(ONE_OF[name], value) < 0
      problems->add(printf('`%s` must be one of %s', name, join(ONE_OF[name], ', ')))
      result[key] = deepcopy(default)
    else
      result[key] = value
    endif
  endfor
  for key in keys(user)
    if !has_key(defaults, key)
      problems->add(printf('unknown option `%s%s`', prefix, key))
    endif
  endfor
  return result
enddef

# The options as last read, for the hot paths (a cursor move, a timer):
# no check of g:ccbridge.
export def Opts(): dict<any>
  return options
enddef

# The options in force: g:ccbridge over the defaults, read again if it
# changed (when the sidecar starts, and by every command and event that is
# not a cursor move); a bad value is reported once per change and replaced
# by its default.
export def Options(): dict<any>
  const user = get(g:, 'ccbridge', {})
  const key = string(user)
  if key ==# options_from
    return options
  endif
  options_from = key
  var problems: list<string> = []
  if type(user) == v:t_dict
    options = Merge(DEFAULTS, user, '', problems)
  else
    problems->add('g:ccbridge must be a dictionary')
    options = deepcopy(DEFAULTS)
  endif
  # New options: messages shown once may be shown again.
  told = {}
  if !empty(problems)
    Message(join(problems, '; ') .. ' (defaults used)', 'warn')
  endif
  return options
enddef

# ---------------------------------------------------------------- messages

# Messages already shown, by key (shown once per configuration).
var told: dict<bool> = {}

# Shows `msg` (in :messages too); `level` is 'error', 'warn' or 'info'.
export def Message(msg: string, level = 'info')
  const hl = level == 'error' ? 'ErrorMsg' : level == 'warn' ? 'WarningMsg' : 'None'
  execute 'echohl ' .. hl
  for line in split('ccbridge: ' .. msg, "\n")
    echomsg line
  endfor
  echohl None
enddef

# Shows `msg` once per `key` (default: the message itself).
export def MessageOnce(msg: string, level = 'warn', key = '')
  const k = key == '' ? msg : key
  if get(told, k, false)
    return
  endif
  told[k] = true
  Message(msg, level)
enddef

# Fires `User <name>` with g:ccbridge_event set to `data`.
export def Event(name: string, data: dict<any>)
  if !exists('#User')
    return
  endif
  # Only when some User autocommand matches (else Vim says "No matching
  # autocommands"); patterns such as CCBridge* count.
  const matching = autocmd_get({event: 'User'})
    ->filter((_, a) => name =~# glob2regpat(a.pattern))
  if empty(matching)
    return
  endif
  g:ccbridge_event = data
  execute 'doautocmd <nomodeline> User ' .. name
enddef

# ---------------------------------------------------------------- state

var status = 'stopped'   # 'starting', 'running'
var job: any = v:null
var chan: any = v:null
# Counts sidecars started: callbacks of an older one are ignored.
var token = 0
var init: dict<any> = {}
var clients: dict<dict<any>> = {}
var waiting: list<func> = []
var callbacks: dict<func> = {}
var next_id = 0
var stderr: list<string> = []
# What the sidecar wrote that is not yet a whole message (frames.vim).
var reader = frames.Reader()
var stopping = false
var restart = false
# Why the last start failed or the sidecar ended (:CCBridgeStatus says it).
var failure = ''
# An exit not told yet, {tok, msg}: Vim runs exit_cb and the output
# callbacks in any order, and close_cb after the last of them, so the exit
# is told once the sidecar's last stderr lines are in (or after a second,
# should something it started keep its stderr open).
var untold: dict<any> = {}
# The token of the last sidecar whose output has all been read.
var closed_tok = 0
var ide_name = ''
# The path map in force (`path_map`, checked, with real names), fixed when the
# sidecar starts: both sides must agree for its whole life.
var path_map: list<any> = []

export def Status(): string
  return status
enddef

# The sidecar's `initialize` result ({} until it answered).
export def Init(): dict<any>
  return init
enddef

# Connected Claude sessions, by id (as strings).
export def Clients(): dict<dict<any>>
  return clients
enddef

export def Connected(): bool
  return !empty(clients)
enddef

# The current connection's number: a reply given later names it, so an
# answer meant for a sidecar that has since exited is dropped.
export def Token(): number
  return token
enddef

export def ProtocolVersion(): number
  return PROTOCOL
enddef

export def StderrTail(): list<string>
  return copy(stderr)
enddef

export def WorkspaceFolders(): list<string>
  var wf = Options().workspace_folders
  if type(wf) == v:t_func
    try
      wf = call(wf, [])
    catch
      MessageOnce('workspace_folders failed: ' .. v:exception, 'warn')
      wf = []
    endtry
  endif
  if type(wf) != v:t_list || empty(wf)
    wf = [getcwd()]
  endif
  return mapnew(wf, (_, d) => substitute(fnamemodify(expand(d), ':p'), '\(.\)/$', '\1', ''))
enddef

export def IdeName(): string
  const o = Options()
  if o.ide_name != ''
    return o.ide_name
  endif
  if ide_name != ''
    return ide_name
  endif
  return printf('Vim (%s)', fnamemodify(getcwd(), ':t'))
enddef

# ---------------------------------------------------------------- rpc

def Write(msg: dict<any>): bool
  if status == 'stopped' || type(chan) != v:t_channel
    return false
  endif
  try
    ch_sendexpr(chan, msg)
  catch
    return false
  endtry
  return true
enddef

# Sends a notification if the sidecar runs (it replays state to Claude, so
# nothing is queued here).
export def Notify(method: string, params: dict<any>)
  Write({jsonrpc: '2.0', method: method, params: remote.Map(path_map, 'outgoing', method, params)})
enddef

# Sends a request; Cb(error, result) is called with the answer, or with an
# error if the sidecar is not running or exits first.
export def Request(method: string, params: dict<any>, Cb: any = 0)
  next_id += 1
  const id = next_id
  if type(Cb) == v:t_func
    # The answer's paths come back to this side's names.
    const map = path_map
    callbacks[string(id)] = (err: dict<any>, result: any) => Cb(err, remote.Map(map, 'result', method, result))
  endif
  if !Write({jsonrpc: '2.0', id: id, method: method, params: remote.Map(path_map, 'outgoing', method, params)})
    if has_key(callbacks, string(id))
      remove(callbacks, string(id))
      Cb({code: GONE, message: 'ccbridge is not running'}, v:null)
    endif
  endif
enddef

# Answers a request of the sidecar (for answers given later: `tok` is
# Token() when the request came).
export def Reply(tok: number, id: any, result: any)
  if tok == token
    Write({jsonrpc: '2.0', id: id, result: result})
  endif
enddef

export def ReplyError(tok: number, id: any, error: dict<any>)
  if tok == token
    Write({jsonrpc: '2.0', id: id, error: error})
  endif
enddef

def OnOut(tok: number, ch: channel, msg: any)
  if tok != token || type(msg) != v:t_dict
    return
  endif
  const params = type(get(msg, 'params', v:null)) == v:t_dict ? msg.params : {}
  if has_key(msg, 'method') && has_key(msg, 'id')
    var r: dict<any>
    try
      r = requests.Handle(msg.method, remote.Map(path_map, 'incoming', msg.method, params), tok, msg.id)
    catch
      r = {error: {code: -32603, message: v:exception}}
    endtry
    if has_key(r, 'later')
      return
    endif
    if has_key(r, 'error')
      Write({jsonrpc: '2.0', id: msg.id, error: r.error})
    else
      Write({jsonrpc: '2.0', id: msg.id, result: remote.Map(path_map, 'answer', msg.method, get(r, 'result', v:null))})
    endif
  elseif has_key(msg, 'method')
    OnNotification(msg.method, params)
  elseif has_key(msg, 'id')
    const key = string(msg.id)
    if has_key(callbacks, key)
      const Cb = remove(callbacks, key)
      const err = type(get(msg, 'error', v:null)) == v:t_dict ? msg.error : {}
      Cb(err, get(msg, 'result', v:null))
    endif
  endif
enddef

# The sidecar's output, read as frames.vim says why.
def OnRaw(tok: number, ch: channel, chunk: string)
  if tok != token
    return
  endif
  for msg in frames.Feed(reader, chunk)
    OnOut(tok, ch, msg)
  endfor
enddef

def OnErr(tok: number, ch: channel, line: string)
  if tok != token
    return
  endif
  stderr->add(line)
  if len(stderr) > 20
    remove(stderr, 0)
  endif
enddef

def OnNotification(method: string, p: dict<any>)
  if method == 'clientConnected'
    clients[string(get(p, 'id', ''))] = p
    Event('CCBridgeConnected', p)
    reload.Update()
  elseif method == 'clientDisconnected'
    const key = string(get(p, 'id', ''))
    const client = has_key(clients, key) ? remove(clients, key) : p
    Event('CCBridgeDisconnected', client)
    reload.Update()
  elseif method == 'commandEvent'
    tools.Event(p)
  elseif method == 'changesChanged'
    changes.Refresh()
  elseif method == 'invalidNotification'
    MessageOnce(printf('the sidecar could not use `%s`: %s', get(p, 'method', '?'), get(p, 'message', '?')),
      'warn', 'invalid:' .. get(p, 'method', '?'))
  endif
enddef

# ---------------------------------------------------------------- lifetime

def Settle(result: dict<any>, err: string)
  const cbs = waiting
  waiting = []
  for Cb in cbs
    Cb(result, err)
  endfor
enddef

# Runs Cb(init, error) once the sidecar answered `initialize` (at once if
# it has), starting it if needed.
export def OnReady(Cb: func)
  if status == 'running'
    Cb(init, '')
    return
  endif
  waiting->add(Cb)
  if status == 'stopped'
    Start()
  endif
enddef

# Whether the sidecar runs through a prefix (`cmd`), on another machine
# or in a container.
export def IsRemote(): bool
  return !empty(Options().cmd)
enddef

# What is wrong with `cmd` and `path_map` (both must be right before
# anything is spawned, or paths would cross under the wrong names).
def RemoteProblems(): list<string>
  const o = Options()
  var problems = remote.Normalize(o.path_map)[1]
  if type(o.cmd) != v:t_list || !empty(filter(copy(o.cmd), (_, w) => type(w) != v:t_string))
    problems->insert('`cmd` must be a list of strings')
  endif
  return problems
enddef

# The command line that starts the sidecar: the `cmd` prefix, then the
# sidecar's words (with the sidecar's names of the folders, by the path
# map in force), quoted for the remote shell when the prefix needs it.
export def Command(): list<string>
  const o = Options()
  var cmd = [o.bin, 'serve', '--stdio', '--ide-name', IdeName()]
  for dir in WorkspaceFolders()
    cmd += ['--workspace', remote.ToRemote(path_map, dir)]
  endfor
  if o.log_file != ''
    # A file on the sidecar's side: not expanded here when remote.
    cmd += ['--log-file', IsRemote() ? o.log_file : expand(o.log_file)]
  endif
  cmd += mapnew(o.args, (_, a) => type(a) == v:t_string ? a : string(a))
  return remote.Command(o.cmd, cmd, o.cmd_quote)
enddef

# The `ideName`s of the other lock files beside ours.
def NamesTaken(lock_file: string): dict<bool>
  const dir = fnamemodify(lock_file, ':h')
  var taken: dict<bool> = {}
  for name in readdir(dir, (n) => n =~ '\.lock$')
    const path = dir .. '/' .. name
    if path == lock_file
      continue
    endif
    try
      const lock = json_decode(join(readfile(path), "\n"))
      if type(lock) == v:t_dict && type(get(lock, 'ideName', 0)) == v:t_string
        taken[lock.ideName] = true
      endif
    catch
    endtry
  endfor
  return taken
enddef

# Several Vims in one folder: the default name gets a number, so Claude's
# /ide list tells them apart ("Vim (app) [2]").
def DistinctName()
  # (A remote sidecar's lock directory is not on this disk.)
  if Options().ide_name != '' || type(get(init, 'lockFile', 0)) != v:t_string || IsRemote()
    return
  endif
  ide_name = ''
  const base = IdeName()
  var taken: dict<bool>
  try
    taken = NamesTaken(init.lockFile)
  catch
    return
  endtry
  if !has_key(taken, base)
    return
  endif
  var n = 2
  while has_key(taken, printf('%s [%d]', base, n))
    n += 1
  endwhile
  ide_name = printf('%s [%d]', base, n)
  Notify('workspaceChanged', {ideName: ide_name})
enddef

def OnInitialized(tok: number, err: dict<any>, result: any)
  if tok != token || get(err, 'code', 0) == GONE
    # It exited before answering (an option it does not know, a folder it
    # cannot watch): OnExit says so, with what it printed.
    return
  endif
  if !empty(err) || type(result) != v:t_dict
    var msg = 'the sidecar refused initialize: ' .. get(err, 'message', 'no answer')
    const data = get(err, 'data', {})
    if type(data) == v:t_dict && type(get(data, 'supported', 0)) == v:t_list
      msg = printf('editor protocol mismatch: this plugin speaks version %d, `%s` speaks %s. Update ccbridge and the plugin together (cargo install --path crates/ccbridge in the same checkout).',
        PROTOCOL, Options().bin, join(mapnew(data.supported, (_, v) => string(v)), ', '))
    else
      msg ..= ' (is `bin` a ccbridge of another version? Update ccbridge and the plugin together.)'
    endif
    failure = msg
    MessageOnce(msg, 'error', 'initialize')
    Settle({}, msg)
    Stop()
    return
  endif
  init = result
  status = 'running'
  DistinctName()
  Event('CCBridgeStarted', {port: get(init, 'port', 0), lockFile: get(init, 'lockFile', v:null)})
  context.ReportAll()
  Settle(init, '')
enddef

def OnExit(tok: number, j: job, code: number)
  if tok != token
    return
  endif
  const was = status
  status = 'stopped'
  chan = v:null
  init = {}
  ide_name = ''
  const gone = clients
  clients = {}
  for c in values(gone)
    Event('CCBridgeDisconnected', c)
  endfor
  const cbs = callbacks
  callbacks = {}
  for Cb in values(cbs)
    Cb({code: GONE, message: 'ccbridge exited'}, v:null)
  endfor
  Detach()
  review.CloseAll('shutdown')
  reload.Update()
  tools.Ended()
  Settle({}, 'ccbridge exited')
  if !stopping && was != 'stopped' && type(v:exiting) == v:t_none
    const info = job_info(j)
    const signal = get(info, 'termsig', '')
    failure = printf('the sidecar exited (status %d%s)', code, signal != '' ? ', signal ' .. signal : '')
    untold = {tok: tok, msg: failure .. '.'}
    if closed_tok == tok
      TellExit(tok)
    else
      timer_start(1000, (_) => TellExit(tok))
    endif
  endif
  stopping = false
  job = v:null
  if restart
    restart = false
    Start()
  endif
enddef

def OnClose(tok: number, ch: channel)
  closed_tok = tok
  TellExit(tok)
enddef

# Tells the exit of the sidecar of `tok`, with its last stderr lines, if
# it is not told yet.
def TellExit(tok: number)
  if get(untold, 'tok', -1) != tok
    return
  endif
  var msg = untold.msg
  untold = {}
  # A sidecar started since has stderr lines of its own.
  if tok == token && !empty(stderr)
    msg ..= "\n" .. join(stderr, "\n")
  endif
  Message(msg .. "\nRun :CCBridgeStatus, then :CCBridgeStart.", 'error')
enddef

def Attach()
  augroup ccbridge
    autocmd!
    autocmd VimLeavePre * ccbridge#OnVimLeave()
    autocmd DirChanged * ccbridge#OnDirChanged()
  augroup END
  context.Attach()
  diags.Attach()
  reload.Attach()
enddef

def Detach()
  augroup ccbridge
    autocmd!
  augroup END
  context.Detach()
  diags.Detach()
  reload.Detach()
enddef

# Starts the sidecar (nothing if it runs or is starting).
export def Start()
  if stopping
    # :CCBridgeStop then :CCBridgeStart: start once it has exited.
    restart = true
    return
  endif
  if status != 'stopped'
    return
  endif
  failure = ''
  const o = Options()
  const problems = RemoteProblems()
  if !empty(problems)
    const msg = 'not started: ' .. join(problems, '; ')
    failure = msg
    MessageOnce(msg, 'error', 'remote-options')
    Settle({}, msg)
    return
  endif
  if IsRemote() && !executable(o.cmd[0])
    const msg = printf('`%s` (the `cmd` prefix) not found', o.cmd[0])
    failure = msg
    MessageOnce(msg, 'error', 'no-binary')
    Settle({}, msg)
    return
  endif
  if !IsRemote() && !executable(o.bin)
    const msg = printf('`%s` not found: install ccbridge (cargo install --path crates/ccbridge in a ccbridge checkout) or set g:ccbridge.bin to its full path', o.bin)
    failure = msg
    MessageOnce(msg, 'error', 'no-binary')
    Settle({}, msg)
    return
  endif
  # Each local folder under its real name too (remote.WithRealNames).
  path_map = remote.WithRealNames(remote.Normalize(o.path_map)[0], (p: string): string => resolve(p))
  token += 1
  const tok = token
  stderr = []
  reader = frames.Reader()
  callbacks = {}
  # Request ids count from 1 for each sidecar.
  next_id = 0
  var j: job
  try
    j = job_start(Command(), {
      in_mode: 'lsp',
      out_mode: 'raw',
      err_mode: 'nl',
      out_cb: funcref(OnRaw, [tok]),
      err_cb: funcref(OnErr, [tok]),
      exit_cb: funcref(OnExit, [tok]),
      close_cb: funcref(OnClose, [tok]),
      noblock: true,
      stoponexit: 'term',
    })
  catch
    failure = 'could not start the sidecar: ' .. v:exception
    MessageOnce(failure, 'error', 'spawn')
    Settle({}, v:exception)
    return
  endtry
  if job_status(j) == 'fail'
    const msg = printf('could not start the sidecar (`%s`)', join(Command()))
    failure = msg
    MessageOnce(msg, 'error', 'spawn')
    Settle({}, msg)
    return
  endif
  job = j
  chan = job_getchannel(j)
  status = 'starting'
  var params: dict<any> = {
    protocolVersion: PROTOCOL,
    ideName: IdeName(),
    workspaceFolders: WorkspaceFolders(),
    capabilities: {
      diff: true,
      openFile: true,
      saveDocument: true,
      closeTab: false,
      reformat: false,
      executeCode: false,
      approve: o.tools.approve,
      # An agent answered in its terminal (Gemini CLI) writes the review's
      # text as the user left it.
      reviewText: true,
    },
    # The session review's quickfix list follows `changesChanged`.
    changes: true,
    # Whose diagnostics Claude gets (ccbridge's language servers for the
    # files Vim reports nothing for, by default).
    diagnostics: o.diagnostics.source,
  }
  if !IsRemote()
    # Vim's pid means nothing on another machine (Claude would delete a
    # lock whose pid is dead there): a remote sidecar records its parent.
    params.pid = getpid()
  endif
  Request('initialize', params, funcref(OnInitialized, [tok]))
  Attach()
  # The editor's state goes out at once: the sidecar accepts it before
  # `initialize` is answered and replays it to each Claude session.
  context.Reset()
  context.ReportAll()
  diags.Reset()
  diags.ReportAll()
enddef

# Stops the sidecar: `shutdown`, then its stdin is closed (SIGTERM after a
# second). It removes its lock file; open reviews close.
export def Stop()
  restart = false
  if type(job) != v:t_job || job_status(job) != 'run'
    return
  endif
  stopping = true
  const j = job
  Request('shutdown', {})
  try
    ch_close_in(chan)
  catch
  endtry
  timer_start(1000, (_) => job_status(j) == 'run' ? job_stop(j, 'term') : 0)
enddef

# VimLeavePre: the sidecar removes its lock file before Vim is gone (Vim
# also sends it SIGTERM when it exits). Waits at most half a second.
export def OnVimLeave()
  if type(job) != v:t_job || job_status(job) != 'run'
    return
  endif
  stopping = true
  const j = job
  Request('shutdown', {})
  try
    ch_close_in(chan)
  catch
  endtry
  # The exit callback may run while this waits.
  const start = reltime()
  while job_status(j) == 'run' && reltimefloat(reltime(start)) < 0.5
    sleep 10m
  endwhile
enddef

export def OnDirChanged()
  if !empty(Options().workspace_folders)
    return
  endif
  ide_name = ''
  Notify('workspaceChanged', {workspaceFolders: WorkspaceFolders(), ideName: IdeName()})
  if !empty(init)
    DistinctName()
  endif
enddef

# ---------------------------------------------------------------- status

# "" when the sidecar is stopped; "Claude …" while it starts; "Claude ○"
# without a session, "Claude ●" (with a count above one) with some; then
# the reviews waiting for a verdict, " ◆N".
export def Statusline(): string
  if status == 'stopped'
    return ''
  endif
  if status == 'starting'
    return 'Claude …'
  endif
  const n = len(clients)
  var line = n == 0 ? 'Claude ○' : n == 1 ? 'Claude ●' : 'Claude ●' .. n
  const reviews = len(review.Pending())
  if reviews > 0
    line ..= printf(' ◆%d', reviews)
  endif
  return line
enddef

def AgentName(c: dict<any>): string
  const agent = get(c, 'agent', {})
  if type(agent) == v:t_dict && type(get(agent, 'name', 0)) == v:t_string
    return ' (' .. agent.name .. ')'
  endif
  return ''
enddef

# The status as lines of text.
export def StatusLines(): list<string>
  var out: list<string> = []
  const o = Options()
  if status == 'stopped'
    out->add(failure == '' ? 'ccbridge: stopped (:CCBridgeStart starts it)'
      : printf('ccbridge: stopped: %s (:CCBridgeStart starts it)', failure))
    if IsRemote()
      out->add(printf('remote: through %s, binary there: %s', string(o.cmd), o.bin))
      const problems = RemoteProblems()
      if !empty(problems)
        out->add('not started: ' .. join(problems, '; '))
      endif
    else
      out->add(printf('binary: %s', executable(o.bin) ? exepath(o.bin) : '`' .. o.bin .. '` not found (set g:ccbridge.bin)'))
    endif
    return out
  endif
  const server = get(init, 'serverInfo', {})
  const pid = type(job) == v:t_job ? job_info(job).process : -1
  var proto = get(init, 'protocolVersion', '?')
  out->add(printf('ccbridge %s (%s, pid %d), editor protocol %s%s', type(server) == v:t_dict ? get(server, 'version', '?') : '?',
    status, pid, proto, type(proto) == v:t_number && proto != PROTOCOL ? printf(' (this plugin speaks %d: update them together)', PROTOCOL) : ''))
  if IsRemote()
    out->add(printf('remote: through `%s`, path map %s', join(o.cmd), string(path_map)))
    out->add(printf('binary (on the sidecar''s side): %s', o.bin))
  else
    out->add(printf('binary: %s', exepath(o.bin)))
  endif
  const lock = get(init, 'lockFile', v:null)
  out->add(printf('port %s, lock file %s', get(init, 'port', '?'), type(lock) == v:t_string ? lock : 'none'))
  out->add('workspace: ' .. join(WorkspaceFolders(), ', ') .. ', named ' .. IdeName())
  const tools_info = get(init, 'tools', v:null)
  if type(tools_info) == v:t_dict
    const mode = get(tools_info, 'approvalMode', '?')
    const asking = {'write-only': 'writes and commands', always: 'every call', never: 'nothing'}
    out->add(printf('workspace tools (MCP): %s, asking before %s', get(tools_info, 'url', '?'), get(asking, mode, mode)))
  endif
  if empty(clients)
    out->add(printf('no Claude session connected (:CCBridgeClaude, or run claude with CLAUDE_CODE_SSE_PORT=%s, or /ide in Claude)', get(init, 'port', '?')))
  endif
  for key in sort(keys(clients), 'N')
    const c = clients[key]
    const cpid = get(c, 'pid', v:null)
    out->add(printf('Claude session %s: %s %s%s, pid %s', key, get(c, 'name', '?'), get(c, 'version', '?'), AgentName(c),
      type(cpid) == v:t_number ? string(cpid) : '?'))
  endfor
  for r in review.Pending()
    out->add(printf('review %d waiting: %s', r.id, fnamemodify(r.path, ':~:.')))
  endfor
  return out
enddef

export def ShowStatus()
  echo join(StatusLines(), "\n")
enddef
