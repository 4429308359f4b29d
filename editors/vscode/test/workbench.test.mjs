// The extension in a real VS Code (code-server + Chromium), with a scripted
// Claude Code on the sidecar. One workbench for the whole file: starting
// code-server and its extension host is the slow part, and the scenarios
// leave no review open behind them. See harness.mjs.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CodeServer, FakeClaude, ToolsClient, call, eventually, openDiff, openWorkbench, screenshot, tearDown, within } from "./harness.mjs";

const ORIGINAL = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", ""].join("\n");
// Two hunks: line 2 and line 9 (1-based) changed.
const PROPOSAL = ORIGINAL.replace("two\n", "TWO\n").replace("nine\n", "NINE\n");

let cs;
let wb;
let claude;
let lockFile;

/** The editor area's tab whose label contains `text`. */
const tab = (text) => wb.page.locator(".tabs-container .tab", { hasText: text });

before(async () => {
  cs = await CodeServer.start({
    // A user's setting that rewrites a document when it is saved.
    settings: { "files.trimTrailingWhitespace": true },
    files: {
      "story.txt": ORIGINAL,
      "reject.txt": ORIGINAL,
      "mixed.txt": "one\r\ntwo\nthree\r\nfour\n",
      "hunks.txt": ORIGINAL,
      "hunks3.txt": ORIGINAL,
      "indent.txt": ORIGINAL,
      "trailing.txt": "keep me  \n" + ORIGINAL,
      "dismiss.txt": ORIGINAL,
      "multi-a.txt": ORIGINAL,
      "multi-b.txt": ORIGINAL,
      "gemini.txt": ORIGINAL,
      "sel.txt": "héllo 😀 wörld\nsecond line\n",
      "bad.ts": 'const answer: number = "forty-two";\nexport { answer };\n',
      "tsconfig.json": '{ "compilerOptions": { "strict": true } }\n',
    },
    // A stand-in `claude` that records how it was started, then waits on
    // its terminal.
    programs: {
      claude:
        '#!/bin/sh\n{ p=$$; while [ "$p" -gt 1 ]; do echo "ANCESTOR=$p"; p=$(ps -o ppid= -p $p | tr -d \' \'); done; echo "CLAUDE_CODE_SSE_PORT=$CLAUDE_CODE_SSE_PORT"; echo "ENABLE_IDE_INTEGRATION=$ENABLE_IDE_INTEGRATION"; echo "PWD=$PWD"; for a in "$@"; do echo "ARG=$a"; done; } > "$HOME/claude-started.tmp"\nmv "$HOME/claude-started.tmp" "$HOME/claude-started"\necho "stand-in claude started"\nexec cat\n',
    },
  });
  wb = await openWorkbench(cs);
});

after(async () => {
  await claude?.close();
  await tearDown(wb, cs);
});

test("the extension activates and starts the sidecar: its lock file appears in ~/.claude/ide", async () => {
  const locks = await eventually("a lock file in the private ~/.claude/ide", () => {
    const l = cs.lockFiles();
    return l.length > 0 ? l : undefined;
  }, 60_000);
  assert.equal(locks.length, 1, `one lock file, got ${locks.join(", ")}`);
  lockFile = locks[0];
  const lock = JSON.parse(readFileSync(lockFile, "utf8"));
  assert.deepEqual(lock.workspaceFolders, [cs.ws]);
  assert.equal(lock.ideName, "code-server");
  // The status bar item is there; once Claude connects it names it.
  claude = await FakeClaude.connect(lockFile);
  await wb.page.locator(".statusbar-item", { hasText: "Claude Code" }).waitFor();
  await screenshot(wb.page, "01-connected");
});

test("openDiff opens a diff editor labelled with the agent; accepting with an edit returns the edit", async () => {
  const file = join(cs.ws, "story.txt");
  const answer = openDiff(claude, file, PROPOSAL, "✻ [Claude Code] story.txt");
  await tab("Claude Code: story.txt").waitFor();
  const editor = wb.page.locator(".monaco-diff-editor .editor.modified");
  await editor.waitFor();
  const lines = editor.locator(".view-lines:not(.line-delete)");
  await screenshot(wb.page, "02-diff-open");
  // Edit the proposal: a last line of the user's own.
  await lines.click();
  await wb.page.keyboard.press("Control+End");
  await wb.page.keyboard.type("eleven (added in VS Code)");
  await screenshot(wb.page, "03-diff-edited");
  await wb.page.locator('.editor-actions [aria-label="Accept the proposal"]').first().click();
  const texts = await within("Claude's openDiff answer", answer);
  assert.equal(texts[0], "FILE_SAVED");
  assert.equal(texts[1], PROPOSAL + "eleven (added in VS Code)");
  await tab("Claude Code: story.txt").waitFor({ state: "detached" });
});

// Regression: VS Code holds the proposal with one line ending (and no
// byte-order mark), and its text was sent as accepted: a file whose lines
// end both ways came back with every line converted, and Claude was told
// the user had changed its proposal.
test("a proposal accepted unchanged goes back byte for byte, mixed line endings and all", async () => {
  const proposed = "\uFEFFone\r\nTWO\nthree\r\nfour\n";
  const answer = openDiff(claude, join(cs.ws, "mixed.txt"), proposed, "✻ [Claude Code] mixed.txt");
  await tab("Claude Code: mixed.txt").waitFor();
  await wb.page.locator('.editor-actions [aria-label="Accept the proposal"]').first().click();
  const texts = await within("Claude's openDiff answer", answer);
  assert.equal(texts[0], "FILE_SAVED");
  assert.equal(texts[1], proposed);
  await tab("Claude Code: mixed.txt").waitFor({ state: "detached" });
});

test("rejecting from the editor title answers DIFF_REJECTED", async () => {
  const answer = openDiff(claude, join(cs.ws, "reject.txt"), PROPOSAL, "✻ [Claude Code] reject.txt");
  await tab("Claude Code: reject.txt").waitFor();
  await wb.page.locator('.editor-actions [aria-label="Reject the proposal"]').first().click();
  const texts = await within("Claude's openDiff answer", answer);
  assert.equal(texts[0], "DIFF_REJECTED");
  await tab("Claude Code: reject.txt").waitFor({ state: "detached" });
});

test("per hunk: rejecting the first change with its CodeLens and accepting the second saves exactly that", async () => {
  const answer = openDiff(claude, join(cs.ws, "hunks.txt"), PROPOSAL, "✻ [Claude Code] hunks.txt");
  await tab("Claude Code: hunks.txt").waitFor();
  const lenses = wb.page.locator(".monaco-diff-editor .editor.modified .codelens-decoration");
  await lenses.getByText("Reject change 1/2").waitFor();
  await screenshot(wb.page, "04-hunks");
  await lenses.getByText("Reject change 1/2").click();
  await lenses.getByText("Accept change 1/1").click();
  const texts = await within("Claude's openDiff answer", answer);
  assert.equal(texts[0], "FILE_SAVED");
  // The first hunk (two → TWO) rejected, the second (nine → NINE) kept.
  assert.equal(texts[1], ORIGINAL.replace("nine\n", "NINE\n"));
  await tab("Claude Code: hunks.txt").waitFor({ state: "detached" });
});

test("per hunk, out of order: each decision acts on the change it was made on, after earlier ones moved the lines", async () => {
  // Three changes; the middle one adds a line, so rejecting it moves the third up.
  const proposal = ORIGINAL.replace("two\n", "TWO\n").replace("five\n", "FIVE\nfive and a half\n").replace("nine\n", "NINE\n");
  const answer = openDiff(claude, join(cs.ws, "hunks3.txt"), proposal, "✻ [Claude Code] hunks3.txt");
  await tab("Claude Code: hunks3.txt").waitFor();
  const lenses = wb.page.locator(".monaco-diff-editor .editor.modified .codelens-decoration");
  await lenses.getByText("Reject change 2/3").click();
  await lenses.getByText("Reject change 2/2").click();
  await lenses.getByText("Accept change 1/1").waitFor();
  await screenshot(wb.page, "04b-hunks-one-left");
  await lenses.getByText("Accept change 1/1").click();
  const texts = await within("Claude's openDiff answer", answer);
  assert.deepEqual(texts, ["FILE_SAVED", ORIGINAL.replace("two\n", "TWO\n")]);
});

// Regression: a change of indentation only had its CodeLens but no highlight
// (the diff editor ignores leading and trailing whitespace by default), so
// the lens pointed at lines that looked unchanged.
test("a change of indentation only, which the diff editor hides, is named in its CodeLens", async () => {
  const proposal = ORIGINAL.replace("two\n", "    two\n").replace("nine\n", "NINE\n");
  const answer = openDiff(claude, join(cs.ws, "indent.txt"), proposal, "✻ [Claude Code] indent.txt");
  await tab("Claude Code: indent.txt").waitFor();
  const lenses = wb.page.locator(".monaco-diff-editor .editor.modified .codelens-decoration");
  await lenses.getByText("Accept change 1/2 (whitespace only)").waitFor();
  await screenshot(wb.page, "04c-whitespace-only");
  await lenses.getByText("Reject change 2/2").click();
  await lenses.getByText("Accept change 1/1 (whitespace only)").click();
  const texts = await within("Claude's openDiff answer", answer);
  assert.deepEqual(texts, ["FILE_SAVED", ORIGINAL.replace("two\n", "    two\n")]);
});

// Regression: Ctrl+S in the proposal ran the user's save participants over
// all of it: with files.trimTrailingWhitespace on, the trailing spaces of a
// line the agent never touched were dropped (a change the diff editor
// hides), and accepting wrote that.
test("saving the proposal with Ctrl+S runs no save participant over it", async () => {
  const original = "keep me  \n" + ORIGINAL;
  const proposal = original.replace("two\n", "TWO\n");
  const answer = openDiff(claude, join(cs.ws, "trailing.txt"), proposal, "✻ [Claude Code] trailing.txt");
  await tab("Claude Code: trailing.txt").waitFor();
  const editor = wb.page.locator(".monaco-diff-editor .editor.modified");
  await editor.locator(".view-lines").click();
  await wb.page.keyboard.press("Control+End");
  await wb.page.keyboard.type("added");
  await wb.page.keyboard.press("Control+s");
  // Saved (to memory): the tab is no longer dirty.
  await wb.page.locator(".tabs-container .tab.dirty", { hasText: "trailing.txt" }).waitFor({ state: "detached" });
  await wb.page.locator('.editor-actions [aria-label="Accept the proposal"]').first().click();
  const texts = await within("Claude's openDiff answer", answer);
  assert.deepEqual(texts, ["FILE_SAVED", proposal + "added"]);
});

test("closing the diff's tab reports it dismissed: Claude's call stays open for its own prompt", async () => {
  let settled = false;
  const answer = openDiff(claude, join(cs.ws, "dismiss.txt"), PROPOSAL, "✻ [Claude Code] dismiss.txt");
  answer.then(
    () => (settled = true),
    () => (settled = true),
  );
  const t = tab("Claude Code: dismiss.txt");
  await t.waitFor();
  await t.hover();
  await t.locator('[aria-label^="Close"]').click();
  await t.waitFor({ state: "detached" });
  const resolved = await eventually("a diffResolved from VS Code", () =>
    cs.editorMessages("diffResolved").find((m) => m.params?.decision === "dismissed"),
  );
  assert.equal(resolved.params.decision, "dismissed");
  assert.equal(settled, false, "a dismissed diff leaves Claude's openDiff pending (its terminal prompt decides)");
  // Claude's prompt decided; it closes its tab, which settles the call.
  await call(claude, "close_tab", { tab_name: "✻ [Claude Code] dismiss.txt" });
});

test("the selection reaches Claude, in UTF-16 code units", async () => {
  const file = join(cs.ws, "sel.txt");
  await call(claude, "openFile", { filePath: file, preview: false, makeFrontmost: true, startText: "", endText: "" });
  const editor = wb.page.locator(".editor-instance .monaco-editor").first();
  await tab("sel.txt").waitFor();
  await editor.locator(".view-lines").click();
  await wb.page.keyboard.press("Control+Home");
  await wb.page.keyboard.press("Shift+End");
  const first = "héllo 😀 wörld";
  const sel = await eventually("Claude's selection_changed with the first line", () =>
    claude.notifications
      .filter((n) => n.method === "selection_changed")
      .map((n) => n.params)
      .find((p) => p.text === first),
  );
  assert.equal(sel.filePath, file);
  assert.deepEqual(sel.selection.start, { line: 0, character: 0 });
  // 😀 is two UTF-16 code units: the line is 13 characters and 14 code units.
  assert.equal([...first].length, 13);
  assert.deepEqual(sel.selection.end, { line: 0, character: 14 });
  const latest = JSON.parse((await call(claude, "getLatestSelection", {}))[0]);
  assert.equal(latest.text, first);
  await screenshot(wb.page, "05-selection");
});

test("the TypeScript server's diagnostics reach Claude through getDiagnostics", async () => {
  const file = join(cs.ws, "bad.ts");
  await call(claude, "openFile", { filePath: file, preview: false, makeFrontmost: true });
  const diag = await eventually(
    "the TypeScript error in getDiagnostics",
    async () => {
      const [text] = await call(claude, "getDiagnostics", { uri: `file://${file}` });
      const files = JSON.parse(text);
      return files.flatMap((f) => f.diagnostics).find((d) => String(d.code) === "2322");
    },
    90_000,
  );
  assert.match(diag.message, /not assignable to type 'number'/);
  assert.equal(diag.severity, "Error");
  assert.equal(diag.source, "ts");
  assert.equal(diag.range.start.line, 0);
  await screenshot(wb.page, "06-diagnostics");
});

test("a workspace tool's command is asked about in a modal prompt with the exact command and folder, and runs in a terminal", async () => {
  const lock = JSON.parse(readFileSync(lockFile, "utf8"));
  assert.ok(lock.tools?.url, "the lock file records the workspace tools");
  const tools = await ToolsClient.connect(lock.tools);
  const ran = tools.call("execute_command", { command: "echo ran-in-$((6*7))" }, 120_000);
  const dialog = wb.page.locator(".monaco-dialog-box");
  await dialog.waitFor();
  await dialog.getByText("echo ran-in-$((6*7))").waitFor();
  await dialog.getByText(cs.ws).waitFor();
  await screenshot(wb.page, "07-approval");
  await dialog.getByRole("button", { name: "Run it" }).click();
  const result = await within("execute_command's result", ran);
  assert.equal(result.isError, false, result.text);
  assert.match(result.text, /ran-in-42/);
  // The output is shown in the integrated terminal "ccbridge tools".
  await wb.page.locator(".terminal-tabs-entry, .single-terminal-tab, .terminal-tab", { hasText: "ccbridge tools" }).first().waitFor();
  await wb.page.locator(".xterm-rows", { hasText: "ran-in-42" }).first().waitFor();
  await screenshot(wb.page, "08-terminal");

  // Denied: nothing runs.
  const denied = tools.call("execute_command", { command: "touch never-ran" }, 120_000);
  await dialog.getByText("touch never-ran").waitFor();
  await dialog.getByRole("button", { name: "Cancel" }).click();
  const d = await within("the denied execute_command's result", denied);
  assert.match(d.text, /rejected/);
  assert.equal(existsSync(join(cs.ws, "never-ran")), false);
});

test("a command hiding text behind bidi characters is shown in the prompt with markers and a warning", async () => {
  const lock = JSON.parse(readFileSync(lockFile, "utf8"));
  const tools = await ToolsClient.connect(lock.tools);
  // Drawn right to left, the isolate makes `touch bidi-ran` look like a comment.
  const asked = tools.call("execute_command", { command: "echo safe \u2067; touch bidi-ran; : #\u2069" }, 120_000);
  const dialog = wb.page.locator(".monaco-dialog-box");
  await dialog.getByText("This contains 2 hidden characters", { exact: false }).waitFor();
  await dialog.getByText("echo safe ⟨U+2067⟩; touch bidi-ran; : #⟨U+2069⟩", { exact: false }).waitFor();
  await screenshot(wb.page, "07-approval-hidden");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  const r = await within("the refused command's result", asked);
  assert.match(r.text, /rejected/);
  assert.equal(existsSync(join(cs.ws, "bidi-ran")), false);
});

test("Start Claude Code opens a terminal running claude connected to this window, with the review settings", async () => {
  await wb.page.keyboard.press("F1");
  const input = wb.page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(">ccbridge: Start Claude Code");
  await wb.page.locator(".quick-input-list .monaco-list-row", { hasText: "Start Claude Code (connected)" }).first().waitFor();
  await wb.page.keyboard.press("Enter");
  await wb.page.locator(".terminal-tabs-entry, .single-terminal-tab, .terminal-tab", { hasText: "Claude Code" }).first().waitFor();
  await screenshot(wb.page, "10-claude-terminal");
  const started = join(cs.home, "claude-started");
  const lines = await eventually("the stand-in claude to start", () =>
    existsSync(started) ? readFileSync(started, "utf8").trim().split("\n") : undefined,
  );
  const port = lockFile.match(/(\d+)\.lock$/)[1];
  assert.ok(lines.includes(`CLAUDE_CODE_SSE_PORT=${port}`), lines.join("\n"));
  assert.ok(lines.includes("ENABLE_IDE_INTEGRATION=true"), lines.join("\n"));
  assert.ok(lines.includes(`PWD=${cs.ws}`), lines.join("\n"));
  // The lock file's pid is an ancestor of the terminal's processes, which
  // Claude requires of a lock when it runs in an IDE's terminal.
  const { pid } = JSON.parse(readFileSync(lockFile, "utf8"));
  assert.ok(lines.includes(`ANCESTOR=${pid}`), `lock pid ${pid} among ${lines.filter((l) => l.startsWith("ANCESTOR")).join(" ")}`);
  const args = lines.filter((l) => l.startsWith("ARG=")).map((l) => l.slice(4));
  assert.equal(args[0], "--settings");
  const settings = JSON.parse(args[1]);
  assert.ok(JSON.stringify(settings.hooks.PreToolUse).includes("Edit"), args[1]);
  await wb.page.locator(".xterm-rows", { hasText: "stand-in claude started" }).first().waitFor();
  await screenshot(wb.page, "10-claude-terminal");
});

test("several proposals at once, each labelled with who asks, each decided on its own", async () => {
  const lock = JSON.parse(readFileSync(lockFile, "utf8"));
  const tools = await ToolsClient.connect(lock.tools);
  const fromClaude = openDiff(claude, join(cs.ws, "multi-a.txt"), PROPOSAL, "✻ [Claude Code] multi-a.txt");
  const fromTools = tools.call("write_file", { path: "multi-b.txt", content: PROPOSAL }, 120_000);
  const a = tab("Claude Code: multi-a.txt");
  const b = tab("ccbridge tools: multi-b.txt");
  await a.waitFor();
  await b.waitFor();
  await screenshot(wb.page, "09-two-reviews");
  // Reject the tools' write: nothing is written.
  await b.click();
  await wb.page.locator('.editor-actions [aria-label="Reject the proposal"]').first().click();
  const t = await within("write_file's result", fromTools);
  assert.match(t.text, /reject/i);
  assert.equal(readFileSync(join(cs.ws, "multi-b.txt"), "utf8"), ORIGINAL);
  await b.waitFor({ state: "detached" });
  // Claude's is still open, and accepting it answers Claude alone.
  await a.click();
  await wb.page.locator('.editor-actions [aria-label="Accept the proposal"]').first().click();
  const texts = await within("Claude's openDiff answer", fromClaude);
  assert.deepEqual(texts, ["FILE_SAVED", PROPOSAL]);
  await a.waitFor({ state: "detached" });
});

test("Gemini CLI answered in its own terminal gets the text left in VS Code's diff editor, the user's typing included", async () => {
  // Gemini CLI finds the window through its discovery file ($TMPDIR/gemini/ide/), naming this workspace.
  const dir = join(tmpdir(), "gemini", "ide");
  const found = await eventually("Gemini CLI's discovery file for this workspace", () => {
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      try {
        const advert = JSON.parse(readFileSync(join(dir, name), "utf8"));
        const port = name.match(/-(\d+)\.json$/)?.[1];
        if (advert.workspacePath === cs.ws && port) return { port, token: advert.authToken };
      } catch {
        // Being written, or another's.
      }
    }
    return undefined;
  });
  const gemini = await ToolsClient.connect({ url: `http://127.0.0.1:${found.port}/mcp`, token: found.token });
  const file = join(cs.ws, "gemini.txt");
  const opened = await gemini.call("openDiff", { filePath: file, newContent: PROPOSAL });
  assert.equal(opened.isError, false, opened.text);
  await tab("Gemini CLI: gemini.txt").waitFor();
  const editor = wb.page.locator(".monaco-diff-editor .editor.modified");
  await editor.waitFor();
  await editor.locator(".view-lines:not(.line-delete)").click();
  await wb.page.keyboard.press("Control+End");
  await wb.page.keyboard.type("kept (typed in VS Code)");
  // Typing reaches the extension host on the workbench's schedule, and the
  // agent's closeDiff comes another way: a test answering within a
  // millisecond of the last key once got "…VS Cod". A save travels behind the
  // typing, so once the tab is clean again the extension host has every
  // key (the proposal is in memory: saving writes nothing to disk).
  const dirty = wb.page.locator(".tabs-container .tab.dirty", { hasText: "Gemini CLI: gemini.txt" });
  await dirty.waitFor();
  await wb.page.keyboard.press("Control+S");
  await dirty.waitFor({ state: "detached" });
  assert.equal(readFileSync(file, "utf8"), ORIGINAL, "saving the proposal wrote nothing to the file");
  // The user answers in Gemini CLI's terminal: it closes the diff and writes the text it is given.
  const closed = await gemini.call("closeDiff", { filePath: file, suppressNotification: true });
  assert.deepEqual(JSON.parse(closed.text), { content: PROPOSAL + "kept (typed in VS Code)" });
  await tab("Gemini CLI: gemini.txt").waitFor({ state: "detached" });
});

test("ccbridge: Restart the sidecar: the old lock file goes, a new one comes, and reviews work again with diff ids counting from 1 again", async () => {
  const old = lockFile;
  await wb.page.keyboard.press("F1");
  const input = wb.page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(">ccbridge: Restart the sidecar");
  await wb.page.locator(".quick-input-list .monaco-list-row", { hasText: "Restart the sidecar" }).first().waitFor();
  await wb.page.keyboard.press("Enter");
  await eventually("the old lock file to be removed", () => !existsSync(old));
  lockFile = await eventually("the new sidecar's lock file", () => cs.lockFiles()[0]);
  await claude.close();
  claude = await FakeClaude.connect(lockFile);
  // The new sidecar counts diff ids from 1 again, as the first review of this file had.
  const fresh = ORIGINAL.replace("one\n", "ONE (after the restart)\n");
  const answer = openDiff(claude, join(cs.ws, "story.txt"), fresh, "✻ [Claude Code] story.txt again");
  await tab("Claude Code: story.txt").waitFor();
  await wb.page.locator('.editor-actions [aria-label="Accept the proposal"]').first().click();
  assert.deepEqual(await within("Claude's openDiff answer", answer), ["FILE_SAVED", fresh]);
});

test("closing the window stops the sidecar: the lock file is removed", async () => {
  assert.ok(existsSync(lockFile));
  await wb.page.close({ runBeforeUnload: true });
  await eventually("the lock file to be removed after the window closed", () => !existsSync(lockFile), 60_000);
});

