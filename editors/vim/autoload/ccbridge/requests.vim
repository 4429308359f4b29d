vim9script
# The sidecar's requests to the editor (docs/editor-protocol.md, "ccbridge
# → editor"): Handle() returns {result: ...}, {error: {code, message}}, or
# {later: true} for an answer given later with ccbridge.Reply().

import autoload 'ccbridge/context.vim'
import autoload 'ccbridge/review.vim'
import autoload 'ccbridge/tools.vim'

def Err(message: string): dict<any>
  return {error: {code: 1, message: message}}
enddef

# A window to open files in: the current one if it shows a file buffer,
# else the previous window, else another file window of this tab, else a
# new split beside the current window (e.g. when only a terminal is open).
def FileWindow(): number
  const Usable = (win: number): bool => {
    const info = getwininfo(win)
    if empty(info) || win_gettype(win) != ''
      return false
    endif
    return getbufvar(info[0].bufnr, '&buftype') == '' && !getwinvar(win, '&diff')
  }
  const cur = win_getid()
  if Usable(cur)
    return cur
  endif
  const prev = win_getid(winnr('#'))
  if prev != 0 && Usable(prev)
    return prev
  endif
  for nr in range(1, winnr('$'))
    if Usable(win_getid(nr))
      return win_getid(nr)
    endif
  endfor
  leftabove vsplit
  enew
  return win_getid()
enddef

def OpenFile(p: dict<any>): dict<any>
  const path = get(p, 'filePath', '')
  if type(path) != v:t_string || path == ''
    return Err('openFile needs a filePath')
  endif
  const back = win_getid()
  win_gotoid(FileWindow())
  try
    if context.BufferFor(path) != bufnr()
      if &modified && !&hidden
        execute 'split ' .. fnameescape(path)
      else
        execute 'edit ' .. fnameescape(path)
      endif
    endif
  catch
    win_gotoid(back)
    return Err(v:exception)
  endtry
  const start = get(p, 'startLine', v:null)
  const text = get(p, 'startText', v:null)
  if type(start) == v:t_number
    cursor(max([1, min([start, line('$')])]), 1)
  elseif type(text) == v:t_string && text != ''
    cursor(1, 1)
    search('\V' .. escape(text, '\'), 'c')
  endif
  const win = win_getid()
  const front = get(p, 'makeFrontmost', true)
  if type(front) == v:t_bool && !front && back != win
    win_gotoid(back)
  endif
  const buf = winbufnr(win)
  return {result: {filePath: context.PathOf(buf), languageId: getbufvar(buf, '&filetype'),
    lineCount: len(getbufline(buf, 1, '$'))}}
enddef

def OpenFiles(p: dict<any>): dict<any>
  var opened: list<string> = []
  const paths = get(p, 'paths', [])
  for path in type(paths) == v:t_list ? paths : []
    if type(path) == v:t_string && path != ''
      const buf = bufadd(path)
      setbufvar(buf, '&buflisted', 1)
      opened->add(path)
    endif
  endfor
  return {result: {opened: opened}}
enddef

def SaveDocument(p: dict<any>): dict<any>
  const path = get(p, 'path', '')
  const buf = type(path) == v:t_string ? context.BufferFor(path) : 0
  if buf == 0
    return Err('Document not open: ' .. string(path))
  endif
  const wins = win_findbuf(buf)
  try
    if !empty(wins)
      win_execute(wins[0], 'silent write')
    else
      # Shown nowhere: in a window opened for the write (with the user's
      # write autocommands), closed again.
      const back = win_getid()
      execute 'noautocmd keepalt keepjumps sbuffer ' .. buf
      try
        silent write
      finally
        noautocmd close
        win_gotoid(back)
      endtry
    endif
  catch
    return Err(v:exception)
  endtry
  return {result: v:null}
enddef

export def Handle(method: string, p: dict<any>, tok: number, id: any): dict<any>
  if method ==# 'showDiff'
    return review.Show(p, tok, id)
  elseif method ==# 'closeDiff'
    review.Close(get(p, 'id', v:null), get(p, 'reason', ''))
    return {result: v:null}
  elseif method ==# 'reviewText'
    return {result: {contents: review.Text(get(p, 'id', v:null))}}
  elseif method ==# 'openFile'
    return OpenFile(p)
  elseif method ==# 'openFiles'
    return OpenFiles(p)
  elseif method ==# 'saveDocument'
    return SaveDocument(p)
  elseif method ==# 'approve'
    tools.Approve(p, tok, id)
    return {later: true}
  endif
  return {error: {code: -32601, message: 'Vim does not handle ' .. method, data: method}}
enddef
