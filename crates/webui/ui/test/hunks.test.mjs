// Unit tests of src/hunks.ts (server hunks → CodeMirror changes and
// chunks), run with `npm test` in crates/webui/ui. The module is bundled
// with esbuild into a temporary file first (it is TypeScript).
import { test } from "node:test";
import assert from "node:assert/strict";
import { build } from "esbuild";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "ccbridge-ui-test-"));
const out = join(dir, "hunks.mjs");
await build({
  stdin: {
    contents:
      'export * from "./src/hunks.ts"; export { finalBreakChange, lineEndingsChange } from "./src/review-deco.ts"; export { Chunk, presentableDiff } from "@codemirror/merge";',
    resolveDir: join(here, ".."),
    loader: "ts",
  },
  bundle: true,
  format: "esm",
  platform: "node",
  outfile: out,
  logLevel: "error",
});
const H = await import(pathToFileURL(out).href);
rmSync(dir, { recursive: true, force: true });

const hunk = (oldStart, oldLines, newStart, newLines) => ({ oldStart, oldLines, newStart, newLines, accepted: false });
const doc = (s, sep = H.lineSeparatorOf(s)) => H.textOf(s, sep);
const changes = (a, b, hs) => H.hunksToChanges(hs, doc(a), doc(b))?.map((c) => [c.fromA, c.toA, c.fromB, c.toB]);
const chunks = (a, b, hs) => {
  const A = doc(a);
  const B = doc(b);
  return H.chunksFor(H.hunksToChanges(hs, A, B), A, B).map((c) => [c.fromA, c.toA, c.fromB, c.toB]);
};

test("line separators: CRLF only when every break is one", () => {
  assert.equal(H.lineSeparatorOf("a\r\nb\r\n"), "\r\n");
  assert.equal(H.lineSeparatorOf("a\r\nb\n"), "\n");
  assert.equal(H.lineSeparatorOf("a\nb"), "\n");
  assert.equal(H.lineSeparatorOf(""), "\n");
  assert.equal(H.lineSeparatorOf("\n"), "\n");
});

test("server lines: a last line without a newline counts, an empty text has none", () => {
  assert.equal(H.serverLineCount(doc("a\nb\n")), 2);
  assert.equal(H.serverLineCount(doc("a\nb")), 2);
  assert.equal(H.serverLineCount(doc("")), 0);
  assert.equal(H.serverLineCount(doc("\n")), 1);
});

test("a changed middle line", () => {
  assert.deepEqual(changes("a\nb\nc\n", "a\nB\nc\n", [hunk(1, 1, 1, 1)]), [[2, 4, 2, 4]]);
  assert.deepEqual(chunks("a\nb\nc\n", "a\nB\nc\n", [hunk(1, 1, 1, 1)]), [[2, 4, 2, 4]]);
});

test("the last line without a newline: the chunk ends one past the document", () => {
  assert.deepEqual(changes("a\nb", "a\nc", [hunk(1, 1, 1, 1)]), [[2, 3, 2, 3]]);
  assert.deepEqual(chunks("a\nb", "a\nc", [hunk(1, 1, 1, 1)]), [[2, 4, 2, 4]]);
  // Adding the final newline changes the last line.
  assert.deepEqual(chunks("a\nb", "a\nb\n", [hunk(1, 1, 1, 1)]), [[2, 4, 2, 4]]);
});

test("empty sides: a new file, a deleted tail, an emptied file", () => {
  assert.deepEqual(chunks("", "x\ny\n", [hunk(0, 0, 0, 2)]), [[0, 0, 0, 4]]);
  assert.deepEqual(chunks("a\nb\n", "a\n", [hunk(1, 1, 1, 0)]), [[2, 4, 2, 2]]);
  assert.deepEqual(chunks("a\n", "", [hunk(0, 1, 0, 0)]), [[0, 2, 0, 0]]);
  assert.deepEqual(chunks("a\nc\n", "a\nb\nc\n", [hunk(1, 0, 1, 1)]), [[2, 2, 2, 4]]);
});

test("CRLF texts: a line break is one position", () => {
  assert.deepEqual(changes("a\r\nb\r\n", "a\r\nc\r\n", [hunk(1, 1, 1, 1)]), [[2, 4, 2, 4]]);
});

test("UTF-16 positions: a surrogate pair is two", () => {
  assert.deepEqual(changes("😀\nx\n", "😀\ny\n", [hunk(1, 1, 1, 1)]), [[3, 5, 3, 5]]);
});

test("hunks that do not fit the texts are refused", () => {
  assert.equal(changes("a\n", "b\n", [hunk(0, 2, 0, 1)]), undefined);
  assert.equal(changes("a\nb\n", "a\nc\n", [hunk(1, 1, 1, 1), hunk(0, 1, 0, 1)]), undefined);
});

test("merge views draw exactly the server's hunks, even one empty line apart", () => {
  H.installExactChunks();
  const a = "x = 1\n\ny = 2\n";
  const b = "x = 10\n\ny = 20\n";
  const hs = [hunk(0, 1, 0, 1), hunk(2, 1, 2, 1)];
  const d = new H.ServerDiff(doc(a), doc(b), hs);
  const conf = H.serverDiffConfig(() => d);
  const built = H.Chunk.build(doc(a), doc(b), conf).map((c) => [c.fromA, c.toA, c.fromB, c.toB]);
  assert.deepEqual(built, [
    [0, 6, 0, 7],
    [7, 13, 8, 15],
  ]);
  // CodeMirror's own presentation would have merged them into one chunk.
  const plain = H.Chunk.build(doc(a), doc(b), { override: (x, y) => conf.override(x, y) });
  assert.equal(plain.length, 1);
  // Other texts (the reviewer typing) get CodeMirror's diff.
  const typed = H.Chunk.build(doc(a), doc("x = 1\n\ny = 3\n"), conf);
  assert.equal(typed.length, 1);
});

test("a chunk's character changes are computed when read, once, and right", () => {
  const A = doc("keep\nvalue = 1\nkeep\n");
  const B = doc("keep\nvalue = 2\nkeep\n");
  const [chunk] = H.chunksFor(H.hunksToChanges([hunk(1, 1, 1, 1)], A, B), A, B);
  const inner = chunk.changes;
  // "value = 1\n" against "value = 2\n": the digit, relative to the chunk.
  assert.deepEqual(inner.map((c) => [c.fromA, c.toA, c.fromB, c.toB]), [[8, 9, 8, 9]]);
  // The same array every time (CodeMirror caches widgets by it).
  assert.equal(chunk.changes, inner);
  // A pure insertion has no character changes to compute.
  const [added] = H.chunksFor(H.hunksToChanges([hunk(1, 0, 1, 1)], doc("a\nb\n"), doc("a\nnew\nb\n")), doc("a\nb\n"), doc("a\nnew\nb\n"));
  assert.deepEqual(added.changes, []);
});

test("a server diff matches equal documents, and then the same ones at once", () => {
  const a = doc("a\nb\nc\n");
  const b = doc("a\nB\nc\n");
  const d = new H.ServerDiff(a, b, [hunk(1, 1, 1, 1)]);
  // Equal texts that are other objects (the editor's document after an edit).
  const a2 = doc("a\nb\nc\n");
  const b2 = doc("a\nB\nc\n");
  assert.ok(a2 !== a && b2 !== b);
  assert.ok(d.matches(a2, b2));
  assert.ok(d.matches(a2, b2), "asked again: remembered");
  assert.ok(d.matches(a, b), "the diff's own documents still match");
  assert.ok(!d.matches(a, doc("a\nX\nc\n")), "another text never matches");
});

test("same places: an accepted mark changes none, a moved hunk does", () => {
  const a = doc("a\nb\nc\nd\n");
  const b = doc("a\nB\nc\nD\n");
  const hs = [hunk(1, 1, 1, 1), hunk(3, 1, 3, 1)];
  const d = new H.ServerDiff(a, b, hs);
  assert.ok(d.samePlaces(hs.map((h, i) => ({ ...h, accepted: i === 0 }))));
  assert.ok(!d.samePlaces([hunk(1, 1, 1, 1)]), "one hunk fewer");
  assert.ok(!d.samePlaces([hunk(1, 1, 1, 1), hunk(3, 1, 3, 2)]), "one hunk longer");
});

test("a reverted hunk: the diff without it is the one made from scratch", () => {
  const a = doc("a\nb\nc\nd\ne\nf\ng\n");
  const b = doc("A\nb\nC1\nC2\nd\nE\nf\nG\n");
  const hs = [hunk(0, 1, 0, 1), hunk(2, 1, 2, 2), hunk(4, 1, 5, 1), hunk(6, 1, 7, 1)];
  const d = new H.ServerDiff(a, b, hs);
  // Revert hunk 1 (two lines back to "c"): the later hunks move up a line.
  const reverted = doc("A\nb\nc\nd\nE\nf\nG\n");
  const after = [hunk(0, 1, 0, 1), hunk(4, 1, 4, 1), hunk(6, 1, 6, 1)];
  const got = d.without(1, reverted, after);
  const want = new H.ServerDiff(a, reverted, after);
  const places = (x) => x.chunks.map((c) => [c.fromA, c.toA, c.fromB, c.toB, c.changes.map((i) => [i.fromA, i.toA, i.fromB, i.toB])]);
  assert.deepEqual(places(got), places(want));
  assert.deepEqual(got.changes.map((c) => [c.fromA, c.toA, c.fromB, c.toB]), want.changes.map((c) => [c.fromA, c.toA, c.fromB, c.toB]));
  assert.ok(got.matches(a, reverted));
  // The last hunk, at the end of a text without a final newline.
  const a2 = doc("a\nb\nc");
  const b2 = doc("A\nb\nC");
  const d2 = new H.ServerDiff(a2, b2, [hunk(0, 1, 0, 1), hunk(2, 1, 2, 1)]);
  const r2 = doc("A\nb\nc");
  const got2 = d2.without(1, r2, [hunk(0, 1, 0, 1)]);
  assert.deepEqual(places(got2), places(new H.ServerDiff(a2, r2, [hunk(0, 1, 0, 1)])));
});

// Regression: a proposal that only adds the missing final line break (or
// drops it) showed the last line highlighted on both sides with nothing
// different in it. The proposal's editor now says so after its last line.
test("a change to the final line break alone is named", async () => {
  const { finalBreakChange, textOf } = H;
  const t = (s) => textOf(s, "\n");
  assert.equal(finalBreakChange(t("a\nb"), t("a\nb\n")), "⏎ adds a line break at the end of the file");
  assert.equal(finalBreakChange(t("a\nb\n"), t("A\nb")), "⏎ removes the line break at the end of the file");
  assert.equal(finalBreakChange(t("a\nb\n"), t("a\nB\n")), null, "the same ending");
  assert.equal(finalBreakChange(t(""), t("x\n")), null, "no original text");
  assert.equal(finalBreakChange(t("x\n"), t("")), null, "emptied: its lines say it");
  const crlf = (s) => textOf(s, "\r\n");
  assert.equal(finalBreakChange(crlf("a\r\nb"), crlf("a\r\nb\r\n")), "⏎ adds a line break at the end of the file");
});

// Regression: a proposal converting a CRLF file to LF showed every line
// changed with nothing different in any of them.
test("a change of the line endings is named", () => {
  const { lineEndingsChange, textOf, lineSeparatorOf } = H;
  const change = (a, b) => {
    const [sa, sb] = [lineSeparatorOf(a), lineSeparatorOf(b)];
    return lineEndingsChange(textOf(a, sa), sa, textOf(b, sb), sb);
  };
  assert.equal(change("a\r\nb\r\n", "a\nb\n"), "⏎ line endings: CRLF → LF");
  assert.equal(change("a\nb\n", "a\r\nb\r\n"), "⏎ line endings: LF → CRLF");
  assert.equal(change("a\r\nb\n", "a\nb\n"), "⏎ line endings: mixed → LF");
  assert.equal(change("a\r\nb\r\n", "a\r\nB\r\n"), null, "the same endings");
  assert.equal(change("a", "a\nb\n"), null, "no line break before");
});
