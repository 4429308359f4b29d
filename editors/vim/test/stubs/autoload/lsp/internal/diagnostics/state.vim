" Stand-in for vim-lsp's diagnostics state: g:test_lsp[uri] is
" {'server name': publishDiagnostics notification}, as vim-lsp keeps it.
function! lsp#internal#diagnostics#state#_get_all_diagnostics_grouped_by_server_for_uri(uri) abort
  return get(get(g:, 'test_lsp', {}), a:uri, {})
endfunction
