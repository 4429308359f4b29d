vim9script
# Diagnostics for Claude (`diagnosticsChanged`, one file at a time), from
# what Vim has:
#
# - the quickfix list and every window's location list: entries with a
#   type (E, W, I, N, H), as compilers and linters set them through
#   'errorformat' (`:make`, `:cexpr`, `:lgetexpr`, ...); untyped entries
#   (`:grep` and `:vimgrep` hits) are not diagnostics and are left out;
# - ALE, when it is loaded (ale#engine#GetLoclist());
# - vim-lsp, when it is loaded (its diagnostics state, already in LSP
#   positions).
#
# Events (QuickFixCmdPost, ALE's ALELintPost, vim-lsp's
# lsp_diagnostics_updated, BufEnter, WinEnter, BufWritePost, CursorHold)
# arm one timer; when it fires every source is read and only the files
# whose list changed are sent (`[]` when a file's diagnostics are gone).

import autoload 'ccbridge.vim' as bridge
import autoload 'ccbridge/position.vim'
import autoload 'ccbridge/context.vim'

var timer = -1
# The last list sent per path (JSON), non-empty ones only.
var sent: dict<string> = {}
# Sources found missing (a flag set without the plugin installed).
var missing: dict<bool> = {}

const SEVERITY = {E: 'Error', W: 'Warning', I: 'Information', N: 'Information', H: 'Hint'}

def Add(out: dict<list<dict<any>>>, path: string, d: dict<any>)
  if !has_key(out, path)
    out[path] = []
  endif
  out[path]->add(d)
enddef

def PathOf(buf: number): string
  if buf <= 0 || !bufexists(buf) || getbufvar(buf, '&buftype') != ''
    return ''
  endif
  return context.PathOf(buf)
enddef

# Lines of files whose buffer is not loaded, read once per Collect().
var unloaded: dict<list<string>> = {}

# Line `lnum` (1-based) of `buf`, from the file when it is not loaded.
def LineOf(buf: number, lnum: number): string
  if bufloaded(buf)
    return get(getbufline(buf, lnum), 0, '')
  endif
  const path = fnamemodify(bufname(buf), ':p')
  if !has_key(unloaded, path) || len(unloaded[path]) < lnum
    try
      unloaded[path] = readfile(path, '', max([lnum, 1000]))
    catch
      unloaded[path] = []
    endtry
  endif
  return get(unloaded[path], lnum - 1, '')
enddef

# An LSP range from 1-based lines and byte columns (`end_col` exclusive,
# 0 for none).
def RangeOf(buf: number, lnum: number, col: number, end_lnum: number, end_col: number): dict<any>
  const l1 = max([lnum, 1])
  const l2 = max([end_lnum, l1])
  const first = LineOf(buf, l1)
  const final = l2 == l1 ? first : LineOf(buf, l2)
  const c1 = position.Utf16(first, max([col, 1]) - 1)
  const c2 = end_col > 0 ? position.Utf16(final, end_col - 1) : c1
  return {start: {line: l1 - 1, character: c1}, end: {line: l2 - 1, character: l2 == l1 ? max([c1, c2]) : c2}}
enddef

# Typed quickfix or location list entries.
def FromQf(out: dict<list<dict<any>>>, items: list<dict<any>>, source: string)
  for e in items
    const kind = toupper(get(e, 'type', ''))
    if !has_key(SEVERITY, kind) || !get(e, 'valid', 0) || get(e, 'lnum', 0) <= 0
      continue
    endif
    const path = PathOf(get(e, 'bufnr', 0))
    if path == ''
      continue
    endif
    var d: dict<any> = {
      message: trim(get(e, 'text', '')),
      severity: SEVERITY[kind],
      range: RangeOf(e.bufnr, e.lnum, get(e, 'col', 0), get(e, 'end_lnum', 0), get(e, 'end_col', 0)),
      source: source,
    }
    if get(e, 'nr', 0) > 0
      d.code = e.nr
    endif
    Add(out, path, d)
  endfor
enddef

# Listed file buffers, loaded or not (with 'nohidden' the buffers you
# left are unloaded, and their diagnostics still count).
def FileBuffers(): list<number>
  return mapnew(filter(getbufinfo({buflisted: 1}), (_, b) => b.name != '' && getbufvar(b.bufnr, '&buftype') == ''),
    (_, b) => b.bufnr)
enddef

def FromAle(out: dict<list<dict<any>>>)
  if !exists('g:loaded_ale_dont_use_this_in_other_plugins_please') || get(missing, 'ale', false)
    return
  endif
  for buf in FileBuffers()
    var items: any
    try
      items = call('ale#engine#GetLoclist', [buf])
    catch /E117/
      missing.ale = true
      return
    endtry
    if type(items) != v:t_list
      continue
    endif
    const path = PathOf(buf)
    for e in items
      if type(e) != v:t_dict || get(e, 'lnum', 0) <= 0
        continue
      endif
      const kind = toupper(get(e, 'type', 'E'))
      # ALE's end_col is the last column, inclusive.
      const end_col = get(e, 'end_col', 0)
      var d: dict<any> = {
        message: trim(get(e, 'text', '')),
        severity: get(SEVERITY, kind, 'Error'),
        range: RangeOf(buf, e.lnum, get(e, 'col', 0), get(e, 'end_lnum', e.lnum), end_col > 0 ? end_col + 1 : 0),
        source: get(e, 'linter_name', 'ale'),
      }
      const code = get(e, 'code', v:null)
      if type(code) == v:t_string || type(code) == v:t_number
        d.code = code
      endif
      Add(out, path, d)
    endfor
  endfor
enddef

def FromVimLsp(out: dict<list<dict<any>>>)
  if !exists('g:lsp_loaded') || get(missing, 'vim-lsp', false)
    return
  endif
  for buf in FileBuffers()
    var by_server: any
    try
      const uri = call('lsp#utils#get_buffer_uri', [buf])
      by_server = call('lsp#internal#diagnostics#state#_get_all_diagnostics_grouped_by_server_for_uri', [uri])
    catch /E117/
      missing['vim-lsp'] = true
      return
    endtry
    if type(by_server) != v:t_dict
      continue
    endif
    const path = PathOf(buf)
    for [server, response] in items(by_server)
      const params = type(response) == v:t_dict ? get(response, 'params', {}) : {}
      const list = type(params) == v:t_dict ? get(params, 'diagnostics', []) : []
      if type(list) != v:t_list
        continue
      endif
      for e in list
        if type(e) != v:t_dict || type(get(e, 'range', 0)) != v:t_dict
          continue
        endif
        # Already LSP: positions in UTF-16, severities 1-4.
        var d: dict<any> = {
          message: get(e, 'message', ''),
          severity: get(e, 'severity', 1),
          range: e.range,
          source: type(get(e, 'source', 0)) == v:t_string ? e.source : server,
        }
        const code = get(e, 'code', v:null)
        if type(code) == v:t_string || type(code) == v:t_number
          d.code = code
        endif
        Add(out, path, d)
      endfor
    endfor
  endfor
enddef

# Every source's diagnostics, by path.
export def Collect(): dict<list<dict<any>>>
  unloaded = {}
  var out: dict<list<dict<any>>> = {}
  const qf = getqflist({items: 0, title: 0})
  FromQf(out, qf.items, qf.title == '' ? 'quickfix' : qf.title)
  var seen: dict<bool> = {}
  for w in getwininfo()
    const info = getloclist(w.winid, {id: 0, items: 0, title: 0})
    if get(info, 'id', 0) == 0 || has_key(seen, string(info.id))
      continue
    endif
    seen[string(info.id)] = true
    FromQf(out, info.items, info.title == '' ? 'location list' : info.title)
  endfor
  FromAle(out)
  FromVimLsp(out)
  unloaded = {}
  return out
enddef

# Sends the files whose diagnostics changed since they were last sent.
export def Flush()
  timer = -1
  if !bridge.Options().diagnostics.enabled
    return
  endif
  const now = Collect()
  for path in keys(now)
    const key = json_encode(now[path])
    if get(sent, path, '') !=# key
      sent[path] = key
      bridge.Notify('diagnosticsChanged', {path: path, diagnostics: now[path]})
    endif
  endfor
  for path in keys(sent)
    if !has_key(now, path)
      remove(sent, path)
      bridge.Notify('diagnosticsChanged', {path: path, diagnostics: []})
    endif
  endfor
enddef

export def Arm()
  if timer == -1
    timer = timer_start(bridge.Options().diagnostics.debounce_ms, (_) => Flush())
  endif
enddef

# Sends every file's diagnostics (the sidecar started).
export def ReportAll()
  Flush()
enddef

export def Reset()
  sent = {}
enddef

export def Attach()
  augroup ccbridge_diagnostics
    autocmd!
    autocmd QuickFixCmdPost,BufEnter,WinEnter,BufWritePost,CursorHold,CursorHoldI * ccbridge#diagnostics#Arm()
    autocmd User ALELintPost,lsp_diagnostics_updated ccbridge#diagnostics#Arm()
  augroup END
enddef

export def Detach()
  augroup ccbridge_diagnostics
    autocmd!
  augroup END
  if timer != -1
    timer_stop(timer)
    timer = -1
  endif
enddef
