// The text a review goes back as (src/text.ts), without a window: Node 24
// runs the module's TypeScript as it is.
import { test } from "node:test";
import assert from "node:assert/strict";
import { asSent } from "../src/text.ts";

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
