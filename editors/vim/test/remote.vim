vim9script
# Unit tests of autoload/ccbridge/remote.vim (the path map, the command
# line through a prefix). Writes the failures (none: an empty file) to
# $CCBRIDGE_TEST_OUT. Run with:
#   CCBRIDGE_TEST_OUT=/tmp/out vim -N -u NONE -i NONE -es -S editors/vim/test/remote.vim
const root = fnamemodify(resolve(expand('<sfile>:p')), ':h:h')
&runtimepath = root .. ',' .. &runtimepath

import autoload 'ccbridge/remote.vim'

def TestNormalize()
  const [map, problems] = remote.Normalize([['/home/me/proj/', '/srv/proj'], {local: '/a', remote: '/b//'}])
  assert_equal([{l: '/home/me/proj', r: '/srv/proj'}, {l: '/a', r: '/b'}], map)
  assert_equal([], problems)
  # Bad entries are named, by position, and left out.
  const [m2, p2] = remote.Normalize([['rel', '/x'], ['/ok', '/ok2'], {local: '/a'}, '/s'])
  assert_equal([{l: '/ok', r: '/ok2'}], m2)
  assert_equal(3, len(p2))
  assert_match('`path_map\[1\]` must be', p2[0])
  assert_match('`path_map\[3\]`', p2[1])
  assert_match('`path_map\[4\]`', p2[2])
  assert_match('must be a list', remote.Normalize('/a')[1][0])
enddef

def TestTranslate()
  const map = remote.Normalize([['/home/me/proj', '/srv/proj'], ['/home/me/proj/vendor', '/opt/vendor'], ['/', '/mnt/host']])[0]
  # Both directions with one rule set.
  assert_equal('/srv/proj/a.py', remote.ToRemote(map, '/home/me/proj/a.py'))
  assert_equal('/home/me/proj/a.py', remote.ToLocal(map, '/srv/proj/a.py'))
  assert_equal('/srv/proj', remote.ToRemote(map, '/home/me/proj'))
  # The longest prefix wins, whatever the order of the entries.
  assert_equal('/opt/vendor/x.c', remote.ToRemote(map, '/home/me/proj/vendor/x.c'))
  assert_equal('/home/me/proj/vendor/x.c', remote.ToLocal(map, '/opt/vendor/x.c'))
  # Whole components only: /home/me/project is not under /home/me/proj
  # (it falls to the '/' entry).
  assert_equal('/mnt/host/home/me/project/a', remote.ToRemote(map, '/home/me/project/a'))
  assert_equal('/tmp/x', remote.ToLocal(map, '/mnt/host/tmp/x'))
  # Outside every mapping, and what is not a string: unchanged.
  assert_equal('/etc/passwd', remote.ToLocal(map, '/etc/passwd'))
  assert_equal(v:null, remote.ToRemote(map, v:null))
  assert_equal('/a/b', remote.ToRemote([], '/a/b'))
enddef

# The project reached through a symlink, /home/me/proj → /data/proj: a
# file opened by its real name goes over as one under the user's name;
# paths coming back keep the user's name.
def TestRealNames()
  const real = {'/home/me/proj': '/data/proj/', '/opt/x': '/opt/x'}
  const map = remote.WithRealNames(remote.Normalize([['/home/me/proj', '/srv/proj'], ['/opt/x', '/x']])[0], (p: string): string => get(real, p, p))
  assert_equal(3, len(map))
  assert_equal('/srv/proj/a.py', remote.ToRemote(map, '/data/proj/a.py'))
  assert_equal('/srv/proj/a.py', remote.ToRemote(map, '/home/me/proj/a.py'))
  assert_equal('/home/me/proj/a.py', remote.ToLocal(map, '/srv/proj/a.py'))
  assert_equal('/opt/x/y', remote.ToLocal(map, '/x/y'))
enddef

def TestCommand()
  assert_equal('plain/path-1.x', remote.ShellQuote('plain/path-1.x'))
  assert_equal("'Vim (my proj)'", remote.ShellQuote('Vim (my proj)'))
  assert_equal("'it'\\''s'", remote.ShellQuote("it's"))
  assert_equal("''", remote.ShellQuote(''))
  const argv = ['/opt/ccbridge', 'serve', '--ide-name', "Vim (it's)"]
  # ssh joins its words into one line for the remote shell: quoted.
  assert_equal(['ssh', '-T', 'h', '/opt/ccbridge', 'serve', '--ide-name', "'Vim (it'\\''s)'"],
    remote.Command(['ssh', '-T', 'h'], argv, v:null))
  assert_equal(['/usr/bin/autossh', '-T', 'h'] + argv[: 2] + ["'Vim (it'\\''s)'"],
    remote.Command(['/usr/bin/autossh', '-T', 'h'], argv, v:null))
  # docker exec passes the words as they are; cmd_quote decides over both.
  assert_equal(['docker', 'exec', '-i', 'c'] + argv, remote.Command(['docker', 'exec', '-i', 'c'], argv, v:null))
  assert_equal(['ssh', 'h'] + argv, remote.Command(['ssh', 'h'], argv, false))
  assert_equal(['env'] + argv[: 2] + ["'Vim (it'\\''s)'"], remote.Command(['env'], argv, true))
  assert_equal(argv, remote.Command([], argv, true))
enddef

def TestMessages()
  const map = remote.Normalize([['/l', '/r']])[0]
  assert_equal({workspaceFolders: ['/r', '/other'], ideName: 'x'},
    remote.Map(map, 'outgoing', 'workspaceChanged', {workspaceFolders: ['/l', '/other'], ideName: 'x'}))
  assert_equal({filePath: '/r/a', text: 't'}, remote.Map(map, 'outgoing', 'selectionChanged', {filePath: '/l/a', text: 't'}))
  assert_equal({tabs: [{path: '/r/a'}, {path: '/l/Untitled', isUntitled: true}]},
    remote.Map(map, 'outgoing', 'openEditorsChanged', {tabs: [{path: '/l/a'}, {path: '/l/Untitled', isUntitled: true}]}))
  assert_equal({path: '/r/a', uri: 'file:///r/a', diagnostics: []},
    remote.Map(map, 'outgoing', 'diagnosticsChanged', {path: '/l/a', uri: 'file:///l/a', diagnostics: []}))
  assert_equal({path: '/r/a', isDirty: true}, remote.Map(map, 'outgoing', 'documentDirtyChanged', {path: '/l/a', isDirty: true}))
  assert_equal({filePath: '/r/a'}, remote.Map(map, 'outgoing', 'atMentioned', {filePath: '/l/a'}))
  assert_equal({action: 'revert', path: '/r/a'}, remote.Map(map, 'outgoing', 'changeAction', {action: 'revert', path: '/l/a'}))
  # Coming in: the sidecar's names become this side's.
  assert_equal({id: 1, oldFilePath: '/l/a', newFilePath: '/l/a', originalContents: '/r/a'},
    remote.Map(map, 'incoming', 'showDiff', {id: 1, oldFilePath: '/r/a', newFilePath: '/r/a', originalContents: '/r/a'}))
  assert_equal({filePath: '/l/a'}, remote.Map(map, 'incoming', 'openFile', {filePath: '/r/a'}))
  assert_equal({paths: ['/l/a', '/x']}, remote.Map(map, 'incoming', 'openFiles', {paths: ['/r/a', '/x']}))
  assert_equal({path: '/l/a'}, remote.Map(map, 'incoming', 'saveDocument', {path: '/r/a'}))
  assert_equal({files: [{path: '/l/a'}, {path: '/x'}]}, remote.Map(map, 'result', 'changes', {files: [{path: '/r/a'}, {path: '/x'}]}))
  # The editor's answers go back to the sidecar's names.
  assert_equal({filePath: '/r/a', lineCount: 3}, remote.Map(map, 'answer', 'openFile', {filePath: '/l/a', lineCount: 3}))
  assert_equal({opened: ['/r/a']}, remote.Map(map, 'answer', 'openFiles', {opened: ['/l/a']}))
  # The caller's value is left alone; other methods and an empty map pass.
  const p = {filePath: '/l/a'}
  remote.Map(map, 'outgoing', 'selectionChanged', p)
  assert_equal({filePath: '/l/a'}, p)
  assert_equal({filePath: '/l/a'}, remote.Map(map, 'outgoing', 'nothingKnown', p))
  assert_equal({filePath: '/l/a'}, remote.Map([], 'outgoing', 'selectionChanged', p))
  assert_equal(v:null, remote.Map(map, 'answer', 'saveDocument', v:null))
enddef

v:errors = []
for T in [TestNormalize, TestTranslate, TestRealNames, TestCommand, TestMessages]
  try
    T()
  catch
    v:errors->add(v:exception .. ' (' .. v:throwpoint .. ')')
  endtry
endfor
writefile(v:errors, $CCBRIDGE_TEST_OUT)
qall!
