vim9script
# Buffers follow their files when Claude (or anything) writes them.
#
# Vim has no file watcher, so while a Claude session is connected (and
# `reload` is on) a timer runs `:checktime` every `reload_interval_ms`: one
# stat() per loaded buffer, and Vim's own change detection (nanosecond
# mtimes, size, mode). Only during that `:checktime` a FileChangedShell
# autocommand decides instead of Vim's prompt: a buffer without unsaved
# changes is reloaded as 'autoread' does it (undo history kept, see
# 'undoreload'), a buffer with unsaved changes is left alone and you get one
# notice per change of the file. Outside of it Vim behaves as it always
# does. Nothing runs while no session is connected.

import autoload 'ccbridge.vim' as bridge
import autoload 'ccbridge/context.vim'

var timer = -1
# The file's stamp (mtime:size) last told about, by path.
var told: dict<string> = {}
var notices: list<string> = []
# Paths about to be written (an accepted review), with when to give up,
# checked every 100 ms until their buffer followed; and the paths the last
# check found changed.
var expected: dict<float> = {}
var burst = -1
var changed: dict<bool> = {}

export def Running(): bool
  return timer != -1
enddef

# Runs the check while a Claude session is connected, and nothing otherwise.
export def Update()
  const o = bridge.Options()
  if o.reload && bridge.Connected() && bridge.Status() != 'stopped'
    if timer == -1
      timer = timer_start(max([o.reload_interval_ms, 50]), (_) => Check(), {repeat: -1})
    endif
  elseif timer != -1
    timer_stop(timer)
    timer = -1
  endif
enddef

# FileChangedShell during our :checktime.
export def OnChanged()
  const buf = str2nr(expand('<abuf>'))
  changed[context.PathOf(buf)] = true
  if v:fcs_reason ==# 'deleted'
    v:fcs_choice = ''
    return
  endif
  if !getbufvar(buf, '&modified')
    v:fcs_choice = 'reload'
    return
  endif
  const path = fnamemodify(bufname(buf), ':p')
  const stamp = getftime(path) .. ':' .. getfsize(path)
  if get(told, path, '') !=# stamp
    told[path] = stamp
    notices->add(path)
  endif
  v:fcs_choice = ''
enddef

# Checks every loaded buffer, or only `bufs`.
export def Check(bufs: list<number> = [])
  # Not while you type a command line, answer a prompt or are in Insert
  # mode: the next tick comes soon.
  if mode() !~# '^[nt]' && mode() !~# '^[vVsS]' && mode() !=# "\<C-v>"
    return
  endif
  augroup ccbridge_reload
    autocmd!
    autocmd FileChangedShell * ccbridge#reload#OnChanged()
  augroup END
  try
    if empty(bufs)
      silent! checktime
    else
      for buf in bufs
        execute 'silent! checktime ' .. buf
      endfor
    endif
  finally
    augroup ccbridge_reload
      autocmd!
    augroup END
  endtry
  const paths = notices
  notices = []
  for path in paths
    bridge.Message(printf("%s changed on disk but has unsaved changes here, so it was not reloaded. :e! takes the file's text, :w keeps yours (Vim asks before overwriting).",
      fnamemodify(path, ':~:.')), 'warn')
  endfor
enddef

def Burst()
  const now = reltimefloat(reltime())
  var bufs: list<number> = []
  for [path, until] in items(expected)
    const buf = context.BufferFor(path)
    if now > until || buf <= 0
      remove(expected, path)
    else
      bufs->add(buf)
    endif
  endfor
  if !empty(bufs)
    changed = {}
    Check(bufs)
    for path in keys(changed)
      if has_key(expected, path)
        remove(expected, path)
      endif
    endfor
  endif
  if empty(expected) && burst != -1
    timer_stop(burst)
    burst = -1
  endif
enddef

# `path` is about to be written (a review was accepted: Claude, or ccbridge
# for the workspace tools, writes it next): its buffer follows at once,
# whether or not a Claude session is connected.
export def Expect(path: string)
  if !bridge.Options().reload || context.BufferFor(path) <= 0
    return
  endif
  expected[resolve(fnamemodify(path, ':p'))] = reltimefloat(reltime()) + 5.0
  if burst == -1
    burst = timer_start(100, (_) => Burst(), {repeat: -1})
  endif
enddef

export def Attach()
  Update()
enddef

export def Detach()
  if timer != -1
    timer_stop(timer)
    timer = -1
  endif
enddef
