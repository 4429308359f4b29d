vim9script
# Unit tests of autoload/ccbridge/frames.vim (the sidecar's output as
# messages). Writes the failures (none: an empty file) to
# $CCBRIDGE_TEST_OUT. Run with editors/vim/test/run-unit, or:
#   CCBRIDGE_TEST_OUT=/tmp/out vim -N -u NONE -i NONE -es -S editors/vim/test/frames.vim
set encoding=utf-8
const root = fnamemodify(resolve(expand('<sfile>:p')), ':h:h')
&runtimepath = root .. ',' .. &runtimepath

import autoload 'ccbridge/frames.vim'

def Frame(json: string): string
  return 'Content-Length: ' .. strlen(json) .. "\r\n\r\n" .. json
enddef

def TestTwoMessagesInOneChunkAreBothRead()
  # What Vim 9.0's own reader sometimes lost: a request right behind
  # another message.
  const buf = Frame('{"id":1,"result":null}') .. Frame('{"id":2,"method":"reviewText","params":{"id":1}}')
  const [messages, rest] = frames.Split(buf)
  assert_equal([{id: 1, result: v:null}, {id: 2, method: 'reviewText', params: {id: 1}}], messages)
  assert_equal('', rest)
enddef

def TestAMessageSplitAnywhereIsReadOnceWhole()
  const whole = Frame('{"method":"x","params":{"t":"é中😀"}}')
  # Cut inside the header, inside the blank line, inside a character.
  for cut in [5, stridx(whole, "\r\n") + 1, strlen(whole) - 6]
    var [messages, rest] = frames.Split(strpart(whole, 0, cut))
    assert_equal([], messages, 'cut at ' .. cut)
    [messages, rest] = frames.Split(rest .. strpart(whole, cut))
    assert_equal([{method: 'x', params: {t: 'é中😀'}}], messages, 'cut at ' .. cut)
    assert_equal('', rest)
  endfor
enddef

def TestTheLengthCountsBytesAndOtherHeadersAreAllowed()
  const json = '{"t":"😀"}'
  const buf = "content-type: application/json\r\nCONTENT-LENGTH: " .. strlen(json) .. "\r\n\r\n" .. json .. 'Content'
  const [messages, rest] = frames.Split(buf)
  assert_equal([{t: '😀'}], messages)
  assert_equal('Content', rest)
enddef

def TestAHeaderWithoutALengthOrABodyNotJsonIsSkipped()
  const buf = "X-Other: 1\r\n\r\n" .. Frame('not json') .. Frame('{"ok":1}')
  const [messages, rest] = frames.Split(buf)
  assert_equal([{ok: 1}], messages)
  assert_equal('', rest)
enddef

def TestAReaderFedByteByByteGivesEachMessageOnceWhole()
  const whole = Frame('{"method":"x","params":{"t":"é中😀"}}') .. Frame('{"id":2,"result":null}')
  var r = frames.Reader()
  var got: list<any> = []
  for i in range(strlen(whole))
    const messages = frames.Feed(r, strpart(whole, i, 1))
    if !empty(messages)
      got->add([i, messages])
    endif
  endfor
  const first = strlen(Frame('{"method":"x","params":{"t":"é中😀"}}')) - 1
  assert_equal([[first, [{method: 'x', params: {t: 'é中😀'}}]], [strlen(whole) - 1, [{id: 2, result: v:null}]]], got)
enddef

def TestAReaderGivesWhatAChunkCompletesAndKeepsTheRest()
  const two = Frame('{"a":1}') .. Frame('{"b":2}')
  const third = Frame('{"c":"' .. repeat('x', 100000) .. '"}')
  var r = frames.Reader()
  assert_equal([{a: 1}, {b: 2}], frames.Feed(r, two .. strpart(third, 0, 10)))
  assert_equal([], frames.Feed(r, strpart(third, 10, 50000)))
  assert_equal([{c: repeat('x', 100000)}], frames.Feed(r, strpart(third, 50010) .. "X-Other: 1\r\n\r\n"))
  assert_equal([{d: 4}], frames.Feed(r, Frame('{"d":4}')))
enddef

v:errors = []
for T in [TestTwoMessagesInOneChunkAreBothRead, TestAMessageSplitAnywhereIsReadOnceWhole,
    TestTheLengthCountsBytesAndOtherHeadersAreAllowed, TestAHeaderWithoutALengthOrABodyNotJsonIsSkipped,
    TestAReaderFedByteByByteGivesEachMessageOnceWhole, TestAReaderGivesWhatAChunkCompletesAndKeepsTheRest]
  try
    T()
  catch
    v:errors->add(v:exception .. ' (' .. v:throwpoint .. ')')
  endtry
endfor
writefile(v:errors, $CCBRIDGE_TEST_OUT)
qall!
