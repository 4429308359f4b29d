vim9script
# Unit tests of autoload/ccbridge/review.vim: texts to lines and back, the
# verdict, which hunk a hunk command decides (in real diff windows). Writes
# the failures (none: an empty file) to $CCBRIDGE_TEST_OUT. Run with
# editors/vim/test/run-unit, or:
#   CCBRIDGE_TEST_OUT=/tmp/out vim -N -u NONE -i NONE -es -S editors/vim/test/review.vim
const root = fnamemodify(resolve(expand('<sfile>:p')), ':h:h')
&runtimepath = root .. ',' .. &runtimepath

import autoload 'ccbridge/review.vim'

# Splits `text` the way a review does and joins it back: [text, lines, crlf].
def RoundTrip(text: string, ...original: list<string>): list<any>
  const crlf = call(review.Crlf, [text] + original)
  const [lines, eol] = review.SplitText(text, crlf)
  return [review.JoinLines(lines, eol, crlf), lines, crlf]
enddef

def TestSplitAndJoinGiveBackEveryText()
  for text in ['', 'a', "\n", "\r\n", "a\nb\n", "a\nb", "a\r\nb\r\n", "a\r\nb",
      "a\r\nb\nc\r\n", "a\nb\r\nc", "a\r\n\nb\n\r\n", "a\rb\n", "a\r\r\n", "\n\n"]
    assert_equal(text, RoundTrip(text)[0], strtrans(string(text)))
    assert_equal(text, RoundTrip(text, "x\r\ny\n")[0], strtrans(string(text)) .. ' against a mixed original')
    for line in RoundTrip(text)[1]
      assert_equal(-1, stridx(line, "\n"), strtrans(string(text)) .. ': a line holds a line break')
    endfor
  endfor
enddef

def TestCrlfModeOnlyWhenEveryLineBreakIsCrlf()
  assert_equal(["a\r\nb\r\n", ['a', 'b'], true], RoundTrip("a\r\nb\r\n"))
  assert_equal(["a\nb\n", ['a', 'b'], false], RoundTrip("a\nb\n"))
  # Mixed: a CRLF line keeps its CR as text, the others are left alone.
  assert_equal(["a\r\nb\nc", ["a\r", 'b', 'c'], false], RoundTrip("a\r\nb\nc"))
  assert_false(review.Crlf('abc'))
  assert_true(review.Crlf("a\r\n", "b\r\nc"))
  assert_true(review.Crlf("a\r\n", 'b'))
  # The original's lines keep their CRs when the proposal's endings differ,
  # so a hunk rejected brings the original's bytes back.
  assert_false(review.Crlf("a\r\n", "b\n"))
  assert_false(review.Crlf("a\n", "b\r\n"))
  assert_equal([["x\r", "y\r"], true], review.SplitText("x\r\ny\r\n", review.Crlf("x\r\nz\n", "x\r\ny\r\n")))
enddef

def TestAcceptingANewFileIsAcceptingEvenEmpty()
  assert_equal('accepted', review.Verdict('', v:null))
  assert_equal('accepted', review.Verdict("x\n", v:null))
  assert_equal('rejected', review.Verdict("x\n", "x\n"))
  assert_equal('accepted', review.Verdict('', "x\n"))
  assert_equal('rejected', review.Verdict('', ''))
enddef

def TestRejectingEveryHunkIsARejection()
  assert_equal('', review.Outcome(['a'], ['b'], ['a']))
  assert_equal('rejected', review.Outcome([''], [''], ['']))
  assert_equal('rejected', review.Outcome(['a', 'b'], ['a', 'b'], ['a', 'b']))
  assert_equal('accept', review.Outcome(['a', 'c'], ['a', 'c'], ['a', 'b']))
enddef

def TestTheFinalLineBreakIsDecidedOnItsOwn()
  assert_equal('', review.Outcome(['a'], ['a'], ['a'], {base: true, prop: false, original: true}))
  assert_equal('rejected', review.Outcome(['a'], ['a'], ['a'], {base: true, prop: true, original: true}))
  assert_equal('accept', review.Outcome(['a'], ['a'], ['a'], {base: false, prop: false, original: true}))
  assert_equal('rejected', review.Outcome([''], [''], ['']))
enddef

# Two scratch buffers in diff mode, the proposal's window current.
def DiffOf(base: list<string>, prop: list<string>)
  silent! only!
  enew!
  setlocal buftype=nofile bufhidden=wipe
  setline(1, base)
  diffthis
  new
  setlocal buftype=nofile bufhidden=wipe
  setline(1, prop)
  diffthis
  diffupdate
enddef

def TestAHunkCommandDecidesTheHunkAtOrBelowTheCursorOnly()
  DiffOf(['a', 'b', 'c', 'd', 'e', 'f'], ['a', 'B', 'c', 'd', 'e', 'f'])
  cursor(2, 1)
  assert_true(review.HunkAtOrBelow(), 'in the hunk')
  assert_equal(2, line('.'))
  cursor(1, 1)
  assert_true(review.HunkAtOrBelow(), 'above the hunk')
  assert_equal(2, line('.'))
  # Below the only hunk: none, and not the one above.
  cursor(4, 1)
  assert_false(review.HunkAtOrBelow(), 'below the hunk')
  assert_equal(4, line('.'))
  # Lines deleted at the end: their filler follows the last line.
  DiffOf(['a', 'b', 'c', 'd'], ['A', 'b'])
  cursor(2, 1)
  assert_true(review.HunkAtOrBelow(), 'on the last line, deletion below')
  assert_equal(2, line('.'))
  cursor(1, 1)
  assert_true(review.HunkAtOrBelow(), 'in the first hunk')
  assert_equal(1, line('.'))
  # Above the end's deletion, with no other hunk between: that one.
  DiffOf(['a', 'b', 'c', 'd', 'e'], ['a', 'b', 'c'])
  cursor(1, 1)
  assert_true(review.HunkAtOrBelow(), 'the deletion at the end, below')
  assert_equal(3, line('.'))
  DiffOf(['a', 'b', 'c'], ['a', 'b', 'c'])
  cursor(2, 1)
  assert_false(review.HunkAtOrBelow(), 'no hunk at all')
  diffoff!
enddef

v:errors = []
for T in [TestSplitAndJoinGiveBackEveryText, TestCrlfModeOnlyWhenEveryLineBreakIsCrlf,
    TestAcceptingANewFileIsAcceptingEvenEmpty, TestRejectingEveryHunkIsARejection,
    TestAHunkCommandDecidesTheHunkAtOrBelowTheCursorOnly]
  try
    T()
  catch
    v:errors->add(v:exception .. ' (' .. v:throwpoint .. ')')
  endtry
endfor
writefile(v:errors, $CCBRIDGE_TEST_OUT)
qall!
