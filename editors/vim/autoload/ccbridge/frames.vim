vim9script
# The sidecar's output as messages: LSP framing (a `Content-Length` header,
# a blank line, then that many bytes of JSON), read here rather than by
# Vim's "lsp" channel mode, whose reader in Vim 9.0 sometimes dropped a
# request that arrived while Vim was busy (a `reviewText` never reached the
# plugin, and the agent lost the user's edits in the review). Pure: the
# caller keeps the bytes not yet a whole message.

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
