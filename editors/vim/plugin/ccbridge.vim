" ccbridge for Vim: Claude Code's IDE integration through the
" `ccbridge serve --stdio` sidecar. See :help ccbridge.
"
" This file only defines commands (and, when g:ccbridge.auto_start is set,
" starts the sidecar once Vim has started). Everything else is in
" autoload/, loaded the first time a command runs: no autocommand, timer or
" process exists before that.
"
" Legacy script on purpose: an older Vim gets a clear message from the
" commands instead of Vim9 syntax errors at startup.

if exists('g:loaded_ccbridge')
  finish
endif
let g:loaded_ccbridge = 1

if v:version < 900 || !has('channel') || !has('job') || !has('lambda')
  function! s:Unsupported(...) abort
    echohl ErrorMsg
    echomsg 'ccbridge: needs Vim 9.0 or newer with +channel and +job (this is '
          \ . (v:version / 100) . '.' . (v:version % 100) . ')'
    echohl None
  endfunction
  for s:cmd in ['CCBridgeStart', 'CCBridgeStop', 'CCBridgeStatus', 'CCBridgeSend',
        \ 'CCBridgeClaude', 'CCBridgeAccept', 'CCBridgeReject', 'CCBridgeAcceptHunk',
        \ 'CCBridgeRejectHunk', 'CCBridgeChanges', 'CCBridgeChangeRevert',
        \ 'CCBridgeChangeKeep']
    execute 'command! -nargs=* -range -bang ' . s:cmd . ' call s:Unsupported()'
  endfor
  unlet s:cmd
  finish
endif

command! -bar CCBridgeStart call ccbridge#Start()
command! -bar CCBridgeStop call ccbridge#Stop()
command! -bar CCBridgeStatus call ccbridge#ShowStatus()
command! -bar -range -nargs=? -complete=file CCBridgeSend
      \ call ccbridge#mention#Send(<range>, <line1>, <line2>, <q-args>)
command! -bang -nargs=* -complete=customlist,ccbridge#terminal#Complete CCBridgeClaude
      \ call ccbridge#terminal#Open([<f-args>], <bang>0)
command! -bar CCBridgeAccept call ccbridge#review#AcceptCurrent(0)
command! -bar CCBridgeReject call ccbridge#review#RejectCurrent()
command! -bar CCBridgeAcceptHunk call ccbridge#review#Hunk('accept')
command! -bar CCBridgeRejectHunk call ccbridge#review#Hunk('reject')
command! -bar CCBridgeChanges call ccbridge#changes#Show()
command! -bar CCBridgeChangeRevert call ccbridge#changes#Act('revert')
command! -bar CCBridgeChangeKeep call ccbridge#changes#Act('keep')

if type(get(g:, 'ccbridge', 0)) == v:t_dict && get(g:ccbridge, 'auto_start', 0)
  if v:vim_did_enter
    call ccbridge#Start()
  else
    augroup ccbridge_auto_start
      autocmd!
      autocmd VimEnter * ++once call ccbridge#Start()
    augroup END
  endif
endif
