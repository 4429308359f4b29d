// The other agents, through the companion server the sidecar runs for them:
// an MCP client speaking as Gemini CLI does (the discovery file's token,
// `openDiff`/`closeDiff` by file path) against the real sidecar.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { eventually, sandbox, startBridge, ToolsClient, waitEvent } from "./helpers.mjs";

/** Connects as Gemini CLI does: the port from the terminal's environment, the token from the discovery file. */
async function gemini(sb, bridge) {
  const env = bridge.agents.find((a) => a.id === "gemini").env;
  const port = env.GEMINI_CLI_IDE_SERVER_PORT;
  // Gemini CLI looks in $TMPDIR/gemini/ide/ (the sandbox's TMPDIR is its home).
  const dir = join(sb.home, "gemini", "ide");
  const file = await eventually("Gemini CLI's discovery file", () =>
    readdirSync(dir, { withFileTypes: true }).find((e) => e.name.endsWith(`-${port}.json`)),
  );
  const { authToken } = JSON.parse(readFileSync(join(dir, file.name), "utf8"));
  return ToolsClient.connect({ url: `http://127.0.0.1:${port}/mcp`, token: authToken });
}

test("answered in the agent's terminal, the agent gets the text the user left in the view (reviewText)", async (t) => {
  const sb = sandbox(t);
  const hello = join(sb.ws, "hello.py");
  writeFileSync(hello, "def greet(name):\n    print(name)\n");
  const bridge = await startBridge(t, sb);
  const shown = [];
  bridge.onShowDiff((diff, { signal }) => {
    shown.push(diff);
    // Undecided: the user answers in the agent's terminal instead.
    return new Promise((resolve) => signal.addEventListener("abort", () => resolve({ decision: "dismissed" })));
  });
  const asked = [];
  bridge.onReviewText(({ id }) => {
    asked.push(id);
    const diff = shown.find((d) => d.id === id);
    return diff ? `${diff.proposedContents}# kept from the view\n` : null;
  });
  await bridge.syncCapabilities();
  const connected = waitEvent(bridge, "clientConnected", (c) => c.agent?.id === "gemini");
  const client = await gemini(sb, bridge);
  await connected;

  const proposed = "def greet(name):\n    print(f'hi {name}')\n";
  const open = await client.call("openDiff", { filePath: hello, newContent: proposed });
  assert.equal(open.isError, false, open.text);
  await eventually("the view to be shown", () => shown.length === 1);
  assert.equal(shown[0].agent.id, "gemini");

  const closed = await client.call("closeDiff", { filePath: hello, suppressNotification: true });
  assert.deepEqual(JSON.parse(closed.text), { content: `${proposed}# kept from the view\n` });
  assert.deepEqual(asked, [shown[0].id], "asked once, for that view");

  // Without a handler the capability is gone: the agent keeps its proposal.
  bridge.onReviewText(() => "never asked").dispose();
  await bridge.syncCapabilities();
  await client.call("openDiff", { filePath: hello, newContent: proposed });
  await eventually("the second view to be shown", () => shown.length === 2);
  const again = await client.call("closeDiff", { filePath: hello, suppressNotification: true });
  assert.deepEqual(JSON.parse(again.text), { content: null });
  assert.deepEqual(asked, [shown[0].id]);
});

test("a file changed on disk while Gemini CLI is connected names it in the session review", async (t) => {
  const sb = sandbox(t);
  const hello = join(sb.ws, "hello.py");
  writeFileSync(hello, "def greet(name):\n    print(name)\n");
  const bridge = await startBridge(t, sb);
  await eventually("the session review to be ready", async () => (await bridge.changes()).ready);
  const connected = waitEvent(bridge, "clientConnected", (c) => c.agent?.id === "gemini");
  await gemini(sb, bridge);
  await connected;
  // Gemini CLI in auto-edit mode writes without telling the IDE.
  writeFileSync(hello, "def greet(name):\n    print(name.upper())\n");
  const file = await eventually("hello.py in the session review", async () =>
    (await bridge.changes()).files.find((f) => f.path === hello),
  );
  assert.deepEqual(file.sources, [{ kind: "disk", agents: ["Gemini CLI"] }]);
});
