// The sidecar started through a command prefix (`ccbridge.command`) with the
// two sides naming the workspace differently (`ccbridge.pathMap`), in a real
// VS Code (code-server + Chromium): the window opens the folder through a
// symlink, the sidecar's side has it under its real name (the sidecar
// resolves symlinks in its workspace folders, so the real name is the one
// it can be given). What crosses the pipe is renamed both ways. See
// harness.mjs and docs/remote.md.
import assert from "node:assert/strict";
import { existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CodeServer, FakeClaude, eventually, openWorkbench, screenshot, tearDown } from "./harness.mjs";

const ORIGINAL = "one\ntwo\nthree\n";

let cs;
let wb;
let claude;
let here;

before(async () => {
  cs = await CodeServer.start({
    files: { "a.txt": ORIGINAL },
    // The window's side: the same folder under another name.
    folder: (sandbox) => {
      const link = join(sandbox.root, "here");
      symlinkSync(sandbox.ws, link);
      return link;
    },
    settings: (sandbox) => ({
      // A prefix that leaves a mark, then runs the sidecar's command line as
      // it is given (no shell quoting: not ssh).
      "ccbridge.command": ["sh", "-c", 'echo "$0" > "$HOME/prefix-ran"; exec "$@"', "prefix"],
      "ccbridge.pathMap": [{ local: join(sandbox.root, "here"), remote: sandbox.ws }],
    }),
  });
  here = cs.opened;
  wb = await openWorkbench(cs);
});

after(async () => {
  await claude?.close();
  await tearDown(wb, cs, "remote-");
});

test("the sidecar starts through ccbridge.command and gets the workspace under its own name", async () => {
  const [lockFile] = await eventually("a lock file in the private ~/.claude/ide", () => {
    const l = cs.lockFiles();
    return l.length > 0 ? l : undefined;
  }, 60_000);
  assert.equal(readFileSync(join(cs.home, "prefix-ran"), "utf8"), "prefix\n", "the prefix ran");
  const lock = JSON.parse(readFileSync(lockFile, "utf8"));
  assert.deepEqual(lock.workspaceFolders, [cs.ws]);
  claude = await FakeClaude.connect(lockFile);
});

test("the window's selection reaches Claude under the sidecar's name; Claude's paths open the window's file", async () => {
  // Opened from the explorer: VS Code names it through the link.
  await wb.page.locator(".explorer-folders-view .monaco-list-row", { hasText: "a.txt" }).click();
  await wb.page.locator(".tabs-container .tab", { hasText: "a.txt" }).waitFor();
  await eventually("the window titled with the link's name", async () => / - here( |$)/.test(await wb.page.title()));
  const sel = await claude.notification("selection_changed", (p) => p.filePath === join(cs.ws, "a.txt"));
  assert.equal(sel.fileUrl, `file://${join(cs.ws, "a.txt")}`);
  // What VS Code reported crossed renamed, never with the window's name.
  const reported = cs.editorMessages("selectionChanged").map((m) => m.params?.filePath);
  assert.ok(reported.includes(join(cs.ws, "a.txt")), JSON.stringify(reported));
  assert.ok(!reported.some((p) => p?.startsWith(here + "/")), JSON.stringify(reported));
  const tabs = cs.editorMessages("openEditorsChanged").at(-1)?.params.tabs.map((t) => t.path);
  assert.deepEqual(tabs, [join(cs.ws, "a.txt")]);

  // Claude names the sidecar's path: the window's own file comes up, no second tab.
  const r = await claude.callTool("openFile", { filePath: join(cs.ws, "a.txt"), preview: false, makeFrontmost: true });
  assert.equal(r.isError ?? false, false, JSON.stringify(r));
  await screenshot(wb.page, "remote-01-opened");
  assert.equal(await wb.page.locator(".tabs-container .tab", { hasText: "a.txt" }).count(), 1);
});

test("the session review through the map: listed, and reverted, by the window's path", async () => {
  const header = wb.page.locator(".pane-header", { hasText: /ccbridge: Changes/i });
  const pane = wb.page.locator(".pane", { has: header });
  await header.waitFor();
  if ((await header.getAttribute("aria-expanded")) === "false") await header.click();
  await pane.getByText("No file has changed in this session.").waitFor();
  writeFileSync(join(cs.ws, "a.txt"), "one\ntwo\nTHREE\n");
  const row = pane.locator('.monaco-list-row[aria-label="change 1 of 1 in a.txt, line 3"]');
  await row.waitFor();
  // Listed under the window's name: the file row's tooltip has its path.
  await pane.locator('.monaco-list-row[aria-label="a.txt, modified"]').hover();
  await wb.page.locator(".monaco-hover, .workbench-hover").getByText(join(here, "a.txt")).first().waitFor();
  // The hunk opens in the window's own file: the tab already open, not a
  // second one under the sidecar's name.
  await row.click();
  await wb.page.locator(".tabs-container .tab.active", { hasText: "a.txt" }).waitFor();
  await eventually("the cursor on the hunk's line", () => wb.page.locator(".statusbar-item", { hasText: "Ln 3," }).count());
  assert.equal(await wb.page.locator(".tabs-container .tab", { hasText: "a.txt" }).count(), 1);
  await row.hover();
  await row.locator('.action-label[aria-label="Revert"]').click();
  await eventually("a.txt reverted", () => readFileSync(join(cs.ws, "a.txt"), "utf8") === ORIGINAL);
  await row.waitFor({ state: "detached" });
  await pane.locator('.monaco-list-row[aria-label="a.txt, modified"]').waitFor({ state: "detached" });
  const decisions = cs.editorMessages("changeAction");
  assert.ok(decisions.length > 0 && decisions.every((m) => m.params.path === join(cs.ws, "a.txt")), JSON.stringify(decisions));
  assert.ok(existsSync(join(cs.ws, "a.txt")));
});
