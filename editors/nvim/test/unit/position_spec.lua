-- `ccbridge.position`: byte offsets to the UTF-16 code units the editor
-- protocol counts.
local p = require("ccbridge.position")

local tests = {}

function tests.ascii_bytes_are_units(t)
  t.eq("start", p.utf16("hello", 0), 0)
  t.eq("middle", p.utf16("hello", 3), 3)
  t.eq("past the end", p.utf16("hello", 99), 5)
end

function tests.each_character_counts_as_utf16_does(t)
  -- é (2 bytes, 1 unit), 中 (3 bytes, 1 unit), 😀 (4 bytes, 2 units).
  local line = "aé中😀b"
  t.eq("after é", p.utf16(line, 3), 2)
  t.eq("after 中", p.utf16(line, 6), 3)
  t.eq("after 😀", p.utf16(line, 10), 5)
  t.eq("whole line", p.utf16(line, #line), 6)
  t.eq("inside é counts it", p.utf16(line, 2), 2)
end

function tests.bytes_that_are_not_utf8_count_one_unit_each(t)
  t.eq("stray continuation bytes", p.utf16("\128\129x", 3), 3)
end

function tests.char_end_steps_over_a_whole_character(t)
  local line = "aé中😀"
  t.eq("ascii", p.char_end(line, 0), 1)
  t.eq("é", p.char_end(line, 1), 3)
  t.eq("中", p.char_end(line, 3), 6)
  t.eq("😀", p.char_end(line, 6), 10)
  t.eq("past the end", p.char_end(line, 10), 10)
  t.eq("truncated at the line's end", p.char_end("\240", 0), 1)
end

return tests
