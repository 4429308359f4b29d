// Preloaded into every test file's process (`node --test --require`): after
// the file's last test, no child process may still run. A sidecar the
// library failed to reap would keep an editor's host process alive after
// `stop()`; here it fails the file, naming the command, instead of keeping
// the test runner waiting for ever.
"use strict";
const { after } = require("node:test");

const BOUND_MS = 10_000;

function children() {
  // The public `getActiveResourcesInfo()` says a child is there; the handle
  // list says which (for the message only).
  if (!process.getActiveResourcesInfo().includes("ProcessWrap")) return [];
  return process
    ._getActiveHandles()
    .filter((h) => typeof h.pid === "number" && Array.isArray(h.spawnargs) && h.exitCode === null && h.signalCode === null)
    .map((h) => `pid ${h.pid}: ${h.spawnargs.join(" ")}`);
}

after(async () => {
  const deadline = Date.now() + BOUND_MS;
  let left = children();
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    left = children();
  }
  if (left.length > 0) {
    throw new Error(`child processes still running ${BOUND_MS} ms after the file's last test:\n  ${left.join("\n  ")}`);
  }
});
