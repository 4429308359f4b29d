// The JSON-lines driver (test/fixtures/scripted-editor.mjs) that the
// real-client suite uses to play a Node editor: checked here against the
// real sidecar and a scripted Claude, so the suite can rely on it.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { ccbridgeBin, FakeClaude, sandbox, STEP, within } from "./helpers.mjs";

const driverScript = fileURLToPath(new URL("./fixtures/scripted-editor.mjs", import.meta.url));

function driver(t, sb) {
  const child = spawn(
    process.execPath,
    [driverScript, "--workspace", sb.ws, "--ide-name", "NodeScripted", "--log-file", sb.log, "--", "--selection-debounce-ms", "0"],
    { env: { ...process.env, ...sb.env(), CCBRIDGE_BIN: ccbridgeBin() }, stdio: ["pipe", "pipe", "inherit"] },
  );
  t.after(() => child.kill("SIGKILL"));
  const events = [];
  const waiters = [];
  createInterface({ input: child.stdout }).on("line", (line) => {
    const e = JSON.parse(line);
    events.push(e);
    for (const w of [...waiters]) w(e);
  });
  return {
    child,
    send: (cmd) => child.stdin.write(JSON.stringify(cmd) + "\n"),
    /** The first event `name` (seen or coming) matching `pred`. */
    event(name, pred = () => true, ms = STEP) {
      const match = (e) => e.event === name && pred(e);
      const seen = events.find(match);
      if (seen) return Promise.resolve(seen);
      return within(
        `the driver's ${name} event (so far: ${events.map((e) => e.event).join(", ")})`,
        new Promise((resolve) => {
          const w = (e) => {
            if (!match(e)) return;
            waiters.splice(waiters.indexOf(w), 1);
            resolve(e);
          };
          waiters.push(w);
        }),
        ms,
      );
    },
  };
}

test("the scripted editor: accept with edits, reject, selection, stop", async (t) => {
  const sb = sandbox(t);
  const hello = join(sb.ws, "hello.py");
  writeFileSync(hello, "print('hi')\n");
  const ed = driver(t, sb);
  const ready = await ed.event("ready");
  const claude = await FakeClaude.connect(ready.lockFile);
  t.after(() => claude.close());
  await ed.event("clientConnected");

  const args = (contents) => ({ old_file_path: hello, new_file_path: hello, new_file_contents: contents, tab_name: "t" });
  const accepted = claude.callTool("openDiff", args("print('hello')\n"), 30_000);
  const { diff } = await ed.event("showDiff");
  // ccbridge's hunks come with the proposal (issue 21, item 3).
  assert.deepEqual(diff.hunks, [{ oldStart: 0, oldLines: 1, newStart: 0, newLines: 1 }]);
  ed.send({ cmd: "resolve", id: diff.id, decision: "accepted", contents: diff.proposedContents + "# edited\n" });
  assert.deepEqual(FakeClaude.texts(await accepted), ["FILE_SAVED", "print('hello')\n# edited\n"]);
  // As the CLI does after a verdict: close the tab; the editor hears why.
  await claude.callTool("close_tab", { tab_name: "t" });
  assert.equal((await ed.event("closeDiff", (e) => e.id === diff.id)).reason, "decided");

  const rejected = claude.callTool("openDiff", args("print('bye')\n"), 30_000);
  const second = await ed.event("showDiff", (e) => e.diff.id !== diff.id);
  ed.send({ cmd: "resolve", id: second.diff.id, decision: "rejected" });
  assert.equal(FakeClaude.texts(await rejected)[0], "DIFF_REJECTED");

  const selection = { start: { line: 0, character: 0 }, end: { line: 0, character: 5 } };
  ed.send({ cmd: "select", filePath: hello, text: "print", selection, seq: 1 });
  await ed.event("ack", (e) => e.seq === 1);
  const sel = await claude.notification("selection_changed", (p) => p.text === "print");
  assert.equal(sel.filePath, hello);

  ed.send({ cmd: "stop" });
  const exit = await ed.event("exit");
  assert.deepEqual(exit, { event: "exit", code: 0, signal: null });
  const [code] = await within("the driver to exit", once(ed.child, "exit"));
  assert.equal(code, 0);
  assert.equal(existsSync(ready.lockFile), false);
});
