#!/usr/bin/env node
// The runnable example: an "editor" without a window. It starts the bridge
// on a folder, prints everything that arrives from Claude Code, and answers
// Claude's proposed edits from the terminal (or by --accept/--reject).
//
//   npm run build
//   node examples/headless.mjs [FOLDER] [--accept | --reject]
//
// Then, in FOLDER, start Claude Code with the variables it prints (or run
// `claude` there and pick this editor with `/ide`). Ctrl-C stops; the lock
// file is removed on the way out.
import { createInterface } from "node:readline/promises";
import { resolve } from "node:path";
import { BridgeError, start } from "@ccbridge/client";

const args = process.argv.slice(2);
const folder = resolve(args.find((a) => !a.startsWith("--")) ?? process.cwd());
const auto = args.includes("--accept") ? "accepted" : args.includes("--reject") ? "rejected" : undefined;
const interactive = auto === undefined && process.stdin.isTTY;
const rl = interactive ? createInterface({ input: process.stdin, output: process.stdout }) : undefined;

const log = (what, data) => console.log(`[${new Date().toISOString().slice(11, 23)}] ${what}`, data ?? "");

let bridge;
try {
  bridge = await start({
    workspaceFolders: [folder],
    ideName: "Headless (ccbridge example)",
    handlers: {
      showDiff: async (diff, { signal }) => {
        log("showDiff", {
          id: diff.id,
          tabName: diff.tabName,
          file: diff.newFilePath,
          newFile: diff.isNewFile,
          lines: `${diff.originalContents?.split("\n").length ?? 0} → ${diff.proposedContents.split("\n").length}`,
        });
        signal.addEventListener("abort", () => log("diff closed by Claude", { id: diff.id, reason: signal.reason }));
        if (auto) return { decision: auto };
        if (!rl) return { decision: "dismissed" }; // Claude's terminal prompt decides
        const answer = await rl
          .question(`Accept the change to ${diff.newFilePath}? [y/n/d(ismiss)] `, { signal })
          .catch(() => "d"); // Claude closed it first
        if (/^y/i.test(answer)) return { decision: "accepted" };
        return /^n/i.test(answer) ? { decision: "rejected" } : { decision: "dismissed" };
      },
      closeDiff: (p) => log("closeDiff", p),
      openFile: (p) => {
        log("openFile", p);
        return { filePath: p.filePath };
      },
      approve: async (req) => {
        // Only ccbridge's rendering is printed, never req.command: it may hold
        // characters that draw differently from what runs (bidi controls,
        // zero-width, escapes); those are ⟨U+XXXX⟩ markers in commandShown.
        const hidden = req.hiddenCharacters.length;
        log("approve", { id: req.id, tool: req.tool, command: req.commandShown, cwd: req.cwdShown, hidden });
        if (hidden > 0) console.log(`⚠ this contains ${hidden} hidden or look-alike character(s), shown as ⟨U+…⟩: read it as shown.`);
        if (auto) return auto === "accepted";
        if (!rl) return false;
        return /^y/i.test(await rl.question(`${req.summary} — allow? [y/N] `));
      },
    },
  });
} catch (e) {
  console.error(e instanceof BridgeError ? `ccbridge: ${e.message}` : e);
  process.exit(1);
}

const claude = bridge.agents.find((a) => a.id === "claude");
log("ready", { folder, port: bridge.port, lockFile: bridge.lockFile, claude });
// POSIX shell quoting, so the command can be pasted as printed.
const sh = (word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);
console.log(
  `\nStart Claude Code connected to this editor (the --settings make every edit come here for review):\n  cd ${sh(folder)} && ${Object.entries(claude?.env ?? bridge.claudeEnv)
    .map(([k, v]) => `${k}=${sh(v)}`)
    .join(" ")} claude ${(claude?.args ?? []).map(sh).join(" ")}\n`,
);
if (bridge.tools) log("workspace tools", { url: bridge.tools.url, approvalMode: bridge.tools.approvalMode });

bridge.on("clientConnected", (c) => log("clientConnected", c));
bridge.on("clientDisconnected", (c) => log("clientDisconnected", c));
bridge.on("commandEvent", (e) =>
  log("commandEvent", e.event === "started" ? { event: e.event, id: e.id, command: e.commandShown, cwd: e.cwdShown } : e),
);
bridge.on("invalidNotification", (p) => log("invalidNotification", p));
bridge.on("warning", (w) => log("warning", w.message));
bridge.on("exit", ({ code, signal, error }) => {
  log("sidecar exited", error ? error.message : { code, signal });
  process.exit(error ? 1 : 0);
});

// Ctrl-C: stop cleanly (the bridge's own hook would also clean up).
process.once("SIGINT", () => {
  log("stopping");
  rl?.close();
  void bridge.stop();
});
