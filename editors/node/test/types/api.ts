// Compile-time checks of the published types (dist/esm/*.d.ts, reached the
// way a consumer reaches them: `import ... from "@ccbridge/client"`).
// Never run; `npm test` type-checks it after the build.
import {
  start,
  type Bridge,
  type ClaudeClient,
  type CommandEvent,
  type DiffVerdict,
  type ShowDiffParams,
  type Hunk,
  type ChangesView,
  type ChangedFile,
  BridgeError,
  ChangeConflictError,
  ChangeStaleError,
  beforeText,
  SpawnError,
  SidecarExitedError,
} from "@ccbridge/client";

export async function usage(): Promise<void> {
  const bridge: Bridge = await start({ workspaceFolders: ["/w"], ideName: "Kale" });
  const port: number = bridge.port;
  const env: Record<string, string> = bridge.claudeEnv;
  const lock: string | null = bridge.lockFile;
  void [port, env, lock];

  bridge.onShowDiff(async (diff: ShowDiffParams, { signal }) => {
    void signal.aborted;
    const changed: number = (diff.hunks ?? []).reduce((n, h: Hunk) => n + h.newLines, 0);
    void changed;
    return { decision: "accepted", contents: diff.proposedContents };
  });
  bridge.onShowDiff(() => ({ decision: "rejected" }));
  bridge.onShowDiff(() => ({ decision: "dismissed" }));
  // @ts-expect-error a verdict must be one of the three decisions
  bridge.onShowDiff(() => ({ decision: "maybe" }));
  // @ts-expect-error contents only go with "accepted"
  const wrong: DiffVerdict = { decision: "rejected", contents: "x" };
  void wrong;

  bridge.onApprove((req) => req.tool === "read_file");
  bridge.onApprove(async () => ({ approved: true }));
  const sub = bridge.onCommandEvent((e: CommandEvent) => {
    if (e.event === "exited") void (e.exitCode satisfies number | null);
  });
  sub.dispose();

  bridge.on("clientConnected", (c: ClaudeClient) => void c.pid);
  bridge.on("exit", ({ error }) => void (error satisfies SidecarExitedError | undefined));
  // @ts-expect-error no such event
  bridge.on("clientConnectd", () => {});
  // @ts-expect-error listener arguments are typed
  bridge.on("clientConnected", (c: string) => void c);

  const sent: boolean = bridge.reportSelection({
    filePath: "/w/a.ts",
    text: "x",
    selection: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } },
  });
  bridge.reportSelection(null);
  bridge.reportDiagnostics("/w/a.ts", [
    { message: "m", severity: "Warning", range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } } },
  ]);
  // @ts-expect-error severities are the protocol's
  bridge.reportDiagnostics("/w/a.ts", [{ message: "m", severity: 5, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } } }]);
  void sent;

  const review: ChangesView = await bridge.changes();
  const file: ChangedFile | undefined = review.files[0];
  if (file) {
    const hunk = file.hunks[0];
    if (hunk) await bridge.changeAction({ action: "revert", path: file.path, key: hunk.key, version: file.version });
    await bridge.changeAction({ action: "keep", path: file.path, version: file.version });
    void (beforeText(file, "") satisfies string | undefined);
  }
  await bridge.changeAction({ action: "revertAll" }).then((r) => void (r.failed satisfies string[]));
  // @ts-expect-error a revert names the file's version
  await bridge.changeAction({ action: "revert", path: "/w/a" });
  // @ts-expect-error no such action
  await bridge.changeAction({ action: "discard" });
  bridge.on("changesChanged", ({ revision }) => void (revision satisfies number));
  try {
    await bridge.changeAction({ action: "undo" });
  } catch (e) {
    if (e instanceof ChangeConflictError) void (e.conflict.disk satisfies string | null);
    if (e instanceof ChangeStaleError) void (e.stale satisfies true);
  }

  try {
    await bridge.stop();
  } catch (e) {
    if (e instanceof SpawnError) void (e.errno satisfies string | undefined);
    if (e instanceof BridgeError) void (e.code satisfies string);
  }
}
