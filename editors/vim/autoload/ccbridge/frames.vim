vim9script
# The sidecar's output as messages: LSP framing (a `Content-Length` header,
# a blank line, then that many bytes of JSON), read here rather than by
# Vim's "lsp" channel mode, whose reader in Vim 9.0 sometimes dropped a
# request that arrived while Vim was busy (a `reviewText` never reached the
# plugin, and the agent lost the user's edits in the review). Pure: the
# caller keeps its Reader(), which holds the bytes not yet a whole message.

# A reader of the sidecar's output: the chunks since the last whole
# message, their bytes, and the bytes the message being read needs in all,
# its header included (0 while the header is incomplete, -1 for a header
# without a length, which Split skips). Feed() joins the chunks only once
# that many have come, so a large message costs its size once, not once per
# chunk: joining and splitting at every chunk made a 16 MiB message (in
# 64 KiB reads) cost Vim 8 s (editors/vim/test/bench-frames.vim).
export def Reader(): dict<any>
  return {chunks: [], have: 0, need: 0}
enddef

# The whole messages `chunk` completes, decoded, in order.
export def Feed(r: dict<any>, chunk: string): list<any>
  r.chunks->add(chunk)
  r.have += strlen(chunk)
  if r.need == 0
    # Until its header is whole a message is a few bytes: joining is cheap.
    const all = join(r.chunks, '')
    r.chunks = [all]
    r.need = Needed(all)
  endif
  if r.need == 0 || r.have < r.need
    return []
  endif
  const [messages, rest] = Split(join(r.chunks, ''))
  r.chunks = rest == '' ? [] : [rest]
  r.have = strlen(rest)
  r.need = rest == '' ? 0 : Needed(rest)
  return messages
enddef

# The bytes the first message of `buffer` needs in all, its header
# included: 0 while the header is incomplete, -1 for a header without a
# Content-Length.
def Needed(buffer: string): number
  const head_end = stridx(buffer, "\r\n\r\n")
  if head_end < 0
    return 0
  endif
  const len = matchstr(strpart(buffer, 0, head_end), '\c\<content-length:\s*\zs\d\+')
  return len == '' ? -1 : head_end + 4 + str2nr(len)
enddef

# The whole messages at the start of `buffer`, decoded, and the bytes left
# over: [messages, rest]. A header without a Content-Length, or a body
# that is not JSON, is skipped.
export def Split(buffer: string): list<any>
  var messages: list<any> = []
  var rest = buffer
  while true
    const head_end = stridx(rest, "\r\n\r\n")
    if head_end < 0
      break
    endif
    const len = matchstr(strpart(rest, 0, head_end), '\c\<content-length:\s*\zs\d\+')
    const start = head_end + 4
    if len == ''
      rest = strpart(rest, start)
      continue
    endif
    const size = str2nr(len)
    if strlen(rest) < start + size
      break
    endif
    const body = strpart(rest, start, size)
    rest = strpart(rest, start + size)
    try
      messages->add(json_decode(body))
    catch
    endtry
  endwhile
  return [messages, rest]
enddef
