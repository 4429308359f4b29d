" Stand-in for vim-lsp's lsp#utils#get_buffer_uri() (prabirshrestha/vim-lsp).
function! lsp#utils#get_buffer_uri(...) abort
  return 'file://' . fnamemodify(bufname(a:0 ? a:1 : bufnr('%')), ':p')
endfunction
