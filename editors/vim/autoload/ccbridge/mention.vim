vim9script
# :CCBridgeSend: an @-mention for Claude's prompt (`atMentioned`).
#
# The target is, in order: the path given as argument; the entry under the
# cursor in a file explorer (netrw, NERDTree, fern); the range
# (`:'<,'>CCBridgeSend`, lines sent 0-based); the current file. The sidecar
# queues it until a Claude session is ready.

import autoload 'ccbridge.vim' as bridge
import autoload 'ccbridge/context.vim'

def Clean(path: string): string
  return substitute(simplify(fnamemodify(path, ':p')), '\(.\)/$', '\1', '')
enddef

# The entry under the cursor in a file explorer: a path, '' for none, or
# v:null when the buffer is no explorer.
def ExplorerEntry(): any
  const ft = &filetype
  if ft ==# 'netrw'
    const dir = get(b:, 'netrw_curdir', '')
    var word = ''
    try
      word = call('netrw#Call', ['NetrwGetWord'])
    catch
      return ''
    endtry
    if dir == '' || word == '' || word ==# '../' || word ==# './'
      return ''
    endif
    return dir .. '/' .. word
  elseif ft ==# 'nerdtree'
    try
      const node = g:NERDTreeFileNode.GetSelected()
      return type(node) == v:t_dict ? node.path.str() : ''
    catch
      return ''
    endtry
  elseif ft ==# 'fern'
    try
      const helper = call('fern#helper#new', [])
      const node = helper.sync.get_cursor_node()
      return type(node) == v:t_dict ? get(node, '_path', '') : ''
    catch
      return ''
    endtry
  endif
  return v:null
enddef

# What :CCBridgeSend with these arguments sends: [target, ''] or [{}, why not].
export def Target(range: number, line1: number, line2: number, arg: string): list<any>
  if arg != ''
    return [{filePath: Clean(expand(arg))}, '']
  endif
  const entry = ExplorerEntry()
  if type(entry) == v:t_string
    return entry == '' ? [{}, 'no file or folder under the cursor'] : [{filePath: Clean(entry)}, '']
  endif
  const name = bufname()
  if &buftype != '' || name == ''
    return [{}, 'this buffer is not a file (give a path: :CCBridgeSend {file})']
  endif
  if range > 0
    return [{filePath: context.PathOf(bufnr()), lineStart: line1 - 1, lineEnd: line2 - 1}, '']
  endif
  return [{filePath: context.PathOf(bufnr())}, '']
enddef

def Sent(target: dict<any>, init: dict<any>, err: string)
  if empty(init)
    bridge.Message('not sent, the sidecar is not running: ' .. err, 'error')
    return
  endif
  bridge.Notify('atMentioned', target)
  var where = fnamemodify(target.filePath, ':~:.')
  if has_key(target, 'lineStart')
    where = printf('%s:%d-%d', where, target.lineStart + 1, target.lineEnd + 1)
  endif
  bridge.Event('CCBridgeSent', target)
  bridge.Message('@' .. where .. (bridge.Connected() ? '' : ' (sent when Claude connects)'))
enddef

export def Send(range: number, line1: number, line2: number, arg: string)
  const [target, why] = Target(range, line1, line2, arg)
  if empty(target)
    bridge.Message('nothing to send: ' .. why, 'warn')
    return
  endif
  bridge.OnReady((init, err) => Sent(target, init, err))
enddef
