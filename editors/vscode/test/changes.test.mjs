// The session review in a real VS Code (code-server + Chromium): the
// "ccbridge: Changes" view lists the files changed on disk while the sidecar
// runs, with their hunks, follows `changesChanged`, and a click on one
// hunk's Revert reverts that hunk only, also when another is identical.
// See harness.mjs.
import assert from "node:assert/strict";
import { readFileSync, realpathSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CodeServer, eventually, openWorkbench, screenshot, tearDown } from "./harness.mjs";

const ORIGINAL = ["one", "two", "three", "four", "five", "six", "seven", "eight", ""].join("\n");
// The same line inserted twice: two identical hunks, at lines 3 and 8 (1-based).
const TWICE = ORIGINAL.replace("two\n", "two\nINSERTED\n").replace("six\n", "six\nINSERTED\n");
const FIRST_ONLY = ORIGINAL.replace("two\n", "two\nINSERTED\n");

let cs;
let wb;

/** The Changes view's pane (header and body). */
// VS Code title-cases view names: "Ccbridge: Changes".
const header = () => wb.page.locator(".pane-header", { hasText: /ccbridge: Changes/i });
const pane = () => wb.page.locator(".pane", { has: header() });
/** The view's message: the progress ("N of M files reviewed."), or why it is empty. */
const message = (text) => pane().locator(".tree-explorer-viewlet-tree-view > .message").getByText(text);
/** A row of the view by its accessible label. */
const row = (label) => pane().locator(`.monaco-list-row[aria-label="${label}"]`);

before(async () => {
  cs = await CodeServer.start({ files: { "story.txt": ORIGINAL, "other.txt": ORIGINAL, "busy.txt": ORIGINAL } });
  wb = await openWorkbench(cs);
});

after(async () => {
  await tearDown(wb, cs, "changes-");
});

test("the Changes view shows the session review once the sidecar watches the workspace", async () => {
  await eventually("a lock file in the private ~/.claude/ide", () => cs.lockFiles().length > 0, 60_000);
  await header().waitFor();
  // Expanded in a new profile; opened here should VS Code have kept it collapsed.
  if ((await header().getAttribute("aria-expanded")) === "false") await header().click();
  await message("No file has changed in this session.").waitFor();
  await screenshot(wb.page, "changes-01-empty");
});

test("two identical insertions: Revert on the second hunk reverts that one only; the file and the view follow", async () => {
  const ws = realpathSync(cs.ws);
  const file = join(ws, "story.txt");
  writeFileSync(file, TWICE);
  // The view follows changesChanged: no action of ours makes it reload.
  await row("story.txt, modified").waitFor();
  await row("change 1 of 2 in story.txt, line 3").waitFor();
  await row("change 2 of 2 in story.txt, line 8").waitFor();
  await message("0 of 1 files reviewed.").waitFor();
  await screenshot(wb.page, "changes-02-two-hunks");

  const second = row("change 2 of 2 in story.txt, line 8");
  await second.hover();
  await second.locator('.action-label[aria-label="Revert"]').click();
  await eventually("story.txt to lose its second insertion only", () => readFileSync(file, "utf8") === FIRST_ONLY);
  await row("change 1 of 1 in story.txt, line 3").waitFor();
  await second.waitFor({ state: "detached" });
  await screenshot(wb.page, "changes-03-one-reverted");
  // Nothing else changed on disk, and the file is not reviewed yet.
  assert.equal(readFileSync(join(ws, "other.txt"), "utf8"), ORIGINAL);
  await message("0 of 1 files reviewed.").waitFor();

  // Keeping the last hunk reviews the file; nothing is written.
  const last = row("change 1 of 1 in story.txt, line 3");
  await last.hover();
  await last.locator('.action-label[aria-label="Keep"]').click();
  await row("change 1 of 1 in story.txt, line 3, kept").waitFor();
  await row("story.txt, modified, reviewed").waitFor();
  await message("1 of 1 files reviewed.").waitFor();
  assert.equal(readFileSync(file, "utf8"), FIRST_ONLY);
});

test("a file's diff opens against its content at the session's start", async () => {
  await row("story.txt, modified, reviewed").click();
  const tab = wb.page.locator(".tabs-container .tab", { hasText: "story.txt (session start ↔ now)" });
  await tab.waitFor();
  // The left side is the baseline: the inserted line only on the right.
  const original = wb.page.locator(".monaco-diff-editor .editor.original .view-lines");
  const modified = wb.page.locator(".monaco-diff-editor .editor.modified .view-lines");
  await modified.getByText("INSERTED").waitFor();
  await original.getByText("eight").waitFor();
  assert.equal(await original.getByText("INSERTED").count(), 0, "the baseline has no inserted line");
  await screenshot(wb.page, "changes-04-diff");
  await tab.hover();
  await tab.locator('[aria-label^="Close"]').click();
  await tab.waitFor({ state: "detached" });
});

test("Revert all asks first (modal); Cancel changes nothing, confirming reverts every file", async () => {
  const ws = realpathSync(cs.ws);
  writeFileSync(join(ws, "other.txt"), TWICE);
  await row("other.txt, modified").waitFor();
  await message("1 of 2 files reviewed.").waitFor();
  const revertAll = pane().locator('.pane-header .action-label[aria-label="Revert all changes…"]');
  await header().hover();
  await revertAll.click();
  const dialog = wb.page.locator(".monaco-dialog-box");
  await dialog.getByText("Revert all?").waitFor();
  await screenshot(wb.page, "changes-05-revert-all-dialog");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await dialog.waitFor({ state: "detached" });
  assert.equal(readFileSync(join(ws, "other.txt"), "utf8"), TWICE, "cancelled: nothing reverted");

  await header().hover();
  await revertAll.click();
  await dialog.getByRole("button", { name: "Revert all" }).click();
  await eventually("both files back as they were", () =>
    readFileSync(join(ws, "other.txt"), "utf8") === ORIGINAL && readFileSync(join(ws, "story.txt"), "utf8") === ORIGINAL,
  );
  await message("No file has changed in this session.").waitFor();
});

test("a revert over a file that keeps changing on disk is refused; the message offers the three versions", async () => {
  const ws = realpathSync(cs.ws);
  const file = join(ws, "busy.txt");
  // Something keeps writing the file: the sidecar lists it at most a second
  // late (the watcher waits for a burst to settle), so the view's version is
  // soon not what is on disk and a revert is refused, as a conflict (or, when
  // the sidecar has already seen the newer text, as stale: then again).
  let tick = 0;
  // Each version whole (written aside, then renamed), as an editor saves.
  const writer = setInterval(() => {
    writeFileSync(`${file}.tmp`, `${TWICE}tick ${tick++}\n`);
    renameSync(`${file}.tmp`, file);
  }, 25);
  try {
    const fileRow = row("busy.txt, modified");
    await fileRow.waitFor();
    const conflict = wb.page.locator(".notification-toast", { hasText: "busy.txt changed on disk since the review read it; nothing was written." });
    await eventually(
      "a revert refused as a conflict",
      async () => {
        if (await conflict.count()) return true;
        await fileRow.hover();
        await fileRow.locator('.action-label[aria-label="Revert the file"]').click({ timeout: 2_000 });
        await conflict.first().waitFor({ timeout: 2_000 });
        return true;
      },
      60_000,
    );
    await screenshot(wb.page, "changes-06-conflict");
    await conflict.first().getByRole("button", { name: "Compare: shown ↔ on disk" }).click();
  } finally {
    clearInterval(writer);
  }
  const tab = wb.page.locator(".tabs-container .tab", { hasText: "busy.txt: as the view showed it ↔ on disk now" });
  await tab.waitFor();
  // Both sides are the file as it was written, each with its own tick
  // (VS Code draws spaces as no-break spaces).
  await wb.page.locator(".monaco-diff-editor .editor.modified .view-lines").getByText(/^tick\s\d+$/).first().waitFor();
  await wb.page.locator(".monaco-diff-editor .editor.original .view-lines").getByText(/^tick\s\d+$/).first().waitFor();
  assert.equal(await wb.page.locator(".monaco-diff-editor .editor.original .view-lines").getByText("INSERTED").count(), 2);
  await screenshot(wb.page, "changes-07-conflict-compare");
});
