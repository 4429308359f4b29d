" Compiles every function of the plugin on this Vim and writes the errors
" (none: an empty file) to $CCBRIDGE_COMPILE_OUT. Vim9 script compiles a
" `def` when it is first called, so each script is sourced from a copy with
" :defcompile appended. Run with:
"   CCBRIDGE_COMPILE_OUT=/tmp/out vim -N -u NONE -i NONE -es -S editors/vim/test/compile.vim
let s:root = fnamemodify(resolve(expand('<sfile>:p')), ':h:h')
let s:tmp = tempname()
let s:errors = []
let &runtimepath = s:tmp . ',' . s:root . ',' . &runtimepath
call mkdir(s:tmp . '/autoload/ccbridge', 'p')
try
  execute 'source ' . fnameescape(s:root . '/plugin/ccbridge.vim')
catch
  call add(s:errors, 'plugin/ccbridge.vim: ' . v:exception)
endtry
let s:scripts = ['autoload/ccbridge.vim']
      \ + map(glob(s:root . '/autoload/ccbridge/*.vim', 0, 1),
      \       {_, f -> 'autoload/ccbridge/' . fnamemodify(f, ':t')})
" The copies come first on 'runtimepath': imports resolve to them.
for s:rel in s:scripts
  call writefile(readfile(s:root . '/' . s:rel) + ['defcompile'], s:tmp . '/' . s:rel)
endfor
for s:rel in s:scripts
  try
    execute 'source ' . fnameescape(s:tmp . '/' . s:rel)
  catch
    call add(s:errors, s:rel . ': ' . v:exception . ' (' . v:throwpoint . ')')
  endtry
endfor
let s:messages = filter(split(execute('messages'), "\n"), {_, l -> l !~# '^\s*$'})
call writefile(s:errors + s:messages, $CCBRIDGE_COMPILE_OUT)
qall!
