vim9script
# Unit tests of autoload/ccbridge/position.vim (byte offsets to the UTF-16
# code units the editor protocol counts). Writes the failures (none: an
# empty file) to $CCBRIDGE_TEST_OUT. Run with editors/vim/test/run-unit, or:
#   CCBRIDGE_TEST_OUT=/tmp/out vim -N -u NONE -i NONE -es -S editors/vim/test/position.vim
set encoding=utf-8
const root = fnamemodify(resolve(expand('<sfile>:p')), ':h:h')
&runtimepath = root .. ',' .. &runtimepath

import autoload 'ccbridge/position.vim'

def TestAsciiBytesAreUnits()
  assert_equal(0, position.Utf16('hello', 0))
  assert_equal(3, position.Utf16('hello', 3))
  assert_equal(5, position.Utf16('hello', 99))
enddef

def TestEachCharacterCountsAsUtf16Does()
  # é (2 bytes, 1 unit), 中 (3 bytes, 1 unit), 😀 (4 bytes, 2 units).
  const line = 'aé中😀b'
  assert_equal(2, position.Utf16(line, 3))
  assert_equal(3, position.Utf16(line, 6))
  assert_equal(5, position.Utf16(line, 10))
  assert_equal(6, position.Utf16(line, strlen(line)))
  # A byte inside é counts it.
  assert_equal(2, position.Utf16(line, 2))
enddef

def TestCharEndStepsOverAWholeCharacter()
  const line = 'aé中😀'
  assert_equal(1, position.CharEnd(line, 0))
  assert_equal(3, position.CharEnd(line, 1))
  assert_equal(6, position.CharEnd(line, 3))
  assert_equal(10, position.CharEnd(line, 6))
  assert_equal(10, position.CharEnd(line, 10))
enddef

v:errors = []
for T in [TestAsciiBytesAreUnits, TestEachCharacterCountsAsUtf16Does, TestCharEndStepsOverAWholeCharacter]
  try
    T()
  catch
    v:errors->add(v:exception .. ' (' .. v:throwpoint .. ')')
  endtry
endfor
writefile(v:errors, $CCBRIDGE_TEST_OUT)
qall!
