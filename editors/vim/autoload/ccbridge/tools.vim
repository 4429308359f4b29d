vim9script
# The workspace tools' approvals and command output (docs/editor-protocol.md,
# `approve` and `commandEvent`): a command runs only after you said yes in a
# popup dialog (y: allow; n or <Esc>: deny; nothing blocks while it waits),
# and its output is shown live in a scratch buffer below the current
# window, terminal escapes removed.

import autoload 'ccbridge.vim' as bridge

# Output buffers by run id, and the unfinished last line of each.
var runs: dict<number> = {}
# Approval popups still open.
var popups: list<number> = []

def Str(v: any): string
  return type(v) == v:t_string ? v : type(v) == v:t_none ? '' : string(v)
enddef

def IsTrue(v: any): bool
  return type(v) == v:t_bool && v
enddef

def Answered(tok: number, reqid: any, popup: number, result: number)
  const i = index(popups, popup)
  if i >= 0
    remove(popups, i)
  endif
  bridge.Reply(tok, reqid, {approved: result == 1})
enddef

# `approve`: asks, and answers once you decided (no time limit).
export def Approve(p: dict<any>, tok: number, reqid: any)
  if !bridge.Options().tools.approve
    bridge.Reply(tok, reqid, {approved: false})
    return
  endif
  var lines: list<string>
  const command = get(p, 'command', v:null)
  if type(command) == v:t_string
    lines = [' Claude wants to run:', '   ' .. command, printf(' in %s', get(p, 'cwd', '?'))]
  else
    lines = [' Claude wants to: ' .. Str(get(p, 'summary', get(p, 'tool', '?')))]
  endif
  lines += ['', ' Allow? (y)es / (n)o ']
  const id = popup_dialog(lines, {
    title: ' ccbridge ',
    filter: 'popup_filter_yesno',
    maxwidth: max([40, &columns - 10]),
    callback: (popup, result) => Answered(tok, reqid, popup, result),
  })
  popups->add(id)
enddef

export def Pending(): number
  return len(popups)
enddef

def Clean(data: string): string
  # CSI and OSC sequences, then lone carriage returns.
  var text = substitute(data, "\e\\[[0-9;?]*[ -/]*[@-~]", '', 'g')
  text = substitute(text, "\e\\][^\x07\e]*\\%(\x07\\|\e\\\\\\)", '', 'g')
  text = substitute(text, "\e[@-_]", '', 'g')
  return substitute(text, "\r\\ze\\%(\n\\|$\\)", '', 'g')
enddef

def Append(buf: number, data: string)
  if !bufexists(buf)
    return
  endif
  const parts = split(Clean(data), "\n", true)
  const last = getbufline(buf, '$')[0]
  setbufline(buf, '$', last .. parts[0])
  if len(parts) > 1
    appendbufline(buf, '$', parts[1 :])
  endif
  for win in win_findbuf(buf)
    win_execute(win, 'normal! G')
  endfor
enddef

def OpenView(id: any, command: string, cwd: string)
  const back = win_getid()
  const height = max([3, float2nr(floor(&lines * bridge.Options().tools.height))])
  botright new
  execute 'resize ' .. height
  setlocal buftype=nofile bufhidden=wipe noswapfile nobuflisted
  execute 'silent keepalt file ' .. fnameescape(printf('ccbridge://command/%s', id))
  setline(1, ['$ ' .. command, '(in ' .. cwd .. ')', ''])
  runs[string(id)] = bufnr()
  win_gotoid(back)
enddef

# `commandEvent`: a command you allowed is running.
export def Event(p: dict<any>)
  if bridge.Options().tools.output ==# 'none'
    return
  endif
  const id = get(p, 'id', v:null)
  const event = get(p, 'event', '')
  if event ==# 'started'
    OpenView(id, Str(get(p, 'command', '')), Str(get(p, 'cwd', '')))
    return
  endif
  const buf = get(runs, string(id), 0)
  if buf == 0
    return
  endif
  if event ==# 'output'
    Append(buf, type(get(p, 'data', 0)) == v:t_string ? p.data : '')
  elseif event ==# 'exited'
    const code = get(p, 'exitCode', v:null)
    const how = IsTrue(get(p, 'timedOut', false)) ? 'stopped: it ran too long'
      : IsTrue(get(p, 'cancelled', false)) ? 'stopped: Claude cancelled it'
      : type(code) == v:t_number ? 'exit ' .. code : 'ended by a signal'
    Append(buf, (getbufline(buf, '$')[0] == '' ? '' : "\n") .. '[' .. how .. ']')
    remove(runs, string(id))
  endif
enddef

# The sidecar is gone: nobody waits for an answer any more.
export def Ended()
  for id in copy(popups)
    popup_close(id, -1)
  endfor
  popups = []
  runs = {}
enddef
