// The workspace tools through the bridge: a command needs the editor's
// `approve` handler, and its run is reported as `commandEvent`s; a write is
// reviewed with the same `showDiff` handler as Claude's edits.
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { sandbox, startBridge, ToolsClient, waitEvent } from "./helpers.mjs";

test("execute_command asks onApprove; the run comes as commandEvents", async (t) => {
  const sb = sandbox(t);
  const asked = [];
  const bridge = await startBridge(t, sb, {
    handlers: {
      approve: (req) => {
        asked.push(req);
        return req.command === "echo hi";
      },
    },
  });
  assert.equal(bridge.capabilities.approve, true);
  const events = [];
  const sub = bridge.onCommandEvent((e) => events.push(e));
  const exited = waitEvent(bridge, "commandEvent", (e) => e.event === "exited");
  const tools = await ToolsClient.connect(bridge.tools);

  const ran = await tools.call("execute_command", { command: "echo hi" });
  assert.equal(ran.isError, false, ran.text);
  assert.equal(JSON.parse(ran.text).exit_code, 0);
  assert.equal(asked[0].tool, "execute_command");
  assert.equal(resolve(asked[0].cwd), sb.ws);
  await exited;
  assert.deepEqual(
    events.map((e) => e.event).filter((e, i, a) => a.indexOf(e) === i),
    ["started", "output", "exited"],
  );
  assert.ok(events.every((e) => e.id === asked[0].id));
  assert.equal(events.filter((e) => e.event === "output").map((e) => e.data).join(""), "hi\n");
  assert.deepEqual(events.at(-1), { event: "exited", id: asked[0].id, exitCode: 0, timedOut: false, cancelled: false });

  // Refused: nothing runs.
  const refused = await tools.call("execute_command", { command: "touch ran" });
  assert.match(refused.text, /rejected/);
  assert.equal(existsSync(join(sb.ws, "ran")), false);
  sub.dispose();
});

// Security issue 20, item 3: a right-to-left isolate drew "; touch X; :"
// after the "#", as if commented out. The handler gets ccbridge's rendering
// to show, with the hidden characters listed.
test("a command hiding text with bidi characters comes with commandShown and hiddenCharacters", async (t) => {
  const sb = sandbox(t);
  const asked = [];
  const bridge = await startBridge(t, sb, {
    handlers: {
      approve: (req) => {
        asked.push(req);
        return true;
      },
    },
  });
  const started = waitEvent(bridge, "commandEvent", (e) => e.event === "started");
  const exited = waitEvent(bridge, "commandEvent", (e) => e.event === "exited");
  const tools = await ToolsClient.connect(bridge.tools);
  const hostile = "echo safe \u2067; touch X; : #\u2069";
  const ran = await tools.call("execute_command", { command: hostile });
  assert.equal(ran.isError, false, ran.text);
  const req = asked[0];
  assert.equal(req.command, hostile, "the raw command stays exact");
  const marked = "echo safe \u27e8U+2067\u27e9; touch X; : #\u27e8U+2069\u27e9";
  assert.equal(req.commandShown, marked);
  assert.equal(resolve(req.cwdShown), sb.ws);
  assert.deepEqual(req.hiddenCharacters, [
    { field: "command", codePoint: "U+2067", name: "RIGHT-TO-LEFT ISOLATE", index: 10 },
    { field: "command", codePoint: "U+2069", name: "POP DIRECTIONAL ISOLATE", index: 25 },
  ]);
  assert.ok(req.summary.includes(marked), req.summary);
  assert.ok(!/[\u2067\u2069]/.test(req.summary), "raw bidi characters in the summary");
  const [s] = await started;
  assert.equal(s.commandShown, marked);
  await exited;
  assert.ok(existsSync(join(sb.ws, "X")), "what was shown is what ran");
});

test("a tool's write is reviewed by the showDiff handler (clientId null)", async (t) => {
  const sb = sandbox(t);
  const app = join(sb.ws, "app.py");
  writeFileSync(app, "a = 1\nb = 2\n");
  const bridge = await startBridge(t, sb);
  const shown = [];
  bridge.onShowDiff((diff) => {
    shown.push(diff);
    return { decision: "accepted", contents: diff.proposedContents.replace("b = 3", "b = 4") };
  });
  await bridge.syncCapabilities();
  const tools = await ToolsClient.connect(bridge.tools);
  const r = await tools.call("apply_diff", {
    path: "app.py",
    diff: "<<<<<<< SEARCH\nb = 2\n=======\nb = 3\n>>>>>>> REPLACE\n",
  });
  assert.equal(r.isError, false, r.text);
  assert.equal(shown[0].clientId, null);
  assert.equal(shown[0].proposedContents, "a = 1\nb = 3\n");
  // ccbridge writes the accepted text itself for the tools.
  assert.equal(readFileSync(app, "utf8"), "a = 1\nb = 4\n");
});

test("setApprovalMode changes when the tools ask", async (t) => {
  const sb = sandbox(t);
  const bridge = await startBridge(t, sb, { approvalMode: "always" });
  assert.equal(bridge.tools.approvalMode, "always");
  assert.equal(await bridge.setApprovalMode("never"), "never");
  assert.equal(bridge.tools.approvalMode, "never");
  // Re-sent initialize keeps what the handlers declared.
  bridge.onApprove(() => false);
  await bridge.syncCapabilities();
  assert.equal(bridge.tools.approvalMode, "never");
});
