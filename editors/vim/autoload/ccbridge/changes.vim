vim9script
# The session review (docs/editor-protocol.md, `changes`): every file
# changed in the workspace while the sidecar runs (an agent in auto mode, a
# `claude` started elsewhere, a command), against what it held before.
#
# :CCBridgeChanges puts it in the quickfix list, one entry per hunk (one
# per file for a file without hunks: deleted, binary, too large).
# :CCBridgeChangeRevert and :CCBridgeChangeKeep act on the hunk under the
# cursor, in the file or on its quickfix entry. A decision names the hunk's
# key and the file's version, so it reaches that hunk only, and the sidecar
# refuses it if the file changed since the list was made (nothing written).
# The list follows `changesChanged` while it is the current quickfix list.

import autoload 'ccbridge.vim' as bridge
import autoload 'ccbridge/context.vim'
import autoload 'ccbridge/reload.vim'

const TITLE = 'ccbridge: changes'

# What each entry of our quickfix list points at ({path, key?, version}),
# in the list's order, and the list's id: Vim 9.0 keeps no `user_data` in
# quickfix items, so the entry under the cursor is found by its index.
var targets: list<dict<any>> = []
var qfid = -1

# The quickfix entries of `list` (the sidecar's `changes` answer) and what
# each points at: [items, targets].
export def Items(list: dict<any>): list<list<dict<any>>>
  var items: list<dict<any>> = []
  var points: list<dict<any>> = []
  for f in get(list, 'files', [])
    const state = get(f, 'reviewed', false) ? 'reviewed' : 'not reviewed'
    const hunks = get(f, 'hunks', [])
    if empty(hunks)
      items->add({filename: f.path, lnum: 1, text: printf('%s, %s', get(f, 'status', 'changed'), state)})
      points->add({path: f.path, version: f.version})
    endif
    var i = 0
    for h in hunks
      i += 1
      items->add({
        filename: f.path,
        lnum: max([1, h.newLines > 0 ? h.newStart + 1 : h.newStart]),
        text: printf('hunk %d: +%d -%d%s, %s', i, h.newLines, h.oldLines,
          get(h, 'kept', false) ? ' (kept)' : '', state),
      })
      points->add({path: f.path, key: h.key, version: f.version})
    endfor
  endfor
  return [items, points]
enddef

# The hunk that `line` (0-based) of `path` falls in, in `list`, or {}.
export def HunkAt(list: dict<any>, path: string, line: number): dict<any>
  for f in get(list, 'files', [])
    if f.path !=# path
      continue
    endif
    for h in get(f, 'hunks', [])
      const last = h.newStart + max([h.newLines, 1]) - 1
      if line >= h.newStart && line <= last
        return {path: f.path, key: h.key, version: f.version}
      endif
    endfor
  endfor
  return {}
enddef

# Fetches the list; Cb(list) on success (an error is shown).
def Fetch(Cb: func)
  bridge.Request('changes', {}, (err: dict<any>, list: any) => {
    if !empty(err) || type(list) != v:t_dict
      bridge.Message(get(err, 'message', 'no answer to `changes`')
        .. (bridge.Status() == 'stopped' ? ' (:CCBridgeStart starts it)' : ''), 'error')
      return
    endif
    Cb(list)
  })
enddef

def Ours(): bool
  const info = getqflist({title: 0, id: 0})
  return info.title ==# TITLE && info.id == qfid
enddef

# :CCBridgeChanges: the session review in the quickfix list.
export def Show()
  Fetch((list: dict<any>) => {
    const [items, points] = Items(list)
    setqflist([], ' ', {title: TITLE, items: items})
    targets = points
    qfid = getqflist({id: 0}).id
    botright copen
    if empty(items)
      bridge.Message('no file changed in the workspace since the sidecar started')
    endif
  })
enddef

# Brings the quickfix list up to date, if it is still the session review
# and the current list (`changesChanged`, and after a decision).
export def Refresh()
  if !Ours()
    return
  endif
  Fetch((list: dict<any>) => {
    if Ours()
      const [items, points] = Items(list)
      setqflist([], 'r', {title: TITLE, items: items})
      targets = points
    endif
  })
enddef

# The entry under the cursor when the quickfix window shows our list, or {}.
def QuickfixTarget(): dict<any>
  if &buftype !=# 'quickfix' || getwininfo(win_getid())[0].loclist || !Ours()
    return {}
  endif
  const i = line('.') - 1
  return i < len(targets) ? targets[i] : {}
enddef

# :CCBridgeChangeRevert and :CCBridgeChangeKeep (`action`): the hunk under
# the cursor.
export def Act(action: string)
  const picked = QuickfixTarget()
  const name = &buftype == '' ? bufname('%') : ''
  if empty(picked) && name != '' && &modified
    # The review's lines are the file's on disk, not this buffer's.
    bridge.Message(printf('%s has unsaved changes: write or undo them first, so the line under the cursor is the file''s',
      fnamemodify(name, ':t')), 'warn')
    return
  endif
  # The sidecar names files by their real path; a buffer may use a link.
  const paths = name == '' ? [] : [fnamemodify(name, ':p'), resolve(fnamemodify(name, ':p'))]
  const line = line('.') - 1
  Fetch((list: dict<any>) => {
    var target = picked
    for p in paths
      if empty(target)
        target = HunkAt(list, p, line)
      endif
    endfor
    if empty(target)
      bridge.Message('no changed hunk here (:CCBridgeChanges lists them)', 'warn')
      return
    endif
    if action ==# 'revert' && !has_key(target, 'key')
        && confirm(printf('Revert all of %s to what it held before?', fnamemodify(target.path, ':~:.')), "&Yes\n&No", 2) != 1
      return
    endif
    bridge.Request('changeAction', extend({action: action}, target), (err: dict<any>, _) => Decided(action, target, err))
  })
enddef

def Decided(action: string, target: dict<any>, err: dict<any>)
  const rel = fnamemodify(target.path, ':~:.')
  if !empty(err)
    const data = get(err, 'data', {})
    var msg = get(err, 'message', 'refused')
    if type(data) == v:t_dict && has_key(data, 'conflict')
      msg = printf('not %s: %s changed on disk since the review read it; nothing was written. :CCBridgeChanges shows it as it is now.',
        action == 'revert' ? 'reverted' : 'kept', rel)
    elseif type(data) == v:t_dict && get(data, 'stale', false)
      msg = printf('not %s: %s changed since the list was made; nothing was written. The list is updated: decide again.',
        action == 'revert' ? 'reverted' : 'kept', rel)
    endif
    bridge.Message(msg, 'error')
    Refresh()
    return
  endif
  if action ==# 'revert'
    # The file changed on disk: a buffer showing it without unsaved
    # changes reloads (one with unsaved changes gets reload.vim's notice).
    const buf = context.BufferFor(target.path)
    if buf > 0
      reload.Check([buf])
    endif
  endif
  bridge.Message(printf('%s %s in %s', action ==# 'revert' ? 'reverted' : 'kept',
    has_key(target, 'key') ? 'the hunk' : 'the file', rel))
  Refresh()
enddef
