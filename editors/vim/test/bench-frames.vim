vim9script
# How long Vim takes to read one large message from the sidecar, in the
# 64 KiB pieces a pipe delivers: frames.Feed (the plugin's reader) beside
# the way it read before, joining what it had with each piece and splitting
# again (the baseline). Figures in docs/benchmarks.md. Run with:
#   vim -N -u NONE -i NONE -es -S editors/vim/test/bench-frames.vim
# It writes its table to $CCBRIDGE_BENCH_OUT (default: bench-frames.txt).
set encoding=utf-8
const root = fnamemodify(resolve(expand('<sfile>:p')), ':h:h')
&runtimepath = root .. ',' .. &runtimepath

import autoload 'ccbridge/frames.vim'

const PIECE = 65536

def Message(mib: number): string
  const body = '{"jsonrpc":"2.0","method":"showDiff","params":{"proposed":"'
    .. repeat('a', mib * 1024 * 1024) .. '"}}'
  return 'Content-Length: ' .. strlen(body) .. "\r\n\r\n" .. body
enddef

# Seconds to read `msg` piece by piece with Feed, and with the baseline.
def Time(msg: string): list<float>
  var start = reltime()
  var r = frames.Reader()
  var got = 0
  for at in range(0, strlen(msg) - 1, PIECE)
    got += len(frames.Feed(r, strpart(msg, at, PIECE)))
  endfor
  const feed = reltimefloat(reltime(start))
  assert_equal(1, got)
  start = reltime()
  var inbox = ''
  got = 0
  for at in range(0, strlen(msg) - 1, PIECE)
    const [messages, rest] = frames.Split(inbox .. strpart(msg, at, PIECE))
    inbox = rest
    got += len(messages)
  endfor
  const baseline = reltimefloat(reltime(start))
  assert_equal(1, got)
  return [feed, baseline]
enddef

var lines = ['| message | frames.Feed | join and split at each piece (before) |', '|---|---|---|']
for mib in [1, 4, 16]
  const [feed, baseline] = Time(Message(mib))
  lines->add(printf('| %d MiB in 64 KiB pieces | %.3f s | %.3f s |', mib, feed, baseline))
endfor
lines += v:errors
writefile(lines, empty($CCBRIDGE_BENCH_OUT) ? 'bench-frames.txt' : $CCBRIDGE_BENCH_OUT)
qall!
