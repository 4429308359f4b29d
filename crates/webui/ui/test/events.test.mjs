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
const loaded = import(pathToFileURL(out).href);
const { EventParser } = await loaded;
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

test("retries back off, and stop after two minutes without any answer", async () => {
  const { Retry, GIVE_UP_MS } = await loaded;
  const r = new Retry();
  assert.equal(r.failed(false, 0), 1000);
  assert.equal(r.failed(false, 1000), 2000);
  assert.equal(r.failed(false, 3000), 4000);
  // ccbridge answered (the stream failed for another reason): not stopped.
  assert.equal(r.failed(true, GIVE_UP_MS + 10), 8000);
  assert.equal(r.failed(false, GIVE_UP_MS + 20), 15000);
  assert.equal(r.failed(false, 2 * GIVE_UP_MS + 20), null);
  r.opened();
  assert.equal(r.failed(false, 0), 1000);
});
