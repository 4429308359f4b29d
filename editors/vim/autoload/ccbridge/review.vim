vim9script
# Claude's proposed edits, reviewed in Vim's own diff mode.
#
# A review is two scratch buffers this script creates and owns: the
# *original* (the file as it is on disk, never your own buffer of it) and
# the *proposal* ('buftype' acwrite, so `:w` is the verdict: its text, your
# edits included, is what Claude writes). Hunks move between them: `do` in
# the proposal takes the original's text back, `dp` copies the proposal's
# hunk into the original, so a decided hunk leaves the diff; then `:w`.
# Closing the proposal's window rejects (or dismisses, see diff.on_close).
#
# A change to the final line break alone shows no line of difference: it is
# the buffers' 'eol' ('fixeol' off), marked below the proposal's last line
# and in its status line, and decided by the hunk commands as a hunk of its
# own at the last line (`:set eol` or `:set noeol` in the proposal too).
#
# Only windows, tabs and buffers created here are ever closed or wiped, and
# the cursor goes back to where it was when the review took it.

import autoload 'ccbridge.vim' as bridge
import autoload 'ccbridge/context.vim'
import autoload 'ccbridge/reload.vim'

# Open reviews by id (as a string).
var reviews: dict<dict<any>> = {}

# Whether the review's buffers hold lines without their CR: only when the
# `texts` (the proposal, and the original when known) have a line break and
# every one of them is CRLF. Otherwise (LF or mixed endings) a line keeps
# its CR as text, so that the lines you do not touch come back byte for
# byte, and a hunk taken from the original brings its own line endings.
export def Crlf(...texts: list<string>): bool
  var lf = 0
  var crlf = 0
  for text in texts
    lf += count(text, "\n")
    crlf += count(text, "\r\n")
  endfor
  return lf > 0 && crlf == lf
enddef

# Lines of `text` (each without its CRLF in `crlf` mode, which needs
# Crlf(text); without its LF otherwise) and whether it ends with a line
# break: [lines, eol]. JoinLines() is its inverse.
export def SplitText(text: string, crlf: bool): list<any>
  const sep = crlf ? "\r\n" : "\n"
  var body = text
  const eol = body != '' && strpart(body, strlen(body) - strlen(sep)) ==# sep
  if eol
    body = strpart(body, 0, strlen(body) - strlen(sep))
  endif
  return [split(body, sep, true), eol]
enddef

# The text of `lines`, as SplitText() found it.
export def JoinLines(lines: list<string>, eol: bool, crlf: bool): string
  const sep = crlf ? "\r\n" : "\n"
  return join(lines, sep) .. (eol ? sep : '')
enddef

# The verdict on accepting `text`. Text equal to the original (a string) is
# a rejection (Claude counts it as one too); without an original (v:null: a
# new file, even an empty one), accepting is accepting.
export def Verdict(text: string, original: any): string
  return type(original) == v:t_string && text ==# original ? 'rejected' : 'accepted'
enddef

# What a hunk decision leaves: '' while the two sides still differ; once
# they agree, 'rejected' if the proposal is the original again (every hunk
# rejected: for a new file, the empty text, which accepting would create),
# else 'accept' (the text as it stands). `original`: its lines as the
# review opened. `eol`: whether each ends with a line break ({base, prop,
# original}), empty for a new file (its empty original has no last line).
export def Outcome(base: list<string>, prop: list<string>, original: list<string>, eol: dict<bool> = {}): string
  if base !=# prop || (!empty(eol) && eol.base != eol.prop)
    return ''
  endif
  return prop ==# original && (empty(eol) || eol.prop == eol.original) ? 'rejected' : 'accept'
enddef

# The proposal's text as it should be written.
def Contents(r: dict<any>): string
  return JoinLines(getbufline(r.prop, 1, '$'), !!getbufvar(r.prop, '&eol'), r.crlf)
enddef

# Whether the two sides end differently, one with a line break and one
# without. Never for a new file: its empty original has no last line.
def EolDiffers(r: dict<any>): bool
  return type(r.original) == v:t_string && getbufvar(r.base, '&eol') != getbufvar(r.prop, '&eol')
enddef

# What the proposal does to the final line break, '' when nothing.
def EolChange(r: dict<any>): string
  if !EolDiffers(r)
    return ''
  endif
  return !!getbufvar(r.prop, '&eol') ? '⏎ adds a line break at the end of the file'
    : '⏎ removes the line break at the end of the file'
enddef

# The final line break's change, below the proposal's last line (where Vim
# shows text below a line) and in its status line.
def RenderEol(r: dict<any>)
  if r.prop <= 0 || !bufexists(r.prop)
    return
  endif
  const change = EolChange(r)
  if has('patch-9.0.0067')
    if empty(prop_type_get('ccbridge_eol'))
      prop_type_add('ccbridge_eol', {highlight: 'DiffChange'})
    endif
    prop_remove({type: 'ccbridge_eol', bufnr: r.prop, all: true})
    if change != ''
      prop_add(len(getbufline(r.prop, 1, '$')), 0, {type: 'ccbridge_eol', bufnr: r.prop,
        text: change, text_align: 'below'})
    endif
  endif
  if !empty(r.wins) && !empty(getwininfo(r.wins[0]))
    setwinvar(r.wins[0], '&statusline', StatusFor(r))
  endif
enddef

# The original's text, '' for a new file (or one the sidecar could not read).
def OriginalText(r: dict<any>): string
  return type(r.original) == v:t_string ? r.original : ''
enddef

# Who proposes: the `agent` of showDiff (protocol 3), else Claude.
def AgentName(p: dict<any>): string
  const agent = get(p, 'agent', v:null)
  if type(agent) == v:t_dict && type(get(agent, 'name', 0)) == v:t_string && agent.name != ''
    return agent.name
  endif
  return 'Claude'
enddef

# Highlighting without 'filetype': setting it would run FileType
# autocommands (language servers, linters, formatters) on a scratch buffer.
# The filetype is detected with FileType ignored, then only 'syntax' is set.
def Highlight(path: string)
  if !exists('#filetypedetect')
    return
  endif
  const ei = &eventignore
  var ft = ''
  try
    set eventignore+=FileType,Syntax
    execute 'silent! doautocmd filetypedetect BufRead ' .. fnameescape(path)
    ft = &filetype
    if ft != ''
      setlocal filetype=
    endif
  finally
    &eventignore = ei
  endtry
  if ft =~ '^[A-Za-z0-9_.-]\+$'
    execute 'setlocal syntax=' .. ft
  endif
enddef

# Makes the current window's (new, empty) buffer a review buffer.
def Scratch(name: string, lines: list<string>, eol: bool, path: string, acwrite: bool): number
  execute 'setlocal buftype=' .. (acwrite ? 'acwrite' : 'nofile')
  setlocal bufhidden=wipe noswapfile nobuflisted noundofile nofixeol
  &l:eol = eol
  execute 'silent keepalt file ' .. fnameescape(name)
  setline(1, lines)
  setlocal nomodified
  b:ccbridge_review = 1
  Highlight(path)
  return bufnr()
enddef

def Escape(s: string): string
  return substitute(s, '%', '%%', 'g')
enddef

def StatusFor(r: dict<any>): string
  if r.dirty_buf > 0
    return '%#WarningMsg# ' .. Escape(fnamemodify(r.path, ':t')) .. ' has unsaved changes: :w! to accept anyway%*'
  endif
  const change = EolChange(r)
  return printf(' %s proposes: %s%s  %%= :w accept · :CCBridgeReject · do/dp per hunk ',
    Escape(r.agent), Escape(fnamemodify(r.path, ':~:.')), change == '' ? '' : ' · ' .. change)
enddef

def OpenWindows(r: dict<any>, prop: list<any>, base: list<any>)
  const o = bridge.Options().diff
  const vertical = o.layout ==# 'vertical'
  const tail = fnamemodify(r.path, ':t')
  if o.open_in ==# 'tab'
    silent keepalt tabnew
  else
    execute 'silent keepalt rightbelow ' .. (vertical ? 'vnew' : 'new')
  endif
  const prop_win = win_getid()
  r.prop = Scratch(printf('ccbridge://%d/proposed/%s', r.id, tail), prop[0], prop[1], r.path, true)
  r.wins = [prop_win]
  execute 'silent keepalt leftabove ' .. (vertical ? 'vnew' : 'new')
  const base_win = win_getid()
  r.base = Scratch(printf('ccbridge://%d/original/%s', r.id, tail), base[0], base[1], r.path, false)
  r.wins->add(base_win)
  &l:statusline = ' Original: ' .. Escape(fnamemodify(r.path, ':~:.'))
  diffthis
  win_gotoid(prop_win)
  diffthis
  &l:statusline = StatusFor(r)
  if o.open_in ==# 'window' && vertical
    # Side by side with the window it came from: equal widths.
    wincmd =
  endif
enddef

def Watch(r: dict<any>)
  const group = 'ccbridge_review_' .. r.id
  execute 'augroup ' .. group
  autocmd!
  execute printf('autocmd BufWriteCmd <buffer=%d> ccbridge#review#OnWrite(%d)', r.prop, r.id)
  execute printf('autocmd BufWipeout <buffer=%d> ccbridge#review#OnGone(%d)', r.prop, r.id)
  execute printf('autocmd WinClosed %d ccbridge#review#OnGone(%d)', r.wins[0], r.id)
  execute printf('autocmd OptionSet endofline ccbridge#review#OnEol(%d)', r.id)
  augroup END
enddef

# Closes the review's windows (its tab with them) and buffers, and puts the
# cursor back if it was in the review.
def CloseView(r: dict<any>, reason: string)
  if r.closed
    return
  endif
  r.closed = true
  if has_key(reviews, string(r.id))
    remove(reviews, string(r.id))
  endif
  const group = 'ccbridge_review_' .. r.id
  execute 'silent! autocmd! ' .. group
  execute 'silent! augroup! ' .. group
  var ours: list<number> = []
  for win in r.wins + (r.prop > 0 ? win_findbuf(r.prop) : []) + (r.base > 0 ? win_findbuf(r.base) : [])
    if index(ours, win) < 0
      ours->add(win)
    endif
  endfor
  const was_here = index(ours, win_getid()) >= 0
  for win in ours
    if empty(getwininfo(win))
      continue
    endif
    if winnr('$') == 1 && tabpagenr('$') == 1
      # The last window of Vim: it stays, with an empty buffer.
      win_execute(win, 'silent enew!')
    else
      win_execute(win, 'silent! close!')
    endif
  endfor
  for buf in [r.prop, r.base]
    if buf > 0 && bufexists(buf)
      execute 'silent! bwipeout! ' .. buf
    endif
  endfor
  if was_here && !empty(getwininfo(r.prev_win))
    win_gotoid(r.prev_win)
  endif
  bridge.Event('CCBridgeDiffClosed', {id: r.id, path: r.path, decision: r.decided == '' ? v:null : r.decided, reason: reason})
enddef

def Decide(r: dict<any>, decision: string, text = '', reason = 'decided')
  if r.decided != '' || r.closed
    return
  endif
  r.decided = decision
  var params: dict<any> = {id: r.id, decision: decision}
  if decision ==# 'accepted'
    params.contents = text
  endif
  bridge.Notify('diffResolved', params)
  if decision ==# 'accepted'
    reload.Expect(r.path)
  endif
  if r.prop > 0 && bufexists(r.prop)
    setbufvar(r.prop, '&modified', 0)
  endif
  # After the command that decided (`:wq` still has a window to quit).
  timer_start(0, (_) => CloseView(r, reason))
enddef

# Accepts the proposal as it stands, unless your own buffer of the file has
# unsaved changes and `force` is not set.
def Accept(r: dict<any>, force: bool)
  if r.decided != ''
    return
  endif
  const own = context.BufferFor(r.path)
  if own > 0 && !!getbufvar(own, '&modified') && !force
    bridge.Message(printf('%s has unsaved changes in Vim. Save or undo them, or accept anyway with :w! (your buffer keeps its text and is not reloaded).',
      fnamemodify(r.path, ':~:.')), 'warn')
    return
  endif
  const text = Contents(r)
  Decide(r, Verdict(text, r.original), text)
enddef

def ClosedByUser(r: dict<any>)
  if r.decided != '' || r.closed
    return
  endif
  if r.prop > 0 && bufexists(r.prop) && !empty(win_findbuf(r.prop))
    return   # still shown in another window
  endif
  Decide(r, bridge.Options().diff.on_close ==# 'dismiss' ? 'dismissed' : 'rejected', '', 'closed')
enddef

export def OnWrite(id: number)
  const r = get(reviews, string(id), {})
  if !empty(r)
    Accept(r, v:cmdbang == 1)
  endif
enddef

# 'eol' set by hand in one of the review's buffers.
export def OnEol(id: number)
  const r = get(reviews, string(id), {})
  if !empty(r) && (bufnr() == r.prop || bufnr() == r.base)
    RenderEol(r)
  endif
enddef

# The proposal's window closed or its buffer was wiped.
export def OnGone(id: number)
  const r = get(reviews, string(id), {})
  if empty(r)
    return
  endif
  # A verdict closes what is left of the view.
  timer_start(0, (_) => ClosedByUser(r))
enddef

def Open(p: dict<any>, prev_win: number, focus: bool)
  const key = string(p.id)
  if has_key(reviews, key)
    CloseView(reviews[key], 'replaced')
  endif
  const path = p.newFilePath
  # null for a new file (or one the sidecar could not read): shown as empty.
  const original: any = type(get(p, 'originalContents', v:null)) == v:t_string ? p.originalContents : v:null
  const crlf = type(original) == v:t_string ? Crlf(p.proposedContents, original) : Crlf(p.proposedContents)
  var r: dict<any> = {
    id: p.id,
    path: path,
    tab_name: type(get(p, 'tabName', 0)) == v:t_string ? p.tabName : '',
    agent: AgentName(p),
    original: original,
    crlf: crlf,
    prev_win: prev_win,
    prop: 0,
    base: 0,
    wins: [],
    dirty_buf: 0,
    decided: '',
    closed: false,
  }
  const own = context.BufferFor(path)
  if own > 0 && !!getbufvar(own, '&modified')
    r.dirty_buf = own
  endif
  reviews[key] = r
  try
    OpenWindows(r, SplitText(p.proposedContents, crlf), SplitText(OriginalText(r), crlf))
    RenderEol(r)
  catch
    CloseView(r, 'failed')
    throw 'could not open the review: ' .. v:exception
  endtry
  Watch(r)
  if !focus && !empty(getwininfo(prev_win))
    win_gotoid(prev_win)
  endif
  const rel = fnamemodify(path, ':~:.')
  if r.dirty_buf > 0
    bridge.Message(printf('%s proposes a change to %s, which has unsaved changes here.', r.agent, rel), 'warn')
  else
    bridge.Message(printf('%s proposes a change to %s', r.agent, rel))
  endif
  bridge.Event('CCBridgeDiffOpened', {id: r.id, path: path, tabName: r.tab_name,
    clientId: get(p, 'clientId', v:null), isNewFile: get(p, 'isNewFile', v:false), agent: r.agent})
enddef

# Whether windows may be opened now: not while a command line is typed.
def CanOpen(): bool
  return mode() !~# '^c' && mode() !~# '^r'
enddef

def OpenLater(p: dict<any>, tok: number, reqid: any, prev_win: number, tries: number)
  if tok != bridge.Token()
    return
  endif
  if !CanOpen() && tries > 0
    timer_start(100, (_) => OpenLater(p, tok, reqid, prev_win, tries - 1))
    return
  endif
  try
    Open(p, prev_win, bridge.Options().diff.focus)
    bridge.Reply(tok, reqid, v:null)
  catch
    bridge.ReplyError(tok, reqid, {code: 1, message: v:exception})
  endtry
enddef

# `showDiff`: opens the review and answers once it is shown; the verdict
# follows as `diffResolved`.
export def Show(p: dict<any>, tok: number, reqid: any): dict<any>
  if type(get(p, 'id', 0)) != v:t_number || type(get(p, 'newFilePath', 0)) != v:t_string
      || type(get(p, 'proposedContents', 0)) != v:t_string
    return {error: {code: -32602, message: 'showDiff needs id, newFilePath and proposedContents'}}
  endif
  const prev_win = win_getid()
  if !CanOpen()
    # Typing a command line: open when it is done (within the sidecar's
    # 30 s for "shown").
    timer_start(100, (_) => OpenLater(p, tok, reqid, prev_win, 250))
    return {later: true}
  endif
  # In Insert mode the cursor stays where you type.
  const focus = bridge.Options().diff.focus && mode() !~# '^[iR]'
  try
    Open(p, prev_win, focus)
  catch
    return {error: {code: 1, message: v:exception}}
  endtry
  return {result: v:null}
enddef

# `closeDiff`: Claude is done with the review (decided, answered in the
# terminal, a new prompt, ...). Closes the view without a verdict.
export def Close(id: any, reason: string)
  const r = get(reviews, string(id), {})
  if !empty(r)
    CloseView(r, reason)
  endif
enddef

# `reviewText`: the proposal as the user has left it (their edits
# included), for an agent answered in its own terminal; null when the
# review is gone.
export def Text(id: any): any
  const r = get(reviews, string(id), {})
  if empty(r) || r.closed || r.prop <= 0 || !bufexists(r.prop)
    return v:null
  endif
  return Contents(r)
enddef

export def CloseAll(reason: string)
  for r in values(reviews)
    CloseView(r, reason)
  endfor
enddef

# Reviews waiting for a verdict, oldest first.
export def Pending(): list<dict<any>>
  return sort(filter(values(reviews), (_, r) => r.decided == ''), (a, b) => a.id - b.id)
enddef

# The review the current buffer belongs to and its side ('prop', 'base').
def Current(): list<any>
  const buf = bufnr()
  for r in values(reviews)
    if r.prop == buf
      return [r, 'prop']
    elseif r.base == buf
      return [r, 'base']
    endif
  endfor
  return [{}, '']
enddef

def NotHere()
  bridge.Message('no proposal in this window (:CCBridgeAccept and :CCBridgeReject work in a review)', 'warn')
enddef

export def RejectCurrent()
  const [r, _] = Current()
  if empty(r)
    NotHere()
    return
  endif
  Decide(r, 'rejected')
enddef

export def AcceptCurrent(force: bool)
  const [r, _] = Current()
  if empty(r)
    NotHere()
    return
  endif
  Accept(r, force)
enddef

def InHunk(lnum: number): bool
  # diff_hlID() keeps its answer for a line until the current buffer
  # changes. A hunk just accepted here went into the other buffer
  # (`diffput`), so the answer for this line would still be "a hunk", and
  # the next decision on it would change nothing: ask about another line
  # first.
  diff_hlID(0, 1)
  return diff_hlID(lnum, 1) != 0 || diff_filler(lnum) > 0
enddef

# Puts the cursor on the hunk under it, or else on the first one below it,
# in the current diff window; false (the cursor left alone) when there is
# none, never one above: a decision applies to what the cursor points at.
export def HunkAtOrBelow(): bool
  const here = line('.')
  if InHunk(here)
    return true
  endif
  normal! ]c
  if line('.') != here
    return true
  endif
  # Lines deleted at the end have their filler below the last line, where
  # `]c` cannot go; :diffput and :diffget on the last line take them.
  return here == line('$') && diff_filler(here + 1) > 0
enddef

# Accepts or rejects the hunk under the cursor, or the next one below it
# (with only hunks above it: nothing, and a warning); ends the review once
# no hunk is left (with none left to begin with: accepts, see Accept()).
export def Hunk(action: string)
  const [r, side] = Current()
  if empty(r)
    NotHere()
    return
  endif
  const same_lines = getbufline(r.base, 1, '$') ==# getbufline(r.prop, 1, '$')
  if same_lines && !EolDiffers(r)
    # Nothing left to decide: the verdict on the text as it stands.
    Accept(r, false)
    return
  endif
  # The final line break's change is a hunk at the last line, below any other.
  var at_eol = same_lines
  if !at_eol && !HunkAtOrBelow()
    if !EolDiffers(r)
      bridge.Message('no undecided hunk at or below the cursor', 'warn')
      return
    endif
    at_eol = true
  endif
  if at_eol
    const [to, from] = action ==# 'accept' ? [r.base, r.prop] : [r.prop, r.base]
    setbufvar(to, '&eol', getbufvar(from, '&eol'))
    cursor(line('$'), 1)
  else
    # Accepting in the proposal puts its text into the original; in the
    # original it gets the proposal's text. Rejecting is the reverse.
    execute ((action ==# 'accept') == (side ==# 'prop') ? 'diffput' : 'diffget')
    diffupdate
  endif
  RenderEol(r)
  const [original, original_eol] = SplitText(OriginalText(r), r.crlf)
  const eol = type(r.original) == v:t_string ? {base: !!getbufvar(r.base, '&eol'),
    prop: !!getbufvar(r.prop, '&eol'), original: original_eol} : {}
  const outcome = Outcome(getbufline(r.base, 1, '$'), getbufline(r.prop, 1, '$'), original, eol)
  if outcome ==# 'rejected'
    Decide(r, 'rejected')
  elseif outcome ==# 'accept'
    Accept(r, false)
  endif
enddef
