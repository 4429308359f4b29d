vim9script
# The workspace tools' approvals and command output (docs/editor-protocol.md,
# `approve` and `commandEvent`): a command runs only after you said yes in a
# popup dialog (y: allow; n or <Esc>: deny; nothing blocks while it waits),
# and its output is shown live in a scratch buffer below the current
# window, terminal escapes removed.
#
# Only the sidecar's rendering of a command is shown (`commandShown`,
# `cwdShown`, `summary`), never the raw `command`: it may hold bidi controls,
# zero-width or control characters that draw differently from what runs.
# The sidecar shows those as ⟨U+XXXX⟩ markers and lists them, and the popup
# warns when it did.

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

const NOT_SHOWN = '(not shown: this ccbridge is too old to show it safely)'

# The warning line of an approval whose text has hidden characters, or [].
def Warning(p: dict<any>): list<string>
  const hidden = get(p, 'hiddenCharacters', [])
  const n = type(hidden) == v:t_list ? len(hidden) : 0
  if n == 0
    return []
  endif
  return [printf(' ⚠ this contains %d hidden or look-alike character%s, shown as ⟨U+…⟩:', n, n == 1 ? '' : 's'),
    '   read it as shown.', '']
enddef

# `approve`: asks, and answers once you decided (no time limit).
export def Approve(p: dict<any>, tok: number, reqid: any)
  if !bridge.Options().tools.approve
    bridge.Reply(tok, reqid, {approved: false})
    return
  endif
  var lines = Warning(p)
  if type(get(p, 'command', v:null)) == v:t_string
    const shown = get(p, 'commandShown', v:null)
    lines += [' Claude wants to run:']
    lines += split(type(shown) == v:t_string ? shown : NOT_SHOWN, "\n", true)->map((_, l) => '   ' .. l)
    lines += [printf(' in %s', Str(get(p, 'cwdShown', '?')))]
  else
    lines += [' Claude wants to: ' .. Str(get(p, 'summary', get(p, 'tool', '?')))]
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

# The text of the approval popups still open (for tests).
export def PendingText(): list<string>
  return popups->mapnew((_, id) => join(getbufline(winbufnr(id), 1, '$'), "\n"))
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
  setline(1, split('$ ' .. command, "\n", true) + ['(in ' .. cwd .. ')', ''])
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
    const shown = get(p, 'commandShown', v:null)
    OpenView(id, type(shown) == v:t_string ? shown : NOT_SHOWN, Str(get(p, 'cwdShown', '?')))
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
