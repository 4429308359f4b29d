// The text a review goes back as (src/text.ts), without a window: Node 24
// runs the module's TypeScript as it is.
import { test } from "node:test";
import assert from "node:assert/strict";
import { asSent, onlyTrimWhitespace, track } from "../src/text.ts";

// Regression: VS Code gives a document's text with one line ending and no
// byte-order mark, and that text was sent as accepted: a file whose lines
// end both ways came back with every line converted, a BOM dropped, and
// Claude told the user had edited its proposal.
test("an unchanged proposal goes back byte for byte", () => {
  for (const proposed of ["one\r\ntwo\nthree\r\n", "\uFEFFa\r\nb\r\n", "a\rb\nc", "", "x\n"]) {
    const shown = proposed.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
    assert.equal(asSent(shown, proposed), proposed, JSON.stringify(proposed));
  }
});

test("an edited proposal is the user's text, with the proposal's byte-order mark", () => {
  assert.equal(asSent("a\nB\n", "a\r\nb\n"), "a\nB\n");
  assert.equal(asSent("A\r\n", "\uFEFFa\r\n"), "\uFEFFA\r\n");
  assert.equal(asSent("\uFEFFA\n", "\uFEFFa\n"), "\uFEFFA\n");
});

// Regression: an edit that began above a hunk and ended inside it only
// shrank the hunk, which kept its start: with `a b C1 C2 d e` proposed for
// `a b c d e` (the hunk: lines 2-3), deleting from `b` to the start of
// `C2` left the hunk empty at `d`, and Reject put `c` back beside `C2`,
// the rejected line surviving.
test("a hunk follows edits of the proposal: shifted, unchanged, or grown to what the edit touched", () => {
  const hunk = { start: 2, count: 2 };
  const edit = (startLine, endLine, endCharacter, addedLines) => ({ startLine, endLine, endCharacter, addedLines });
  // Above it, a line added; below it, anything.
  assert.deepEqual(track(hunk, edit(0, 0, 3, 1)), { start: 3, count: 2 });
  assert.deepEqual(track(hunk, edit(4, 5, 0, 0)), hunk);
  // Ending at the hunk's first line's start leaves the hunk's lines alone.
  assert.deepEqual(track(hunk, edit(0, 2, 0, 0)), { start: 0, count: 2 });
  // Inside it: it grows or shrinks with the edit.
  assert.deepEqual(track(hunk, edit(2, 2, 2, 2)), { start: 2, count: 4 });
  assert.deepEqual(track(hunk, edit(2, 3, 1, 0)), { start: 2, count: 1 });
  // The case above: from `b` (line 1) to the start of `C2` (line 3).
  assert.deepEqual(track(hunk, edit(1, 3, 0, 0)), { start: 1, count: 1 });
  // From inside it to below it: up to the edit's last line.
  assert.deepEqual(track(hunk, edit(3, 5, 1, 0)), { start: 2, count: 2 });
});

// Regression: a hunk that only re-indented lines had its CodeLens but no
// highlight (the diff editor ignores leading and trailing whitespace by
// default), so "Accept change 1/2" pointed at lines that looked unchanged.
test("a change of leading or trailing whitespace only is told apart", () => {
  assert.equal(onlyTrimWhitespace(["  a", "b"], ["    a", "b "]), true);
  assert.equal(onlyTrimWhitespace(["a"], ["a"]), false, "no change at all");
  assert.equal(onlyTrimWhitespace(["a"], ["b"]), false, "a visible change");
  assert.equal(onlyTrimWhitespace(["a"], ["a", ""]), false, "a line added is shown");
  assert.equal(onlyTrimWhitespace(["a b"], ["a  b"]), false, "inner whitespace is shown");
  assert.equal(onlyTrimWhitespace([], []), false);
});
