-- `ccbridge.diff`: the pure parts of a review (texts to lines and back,
-- the verdict, which hunk a command decides).
local d = require("ccbridge.diff")

local tests = {}

--- Splits `text` the way a review does (alone: a new file) and joins it back.
local function round_trip(text, original)
  local crlf = d.crlf(text, original)
  local lines, eol = d.split(text, crlf)
  return d.join(lines, eol, crlf), lines, crlf
end

function tests.split_and_join_give_back_every_text(t)
  for _, text in ipairs({
    "",
    "a",
    "\n",
    "\r\n",
    "a\nb\n",
    "a\nb",
    "a\r\nb\r\n",
    "a\r\nb",
    "a\r\nb\nc\r\n",
    "a\nb\r\nc",
    "a\r\n\nb\n\r\n",
    "a\rb\n",
    "a\r\r\n",
    "\n\n",
  }) do
    t.eq(vim.inspect(text), (round_trip(text)), text)
    t.eq(vim.inspect(text) .. " against a mixed original", (round_trip(text, "x\r\ny\n")), text)
  end
end

function tests.lines_never_hold_a_line_break(t)
  -- A buffer line cannot hold "\n" (nvim_buf_set_lines refuses it).
  for _, text in ipairs({ "a\r\nb\nc\r\n", "a\nb\r\n", "a\r\n\nb" }) do
    local _, lines = round_trip(text)
    for _, line in ipairs(lines) do
      t.eq(vim.inspect(text) .. " line " .. vim.inspect(line), line:find("\n", 1, true), nil)
    end
  end
end

function tests.crlf_mode_only_when_every_line_break_is_crlf(t)
  t.eq("uniform CRLF", { round_trip("a\r\nb\r\n") }, { "a\r\nb\r\n", { "a", "b" }, true })
  t.eq("uniform LF", { round_trip("a\nb\n") }, { "a\nb\n", { "a", "b" }, false })
  t.eq("mixed: the CR stays in its line", { round_trip("a\r\nb\nc") }, { "a\r\nb\nc", { "a\r", "b", "c" }, false })
  t.eq("no line break", d.crlf("abc"), false)
  t.eq("both texts CRLF", d.crlf("a\r\n", "b\r\nc"), true)
  t.eq("a one-line original", d.crlf("a\r\n", "b"), true)
  -- The original's lines keep their CRs when the proposal's line endings
  -- differ, so a hunk rejected brings the original's bytes back.
  t.eq("an LF original", d.crlf("a\r\n", "b\n"), false)
  t.eq("an LF proposal", d.crlf("a\n", "b\r\n"), false)
  t.eq(
    "original lines in LF mode",
    { d.split("x\r\ny\r\n", d.crlf("x\r\nz\n", "x\r\ny\r\n")) },
    { { "x\r", "y\r" }, true }
  )
end

function tests.accepting_a_new_file_is_accepting_even_empty(t)
  t.eq("an empty new file", d.verdict("", nil), "accepted")
  t.eq("a new file", d.verdict("x\n", nil), "accepted")
  t.eq("an existing file, unchanged", d.verdict("x\n", "x\n"), "rejected")
  t.eq("an existing file emptied", d.verdict("", "x\n"), "accepted")
  t.eq("an empty existing file, unchanged", d.verdict("", ""), "rejected")
end

function tests.rejecting_every_hunk_is_a_rejection(t)
  t.eq("hunks left", d.outcome({ "a" }, { "b" }, { "a" }), nil)
  t.eq("every hunk of a new file rejected", d.outcome({ "" }, { "" }, { "" }), "rejected")
  t.eq("every hunk rejected", d.outcome({ "a", "b" }, { "a", "b" }, { "a", "b" }), "rejected")
  t.eq("one hunk accepted", d.outcome({ "a", "c" }, { "a", "c" }, { "a", "b" }), "accept")
  local same = { base = true, prop = true, original = true }
  t.eq("every hunk rejected, same ending", d.outcome({ "a" }, { "a" }, { "a" }, same), "rejected")
end

function tests.a_hunk_command_decides_the_hunk_at_or_below_the_cursor_only(t)
  -- Proposal lines 2-3 replace original line 2; line 6 of the proposal is
  -- new (after original line 4); original line 7 is gone (after proposal
  -- line 8).
  local hunks = { { 2, 1, 2, 2 }, { 4, 0, 6, 1 }, { 7, 1, 8, 0 } }
  t.eq("above the first", d.pick(hunks, 1, "prop"), hunks[1])
  t.eq("in the first", d.pick(hunks, 3, "prop"), hunks[1])
  t.eq("between", d.pick(hunks, 4, "prop"), hunks[2])
  t.eq("in the second", d.pick(hunks, 6, "prop"), hunks[2])
  t.eq("above a deletion", d.pick(hunks, 8, "prop"), hunks[3])
  t.eq("below a deletion", d.pick(hunks, 9, "prop"), hunks[3])
  t.eq("below every hunk: none, not the one above", d.pick(hunks, 10, "prop"), nil)
  t.eq("original side, at an insertion", d.pick(hunks, 5, "base"), hunks[2])
  t.eq("original side, in a deletion", d.pick(hunks, 7, "base"), hunks[3])
  t.eq("original side, below every hunk", d.pick(hunks, 9, "base"), nil)
  t.eq("no hunk", d.pick({}, 1, "prop"), nil)
end

function tests.a_change_to_the_final_line_break_is_a_hunk_of_its_own_at_the_last_line(t)
  local hunks = { { 1, 1, 1, 1 } }
  t.eq("same ending: no more hunks", d.with_eol(hunks, 3, 3, false), hunks)
  local all = d.with_eol(hunks, 3, 3, true)
  t.eq("one more", #all, 2)
  t.eq("the real one untouched", all[1], hunks[1])
  t.eq("at the last line", d.pick(all, 3, "prop"), all[2])
  t.eq("below the others", d.pick(all, 2, "base"), all[2])
  t.eq("the real one first", d.pick(all, 1, "prop"), hunks[1])
  t.eq("marked", all[2].eol, true)
  t.eq("alone", d.pick(d.with_eol({}, 2, 2, true), 1, "prop").eol, true)
  local lf = { base = true, prop = false, original = true }
  t.eq("the endings still differ", d.outcome({ "a" }, { "a" }, { "a" }, lf), nil)
  lf.prop = true
  t.eq("the ending rejected", d.outcome({ "a" }, { "a" }, { "a" }, lf), "rejected")
  lf = { base = false, prop = false, original = true }
  t.eq("the ending accepted", d.outcome({ "a" }, { "a" }, { "a" }, lf), "accept")
end

return tests
