vim9script
# Vim positions to the editor protocol's: 0-based lines, `character` in
# UTF-16 code units (what VS Code and LSP count, and what tools reading the
# selection back expect), end exclusive. Vim counts bytes, 1-based columns,
# and an inclusive end in Visual mode. 'encoding' must be utf-8.

# UTF-16 code units in the first `byte` bytes of `line` (a byte index
# inside a character counts that character).
export def Utf16(line: string, byte: number): number
  const prefix = strpart(line, 0, byte)
  const n = strlen(prefix)
  const chars = strchars(prefix)
  if chars == n
    return n
  endif
  # Characters outside the BMP are two units (a surrogate pair).
  return chars + len(filter(str2list(prefix), (_, c) => c > 0xFFFF))
enddef

# The 0-based byte just past the character that starts at 0-based `byte`.
export def CharEnd(line: string, byte: number): number
  return byte + strlen(strpart(line, byte, 1, true))
enddef

def Pos(line: number, character: number): dict<number>
  return {line: line, character: character}
enddef

# A bare cursor at `lnum` (1-based) and byte column `col` (1-based), as
# line('.') and col('.') give them.
export def Cursor(lnum: number, col: number): dict<any>
  const c = Utf16(getline(lnum), col - 1)
  return {text: '', selection: {start: Pos(lnum - 1, c), end: Pos(lnum - 1, c)}}
enddef

# The characters of `line` whose screen columns (1-based, as virtcol())
# lie in [left, right]: their first byte (0-based) and the byte past the
# last, or [-1, -1] when none does.
def BlockBytes(line: string, left: number, right: number): list<number>
  var vcol = 0
  var byte = 0
  var first = -1
  var past = -1
  const total = strlen(line)
  while byte < total
    const ch = strpart(line, byte, 1, true)
    const start = vcol + 1
    vcol += strdisplaywidth(ch, vcol)
    if start > right
      break
    endif
    if start >= left
      if first < 0
        first = byte
      endif
      past = byte + strlen(ch)
    endif
    byte += strlen(ch)
  endwhile
  return [first, past]
enddef

# Screen column (1-based) where the character at byte `col` (1-based)
# starts, and where it ends.
def VcolRange(line: string, col: number): list<number>
  const before = strpart(line, 0, col - 1)
  const startv = strdisplaywidth(before) + 1
  const ch = strpart(line, col - 1, 1, true)
  const endv = strdisplaywidth(before .. (ch == '' ? ' ' : ch))
  return [startv, endv]
enddef

# The selection between two getpos() results in Visual `kind` ("v", "V" or
# CTRL-V), in either order, with its text. `to_eol`: the selection was
# extended to the ends of lines with `$`.
export def Visual(kind: string, pa: list<number>, pb: list<number>, to_eol = false): dict<any>
  var a = pa
  var b = pb
  if b[1] < a[1] || (b[1] == a[1] && b[2] < a[2])
    [a, b] = [b, a]
  endif
  const l1 = a[1]
  const l2 = b[1]
  const last = line('$')
  const lines = getline(l1, l2)
  if empty(lines)
    return Cursor(l1, 1)
  endif
  const first = lines[0]
  const final = lines[-1]
  if kind ==# 'V'
    # Whole lines: VS Code's form is the start of the next line as the end
    # (the CLI then shows l1..l2); on the last line, its end.
    const text = join(lines, "\n")
    if l2 < last
      return {text: text .. "\n", selection: {start: Pos(l1 - 1, 0), end: Pos(l2, 0)}}
    endif
    return {text: text, selection: {start: Pos(l1 - 1, 0), end: Pos(l2 - 1, Utf16(final, strlen(final)))}}
  endif
  if kind ==# "\<C-v>"
    # Blockwise: the block's text line by line; the block's corners (a
    # rectangle has no VS Code form).
    const ra = VcolRange(getline(pa[1]), pa[2])
    const rb = VcolRange(getline(pb[1]), pb[2])
    const left = min([ra[0], rb[0]])
    const right = to_eol ? 1000000000 : max([ra[1], rb[1]])
    var parts: list<string> = []
    var first_byte = 0
    var past_byte = 0
    var i = 0
    for line in lines
      const [f, p] = BlockBytes(line, left, right)
      parts->add(f < 0 ? '' : strpart(line, f, p - f))
      if i == 0
        first_byte = f < 0 ? strlen(line) : f
      endif
      if i == len(lines) - 1
        past_byte = f < 0 ? strlen(line) : p
      endif
      i += 1
    endfor
    return {text: join(parts, "\n"), selection: {
      start: Pos(l1 - 1, Utf16(first, first_byte)),
      end: Pos(l2 - 1, Utf16(final, past_byte))}}
  endif
  # Charwise.
  const start_byte = a[2] - 1
  var end_byte: number
  var text: string
  var eol = to_eol || b[2] > strlen(final)
  if eol
    end_byte = strlen(final)
  elseif &selection ==# 'exclusive'
    end_byte = b[2] - 1
  else
    end_byte = CharEnd(final, b[2] - 1)
  endif
  if l1 == l2
    text = strpart(first, start_byte, end_byte - start_byte)
  else
    text = strpart(first, start_byte) .. "\n"
    if len(lines) > 2
      text ..= join(lines[1 : -2], "\n") .. "\n"
    endif
    text ..= strpart(final, 0, end_byte)
  endif
  if eol && l2 < last
    # The line break is selected (`v$`, or an empty line).
    return {text: text .. "\n", selection: {start: Pos(l1 - 1, Utf16(first, start_byte)), end: Pos(l2, 0)}}
  endif
  return {text: text, selection: {
    start: Pos(l1 - 1, Utf16(first, start_byte)),
    end: Pos(l2 - 1, Utf16(final, end_byte))}}
enddef
