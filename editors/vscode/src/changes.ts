/**
 * The session review in VS Code: the **ccbridge: Changes** view (a TreeView
 * in the explorer) lists every file changed in the workspace while the
 * sidecar runs, each with its hunks, against what it held at the start
 * (the protocol's `changes`; docs/editor-protocol.md). Reviewing afterwards,
 * as in a pull request, is how a person sees what an agent in auto mode, a
 * `claude` started elsewhere or a command did without asking.
 *
 * Every decision names exactly what the person pointed at: a hunk by its
 * key and a file by the version the view showed, so a click on a row drawn
 * before the file changed again is refused as stale (the view reloads)
 * rather than applied to something else. A revert over a file that changed
 * on disk since is refused by ccbridge with the three versions, which the
 * view offers to compare. The view follows `changesChanged`.
 *
 * The "before" side of a file's diff is a read-only virtual document
 * (`ccbridge-before:`), rebuilt from the file and the hunks by the client's
 * `beforeText`: no request returns the whole earlier content.
 */
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  beforeText,
  ChangeConflictError,
  ChangeStaleError,
  type Bridge,
  type ChangeAction,
  type ChangeConflict,
  type ChangedFile,
  type ChangedHunk,
  type ChangesView,
} from "@ccbridge/client";

export const VIEW_ID = "ccbridge.changes";
export const BEFORE_SCHEME = "ccbridge-before";
export const CONFLICT_SCHEME = "ccbridge-conflict";

type Node = { kind: "file"; file: ChangedFile } | { kind: "hunk"; file: ChangedFile; hunk: ChangedHunk; index: number };

/** Lines of a hunk for a person: 1-based, as the editor's gutter counts. */
function where(h: ChangedHunk): string {
  if (h.newLines === 0) return `removed before line ${h.newStart + 1}`;
  return h.newLines === 1 ? `line ${h.newStart + 1}` : `lines ${h.newStart + 1}–${h.newStart + h.newLines}`;
}

function who(file: ChangedFile): string {
  const names = file.sources.map((s) =>
    s.kind === "reviewed"
      ? `reviewed, by ${s.agent}`
      : s.kind === "agent"
        ? `${s.agent} (${s.tool})`
        : s.agents && s.agents.length > 0
          ? `seen on disk while ${s.agents.join(" and ")} ran`
          : "seen on disk",
  );
  return names.length > 0 ? names.join(", ") : "seen on disk";
}

export class Changes implements vscode.TreeDataProvider<Node>, vscode.TextDocumentContentProvider, vscode.Disposable {
  private bridge: Bridge | undefined;
  private review: ChangesView | undefined;
  private readonly tree: vscode.TreeView<Node>;
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly docs = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.docs.event;
  /** The "before" texts of the diffs opened (by file path), and the conflicts' versions (by URI). */
  private readonly befores = new Map<string, string>();
  private readonly conflicts = new Map<string, string>();
  private conflictCount = 0;
  private listener: (() => void) | undefined;
  private refreshing: Promise<void> | undefined;
  private again = false;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly log: (line: string) => void) {
    this.tree = vscode.window.createTreeView(VIEW_ID, { treeDataProvider: this, showCollapseAll: true });
    this.disposables.push(
      this.tree,
      this.changed,
      this.docs,
      vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, this),
      vscode.workspace.registerTextDocumentContentProvider(CONFLICT_SCHEME, this),
      vscode.commands.registerCommand("ccbridge.changes.refresh", () => this.refresh()),
      vscode.commands.registerCommand("ccbridge.changes.keepHunk", (n?: Node) => this.onHunk(n, "keep")),
      vscode.commands.registerCommand("ccbridge.changes.revertHunk", (n?: Node) => this.onHunk(n, "revert")),
      vscode.commands.registerCommand("ccbridge.changes.keepFile", (n?: Node) => this.onFile(n, "keep")),
      vscode.commands.registerCommand("ccbridge.changes.revertFile", (n?: Node) => this.onFile(n, "revert")),
      vscode.commands.registerCommand("ccbridge.changes.viewed", (n?: Node) => this.toggleViewed(n, true)),
      vscode.commands.registerCommand("ccbridge.changes.unviewed", (n?: Node) => this.toggleViewed(n, false)),
      vscode.commands.registerCommand("ccbridge.changes.openDiff", (n?: Node) => this.openDiff(n)),
      vscode.commands.registerCommand("ccbridge.changes.openHunk", (n?: Node) => this.openHunk(n)),
      vscode.commands.registerCommand("ccbridge.changes.keepAll", () => this.all("keepAll")),
      vscode.commands.registerCommand("ccbridge.changes.revertAll", () => this.all("revertAll")),
      vscode.commands.registerCommand("ccbridge.changes.undo", () => this.act({ action: "undo" })),
    );
    this.render();
  }

  /** A new sidecar (or none): follow its `changesChanged`. */
  attach(bridge: Bridge | undefined): void {
    if (this.bridge && this.listener) this.bridge.off("changesChanged", this.listener);
    this.bridge = bridge;
    this.listener = undefined;
    this.review = undefined;
    if (bridge) {
      const listener = (): void => void this.refresh();
      this.listener = listener;
      bridge.on("changesChanged", listener);
      void this.refresh();
    }
    this.render();
  }

  /** Fetches the review again; calls during a fetch make one more fetch after it. */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.again = false;
        const bridge = this.bridge;
        if (!bridge) break;
        try {
          const review = await bridge.changes();
          if (bridge !== this.bridge) break;
          this.review = review;
        } catch (e) {
          this.review = undefined;
          this.tree.message = `The session review is not available: ${e instanceof Error ? e.message : String(e)}`;
          this.log(`changes: ${e instanceof Error ? e.message : String(e)}`);
          this.changed.fire(undefined);
          return;
        }
        this.render();
        await this.refreshBefores();
      } while (this.again);
    })().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private render(): void {
    const r = this.review;
    const files = r?.files ?? [];
    this.tree.description = r ? `${r.reviewed} of ${files.length} files reviewed` : "";
    const left = r ? files.length - r.reviewed : 0;
    this.tree.badge = left > 0 ? { value: left, tooltip: `${left} files to review` } : undefined;
    this.tree.message = !this.bridge
      ? "The sidecar is not running."
      : !r
        ? "Loading the session review…"
        : !r.ready
          ? "Reading the workspace…"
          : [
              files.length === 0 ? "No file has changed in this session." : `${r.reviewed} of ${files.length} files reviewed.`,
              r.limit ? `⚠ ${r.limit}` : "",
            ]
              .filter(Boolean)
              .join(" ");
    void vscode.commands.executeCommand("setContext", "ccbridge.changes.canUndo", r?.canUndo === true);
    this.changed.fire(undefined);
  }

  // ------------------------------------------------------------ the tree

  getChildren(node?: Node): Node[] {
    if (!node) return (this.review?.files ?? []).map((file) => ({ kind: "file", file }));
    if (node.kind === "hunk") return [];
    return node.file.hunks.map((hunk, index) => ({ kind: "hunk", file: node.file, hunk, index }));
  }

  getParent(node: Node): Node | undefined {
    return node.kind === "hunk" ? { kind: "file", file: node.file } : undefined;
  }

  getTreeItem(node: Node): vscode.TreeItem {
    const f = node.file;
    if (node.kind === "file") {
      const item = new vscode.TreeItem(
        path.basename(f.path),
        f.hunks.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
      );
      item.id = `file:${f.path}`;
      item.resourceUri = vscode.Uri.file(f.path);
      const dir = path.dirname(vscode.workspace.asRelativePath(f.path));
      const counts = f.status === "binary" || f.status === "unknown" ? "" : ` +${f.added} −${f.removed}`;
      item.description = `${dir === "." ? "" : `${dir} · `}${f.status}${counts}${f.reviewed ? " · reviewed" : ""}`;
      item.tooltip =
        `${f.path}\n${f.status}, ${who(f)}${f.reviewed ? ", reviewed" : ""}` +
        (f.revertible ? "" : "\nIts content before the session is not known: it cannot be reverted.");
      item.contextValue = `ccbridgeChangedFile${f.viewed ? "Viewed" : ""}`;
      item.command = { command: "ccbridge.changes.openDiff", title: "Open the diff", arguments: [node] };
      item.accessibilityInformation = { label: `${path.basename(f.path)}, ${f.status}${f.reviewed ? ", reviewed" : ""}` };
      return item;
    }
    const h = node.hunk;
    const item = new vscode.TreeItem(`${h.kept ? "✓ " : ""}${where(h)}`, vscode.TreeItemCollapsibleState.None);
    item.id = `hunk:${f.path}:${h.key}`;
    const first = h.added[0] ?? h.removed[0] ?? "";
    item.description = `+${h.newLines} −${h.oldLines}${h.kept ? " kept" : ""} ${first.trim()}`.trim();
    const md = new vscode.MarkdownString();
    md.appendCodeblock(
      [
        ...h.contextBefore.map((l) => `  ${l}`),
        ...h.removed.map((l) => `- ${l}`),
        ...h.added.map((l) => `+ ${l}`),
        ...h.contextAfter.map((l) => `  ${l}`),
      ].join("\n") +
        (h.cut ? "\n…" : ""),
      "diff",
    );
    item.tooltip = md;
    item.contextValue = "ccbridgeHunk";
    item.iconPath = new vscode.ThemeIcon(h.kept ? "check" : "diff");
    item.command = { command: "ccbridge.changes.openHunk", title: "Show the change", arguments: [node] };
    item.accessibilityInformation = {
      label: `change ${node.index + 1} of ${f.hunks.length} in ${path.basename(f.path)}, ${where(h)}${h.kept ? ", kept" : ""}`,
    };
    return item;
  }

  // ------------------------------------------------------------ decisions

  /** The node a command was given, or the selected one (from a keybinding or the palette). */
  private target(n: Node | undefined): Node | undefined {
    const node = n ?? this.tree.selection[0];
    if (!node) void vscode.window.showInformationMessage("ccbridge: select a file or a change in the Changes view first.");
    return node;
  }

  private async onHunk(n: Node | undefined, action: "keep" | "revert"): Promise<void> {
    const node = this.target(n);
    if (!node) return;
    if (node.kind !== "hunk") return this.onFile(node, action);
    await this.act({ action, path: node.file.path, key: node.hunk.key, version: node.file.version });
  }

  private async onFile(n: Node | undefined, action: "keep" | "revert"): Promise<void> {
    const node = this.target(n);
    if (!node) return;
    await this.act({ action, path: node.file.path, version: node.file.version });
  }

  private async toggleViewed(n: Node | undefined, viewed: boolean): Promise<void> {
    const node = this.target(n);
    if (!node) return;
    await this.act({ action: "viewed", path: node.file.path, viewed });
  }

  private async all(action: "keepAll" | "revertAll"): Promise<void> {
    const files = this.review?.files ?? [];
    if (files.length === 0) {
      void vscode.window.showInformationMessage("ccbridge: no file has changed in this session.");
      return;
    }
    const verb = action === "keepAll" ? "Keep all" : "Revert all";
    const detail =
      action === "keepAll"
        ? `Every change in ${files.length} files is kept and marked reviewed. Nothing on disk changes.`
        : `${files.length} files are given back what they held when the session started ` +
          "(created files are removed). Undo brings back the last revert only.";
    const pick = await vscode.window.showWarningMessage(`${verb}?`, { modal: true, detail }, verb);
    if (pick !== verb) return;
    await this.act({ action });
  }

  /** Sends a decision; every refusal is told, and the view reloads. */
  private async act(action: ChangeAction): Promise<void> {
    const bridge = this.bridge;
    if (!bridge) {
      void vscode.window.showErrorMessage("ccbridge: the sidecar is not running.");
      return;
    }
    try {
      const { failed } = await bridge.changeAction(action);
      if (failed.length > 0) {
        void vscode.window.showWarningMessage(`ccbridge: ${failed.length} files were not reverted: ${failed.join("; ")}`);
      }
    } catch (e) {
      if (e instanceof ChangeStaleError) {
        void vscode.window.showWarningMessage(
          `ccbridge: ${"path" in action ? path.basename(action.path) : "the file"} changed since the view showed it; ` +
            "nothing was done. The view is reloaded: decide again.",
        );
      } else if (e instanceof ChangeConflictError) {
        void this.showConflict(e.conflict);
      } else {
        const message = e instanceof Error ? e.message : String(e);
        void vscode.window.showErrorMessage(`ccbridge: ${message.replace(/^ccbridge refused changeAction \(-?\d+\): /, "")}`);
      }
    }
    await this.refresh();
  }

  /** A refused revert: say so, and offer the three versions side by side. */
  private async showConflict(c: ChangeConflict): Promise<void> {
    const name = path.basename(c.path);
    const n = ++this.conflictCount;
    const uri = (which: string, text: string | null): vscode.Uri => {
      const u = vscode.Uri.from({ scheme: CONFLICT_SCHEME, path: `/${n}/${which}/${name}` });
      this.conflicts.set(u.toString(), text ?? "");
      return u;
    };
    const before = uri("before", c.before);
    const shown = uri("shown", c.shown);
    const disk = uri("disk", c.disk);
    const compareShown = "Compare: shown ↔ on disk";
    const compareStart = "Compare: start ↔ on disk";
    const pick = await vscode.window.showErrorMessage(
      `ccbridge: ${name} changed on disk since the review read it; nothing was written.` +
        (c.disk === null ? " It is gone from disk now." : "") +
        " Compare the three versions: at the session's start, as the view showed it, on disk now.",
      compareShown,
      compareStart,
    );
    if (pick === compareShown) {
      await vscode.commands.executeCommand("vscode.diff", shown, disk, `${name}: as the view showed it ↔ on disk now`);
    } else if (pick === compareStart) {
      await vscode.commands.executeCommand("vscode.diff", before, disk, `${name}: at the session's start ↔ on disk now`);
    }
  }

  // ------------------------------------------------------------ opening

  private async openHunk(n: Node | undefined): Promise<void> {
    const node = this.target(n);
    if (!node || node.kind !== "hunk") return;
    if (node.file.status === "deleted") return this.openDiff(node);
    const line = node.hunk.newStart;
    await vscode.window.showTextDocument(vscode.Uri.file(node.file.path), {
      preview: true,
      selection: new vscode.Range(line, 0, line + Math.max(node.hunk.newLines - 1, 0), 0),
    });
  }

  /** The file against its content at the session's start. */
  private async openDiff(n: Node | undefined): Promise<void> {
    const node = this.target(n);
    if (!node) return;
    const f = node.file;
    const name = path.basename(f.path);
    const before = await this.before(f);
    if (before === undefined) {
      void vscode.window.showInformationMessage(
        f.status === "binary" || f.status === "unknown"
          ? `ccbridge: ${name} is ${f.status === "binary" ? "not text" : "of unknown earlier content"}; ` +
            "only the whole file can be kept or reverted."
          : `ccbridge: the content of ${name} before the session cannot be shown ` +
            "(it changed since the view was drawn, a change is too large to describe, or only line endings changed).",
      );
      void this.refresh();
      return;
    }
    this.befores.set(f.path, before);
    const left = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: f.path });
    if (f.status === "deleted") {
      await vscode.window.showTextDocument(left, { preview: true });
      return;
    }
    const line = node.kind === "hunk" ? node.hunk.newStart : (f.hunks[0]?.newStart ?? 0);
    await vscode.commands.executeCommand("vscode.diff", left, vscode.Uri.file(f.path), `${name} (session start ↔ now)`, {
      preview: true,
      selection: new vscode.Range(line, 0, line, 0),
    });
  }

  private async before(f: ChangedFile): Promise<string | undefined> {
    if (f.status === "deleted") return beforeText(f, "");
    const now = await fsp.readFile(f.path, "utf8").catch(() => undefined);
    return now === undefined ? undefined : beforeText(f, now);
  }

  /** The open "before" documents follow the review (a revert changes what they are diffed against). */
  private async refreshBefores(): Promise<void> {
    for (const p of [...this.befores.keys()]) {
      const f = this.review?.files.find((x) => x.path === p);
      if (!f) {
        // Reverted or kept away: the file is as it was at the start.
        const now = await fsp.readFile(p, "utf8").catch(() => undefined);
        if (now !== undefined) this.befores.set(p, now);
      } else {
        const text = await this.before(f);
        if (text !== undefined) this.befores.set(p, text);
      }
      this.docs.fire(vscode.Uri.from({ scheme: BEFORE_SCHEME, path: p }));
    }
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    if (uri.scheme === CONFLICT_SCHEME) return this.conflicts.get(uri.toString()) ?? "";
    return this.befores.get(uri.path) ?? "";
  }

  dispose(): void {
    this.attach(undefined);
    for (const d of this.disposables) d.dispose();
  }
}
