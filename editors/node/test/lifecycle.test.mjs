// Starting and stopping the real sidecar, and every way start() can fail.
import assert from "node:assert/strict";
import { chmodSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  BridgeError,
  BridgeStoppedError,
  ProtocolVersionError,
  SidecarExitedError,
  SpawnError,
  start,
} from "../dist/esm/index.js";
import { alive, lockFileGone, sandbox, startBridge, waitEvent } from "./helpers.mjs";

const fakeSidecar = fileURLToPath(new URL("./fixtures/fake-sidecar.mjs", import.meta.url));

test("diagnosticsSource says whose diagnostics Claude gets, as asked", async (t) => {
  const sb = sandbox(t);
  const auto = await startBridge(t, sb, {});
  assert.equal(auto.diagnosticsSource, "auto");
  await auto.stop();
  const own = await startBridge(t, sandbox(t), { diagnostics: "editor" });
  assert.equal(own.diagnosticsSource, "editor");
  assert.equal(own.initializeResult.diagnostics, "editor");
});

test("start() resolves with the initialize result; the lock file says who we are", async (t) => {
  const sb = sandbox(t);
  const bridge = await startBridge(t, sb, { ideName: "Kale (test)" });
  assert.equal(bridge.state, "running");
  assert.equal(bridge.initializeResult.protocolVersion, 3);
  assert.equal(bridge.serverInfo.name, "ccbridge");
  assert.equal(bridge.lockFile, join(sb.lockDir(), `${bridge.port}.lock`));
  assert.deepEqual(bridge.claudeEnv, {
    CLAUDE_CODE_SSE_PORT: String(bridge.port),
    ENABLE_IDE_INTEGRATION: "true",
  });
  assert.match(bridge.tools.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  assert.equal(bridge.tools.approvalMode, "write-only");
  // Every agent offered, each with its terminal's environment.
  assert.deepEqual(
    bridge.agents.map((a) => a.id),
    ["claude", "gemini", "qwen", "codex"],
  );
  assert.deepEqual(bridge.agents[0].env, bridge.claudeEnv);
  assert.match(bridge.agents[1].env.GEMINI_CLI_IDE_SERVER_PORT, /^\d+$/);
  assert.equal(bridge.agents[2].env.QWEN_CODE_IDE_WORKSPACE_PATH, sb.ws);

  const lock = JSON.parse(readFileSync(bridge.lockFile, "utf8"));
  assert.deepEqual(lock.workspaceFolders, [sb.ws]);
  assert.equal(lock.ideName, "Kale (test)");
  // The editor's pid is the host's: the sidecar's parent.
  assert.equal(lock.pid, process.pid);
  assert.equal(lock.serverProcess.pid, bridge.pid);

  const status = await bridge.status();
  assert.equal(status.port, bridge.port);
  assert.equal(status.lockFile, bridge.lockFile);
  assert.deepEqual(status.clients, []);
});

test("the pid option names another process as the editor in the lock file", async (t) => {
  const sb = sandbox(t);
  const bridge = await startBridge(t, sb, { pid: process.ppid });
  assert.equal(JSON.parse(readFileSync(bridge.lockFile, "utf8")).pid, process.ppid);
});

test("stop() shuts the sidecar down, removes the lock file, and is idempotent", async (t) => {
  const sb = sandbox(t);
  const bridge = await startBridge(t, sb);
  const lockFile = bridge.lockFile;
  const pid = bridge.pid;
  const exits = [];
  bridge.on("exit", (info) => exits.push(info));

  await Promise.all([bridge.stop(), bridge.stop()]);
  assert.equal(bridge.state, "stopped");
  assert.equal(existsSync(lockFile), false, "lock file removed");
  assert.equal(alive(pid), false, "the sidecar has exited");
  assert.deepEqual(exits, [{ code: 0, signal: null }], "an orderly exit, without error");

  // Afterwards: reports say they were not sent, requests fail typed.
  assert.equal(bridge.reportDirty(join(sb.ws, "a.txt"), true), false);
  await assert.rejects(bridge.status(), BridgeStoppedError);
  await bridge.stop();
});

test("a missing binary is a SpawnError with the install hint", async (t) => {
  const sb = sandbox(t);
  const err = await start({
    workspaceFolders: [sb.ws],
    ideName: "x",
    bin: join(sb.root, "no-such-ccbridge"),
  }).then(
    () => assert.fail("start() resolved"),
    (e) => e,
  );
  assert.ok(err instanceof SpawnError, String(err));
  assert.ok(err instanceof BridgeError);
  assert.equal(err.code, "CCBRIDGE_SPAWN");
  assert.equal(err.errno, "ENOENT");
  assert.match(err.message, /not found; install ccbridge/);
});

test("bin defaults to $CCBRIDGE_BIN", async (t) => {
  const sb = sandbox(t);
  assert.ok(process.env.CCBRIDGE_BIN, "the suite runs with CCBRIDGE_BIN");
  const bridge = await start({ workspaceFolders: [sb.ws], ideName: "env", env: sb.env() });
  t.after(() => bridge.stop());
  assert.equal(bridge.state, "running");
});

test("arguments ccbridge refuses: SidecarExitedError with its stderr", async (t) => {
  const sb = sandbox(t);
  const err = await startBridge(t, sb, { args: ["--no-such-flag"] }).then(
    () => assert.fail("start() resolved"),
    (e) => e,
  );
  assert.ok(err instanceof SidecarExitedError, String(err));
  assert.equal(err.exitCode, 2);
  assert.match(err.stderrTail, /--no-such-flag/);
  assert.match(err.message, /before answering initialize/);
});

test("relative workspace folders are refused before anything is spawned", async () => {
  await assert.rejects(start({ workspaceFolders: ["src"], ideName: "x", bin: "/nonexistent" }), TypeError);
  await assert.rejects(start({ workspaceFolders: [], ideName: "x", bin: "/nonexistent" }), TypeError);
});

test("a sidecar that does not speak version 3 is a ProtocolVersionError", async (t) => {
  const sb = sandbox(t);
  chmodSync(fakeSidecar, 0o755);
  const results = [];
  for (const mode of ["refuse", "old"]) {
    results.push(
      await start({
        workspaceFolders: [sb.ws],
        ideName: "x",
        bin: fakeSidecar,
        env: { FAKE_SIDECAR_MODE: mode },
      }).then(
        () => assert.fail("start() resolved"),
        (e) => e,
      ),
    );
  }
  const [refused, old] = results;
  assert.ok(refused instanceof ProtocolVersionError, String(refused));
  assert.deepEqual(refused.supported, [1]);
  assert.match(refused.message, /does not speak editor protocol version 3 \(it speaks: 1\)/);
  assert.ok(old instanceof ProtocolVersionError, String(old));
  assert.deepEqual(old.supported, [1]);
});

test("what ccbridge sends before start() resolves reaches handlers registered right after it", async (t) => {
  const sb = sandbox(t);
  chmodSync(fakeSidecar, 0o755);
  const bridge = await start({
    workspaceFolders: [sb.ws],
    ideName: "x",
    bin: fakeSidecar,
    env: { FAKE_SIDECAR_MODE: "early" },
  });
  t.after(() => bridge.stop());
  // Registered after `await start()`, as an editor would.
  const connected = waitEvent(bridge, "clientConnected");
  bridge.onShowDiff((diff) => ({ decision: "accepted", contents: diff.proposedContents + "mine\n" }));
  const reported = [];
  const verdict = waitEvent(bridge, "stderr", (line) => {
    reported.push(line);
    return line.includes("diffResolved");
  });
  const [client] = await connected;
  assert.equal(client.pid, 4242);
  await verdict;
  const got = reported.map((l) => JSON.parse(l).got);
  // "shown" (null, not "method not found"), then the verdict.
  assert.deepEqual(got.find((m) => m.id === 1), { jsonrpc: "2.0", id: 1, result: null });
  assert.deepEqual(got.find((m) => m.method === "diffResolved").params, {
    id: 7,
    decision: "accepted",
    contents: "b\nmine\n",
  });
});

test("a sidecar killed from outside: exit event with SidecarExitedError, lock file removed", async (t) => {
  const sb = sandbox(t);
  const bridge = await startBridge(t, sb);
  const lockFile = bridge.lockFile;
  const exited = waitEvent(bridge, "exit");
  process.kill(bridge.pid, "SIGKILL");
  const [info] = await exited;
  assert.equal(info.signal, "SIGKILL");
  assert.ok(info.error instanceof SidecarExitedError);
  assert.match(info.error.message, /killed by SIGKILL/);
  // ccbridge could not remove it after SIGKILL; the bridge did.
  await lockFileGone(lockFile);
  assert.equal(bridge.state, "stopped");
  await assert.rejects(bridge.status(), SidecarExitedError);
  await bridge.stop();
});

// Regression: an `exit` listener that threw (an Electron window already
// destroyed at quit) became an unhandled rejection, which ends a plain Node
// host, and stop() rejected with it.
test("an exit listener that throws is a warning, not an unhandled rejection", async (t) => {
  const sb = sandbox(t);
  const bridge = await startBridge(t, sb);
  const unhandled = [];
  const onUnhandled = (e) => unhandled.push(e);
  process.on("unhandledRejection", onUnhandled);
  t.after(() => process.off("unhandledRejection", onUnhandled));
  const warned = waitEvent(bridge, "warning");
  bridge.on("exit", () => {
    throw new Error("the window is gone");
  });
  process.kill(bridge.pid, "SIGKILL");
  const [w] = await warned;
  assert.equal(w.kind, "handlerError");
  assert.match(w.message, /exit listener threw: the window is gone/);
  await bridge.stop();
  // A turn for a rejection to be reported.
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(unhandled, []);
});

test("nothing is left behind when start() fails", async (t) => {
  const sb = sandbox(t);
  await assert.rejects(startBridge(t, sb, { args: ["--port", "1"] }), SidecarExitedError);
  const left = existsSync(sb.lockDir()) ? readdirSync(sb.lockDir()) : [];
  assert.deepEqual(left, []);
});
