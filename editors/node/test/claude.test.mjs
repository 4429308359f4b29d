// The bridge between the real sidecar and a scripted Claude Code: what the
// editor reports reaches Claude, and what Claude asks reaches the editor's
// handlers.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { FakeClaude, sandbox, startBridge, waitEvent, within } from "./helpers.mjs";

const range = (l1, c1, l2, c2) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });

/** A bridge on a fresh sandbox with `hello.py`, and Claude connected to it. */
async function rig(t, options = {}) {
  const sb = sandbox(t);
  const hello = join(sb.ws, "hello.py");
  writeFileSync(hello, "def greet(name):\n    print(name)\n");
  const bridge = await startBridge(t, sb, options);
  const connected = waitEvent(bridge, "clientConnected");
  const claude = await FakeClaude.connect(bridge.lockFile);
  t.after(() => claude.close());
  const [client] = await connected;
  return { sb, hello, bridge, claude, client };
}

function openDiff(claude, path, contents, tabName = "✻ [Claude Code] hello.py ⧉") {
  return claude.callTool(
    "openDiff",
    { old_file_path: path, new_file_path: path, new_file_contents: contents, tab_name: tabName },
    // openDiff blocks until the user decides; bounded here all the same.
    30_000,
  );
}

test("clientConnected fires when Claude connects, clientDisconnected when it goes", async (t) => {
  const { bridge, claude, client } = await rig(t);
  assert.equal(client.name, "claude-code");
  assert.equal(client.version, "2.1.328");
  assert.equal(client.pid, process.pid);
  assert.deepEqual(bridge.clients, [client]);
  assert.deepEqual((await bridge.status()).clients, [client]);
  // What Claude is offered follows the capabilities: no handlers, no openDiff... but
  // the read-only tools are always there.
  assert.ok(claude.tools.includes("getDiagnostics"), claude.tools.join(","));

  const gone = waitEvent(bridge, "clientDisconnected");
  await claude.close();
  const [left] = await gone;
  assert.equal(left.id, client.id);
  assert.equal(left.name, "claude-code", "the whole client, not just its id");
  assert.deepEqual(bridge.clients, []);
});

test("reportSelection reaches Claude as selection_changed", async (t) => {
  const { bridge, claude, hello } = await rig(t);
  assert.equal(bridge.reportSelection({ filePath: hello, text: "greet", selection: range(0, 4, 0, 9) }), true);
  const sel = await claude.notification("selection_changed", (p) => p.text === "greet");
  assert.equal(sel.filePath, hello);
  assert.equal(sel.fileUrl, `file://${hello}`);
  assert.deepEqual(sel.selection, { ...range(0, 4, 0, 9), isEmpty: false });

  // A bare cursor, then no editor at all.
  bridge.reportSelection({ filePath: hello, selection: range(1, 2, 1, 2) });
  const cursor = await claude.notification("selection_changed", (p) => p.text === "" && p.selection.start.line === 1);
  assert.equal(cursor.selection.isEmpty, true);
  const current = await claude.callTool("getCurrentSelection", {});
  assert.match(FakeClaude.texts(current)[0], /hello\.py/);
});

test("atMention reaches Claude as at_mentioned", async (t) => {
  const { bridge, claude, hello } = await rig(t);
  bridge.atMention({ filePath: hello, lineStart: 0, lineEnd: 1 });
  const m = await claude.notification("at_mentioned");
  assert.deepEqual(m, { filePath: hello, lineStart: 0, lineEnd: 1 });
});

test("getDiagnostics returns what reportDiagnostics set; clearDiagnostics forgets it", async (t) => {
  const { bridge, claude, hello } = await rig(t);
  const diagnostic = {
    message: "undefined name 'x'",
    severity: "Error",
    range: range(1, 10, 1, 11),
    source: "pyflakes",
    code: "F821",
  };
  bridge.reportDiagnostics(hello, [diagnostic]);
  // ccbridge handles the editor's messages in order; status() is answered
  // after the report was applied.
  await bridge.status();
  const all = JSON.parse(FakeClaude.texts(await claude.callTool("getDiagnostics", {}))[0]);
  assert.deepEqual(all, [{ uri: `file://${hello}`, diagnostics: [diagnostic] }]);
  const one = JSON.parse(FakeClaude.texts(await claude.callTool("getDiagnostics", { uri: `file://${hello}` }))[0]);
  assert.equal(one[0].diagnostics[0].message, "undefined name 'x'");

  bridge.clearDiagnostics();
  await bridge.status();
  assert.deepEqual(JSON.parse(FakeClaude.texts(await claude.callTool("getDiagnostics", {}))[0]), []);
});

test("reportOpenEditors and reportDirty answer getOpenEditors and checkDocumentDirty", async (t) => {
  const { bridge, claude, hello } = await rig(t);
  bridge.reportOpenEditors([{ path: hello, isActive: true, isDirty: true, languageId: "python" }]);
  bridge.reportDirty(hello, true);
  await bridge.status();
  const tabs = JSON.parse(FakeClaude.texts(await claude.callTool("getOpenEditors", {}))[0]);
  assert.equal(tabs.tabs[0].uri, `file://${hello}`, JSON.stringify(tabs));
  assert.equal(tabs.tabs[0].languageId, "python");
  const dirty = JSON.parse(FakeClaude.texts(await claude.callTool("checkDocumentDirty", { filePath: hello }))[0]);
  assert.equal(dirty.isDirty, true, JSON.stringify(dirty));
});

test("openDiff accepted with the user's edits: FILE_SAVED with those contents", async (t) => {
  const { bridge, claude, hello } = await rig(t);
  const shown = [];
  const closed = deferred();
  bridge.onShowDiff(async (diff) => {
    shown.push(diff);
    // The user edits the proposal, then accepts.
    return { decision: "accepted", contents: diff.proposedContents + "greet('you')\n" };
  });
  bridge.onCloseDiff((p) => closed.resolve(p));
  await bridge.syncCapabilities();

  const result = await openDiff(claude, hello, "def greet(name):\n    print(name.upper())\n");
  assert.deepEqual(FakeClaude.texts(result), [
    "FILE_SAVED",
    "def greet(name):\n    print(name.upper())\ngreet('you')\n",
  ]);
  assert.equal(shown.length, 1);
  assert.equal(shown[0].oldFilePath, hello);
  assert.equal(shown[0].originalContents, "def greet(name):\n    print(name)\n");
  assert.equal(shown[0].isNewFile, false);
  assert.equal(typeof shown[0].clientId, "number");
  // Claude writes the file itself (the real CLI does); ccbridge only answers.
  assert.equal(readFileSync(hello, "utf8"), "def greet(name):\n    print(name)\n");

  // Claude closes its tab after the verdict: closeDiff `decided`.
  await claude.callTool("close_tab", { tab_name: shown[0].tabName });
  assert.deepEqual(await within("closeDiff", closed.promise), { id: shown[0].id, reason: "decided" });
});

test("openDiff rejected: DIFF_REJECTED", async (t) => {
  const { bridge, claude, hello } = await rig(t, {
    handlers: { showDiff: async () => ({ decision: "rejected" }) },
  });
  assert.equal(bridge.capabilities.diff, true, "declared from the first initialize");
  const result = await openDiff(claude, hello, "nope\n");
  // Claude's format: the verdict, then the tab name.
  assert.deepEqual(FakeClaude.texts(result), ["DIFF_REJECTED", "✻ [Claude Code] hello.py ⧉"]);
});

test("a diff Claude closes first aborts the handler's signal with the reason", async (t) => {
  const { bridge, claude, hello } = await rig(t);
  const aborted = deferred();
  const seen = deferred();
  bridge.onShowDiff(
    (diff, { signal }) =>
      new Promise((resolveVerdict) => {
        seen.resolve(diff);
        signal.addEventListener("abort", () => {
          aborted.resolve(signal.reason);
          // A verdict after the close is dropped, not sent.
          resolveVerdict({ decision: "accepted" });
        });
      }),
  );
  await bridge.syncCapabilities();
  const pending = openDiff(claude, hello, "x = 1\n", "✻ [Claude Code] hello.py (abc) ⧉");
  const diff = await within("the showDiff handler", seen.promise);
  // The user answered in Claude's terminal: the CLI closes the tab.
  await claude.callTool("close_tab", { tab_name: diff.tabName });
  const result = await pending;
  assert.notEqual(FakeClaude.texts(result)[0], "FILE_SAVED");
  assert.equal(await within("the abort", aborted.promise), "claudeClosed");
});

test("handlers answer Claude's other requests; without one Claude is told the editor does not support it", async (t) => {
  const { bridge, claude, hello } = await rig(t, {
    // Declared but never handled: the request still gets the protocol's answer.
    capabilities: { diff: true, openFile: true, saveDocument: true },
  });
  const opened = [];
  bridge.onOpenFile((p) => {
    opened.push(p);
    return { filePath: p.filePath, languageId: "python", lineCount: 2 };
  });
  const r = await claude.callTool("openFile", { filePath: hello, preview: false, startLine: 2, makeFrontmost: true });
  assert.equal(r.isError ?? false, false, JSON.stringify(r));
  assert.equal(opened[0].filePath, hello);
  assert.equal(opened[0].startLine, 2);

  // ccbridge only asks the editor to save documents it reported open.
  bridge.reportOpenEditors([{ path: hello, isActive: true, isDirty: true }]);
  await bridge.status();
  const save = await claude.callTool("saveDocument", { filePath: hello });
  assert.match(FakeClaude.texts(save).join(" "), /does not support/, JSON.stringify(save));
});

test("a handler that throws: Claude gets its message, the editor a warning", async (t) => {
  const { bridge, claude, hello } = await rig(t);
  bridge.onOpenFile(() => {
    throw new Error("no window to open it in");
  });
  const warned = waitEvent(bridge, "warning");
  await bridge.syncCapabilities();
  const r = await claude.callTool("openFile", { filePath: hello, preview: false, makeFrontmost: true });
  assert.equal(r.isError, true);
  assert.match(FakeClaude.texts(r).join(" "), /no window to open it in/);
  const [w] = await warned;
  assert.equal(w.kind, "handlerError");
  assert.equal(w.method, "openFile");
});

test("a report ccbridge cannot use comes back as invalidNotification", async (t) => {
  const { bridge } = await rig(t);
  const invalid = waitEvent(bridge, "invalidNotification");
  bridge.reportDiagnostics("src/relative.py", []);
  const [p] = await invalid;
  assert.equal(p.method, "diagnosticsChanged");
  assert.match(p.message, /absolute path/);
  assert.equal(p.partial, false);
});

/** A promise and the function that resolves it. */
function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

test("the sidecar dying: open diffs abort with shutdown, sessions disconnect, exit carries the error", async (t) => {
  const { bridge, claude, hello, client } = await rig(t);
  const seen = deferred();
  const aborted = deferred();
  bridge.onShowDiff(
    (diff, { signal }) =>
      new Promise(() => {
        seen.resolve(diff);
        signal.addEventListener("abort", () => aborted.resolve(signal.reason));
      }),
  );
  await bridge.syncCapabilities();
  openDiff(claude, hello, "x\n").catch(() => {}); // the connection goes down with the sidecar
  await within("the showDiff handler", seen.promise);

  const disconnected = waitEvent(bridge, "clientDisconnected");
  const exited = waitEvent(bridge, "exit");
  process.kill(bridge.pid, "SIGKILL");
  assert.equal(await within("the abort", aborted.promise), "shutdown");
  const [gone] = await disconnected;
  assert.equal(gone.id, client.id);
  const [info] = await exited;
  assert.equal(info.signal, "SIGKILL");
  assert.equal(info.error?.code, "CCBRIDGE_EXITED");
  assert.deepEqual(bridge.clients, []);
  assert.equal(bridge.reportSelection(null), false);
});

test("a verdict that is not one: the diff is dismissed and the editor warned", async (t) => {
  const { bridge, claude, hello } = await rig(t);
  const seen = deferred();
  bridge.onShowDiff((diff) => {
    seen.resolve(diff);
    return { decision: "maybe" };
  });
  const warned = waitEvent(bridge, "warning");
  await bridge.syncCapabilities();
  const pending = openDiff(claude, hello, "y = 2\n", "✻ [Claude Code] hello.py (bad) ⧉");
  const [w] = await warned;
  assert.equal(w.kind, "handlerError");
  assert.match(w.message, /unknown decision "maybe".*dismissed/);
  // Dismissed: the call stays open for Claude's terminal prompt, which
  // here answers by closing the tab.
  const diff = await seen.promise;
  await claude.callTool("close_tab", { tab_name: diff.tabName });
  assert.notEqual(FakeClaude.texts(await pending)[0], "FILE_SAVED");
});
