// Unit tests of src/events.ts's text/event-stream parser (the page reads
// its event stream with fetch, so it splits the events itself), run with
// `npm test` in crates/webui/ui.
import { test } from "node:test";
import assert from "node:assert/strict";
import { build } from "esbuild";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "ccbridge-ui-test-"));
const out = join(dir, "events.mjs");
await build({ entryPoints: [join(here, "../src/events.ts")], bundle: true, format: "esm", outfile: out, logLevel: "silent" });
const { EventParser } = await import(pathToFileURL(out).href);
rmSync(dir, { recursive: true, force: true });

test("events split across chunks come out whole, in order", () => {
  const p = new EventParser();
  assert.deepEqual(p.push('data: {"type":"a"}\n\ndata: {"ty'), ['{"type":"a"}']);
  assert.deepEqual(p.push('pe":"b"}\n'), []);
  assert.deepEqual(p.push("\n"), ['{"type":"b"}']);
});

test("keep-alive comments carry no event; CRLF and multi-line data are read", () => {
  const p = new EventParser();
  assert.deepEqual(p.push(": keep-alive\n\n"), []);
  assert.deepEqual(p.push("data: one\r\ndata:two\r\n\r\n"), ["one\ntwo"]);
});
