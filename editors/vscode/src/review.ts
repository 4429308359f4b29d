/**
 * Reviews: each `showDiff` becomes a `vscode.diff` editor whose left side is
 * the original (read-only, `ccbridge-original:`, a TextDocumentContentProvider)
 * and whose right side is the proposal (editable, `ccbridge-proposal:`, an
 * in-memory file system), titled with the agent that asked.
 *
 * The verdict: **Accept** / **Reject** in the editor title or as commands
 * (the proposal's text, with the user's edits, goes back on accept); per
 * hunk with CodeLens on the proposal, on ccbridge's own hunks (`showDiff`'s
 * `hunks`, kept in place while the user edits); closing the tab without
 * deciding is `dismissed` (the agent's own prompt in its terminal decides).
 * A hunk that only changes leading or trailing whitespace, which the diff
 * editor hides by default (`diffEditor.ignoreTrimWhitespace`), is said so
 * in its CodeLens and highlighted by the extension itself.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import type { DiffContext, DiffVerdict, Hunk, ShowDiffParams } from "@ccbridge/client";
import { asSent, onlyTrimWhitespace, track } from "./text";

export const ORIGINAL_SCHEME = "ccbridge-original";
export const PROPOSAL_SCHEME = "ccbridge-proposal";

/** A hunk not decided yet, where it is now in the proposal document. */
interface OpenHunk {
  /**
   * Its place in `showDiff`'s hunks: what a CodeLens names, so a click on a
   * lens drawn before another hunk was decided still acts on its own hunk.
   */
  key: number;
  /** The original's lines it replaces (with their line breaks). */
  originalText: string;
  /** 0-based line of the proposal document where it starts now. */
  newStart: number;
  newLines: number;
}

interface Review {
  diff: ShowDiffParams;
  /** Who proposes it, for people: "Claude Code", "Gemini CLI", "ccbridge tools". */
  who: string;
  title: string;
  originalUri: vscode.Uri;
  proposalUri: vscode.Uri;
  /** Undecided hunks; `undefined` when the original could not be read. */
  hunks: OpenHunk[] | undefined;
  /** Hunks decided so far, and how many of them were rejected. */
  decided: number;
  rejected: number;
  resolve: (v: DiffVerdict) => void;
  /** Set while the extension closes the tab itself (not a dismissal). */
  closing: boolean;
  done: boolean;
}

/** The text's lines, each with its line break (`"a\nb"` → `["a\n", "b"]`). */
export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split(/(?<=\n)/);
  return lines;
}

/** In-memory files for the proposals: editable, saved to memory only. */
class ProposalFs implements vscode.FileSystemProvider {
  private readonly files = new Map<string, { data: Uint8Array; mtime: number; ctime: number }>();
  private readonly emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;

  set(uri: vscode.Uri, text: string): void {
    const now = Date.now();
    this.files.set(uri.path, { data: new TextEncoder().encode(text), mtime: now, ctime: now });
  }
  remove(uri: vscode.Uri): void {
    this.files.delete(uri.path);
  }
  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }
  stat(uri: vscode.Uri): vscode.FileStat {
    const f = this.files.get(uri.path);
    if (f) return { type: vscode.FileType.File, ctime: f.ctime, mtime: f.mtime, size: f.data.length };
    // The review's folder (`/<id>`), so the explorer-like UI has a parent.
    if ([...this.files.keys()].some((k) => k.startsWith(uri.path + "/"))) {
      return { type: vscode.FileType.Directory, ctime: 0, mtime: 0, size: 0 };
    }
    throw vscode.FileSystemError.FileNotFound(uri);
  }
  readDirectory(): [string, vscode.FileType][] {
    return [];
  }
  createDirectory(): void {
    throw vscode.FileSystemError.NoPermissions("a review holds one file");
  }
  readFile(uri: vscode.Uri): Uint8Array {
    const f = this.files.get(uri.path);
    if (!f) throw vscode.FileSystemError.FileNotFound(uri);
    return f.data;
  }
  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    const f = this.files.get(uri.path);
    if (!f) throw vscode.FileSystemError.NoPermissions("this review is over");
    f.data = content;
    f.mtime = Date.now();
    this.emitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }
  delete(): void {
    throw vscode.FileSystemError.NoPermissions("a review's proposal cannot be deleted");
  }
  rename(): void {
    throw vscode.FileSystemError.NoPermissions("a review's proposal cannot be renamed");
  }
}

export class Reviews implements vscode.CodeLensProvider, vscode.TextDocumentContentProvider {
  /**
   * Open reviews by their key, the first part of their documents' paths
   * (`/<key>/<file name>`): the diff's id and a number of this window's, so
   * no review's documents share a URI with an earlier one's (VS Code keeps
   * closed documents a while, and a restarted sidecar counts ids from 1 again).
   */
  private readonly reviews = new Map<string, Review>();
  private seq = 0;
  private readonly fs = new ProposalFs();
  private readonly originals = new Map<string, string>();
  private readonly lensChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensChanged.event;
  /** The lines of hunks the diff editor shows nothing of (see `onlyTrimWhitespace`). */
  private readonly whitespaceMark = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly log: (line: string) => void) {
    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(ORIGINAL_SCHEME, this),
      vscode.workspace.registerFileSystemProvider(PROPOSAL_SCHEME, this.fs, { isCaseSensitive: true }),
      vscode.languages.registerCodeLensProvider({ scheme: PROPOSAL_SCHEME }, this),
      vscode.window.tabGroups.onDidChangeTabs((e) => this.onTabsChanged(e.closed)),
      vscode.workspace.onDidChangeTextDocument((e) => this.onDocumentChanged(e)),
      vscode.window.onDidChangeVisibleTextEditors(() => this.markWhitespace()),
      this.whitespaceMark,
    );
    this.disposables.push(this.lensChanged.event(() => this.markWhitespace()));
  }

  dispose(): void {
    for (const r of this.reviews.values()) this.finish(r, { decision: "dismissed" }, false);
    for (const d of this.disposables) d.dispose();
  }

  /** The open reviews, newest last. */
  list(): { id: number; title: string }[] {
    return [...this.reviews.values()].map((r) => ({ id: r.diff.id, title: r.title }));
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.originals.get(uri.path) ?? "";
  }

  /** The `showDiff` handler: opens the view, resolves with the verdict. */
  show(diff: ShowDiffParams, { signal }: DiffContext): Promise<DiffVerdict> {
    const who = diff.agent?.name ?? (diff.clientId === null ? "ccbridge tools" : "The agent");
    const base = path.basename(diff.newFilePath);
    const rel = vscode.workspace.asRelativePath(diff.newFilePath, false);
    const key = `${diff.id}-${++this.seq}`;
    const originalUri = vscode.Uri.from({ scheme: ORIGINAL_SCHEME, path: `/${key}/${base}` });
    const proposalUri = vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: `/${key}/${base}` });
    const original = diff.originalContents ?? "";
    const originalLines = splitLines(original);
    const hunks = diff.hunks?.map(
      (h: Hunk, key: number): OpenHunk => ({
        key,
        originalText: originalLines.slice(h.oldStart, h.oldStart + h.oldLines).join(""),
        newStart: h.newStart,
        newLines: h.newLines,
      }),
    );
    const what = diff.isNewFile ? "new file" : diff.originalContents === null ? "unreadable original" : "proposal";
    const title = `${who}: ${rel} (${what})`;
    this.originals.set(originalUri.path, original);
    this.fs.set(proposalUri, diff.proposedContents);
    return new Promise<DiffVerdict>((resolve) => {
      const review: Review = {
        diff,
        who,
        title,
        originalUri,
        proposalUri,
        hunks,
        decided: 0,
        rejected: 0,
        resolve,
        closing: false,
        done: false,
      };
      this.reviews.set(key, review);
      this.updateContext();
      signal.addEventListener("abort", () => {
        this.log(`review ${diff.id} (${rel}) closed by ccbridge: ${String(signal.reason)}`);
        this.finish(review, { decision: "dismissed" }, true);
      });
      if (diff.hunks === undefined && !diff.isNewFile) {
        this.log(`review ${diff.id}: no hunks (unreadable original, or an older ccbridge); decide it whole`);
      }
      void vscode.commands
        .executeCommand("vscode.diff", originalUri, proposalUri, title, { preview: false })
        .then(undefined, (e: unknown) => {
          this.log(`review ${diff.id}: cannot open the diff editor: ${String(e)}`);
          this.finish(review, { decision: "dismissed" }, false);
        });
      this.lensChanged.fire();
    });
  }

  /**
   * `reviewText`: the proposal as the user has left it (their unsaved edits
   * in the diff editor included), for an agent answered in its own
   * terminal; `null` when the review is gone.
   */
  async text(id: number): Promise<string | null> {
    const r = this.byDiffId(id);
    if (!r) return null;
    const doc = await vscode.workspace.openTextDocument(r.proposalUri);
    return asSent(doc.getText(), r.diff.proposedContents);
  }

  /** ccbridge closed a diff (after a verdict too): close its tab. */
  closed(id: number): void {
    const r = this.byDiffId(id);
    if (r) this.finish(r, { decision: "dismissed" }, true);
  }

  /** The open review of ccbridge's diff `id` (a finished one is no longer listed). */
  private byDiffId(id: number): Review | undefined {
    return [...this.reviews.values()].find((v) => v.diff.id === id);
  }

  /** The review whose original or proposal `uri` is. */
  private of(uri: vscode.Uri): Review | undefined {
    return this.reviews.get(reviewKey(uri));
  }

  /** The review an Accept/Reject command is about: its argument, else the active editor's. */
  private target(arg: unknown): Review | undefined {
    const uri =
      arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri ?? this.activeTabUri();
    if (uri && (uri.scheme === PROPOSAL_SCHEME || uri.scheme === ORIGINAL_SCHEME)) {
      return this.of(uri);
    }
    return undefined;
  }

  private activeTabUri(): vscode.Uri | undefined {
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    if (input instanceof vscode.TabInputTextDiff) return input.modified;
    return undefined;
  }

  async accept(arg?: unknown): Promise<void> {
    const r = this.target(arg);
    if (!r) {
      void vscode.window.showWarningMessage("ccbridge: no proposal is active to accept.");
      return;
    }
    if (!(await this.mayOverwrite(r))) return;
    const doc = await vscode.workspace.openTextDocument(r.proposalUri);
    this.finish(r, { decision: "accepted", contents: asSent(doc.getText(), r.diff.proposedContents) }, true);
  }

  /**
   * The file is about to be written on disk: if VS Code holds unsaved
   * changes of it, they would conflict with the write (the workspace tools
   * refuse to write a dirty file at all). Ask first.
   */
  private async mayOverwrite(r: Review): Promise<boolean> {
    const doc = vscode.workspace.textDocuments.find(
      (d) => d.uri.scheme === "file" && d.uri.fsPath === r.diff.newFilePath,
    );
    if (!doc?.isDirty) return true;
    const anyway = "Accept anyway";
    const answer = await vscode.window.showWarningMessage(
      `${vscode.workspace.asRelativePath(r.diff.newFilePath, false)} has unsaved changes in VS Code.`,
      {
        modal: true,
        detail:
          "Accepting writes the proposal to the file on disk; your unsaved changes stay in the editor and will conflict with it. Save or revert them first, or accept anyway.",
      },
      anyway,
    );
    return answer === anyway;
  }

  reject(arg?: unknown): void {
    const r = this.target(arg);
    if (!r) {
      void vscode.window.showWarningMessage("ccbridge: no proposal is active to reject.");
      return;
    }
    this.finish(r, { decision: "rejected" }, true);
  }

  /**
   * The hunk a command is about: its CodeLens arguments, else the one under
   * the cursor of the active proposal, or the next one below it.
   */
  private hunkAt(id: unknown, key: unknown): [Review, number] | undefined {
    if (typeof id === "string" && typeof key === "number") {
      const r = this.reviews.get(id);
      const index = r?.hunks?.findIndex((h) => h.key === key) ?? -1;
      // Decided already (a second click), or the review is over.
      return r && index >= 0 ? [r, index] : undefined;
    }
    const editor = vscode.window.activeTextEditor;
    if (editor?.document.uri.scheme !== PROPOSAL_SCHEME) {
      void vscode.window.showWarningMessage("ccbridge: put the cursor in a proposal (the right side of a review).");
      return undefined;
    }
    const r = this.of(editor.document.uri);
    const line = editor.selection.active.line;
    const i = (r?.hunks ?? []).findIndex((h) => line < h.newStart + Math.max(1, h.newLines));
    if (!r || i < 0) {
      void vscode.window.showInformationMessage("ccbridge: no undecided change at or below the cursor.");
      return undefined;
    }
    return [r, i];
  }

  /** Accepts (keeps) hunk `index` of review `id` as the proposal has it. */
  async acceptHunk(idArg?: unknown, keyArg?: unknown): Promise<void> {
    const at = this.hunkAt(idArg, keyArg);
    if (!at) return;
    const [r, index] = at;
    const h = r.hunks?.[index];
    if (!h || !r.hunks) return;
    r.hunks.splice(index, 1);
    r.decided++;
    this.lensChanged.fire();
    await this.maybeFinish(r);
  }

  /** Rejects hunk `index` of review `id`: the original's lines come back in the proposal. */
  async rejectHunk(idArg?: unknown, keyArg?: unknown): Promise<void> {
    const at = this.hunkAt(idArg, keyArg);
    if (!at) return;
    const [r, index] = at;
    const h = r.hunks?.[index];
    if (!h || !r.hunks) return;
    const doc = await vscode.workspace.openTextDocument(r.proposalUri);
    r.hunks.splice(index, 1);
    r.decided++;
    r.rejected++;
    const edit = new vscode.WorkspaceEdit();
    edit.replace(r.proposalUri, hunkRange(doc, h), h.originalText);
    if (!(await vscode.workspace.applyEdit(edit))) {
      this.log(`review ${r.diff.id}: could not put the original's lines back`);
    }
    this.lensChanged.fire();
    await this.maybeFinish(r);
  }

  /** When no hunk is left, the review ends: accepted, or rejected if every hunk was. */
  private async maybeFinish(r: Review): Promise<void> {
    if (!r.hunks || r.hunks.length > 0 || r.done) return;
    if (r.rejected === r.decided) {
      this.finish(r, { decision: "rejected" }, true);
    } else {
      if (!(await this.mayOverwrite(r))) return;
      const doc = await vscode.workspace.openTextDocument(r.proposalUri);
      this.finish(r, { decision: "accepted", contents: asSent(doc.getText(), r.diff.proposedContents) }, true);
    }
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (document.uri.scheme !== PROPOSAL_SCHEME) return [];
    const id = reviewKey(document.uri);
    const r = this.of(document.uri);
    if (!r) return [];
    const top = new vscode.Range(0, 0, 0, 0);
    const lenses = [
      new vscode.CodeLens(top, {
        title: `$(check) Accept all (${r.who})`,
        command: "ccbridge.acceptDiff",
        arguments: [r.proposalUri],
      }),
      new vscode.CodeLens(top, { title: "$(close) Reject all", command: "ccbridge.rejectDiff", arguments: [r.proposalUri] }),
    ];
    (r.hunks ?? []).forEach((h, i) => {
      const line = Math.min(h.newStart, Math.max(0, document.lineCount - 1));
      const at = new vscode.Range(line, 0, line, 0);
      const n = r.hunks?.length ?? 0;
      const whitespace = whitespaceOnly(document, h) ? " (whitespace only)" : "";
      lenses.push(
        new vscode.CodeLens(at, {
          title: `$(check) Accept change ${i + 1}/${n}${whitespace}`,
          command: "ccbridge.acceptHunk",
          arguments: [id, h.key],
        }),
        new vscode.CodeLens(at, {
          title: `$(discard) Reject change ${i + 1}/${n}`,
          command: "ccbridge.rejectHunk",
          arguments: [id, h.key],
        }),
      );
    });
    return lenses;
  }

  /** Highlights, in every visible proposal, the hunks that change only whitespace. */
  private markWhitespace(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.scheme !== PROPOSAL_SCHEME) continue;
      const hunks = this.of(editor.document.uri)?.hunks ?? [];
      const ranges = hunks
        .filter((h) => whitespaceOnly(editor.document, h))
        .map((h) => new vscode.Range(h.newStart, 0, h.newStart + h.newLines - 1, 0));
      editor.setDecorations(this.whitespaceMark, ranges);
    }
  }

  /** Keeps the undecided hunks where they are while the proposal is edited. */
  private onDocumentChanged(e: vscode.TextDocumentChangeEvent): void {
    if (e.document.uri.scheme !== PROPOSAL_SCHEME) return;
    const r = this.of(e.document.uri);
    if (!r?.hunks || e.contentChanges.length === 0) return;
    // Changes of one event do not overlap; apply them bottom-up so each one's
    // lines are those of the document before it.
    const changes = [...e.contentChanges].sort((a, b) => b.range.start.compareTo(a.range.start));
    for (const c of changes) {
      const edit = {
        startLine: c.range.start.line,
        endLine: c.range.end.line,
        endCharacter: c.range.end.character,
        addedLines: c.text.split("\n").length - 1,
      };
      for (const h of r.hunks) {
        const moved = track({ start: h.newStart, count: h.newLines }, edit);
        h.newStart = moved.start;
        h.newLines = moved.count;
      }
    }
    this.lensChanged.fire();
  }

  private onTabsChanged(closed: readonly vscode.Tab[]): void {
    for (const tab of closed) {
      const input = tab.input;
      if (!(input instanceof vscode.TabInputTextDiff) || input.modified.scheme !== PROPOSAL_SCHEME) continue;
      const r = this.of(input.modified);
      if (!r || r.closing || r.done) continue;
      // Still open in another tab group: not closed yet. (The closed tab
      // itself may still be listed while the event fires.)
      if (this.tabsOf(r).some((t) => !closed.includes(t) && !sameTab(t, tab))) continue;
      this.log(`review ${r.diff.id}: its tab was closed without a decision (dismissed)`);
      this.finish(r, { decision: "dismissed" }, false);
    }
  }

  private tabsOf(r: Review): vscode.Tab[] {
    const tabs: vscode.Tab[] = [];
    for (const g of vscode.window.tabGroups.all) {
      for (const t of g.tabs) {
        const input = t.input;
        if (
          (input instanceof vscode.TabInputTextDiff && input.modified.toString() === r.proposalUri.toString()) ||
          (input instanceof vscode.TabInputText && input.uri.toString() === r.proposalUri.toString())
        ) {
          tabs.push(t);
        }
      }
    }
    return tabs;
  }

  private finish(r: Review, verdict: DiffVerdict, closeTab: boolean): void {
    if (r.done) return;
    r.done = true;
    this.log(`review ${r.diff.id} (${r.title}): ${verdict.decision}`);
    r.resolve(verdict);
    this.reviews.delete(reviewKey(r.proposalUri));
    this.updateContext();
    this.lensChanged.fire();
    if (closeTab) void this.closeTabs(r);
    else this.forget(r);
  }

  private async closeTabs(r: Review): Promise<void> {
    r.closing = true;
    // Saved to memory first, so closing an edited proposal asks nothing.
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === r.proposalUri.toString());
    if (doc?.isDirty) await doc.save().then(undefined, () => false);
    const tabs = this.tabsOf(r);
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs, true).then(undefined, () => false);
    this.forget(r);
  }

  private forget(r: Review): void {
    this.originals.delete(r.originalUri.path);
    this.fs.remove(r.proposalUri);
  }

  private updateContext(): void {
    void vscode.commands.executeCommand("setContext", "ccbridge.reviewOpen", this.reviews.size > 0);
  }
}

/** The review key in a review document's path (`/<key>/<file name>`). */
function reviewKey(uri: vscode.Uri): string {
  return uri.path.split("/")[1] ?? "";
}

/** Whether two tabs are the same place (the API may hand out new objects for one tab). */
function sameTab(a: vscode.Tab, b: vscode.Tab): boolean {
  return a.group.viewColumn === b.group.viewColumn && a.label === b.label;
}

/** Whether hunk `h`, as the proposal document has it now, changes only leading or trailing whitespace. */
function whitespaceOnly(doc: vscode.TextDocument, h: OpenHunk): boolean {
  if (h.newStart + h.newLines > doc.lineCount) return false;
  const before = splitLines(h.originalText).map((l) => l.replace(/\r?\n$/, ""));
  const after = Array.from({ length: h.newLines }, (_, i) => doc.lineAt(h.newStart + i).text);
  return onlyTrimWhitespace(before, after);
}

/** The proposal document's range of hunk `h` (whole lines, with their breaks). */
function hunkRange(doc: vscode.TextDocument, h: OpenHunk): vscode.Range {
  const start = doc.validatePosition(new vscode.Position(h.newStart, 0));
  const endLine = h.newStart + h.newLines;
  const end = endLine >= doc.lineCount ? doc.lineAt(doc.lineCount - 1).range.end : new vscode.Position(endLine, 0);
  return new vscode.Range(start, end);
}
