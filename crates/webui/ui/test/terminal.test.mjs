// Unit tests of src/terminal.ts (a command's output cleaned for a text
// view), run with `npm test` in crates/webui/ui. The module is bundled with
// esbuild into a temporary file first (it is TypeScript).
import { test } from "node:test";
import assert from "node:assert/strict";
import { build } from "esbuild";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "ccbridge-ui-test-"));
const out = join(dir, "terminal.mjs");
await build({ entryPoints: [join(here, "../src/terminal.ts")], bundle: true, format: "esm", outfile: out, logLevel: "silent" });
const { cleanTerminal } = await import(pathToFileURL(out).href);
rmSync(dir, { recursive: true, force: true });

test("colours, cursor moves and titles are removed", () => {
  assert.equal(cleanTerminal("\x1b[1;31merror\x1b[0m: \x1b[2Kbad\x1b]0;title\x07 end"), "error: bad end");
});

test("shell integration marks (OSC 133, OSC 8 links with ST) are removed", () => {
  assert.equal(cleanTerminal("\x1b]133;A\x1b\\$ ls\n\x1b]8;;file:///x\x1b\\x\x1b]8;;\x1b\\\n"), "$ ls\nx\n");
});

test("a line rewritten after carriage returns shows its last version", () => {
  assert.equal(cleanTerminal("10%\r50%\r100%\ndone\r\n"), "100%\ndone\n");
});

test("a trailing carriage return does not blank the line", () => {
  assert.equal(cleanTerminal("progress 3/10\r"), "progress 3/10");
});

test("other control characters go, tabs and text stay", () => {
  assert.equal(cleanTerminal("a\tb\x07c\x00d é😀"), "a\tbcd é😀");
});

test("an escape cut at the end of a chunk leaves no garbage beyond it", () => {
  assert.equal(cleanTerminal("ok\x1b]0;unterminated"), "ok");
});
