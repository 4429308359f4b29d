" Stand-in for ALE's ale#engine#GetLoclist() (dense-analysis/ale) in the
" tests: a buffer's items are g:test_ale[bufnr], in ALE's loclist format.
function! ale#engine#GetLoclist(buffer) abort
  return get(get(g:, 'test_ale', {}), string(a:buffer), [])
endfunction
