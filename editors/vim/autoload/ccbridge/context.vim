vim9script
# What Claude sees of the editor: the selection or cursor
# (`selectionChanged`), the open buffers with the active one
# (`openEditorsChanged`) and their unsaved state (`documentDirtyChanged`).
#
# Cost: a cursor move starts a timer unless one is pending (nothing else);
# the position is read when it fires. Leaving Visual mode reports the
# selection at once from the '< and '> marks, so a quick `Vy` is never
# lost, and keeps it `selection.visual_hold_ms` before the bare cursor
# replaces it, so it is still Claude's selection when you jump to Claude's
# terminal. Buffers with a 'buftype' (terminals, reviews, help) report
# nothing: the last position in a file stays. Buffer events arm one timer;
# the buffer list is sent when it changed.

import autoload 'ccbridge.vim' as bridge
import autoload 'ccbridge/position.vim'

var sel_timer = -1
var last_key = ''
# reltime() in seconds before which a bare cursor is not reported.
var hold_until = 0.0
var list_timer = -1
var last_list = ''
var dirty: dict<bool> = {}
# The file buffer entered last: "active" while you are in a terminal.
var active = -1

def Now(): float
  return reltimefloat(reltime())
enddef

# The Visual kind ("v", "V", CTRL-V) of mode `m`, Select mode included, or ''.
def VisualKind(m: string): string
  const c = strpart(m, 0, 1)
  if c ==# 'v' || c ==# 's'
    return 'v'
  elseif c ==# 'V' || c ==# 'S'
    return 'V'
  elseif c ==# "\<C-v>" || c ==# "\<C-s>"
    return "\<C-v>"
  endif
  return ''
enddef

# Buffer number (as a string) -> [its name, PathOf() it].
var real_names: dict<list<string>> = {}

# The file `buf` is named after, as the sidecar and the agents know it: its
# full path with symbolic links resolved. Vim names a file opened through a
# link (`vim ~/link/a.py`) by the link, Claude, the sidecar and the
# workspace tools by its real path: under the link's name its unsaved state
# and selection would never meet theirs. '' for a buffer without a name.
# Kept per buffer while its name stays, as a cursor move asks for it.
export def PathOf(buf: number): string
  const name = bufname(buf)
  if name == ''
    return ''
  endif
  const known = get(real_names, string(buf), [])
  if !empty(known) && known[0] ==# name
    return known[1]
  endif
  const path = resolve(fnamemodify(name, ':p'))
  real_names[string(buf)] = [name, path]
  return path
enddef

# The buffer's file path (PathOf()) if it is a file the user edits, else ''.
export def FileOf(buf: number): string
  if getbufvar(buf, '&buftype') != ''
    return ''
  endif
  return PathOf(buf)
enddef

def IsFile(buf: number): bool
  return bufexists(buf) && buflisted(buf) && getbufvar(buf, '&buftype') == '' && bufname(buf) != ''
enddef

# The loaded buffer editing `path`, or 0 (by full name, not by bufnr()'s
# pattern matching; a buffer named through a symbolic link by its real
# path too, see PathOf()).
export def BufferFor(path: string): number
  if path == ''
    return 0
  endif
  const want = simplify(fnamemodify(path, ':p'))
  const real = resolve(want)
  for info in getbufinfo({bufloaded: 1})
    if info.name != '' && (simplify(info.name) ==# want || PathOf(info.bufnr) ==# real)
      return info.bufnr
    endif
  endfor
  return 0
enddef

def Send(path: string, sel: dict<any>)
  const s = sel.selection.start
  const e = sel.selection.end
  const key = printf('%s:%d:%d:%d:%d:%d', path, s.line, s.character, e.line, e.character, strlen(sel.text))
  if key ==# last_key
    return
  endif
  last_key = key
  bridge.Notify('selectionChanged', {filePath: path, text: sel.text, selection: sel.selection})
enddef

# Reports the current selection or cursor (the timer's callback).
export def Flush()
  sel_timer = -1
  const o = bridge.Opts().selection
  if !o.enabled
    return
  endif
  const path = FileOf(bufnr())
  if path == ''
    return
  endif
  const kind = VisualKind(mode())
  if kind != ''
    const to_eol = kind !=# 'V' && getcurpos()[4] >= v:maxcol
    Send(path, position.Visual(kind, getpos('v'), getpos('.'), to_eol))
    return
  endif
  const wait = hold_until - Now()
  if wait > 0
    sel_timer = timer_start(float2nr(ceil(wait * 1000)), (_) => Flush())
    return
  endif
  Send(path, position.Cursor(line('.'), col('.')))
enddef

# A cursor move: all it costs is starting a timer if none is pending.
export def OnMove()
  if sel_timer != -1
    return
  endif
  const ms = bridge.Opts().selection.debounce_ms
  if ms > 0
    sel_timer = timer_start(ms, (_) => Flush())
  else
    Flush()
  endif
enddef

export def OnModeChanged()
  const old = VisualKind(get(v:event, 'old_mode', ''))
  if old == '' || VisualKind(get(v:event, 'new_mode', '')) != ''
    # Entering Visual mode (`V` moves no cursor) or switching kinds.
    OnMove()
    return
  endif
  const o = bridge.Opts().selection
  const path = FileOf(bufnr())
  if path == '' || !o.enabled
    return
  endif
  const to_eol = old !=# 'V' && getpos("'>")[2] >= v:maxcol
  Send(path, position.Visual(old, getpos("'<"), getpos("'>"), to_eol))
  hold_until = Now() + o.visual_hold_ms / 1000.0
  if sel_timer != -1
    timer_stop(sel_timer)
  endif
  sel_timer = timer_start(o.visual_hold_ms, (_) => Flush())
enddef

# ---------------------------------------------------------------- buffers

# The tabs as the protocol describes them.
export def Tabs(): list<dict<any>>
  var tabs: list<dict<any>> = []
  for info in getbufinfo({buflisted: 1})
    if info.name == '' || getbufvar(info.bufnr, '&buftype') != ''
      continue
    endif
    var tab: dict<any> = {
      path: info.name,
      isActive: info.bufnr == active,
      isDirty: info.changed != 0,
      label: fnamemodify(info.name, ':t'),
    }
    const ft = getbufvar(info.bufnr, '&filetype')
    if ft != ''
      tab.languageId = ft
    endif
    tabs->add(tab)
  endfor
  return tabs
enddef

def ReportList()
  list_timer = -1
  const tabs = Tabs()
  const key = json_encode(tabs)
  if key !=# last_list
    last_list = key
    bridge.Notify('openEditorsChanged', {tabs: tabs})
  endif
enddef

# A buffer event: the list is sent after 50 ms of them.
export def ArmList()
  if list_timer == -1
    list_timer = timer_start(50, (_) => ReportList())
  endif
enddef

# Sends `buf`'s unsaved state if it changed.
export def CheckDirty(buf: number)
  if !IsFile(buf)
    return
  endif
  const path = PathOf(buf)
  const now = !!getbufvar(buf, '&modified')
  if get(dirty, path, false) != now
    dirty[path] = now
    bridge.Notify('documentDirtyChanged', {path: path, isDirty: now})
    ArmList()
  endif
enddef

export def OnBufEnter()
  const buf = bufnr()
  if IsFile(buf)
    active = buf
  endif
  ArmList()
  OnMove()
enddef

# Sends everything again (the sidecar started).
export def ReportAll()
  ReportList()
  if bridge.Options().selection.enabled
    Flush()
  endif
enddef

# Forgets what was sent (a new sidecar).
export def Reset()
  last_key = ''
  last_list = ''
  dirty = {}
  if IsFile(bufnr())
    active = bufnr()
  endif
enddef

export def Attach()
  if IsFile(bufnr())
    active = bufnr()
  endif
  augroup ccbridge_context
    autocmd!
    autocmd CursorMoved,CursorMovedI * ccbridge#context#OnMove()
    autocmd ModeChanged * ccbridge#context#OnModeChanged()
    autocmd BufEnter * ccbridge#context#OnBufEnter()
    autocmd BufAdd,BufDelete,BufWipeout,BufFilePost,FileType * ccbridge#context#ArmList()
    autocmd TextChanged,TextChangedI,TextChangedP,InsertLeave * ccbridge#context#CheckDirty(bufnr())
    autocmd BufWritePost,BufReadPost * ccbridge#context#CheckDirty(str2nr(expand('<abuf>')))
    autocmd OptionSet modified ccbridge#context#CheckDirty(bufnr())
  augroup END
enddef

export def Detach()
  augroup ccbridge_context
    autocmd!
  augroup END
  for t in [sel_timer, list_timer]
    if t != -1
      timer_stop(t)
    endif
  endfor
  sel_timer = -1
  list_timer = -1
enddef
