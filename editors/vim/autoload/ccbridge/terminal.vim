vim9script
# :CCBridgeClaude: Claude Code (or another agent the sidecar offers) in a
# :terminal window, started with the sidecar's environment
# (CLAUDE_CODE_SSE_PORT, ...) so it connects to this Vim at once, and with
# loopback excluded from any HTTP proxy.
#
# One terminal per agent: the command shows it again (or focuses it) while
# the agent runs in it, and starts a new one once it has exited;
# :CCBridgeClaude! starts another at any time.

import autoload 'ccbridge.vim' as bridge

# The terminal buffer of each agent, by agent id.
var buffers: dict<number> = {}

# `no_proxy` with the loopback names added: a proxy in the environment
# would otherwise catch the connection to the editor.
def NoProxy(current: string): string
  const add = 'localhost,127.0.0.1,::1'
  return current == '' ? add : current .. ',' .. add
enddef

def Running(buf: number): bool
  return buf > 0 && bufexists(buf) && term_getstatus(buf) =~# 'running'
enddef

# The agents the sidecar offers (protocol 3's `agents`), by id.
def Offered(init: dict<any>): dict<dict<any>>
  var out: dict<dict<any>> = {}
  const agents = get(init, 'agents', [])
  for a in type(agents) == v:t_list ? agents : []
    if type(a) == v:t_dict && type(get(a, 'id', 0)) == v:t_string
      out[a.id] = a
    endif
  endfor
  return out
enddef

# Agent ids the first argument may name.
def Known(): list<string>
  var ids = ['claude'] + keys(bridge.Options().terminal.cmds)
  for id in keys(Offered(bridge.Init()))
    if index(ids, id) < 0
      ids->add(id)
    endif
  endfor
  return ids
enddef

export def Complete(lead: string, line: string, pos: number): list<string>
  # Only the first argument is an agent.
  if line[: pos - 1] =~ '^\S*\s\+\S\+\s'
    return []
  endif
  return filter(sort(Known()), (_, id) => stridx(id, lead) == 0)
enddef

def OpenWindow()
  const t = bridge.Options().terminal
  const vertical = t.position ==# 'right' || t.position ==# 'left'
  const total = vertical ? &columns : &lines
  const size = max([10, float2nr(floor(total * t.size))])
  const where = t.position ==# 'right' || t.position ==# 'bottom' ? 'botright' : 'topleft'
  execute printf('%s %snew', where, vertical ? 'vertical ' : '')
  execute printf('%sresize %d', vertical ? 'vertical ' : '', size)
  # The empty buffer :new made is replaced by the terminal and goes away.
  setlocal bufhidden=wipe
enddef

def OnExit(agent: string, buf: number, status: number)
  if status != 0 || !bridge.Options().terminal.auto_close
    return
  endif
  timer_start(0, (_) => {
    if !bufexists(buf)
      return
    endif
    for win in win_findbuf(buf)
      if winnr('$') > 1 || tabpagenr('$') > 1
        win_execute(win, 'close!')
      endif
    endfor
    execute 'silent! bwipeout! ' .. buf
  })
enddef

def Launch(agent: string, args: list<string>, init: dict<any>, err: string)
  const name = agent ==# 'claude' ? 'Claude' : agent
  if empty(init)
    bridge.Message(printf('cannot start %s: the sidecar is not running: %s', name, err), 'error')
    return
  endif
  const t = bridge.Options().terminal
  var env: dict<any>
  var cmd: list<string>
  const offered = Offered(init)
  # Protocol 3 lists the agents offered; without the list only Claude is.
  const listed = type(get(init, 'agents', 0)) == v:t_list
  if (agent !=# 'claude' || listed) && !has_key(offered, agent)
    bridge.Message(printf('the sidecar does not offer %s (it offers: %s). Update ccbridge, or add it to its --agents.',
      agent, empty(offered) ? 'claude' : join(sort(keys(offered)), ', ')), 'error')
    return
  endif
  if agent ==# 'claude'
    env = type(get(init, 'env', 0)) == v:t_dict ? copy(init.env) : {}
    cmd = copy(t.cmd)
  else
    const a = offered[agent]
    env = type(get(a, 'env', 0)) == v:t_dict ? copy(a.env) : {}
    const cmds = t.cmds
    cmd = type(get(cmds, agent, 0)) == v:t_list ? copy(cmds[agent]) : [agent]
  endif
  if bridge.IsRemote() && cmd == [agent]
    # An agent finds an editor by what its own machine holds (Claude: the
    # lock files): one started here would never see the sidecar's, on the
    # other side of the prefix.
    const how = agent ==# 'claude' ? printf('`CLAUDE_CODE_SSE_PORT=%d claude`', get(init, 'port', 0)) : printf('`%s`, with the environment :CCBridgeStatus shows', agent)
    bridge.Message(printf('the sidecar runs through `%s`, so a %s started here would not find it (its lock file is on that side). Start it there (%s), or set terminal.%s to a command that does, e.g. [''ssh'', ''-t'', ''<host>'', ''cd <folder> && %s'']',
      join(bridge.Options().cmd), name, how, agent ==# 'claude' ? 'cmd' : 'cmds.' .. agent, agent), 'warn')
    return
  endif
  env.no_proxy = NoProxy(getenv('no_proxy') == v:null ? '' : getenv('no_proxy'))
  env.NO_PROXY = NoProxy(getenv('NO_PROXY') == v:null ? '' : getenv('NO_PROXY'))
  extend(env, t.env)
  map(env, (_, v) => type(v) == v:t_string ? v : string(v))
  # The sidecar's arguments for the agent come first (for Claude Code,
  # --settings with a hook that makes every edit ask, so it is reviewed
  # here even in the auto mode Claude starts in).
  const own = has_key(offered, agent) ? get(offered[agent], 'args', []) : []
  if type(own) == v:t_list
    cmd += mapnew(own, (_, v) => type(v) == v:t_string ? v : string(v))
  endif
  cmd += args
  if empty(cmd) || !executable(cmd[0])
    bridge.Message(printf('`%s` not found (set g:ccbridge.terminal.%s)', empty(cmd) ? '' : cmd[0],
      agent ==# 'claude' ? 'cmd' : 'cmds'), 'error')
    return
  endif
  OpenWindow()
  var buf: number
  try
    buf = term_start(cmd, {
      curwin: true,
      env: env,
      term_kill: 'term',
      exit_cb: (_, status) => OnExit(agent, buffers[agent], status),
    })
  catch
    bridge.Message(printf('could not start %s: %s', join(cmd), v:exception), 'error')
    close
    return
  endtry
  if buf == 0
    bridge.Message(printf('could not start %s', join(cmd)), 'error')
    return
  endif
  buffers[agent] = buf
  setbufvar(buf, 'ccbridge_claude', agent)
enddef

# :CCBridgeClaude [agent] [args]: `agent` is claude (the default) or
# another agent the sidecar offers; `args` go to the program.
export def Open(fargs: list<string>, new: bool)
  var agent = 'claude'
  var args = fargs
  if !empty(args) && index(Known(), args[0]) >= 0
    agent = args[0]
    args = args[1 :]
  endif
  const buf = get(buffers, agent, 0)
  if !new && Running(buf)
    const wins = win_findbuf(buf)
    if !empty(wins)
      win_gotoid(wins[0])
    else
      OpenWindow()
      execute 'buffer ' .. buf
    endif
    if term_getstatus(buf) =~# 'normal'
      # Back to Terminal-Job mode, as when it was started.
      feedkeys('i', 'n')
    endif
    if !empty(args)
      bridge.Message(printf('%s is already running here; :CCBridgeClaude! starts another', agent))
    endif
    return
  endif
  bridge.OnReady((init, err) => Launch(agent, args, init, err))
enddef

# The terminal buffer :CCBridgeClaude started for `agent`, or 0.
export def Buffer(agent = 'claude'): number
  const buf = get(buffers, agent, 0)
  return buf > 0 && bufexists(buf) ? buf : 0
enddef
