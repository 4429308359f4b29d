// The session review through the real sidecar: a file changed on disk while
// ccbridge runs is listed with its hunks (`changes`), the list's changes are
// announced (`changesChanged`), and a decision (`changeAction`) reaches
// exactly the hunk it names. Refusals come back as their own error classes.
import assert from "node:assert/strict";
import { readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { beforeText, ChangeConflictError, ChangeStaleError, RemoteError } from "../dist/esm/index.js";
import { eventually, sandbox, startBridge, waitEvent } from "./helpers.mjs";

const ORIGINAL = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n";
// The same line inserted twice: two identical hunks, told apart by their keys.
const TWICE = ORIGINAL.replace("two\n", "two\nINSERTED\n").replace("six\n", "six\nINSERTED\n");

/** A changed file as `changes` describes it, for `beforeText` on its own. */
function described(status, hunks, extra = {}) {
  return { path: "/w/f", status, sources: [], version: "v", viewed: false, reviewed: false, added: 0, removed: 0, hunks, moreHunks: 0, revertible: true, changedAt: 0, ...extra };
}
const hunk = (oldStart, oldLines, newStart, newLines, removed, added, extra = {}) => ({
  key: `${oldStart}-${oldLines}`, oldStart, oldLines, newStart, newLines, contextBefore: [], removed, added, contextAfter: [], cut: false, kept: false, ...extra,
});

test("beforeText puts the removed lines back, with the file's line breaks, and says when it cannot", () => {
  // A replaced line and a removed one, CRLF kept.
  const now = "a\r\nB\r\nc\r\n";
  assert.equal(beforeText(described("modified", [hunk(1, 1, 1, 1, ["b"], ["B"]), hunk(3, 1, 3, 0, ["d"], [])]), now), "a\r\nb\r\nc\r\nd\r\n");
  // The final line break added, or removed: the last line alone, same text.
  assert.equal(beforeText(described("modified", [hunk(1, 1, 1, 1, ["b"], ["b"])]), "a\nb\n"), "a\nb");
  assert.equal(beforeText(described("modified", [hunk(1, 1, 1, 1, ["b"], ["b"])]), "a\nb"), "a\nb\n");
  // Line endings converted: not describable.
  assert.equal(beforeText(described("modified", [hunk(0, 2, 0, 2, ["a", "b"], ["a", "b"])]), "a\nb\n"), undefined);
  assert.equal(beforeText(described("created", [hunk(0, 0, 0, 1, [], ["x"])]), "x\n"), "");
  assert.equal(beforeText(described("deleted", [hunk(0, 2, 0, 0, ["x", "y"], [])]), ""), "x\ny\n");
  assert.equal(beforeText(described("modified", [hunk(0, 1, 0, 1, ["a"], ["A"], { cut: true })]), "A\n"), undefined);
  assert.equal(beforeText(described("modified", [], { moreHunks: 1 }), "A\n"), undefined);
  assert.equal(beforeText(described("binary", []), ""), undefined);
  // `now` is not what the hunks describe.
  assert.equal(beforeText(described("modified", [hunk(0, 1, 0, 1, ["a"], ["A"])]), "Z\n"), undefined);
  assert.equal(beforeText(described("modified", [hunk(0, 1, 5, 1, ["a"], ["A"])]), "A\n"), undefined);
});

/** The sandbox's workspace with `file` in it, and a bridge whose review is ready. */
async function reviewing(t, files) {
  const sb = sandbox(t);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(sb.ws, name), text);
  const bridge = await startBridge(t, sb);
  await eventually("the session review to be ready", async () => (await bridge.changes()).ready);
  return { sb, bridge, ws: realpathSync(sb.ws) };
}

/** The file `path` in the review once `pred` holds for it. */
function listed(bridge, path, pred = () => true) {
  return eventually(`${path} in the session review`, async () => {
    const f = (await bridge.changes()).files.find((x) => x.path === path);
    return f && pred(f) ? f : undefined;
  });
}

test("two identical insertions: reverting the second by its key takes out that one only", async (t) => {
  const { bridge, ws } = await reviewing(t, { "story.txt": ORIGINAL });
  const path = join(ws, "story.txt");
  const announced = waitEvent(bridge, "changesChanged");
  writeFileSync(path, TWICE);
  const { revision } = (await announced)[0];
  assert.equal(typeof revision, "number");

  const file = await listed(bridge, path, (f) => f.hunks.length === 2);
  assert.equal(file.status, "modified");
  assert.deepEqual(file.sources, [{ kind: "disk", agents: [] }]);
  assert.equal(file.reviewed, false);
  const [first, second] = file.hunks;
  assert.deepEqual([first.added, second.added], [["INSERTED"], ["INSERTED"]]);
  assert.deepEqual([first.newStart, second.newStart], [2, 7]);
  assert.notEqual(first.key, second.key, "identical hunks have keys of their own");
  // The "before" side of a diff view, rebuilt from the hunks.
  assert.equal(beforeText(file, TWICE), ORIGINAL);
  assert.equal(beforeText(file, TWICE + "changed since\n"), ORIGINAL + "changed since\n");
  assert.equal(beforeText(file, TWICE.replace("INSERTED", "other")), undefined);

  const after = waitEvent(bridge, "changesChanged");
  assert.deepEqual(await bridge.changeAction({ action: "revert", path, key: second.key, version: file.version }), {
    failed: [],
  });
  assert.equal(readFileSync(path, "utf8"), ORIGINAL.replace("two\n", "two\nINSERTED\n"));
  await after;
  const left = await listed(bridge, path, (f) => f.hunks.length === 1);
  assert.equal(left.hunks[0].newStart, 2);
  assert.deepEqual(left.hunks[0].added, ["INSERTED"]);

  // The version the review showed before the revert is out of date now.
  await assert.rejects(
    bridge.changeAction({ action: "revert", path, key: first.key, version: file.version }),
    (e) => e instanceof ChangeStaleError && e instanceof RemoteError && e.stale === true && /reload/.test(e.message),
  );
  assert.equal(readFileSync(path, "utf8"), ORIGINAL.replace("two\n", "two\nINSERTED\n"), "a stale revert writes nothing");

  // Keeping the last hunk reviews the file.
  await bridge.changeAction({ action: "keep", path, key: left.hunks[0].key, version: left.version });
  const kept = await listed(bridge, path, (f) => f.reviewed);
  assert.equal(kept.hunks[0].kept, true);
  assert.equal((await bridge.changes()).reviewed, 1);
  assert.equal(readFileSync(path, "utf8"), ORIGINAL.replace("two\n", "two\nINSERTED\n"), "keeping writes nothing");
});

test("a revert over a file that changed on disk since is refused with the three versions", async (t) => {
  const { bridge, ws } = await reviewing(t, { "race.txt": ORIGINAL });
  const path = join(ws, "race.txt");
  writeFileSync(path, TWICE);
  // Written and reverted at once, before the watcher (which waits for a
  // burst to settle) reports the new text: ccbridge finds the disk is not
  // what the review showed. Should the watcher win a round, the revert is
  // refused as stale instead; the next round tries again.
  let refused;
  let seen;
  for (let round = 0; round < 5 && !refused; round++) {
    const shown = await listed(bridge, path, (f) => f.hunks.length >= 1 && f.version !== seen);
    seen = shown.version;
    const disk = `${TWICE}round ${round}\n`;
    writeFileSync(path, disk);
    try {
      await bridge.changeAction({ action: "revert", path, version: shown.version });
      assert.fail("the revert went through over a file changed on disk");
    } catch (e) {
      if (e instanceof ChangeStaleError) continue;
      assert.ok(e instanceof ChangeConflictError, `a conflict, got ${e}`);
      refused = e;
      assert.equal(readFileSync(path, "utf8"), disk, "nothing written");
      assert.deepEqual(e.conflict, { path, before: ORIGINAL, shown: round === 0 ? TWICE : e.conflict.shown, disk });
      assert.match(e.message, /changed on disk/);
    }
  }
  assert.ok(refused, "no round ended in a conflict");
});

test("viewed, undo and bad decisions", async (t) => {
  const { bridge, ws } = await reviewing(t, { "a.txt": ORIGINAL });
  const path = join(ws, "a.txt");
  writeFileSync(path, TWICE);
  const file = await listed(bridge, path, (f) => f.hunks.length === 2);
  await bridge.changeAction({ action: "viewed", path });
  assert.equal((await listed(bridge, path, (f) => f.viewed)).reviewed, true);

  await bridge.changeAction({ action: "revert", path, version: file.version });
  assert.equal(readFileSync(path, "utf8"), ORIGINAL);
  assert.equal((await bridge.changes()).canUndo, true);
  await bridge.changeAction({ action: "undo" });
  assert.equal(readFileSync(path, "utf8"), TWICE);

  const current = await listed(bridge, path, (f) => f.hunks.length === 2);
  await assert.rejects(
    bridge.changeAction({ action: "revert", path, key: "no-such-key", version: current.version }),
    (e) => e instanceof RemoteError && !(e instanceof ChangeStaleError) && e.rpcCode === -32602 && /no hunk/.test(e.message),
  );
  await assert.rejects(
    bridge.changeAction({ action: "revert", path: join(ws, "untouched.txt"), version: "-" }),
    (e) => e instanceof RemoteError && /no change/.test(e.message),
  );
  assert.equal(readFileSync(path, "utf8"), TWICE, "refused decisions write nothing");
});

test("with --no-changes, changes() says the workspace is not watched", async (t) => {
  const sb = sandbox(t);
  const bridge = await startBridge(t, sb, { args: ["--no-changes"] });
  await assert.rejects(bridge.changes(), (e) => e instanceof RemoteError && e.rpcCode === -32600 && /--no-changes/.test(e.message));
});
