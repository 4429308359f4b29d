// The sidecar through a command prefix, with the two sides naming the
// workspace differently (docs/remote.md): the path map on its own, then the
// real sidecar started through a stand-in `ssh` (a script that does what
// ssh does with its arguments: joins them into one command line for a
// shell), the editor's side a symlink to the sidecar's folder.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { commandLine, needsQuoting, PathMap, shellQuote, start } from "../dist/esm/index.js";
import { ccbridgeBin, eventually, FakeClaude, lockFileGone, sandbox, waitEvent, within } from "./helpers.mjs";

const range = (l1, c1, l2, c2) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });

test("the path map: longest prefix first, both directions, other paths unchanged", () => {
  const map = new PathMap([
    { local: "/home/me/proj/", remote: "/srv/proj" },
    { local: "/home/me/proj/vendor", remote: "/opt/vendor" },
    { local: "/", remote: "/mnt/host" },
  ]);
  assert.equal(map.toRemote("/home/me/proj/src/a.ts"), "/srv/proj/src/a.ts");
  assert.equal(map.toRemote("/home/me/proj"), "/srv/proj");
  assert.equal(map.toRemote("/home/me/proj/vendor/x.c"), "/opt/vendor/x.c", "the longer mapping wins");
  assert.equal(map.toRemote("/home/me/project2/a"), "/mnt/host/home/me/project2/a", "a prefix is a whole folder");
  assert.equal(map.toLocal("/srv/proj/src/a.ts"), "/home/me/proj/src/a.ts");
  assert.equal(map.toLocal("/opt/vendor/x.c"), "/home/me/proj/vendor/x.c");
  assert.equal(map.toLocal("/mnt/host/etc/hosts"), "/etc/hosts");
  assert.equal(map.toLocal("/usr/lib/x"), "/usr/lib/x", "outside every mapping: unchanged");

  const none = new PathMap();
  assert.equal(none.empty, true);
  const params = { filePath: "/srv/proj/a" };
  assert.equal(none.incoming("openFile", params), params, "an empty map changes nothing");

  assert.throws(() => new PathMap([{ local: "relative", remote: "/srv" }]), /pathMap\[0\] must be \{local: <absolute path>/);
  assert.throws(() => new PathMap([{ local: "/a" }]), TypeError);
  assert.throws(() => new PathMap("/a:/b"), TypeError);
});

test("with() adds the mappings of folders not mapped yet, leaving the others as they were", () => {
  const m = new PathMap([{ local: "/a", remote: "/b" }]).with([
    { local: "/a", remote: "/x" },
    { local: "/c", remote: "/d" },
  ]);
  assert.equal(m.toRemote("/a/f"), "/b/f");
  assert.equal(m.toRemote("/c/f"), "/d/f");
  assert.equal(m.toLocal("/d/f"), "/c/f");
  assert.throws(() => new PathMap().with([{ local: "relative", remote: "/r" }]), TypeError);
});

test("a local folder named through a link maps by its real name too, going over only", () => {
  const real = { "/home/me/proj": "/data/proj/", "/opt/x": "/opt/x" };
  const map = new PathMap([
    { local: "/home/me/proj", remote: "/srv/proj" },
    { local: "/opt/x", remote: "/x" },
  ]).withRealNames((p) => real[p]);
  assert.equal(map.toRemote("/data/proj/a.py"), "/srv/proj/a.py", "a file named by its real path");
  assert.equal(map.toRemote("/home/me/proj/a.py"), "/srv/proj/a.py");
  assert.equal(map.toLocal("/srv/proj/a.py"), "/home/me/proj/a.py", "back under the user's name");
  assert.equal(map.toLocal("/x/y"), "/opt/x/y");
  assert.equal(new PathMap([{ local: "/gone", remote: "/srv" }]).withRealNames(() => undefined).toLocal("/srv/a"), "/gone/a");
});

test("the path map rewrites every path field of every message, in both directions, on a copy", () => {
  const map = new PathMap([{ local: "/l", remote: "/r" }]);
  const sel = { filePath: "/l/a.ts", text: "x", selection: range(0, 0, 0, 1) };
  assert.deepEqual(map.outgoing("selectionChanged", sel), { ...sel, filePath: "/r/a.ts" });
  assert.equal(sel.filePath, "/l/a.ts", "the caller's object is not changed");
  assert.deepEqual(map.outgoing("openEditorsChanged", { tabs: [{ path: "/l/a", isActive: true, isDirty: false }, { path: "Untitled-1", isUntitled: true, isActive: false, isDirty: true }] }).tabs.map((t) => t.path), ["/r/a", "Untitled-1"]);
  assert.deepEqual(map.outgoing("diagnosticsChanged", { uri: "file:///l/a.ts", diagnostics: [] }), { uri: "file:///r/a.ts", diagnostics: [] });
  assert.equal(map.outgoing("diagnosticsChanged", { path: "/l/a.ts", diagnostics: [] }).path, "/r/a.ts");
  assert.equal(map.outgoing("documentDirtyChanged", { path: "/l/a", isDirty: true }).path, "/r/a");
  assert.equal(map.outgoing("atMentioned", { filePath: "/l/a" }).filePath, "/r/a");
  assert.deepEqual(map.outgoing("workspaceChanged", { workspaceFolders: ["/l", "/elsewhere"] }).workspaceFolders, ["/r", "/elsewhere"]);
  assert.equal(map.outgoing("changeAction", { action: "revert", path: "/l/a", version: "v" }).path, "/r/a");

  const diff = map.incoming("showDiff", { id: 1, oldFilePath: "/r/a", newFilePath: "/r/a", proposedContents: "/r/a stays" });
  assert.deepEqual([diff.oldFilePath, diff.newFilePath, diff.proposedContents], ["/l/a", "/l/a", "/r/a stays"]);
  assert.equal(map.incoming("openFile", { filePath: "/r/a" }).filePath, "/l/a");
  assert.deepEqual(map.incoming("openFiles", { paths: ["/r/a", "/r/b"] }).paths, ["/l/a", "/l/b"]);
  assert.equal(map.incoming("saveDocument", { path: "/r/a" }).path, "/l/a");
  assert.equal(map.incoming("reformatFile", { path: "/r/a" }).path, "/l/a");
  assert.equal(map.answer("openFile", { filePath: "/l/a", lineCount: 3 }).filePath, "/r/a");
  assert.deepEqual(map.answer("openFiles", { opened: ["/l/a"] }).opened, ["/r/a"]);
  assert.deepEqual(map.result("changes", { ready: true, files: [{ path: "/r/a", hunks: [] }] }).files[0].path, "/l/a");
  // Not a path: the approval's command and folder are shown as the sidecar's side has them.
  const approve = { id: 1, tool: "execute_command", cwd: "/r", summary: "Run" };
  assert.deepEqual(map.incoming("approve", approve), approve);
});

test("the command line: the prefix, then each word quoted for the remote shell after ssh only", () => {
  assert.equal(shellQuote("plain/path-1.txt"), "plain/path-1.txt");
  assert.equal(shellQuote("Kale (remote)"), "'Kale (remote)'");
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
  assert.equal(shellQuote(""), "''");
  assert.equal(needsQuoting(["ssh", "-T", "h"]), true);
  assert.equal(needsQuoting(["/usr/bin/ssh"]), true);
  assert.equal(needsQuoting(["docker", "exec", "-i", "c"]), false);
  assert.equal(needsQuoting(["docker"], true), true, "quoteCommand decides when given");
  assert.deepEqual(commandLine(["ssh", "-T", "h"], ["ccbridge", "--ide-name", "A B"]), ["ssh", "-T", "h", "ccbridge", "--ide-name", "'A B'"]);
  assert.deepEqual(commandLine(["env"], ["ccbridge", "A B"]), ["env", "ccbridge", "A B"]);
  assert.deepEqual(commandLine([], ["ccbridge"]), ["ccbridge"]);
});

test("start() refuses a bad prefix or path map before spawning anything", async () => {
  const base = { workspaceFolders: ["/tmp"], ideName: "X" };
  await assert.rejects(start({ ...base, command: "ssh host" }), /`command` must be an array of strings/);
  await assert.rejects(start({ ...base, pathMap: [{ local: "/a", remote: "b" }] }), /pathMap\[0\]/);
});

test("through a real prefix (a stand-in ssh) with the two sides' folders mapped: every path crosses renamed", async (t) => {
  const sb = sandbox(t);
  const remoteWs = realpathSync(sb.ws);
  // The editor's side names the workspace through a symlink.
  const localWs = join(sb.root, "here");
  symlinkSync(remoteWs, localWs);
  const hello = "hello.py";
  writeFileSync(join(remoteWs, hello), "def greet(name):\n    print(name)\n");
  // What ssh does with its arguments: one command line for the remote shell.
  const bin = join(sb.root, "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "ssh"), '#!/bin/sh\n# a stand-in for `ssh -T host`: drops its options and host, runs the rest as one shell line\nshift 2\nexec sh -c "$*"\n', { mode: 0o755 });

  const bridge = await start({
    workspaceFolders: [localWs],
    ideName: "Kale (over ssh)",
    command: [join(bin, "ssh"), "-T", "devbox"],
    bin: ccbridgeBin(),
    pathMap: [{ local: localWs, remote: remoteWs }],
    // The environment of the remote login, as the test's sandbox has it.
    env: sb.env(),
    logFile: sb.log,
    args: ["--selection-debounce-ms", "0"],
    // This side's pid: it names nothing on the other machine.
    pid: 999999,
  });
  t.after(() => bridge.stop());

  // The sidecar got the remote folder and the name intact through the shell.
  const lock = JSON.parse(readFileSync(bridge.lockFile, "utf8"));
  assert.deepEqual(lock.workspaceFolders, [remoteWs]);
  assert.equal(lock.ideName, "Kale (over ssh)");
  // Regression: the local pid went into the remote lock file, where it
  // named no process (or another one), and the agents dropped the lock.
  assert.notEqual(lock.pid, 999999);
  process.kill(lock.pid, 0);
  bridge.updateWorkspace({ pid: 999998, ideName: "Kale (renamed)" });
  await eventually("the new name in the lock file", async () => JSON.parse(readFileSync(bridge.lockFile, "utf8")).ideName === "Kale (renamed)");
  assert.equal(JSON.parse(readFileSync(bridge.lockFile, "utf8")).pid, lock.pid);

  const diffs = [];
  bridge.onShowDiff((diff) => {
    diffs.push(diff);
    return { decision: "rejected" };
  });
  const opened = [];
  bridge.onOpenFile((p) => {
    opened.push(p.filePath);
    return { filePath: p.filePath, lineCount: 2 };
  });
  await bridge.syncCapabilities();
  const connected = waitEvent(bridge, "clientConnected");
  const claude = await FakeClaude.connect(bridge.lockFile);
  t.after(() => claude.close());
  await connected;

  // Editor → Claude: local paths arrive remote.
  bridge.reportSelection({ filePath: join(localWs, hello), text: "greet", selection: range(0, 4, 0, 9) });
  const sel = await claude.notification("selection_changed", (p) => p.text === "greet");
  assert.equal(sel.filePath, join(remoteWs, hello));
  bridge.reportDiagnostics(join(localWs, hello), [{ message: "m", severity: "Error", range: range(0, 0, 0, 1) }]);
  await bridge.status();
  const diags = JSON.parse(FakeClaude.texts(await claude.callTool("getDiagnostics", {}))[0]);
  assert.deepEqual(diags.map((d) => d.uri), [`file://${join(remoteWs, hello)}`]);
  bridge.reportOpenEditors([{ path: join(localWs, hello), isActive: true, isDirty: false }]);
  await bridge.status();
  const tabs = JSON.parse(FakeClaude.texts(await claude.callTool("getOpenEditors", {}))[0]);
  assert.equal(tabs.tabs[0].uri, `file://${join(remoteWs, hello)}`);

  // Claude → editor: remote paths arrive local.
  const answer = await within(
    "openDiff's answer",
    claude.callTool("openDiff", {
      old_file_path: join(remoteWs, hello),
      new_file_path: join(remoteWs, hello),
      new_file_contents: "changed\n",
      tab_name: "✻ [Claude Code] hello.py ⧉",
    }),
  );
  assert.equal(FakeClaude.texts(answer)[0], "DIFF_REJECTED");
  assert.deepEqual([diffs[0].oldFilePath, diffs[0].newFilePath], [join(localWs, hello), join(localWs, hello)]);
  assert.equal(diffs[0].originalContents, "def greet(name):\n    print(name)\n", "the original as the sidecar read it");
  const r = await claude.callTool("openFile", { filePath: join(remoteWs, hello), preview: false, makeFrontmost: true });
  assert.equal(r.isError ?? false, false, JSON.stringify(r));
  assert.deepEqual(opened, [join(localWs, hello)]);

  // The session review: listed with the local path; a decision by the local path.
  await eventually("the session review to be ready", async () => (await bridge.changes()).ready);
  writeFileSync(join(localWs, hello), "def greet(name):\n    print(name)\n    print('again')\n");
  const file = await eventually("hello.py in the session review", async () =>
    (await bridge.changes()).files.find((f) => f.path === join(localWs, hello)),
  );
  await bridge.changeAction({ action: "revert", path: file.path, key: file.hunks[0].key, version: file.version });
  assert.equal(readFileSync(join(remoteWs, hello), "utf8"), "def greet(name):\n    print(name)\n");

  // Ending: the sidecar behind the prefix removes its lock file.
  const lockFile = bridge.lockFile;
  await bridge.stop();
  await lockFileGone(lockFile);
  assert.equal(existsSync(lockFile), false);
});

// Regression: a workspace opened through a symbolic link, on this machine,
// with no map. The sidecar and Claude name it by its real path, the editor
// by the link's: a dirty buffer was not the file Claude asked about (no
// warning before accepting, `saveDocument` saved nothing) and `openFile`
// opened a second tab under the real name.
test("a workspace named through a symlink, locally and unmapped: Claude's paths and the editor's meet", async (t) => {
  const sb = sandbox(t);
  const real = realpathSync(sb.ws);
  const link = join(sb.root, "linked");
  symlinkSync(real, link);
  writeFileSync(join(real, "a.txt"), "one\n");
  const bridge = await start({
    workspaceFolders: [link],
    ideName: "Linked",
    bin: ccbridgeBin(),
    env: sb.env(),
    logFile: sb.log,
  });
  t.after(() => bridge.stop());
  const lock = JSON.parse(readFileSync(bridge.lockFile, "utf8"));
  assert.deepEqual(lock.workspaceFolders, [real]);

  const opened = [];
  bridge.onOpenFile((p) => {
    opened.push(p.filePath);
    return { filePath: p.filePath, lineCount: 1 };
  });
  await bridge.syncCapabilities();
  const connected = waitEvent(bridge, "clientConnected");
  const claude = await FakeClaude.connect(bridge.lockFile);
  t.after(() => claude.close());
  await connected;

  bridge.reportOpenEditors([{ path: join(link, "a.txt"), isActive: true, isDirty: true }]);
  await bridge.status();
  const dirty = FakeClaude.texts(await claude.callTool("checkDocumentDirty", { filePath: join(real, "a.txt") }))[0];
  assert.equal(JSON.parse(dirty).isDirty, true, dirty);
  const r = await claude.callTool("openFile", { filePath: join(real, "a.txt"), preview: false, makeFrontmost: true });
  assert.equal(r.isError ?? false, false, JSON.stringify(r));
  assert.deepEqual(opened, [join(link, "a.txt")]);

  // Regression: a folder added later through a link (updateWorkspace) went
  // over under the link's name: the lock file named a folder Claude's real
  // cwd is not in, and its files' state missed Claude's paths.
  const real2 = join(sb.root, "second");
  mkdirSync(real2);
  writeFileSync(join(real2, "b.txt"), "two\n");
  const link2 = join(sb.root, "second-linked");
  symlinkSync(real2, link2);
  bridge.updateWorkspace({ workspaceFolders: [link, link2] });
  await eventually("both real folders in the lock file", async () =>
    JSON.stringify(JSON.parse(readFileSync(bridge.lockFile, "utf8")).workspaceFolders) === JSON.stringify([real, realpathSync(real2)]),
  );
  bridge.reportOpenEditors([{ path: join(link2, "b.txt"), isActive: true, isDirty: true }]);
  await bridge.status();
  const dirty2 = FakeClaude.texts(await claude.callTool("checkDocumentDirty", { filePath: join(realpathSync(real2), "b.txt") }))[0];
  assert.equal(JSON.parse(dirty2).isDirty, true, dirty2);
});
