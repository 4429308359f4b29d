// When the host process (the editor) ends, its sidecar ends too and the lock
// file is removed, however the host ends.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { alive, ccbridgeBin, eventually, lockFileGone, sandbox, within } from "./helpers.mjs";

const hostScript = fileURLToPath(new URL("./fixtures/host.mjs", import.meta.url));

/** Starts the host in `mode`; resolves once its bridge runs. */
async function host(t, mode) {
  const sb = sandbox(t);
  const child = spawn(process.execPath, [hostScript, mode], {
    env: {
      ...process.env,
      ...sb.env(),
      CCBRIDGE_BIN: ccbridgeBin(),
      HOST_WORKSPACE: sb.ws,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = once(child, "exit").then(([code, signal]) => ({ code, signal }));
  t.after(() => child.kill("SIGKILL"));
  const [line] = await within(
    "the host's bridge to start",
    once(createInterface({ input: child.stdout }), "line"),
  ).catch((e) => {
    throw new Error(`${e.message}\nhost stderr:\n${stderr}`);
  });
  const { lockFile, sidecar, existed } = JSON.parse(line);
  assert.ok(existed, "the lock file existed while the host ran");
  return { child, lockFile, sidecar, exited: within("the host to exit", exited), stderr: () => stderr };
}

/** The sidecar has exited (a zombie waiting for init to reap it counts as exited). */
function sidecarGone(pid) {
  return eventually(`the sidecar ${pid} to exit`, () => !alive(pid));
}

for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  test(`${signal} to a host without its own handler: it dies of ${signal}, the lock file is gone`, async (t) => {
    const h = await host(t, "wait");
    h.child.kill(signal);
    // The host's default behaviour is kept: it dies of the signal.
    assert.deepEqual(await h.exited, { code: null, signal });
    // Removed synchronously on the way out, not later by the sidecar.
    assert.equal(existsSync(h.lockFile), false);
    await sidecarGone(h.sidecar);
  });
}

test("a host with its own SIGTERM handler decides; when it exits, the lock file is gone", async (t) => {
  const h = await host(t, "own-handler");
  h.child.kill("SIGTERM");
  assert.deepEqual(await h.exited, { code: 3, signal: null });
  assert.equal(existsSync(h.lockFile), false);
  await sidecarGone(h.sidecar);
});

test("process.exit() in the host removes the lock file", async (t) => {
  const h = await host(t, "exit");
  assert.deepEqual(await h.exited, { code: 0, signal: null });
  assert.equal(existsSync(h.lockFile), false);
  await sidecarGone(h.sidecar);
});

test("a host that stops its bridge ends by itself: nothing of the bridge keeps its event loop alive", async (t) => {
  const h = await host(t, "stop");
  assert.deepEqual(await h.exited, { code: 0, signal: null });
  assert.equal(existsSync(h.lockFile), false);
  await sidecarGone(h.sidecar);
});

test("an uncaught exception in the host removes the lock file", async (t) => {
  const h = await host(t, "throw");
  assert.deepEqual(await h.exited, { code: 1, signal: null });
  assert.match(h.stderr(), /the host crashed/);
  assert.equal(existsSync(h.lockFile), false);
  await sidecarGone(h.sidecar);
});

test("SIGKILL to the host: the sidecar sees its stdin close and removes the lock file", async (t) => {
  const h = await host(t, "wait");
  h.child.kill("SIGKILL");
  assert.deepEqual(await h.exited, { code: null, signal: "SIGKILL" });
  await lockFileGone(h.lockFile);
  await sidecarGone(h.sidecar);
});
