/**
 * What VS Code reports to ccbridge: the selection, the open tabs, unsaved
 * state and diagnostics. Positions pass through as VS Code counts them:
 * 0-based lines, characters in UTF-16 code units, which is what the editor
 * protocol takes.
 */
import * as vscode from "vscode";
import type { Bridge, Diagnostic, DiagnosticSeverity, EditorTab } from "@ccbridge/client";

/** Only real files are reported: reviews, output panes and settings are not the user's files. */
function isFile(uri: vscode.Uri): boolean {
  return uri.scheme === "file";
}

const SEVERITY: Record<vscode.DiagnosticSeverity, DiagnosticSeverity> = {
  [vscode.DiagnosticSeverity.Error]: "Error",
  [vscode.DiagnosticSeverity.Warning]: "Warning",
  [vscode.DiagnosticSeverity.Information]: "Information",
  [vscode.DiagnosticSeverity.Hint]: "Hint",
};

export function toDiagnostic(d: vscode.Diagnostic): Diagnostic {
  const out: Diagnostic = {
    message: d.message,
    severity: SEVERITY[d.severity],
    range: {
      start: { line: d.range.start.line, character: d.range.start.character },
      end: { line: d.range.end.line, character: d.range.end.character },
    },
  };
  if (d.source !== undefined) out.source = d.source;
  const code = typeof d.code === "object" ? d.code.value : d.code;
  if (code !== undefined) out.code = code;
  return out;
}

export class Reports implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private readonly dirty = new Map<string, boolean>();
  private readonly pendingDiagnostics = new Set<string>();
  private diagnosticsTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly bridge: Bridge,
    private readonly diagnosticDelay: () => number,
  ) {
    this.disposables.push(
      vscode.window.onDidChangeTextEditorSelection((e) => this.selection(e.textEditor)),
      vscode.window.onDidChangeActiveTextEditor((e) => this.selection(e)),
      vscode.window.tabGroups.onDidChangeTabs(() => this.tabs()),
      vscode.window.tabGroups.onDidChangeTabGroups(() => this.tabs()),
      vscode.workspace.onDidChangeTextDocument((e) => this.dirtyChanged(e.document)),
      vscode.workspace.onDidSaveTextDocument((d) => this.dirtyChanged(d)),
      vscode.workspace.onDidCloseTextDocument((d) => this.closed(d)),
      vscode.workspace.onDidOpenTextDocument(() => this.tabs()),
      vscode.languages.onDidChangeDiagnostics((e) => this.diagnosticsChanged(e.uris)),
    );
    // The state as it is now; later only changes.
    this.selection(vscode.window.activeTextEditor);
    this.tabs();
    for (const d of vscode.workspace.textDocuments) if (d.isDirty) this.dirtyChanged(d);
    this.diagnosticsChanged(vscode.languages.getDiagnostics().map(([uri]) => uri));
  }

  dispose(): void {
    if (this.diagnosticsTimer) clearTimeout(this.diagnosticsTimer);
    for (const d of this.disposables) d.dispose();
  }

  private selection(editor: vscode.TextEditor | undefined): void {
    if (!editor) {
      // Focus in a panel, the terminal, a webview: VS Code keeps the last
      // text editor active then, and reports `undefined` only when none is left.
      if (vscode.window.visibleTextEditors.every((e) => !isFile(e.document.uri))) this.bridge.reportSelection(null);
      return;
    }
    if (!isFile(editor.document.uri)) return;
    const s = editor.selection;
    this.bridge.reportSelection({
      filePath: editor.document.uri.fsPath,
      text: editor.document.getText(s),
      selection: {
        start: { line: s.start.line, character: s.start.character },
        end: { line: s.end.line, character: s.end.character },
      },
    });
  }

  private tabs(): void {
    const tabs: EditorTab[] = [];
    const docs = new Map(vscode.workspace.textDocuments.map((d) => [d.uri.toString(), d]));
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        const input = tab.input;
        if (!(input instanceof vscode.TabInputText)) continue;
        const uri = input.uri;
        if (uri.scheme !== "file" && uri.scheme !== "untitled") continue;
        const t: EditorTab = {
          path: uri.scheme === "file" ? uri.fsPath : uri.path,
          isActive: tab.isActive && group.isActive,
          isDirty: tab.isDirty,
          label: tab.label,
        };
        const languageId = docs.get(uri.toString())?.languageId;
        if (languageId !== undefined) t.languageId = languageId;
        if (uri.scheme === "untitled") t.isUntitled = true;
        tabs.push(t);
      }
    }
    this.bridge.reportOpenEditors(tabs);
  }

  private dirtyChanged(doc: vscode.TextDocument): void {
    if (!isFile(doc.uri)) return;
    const p = doc.uri.fsPath;
    if (this.dirty.get(p) === doc.isDirty) return;
    this.dirty.set(p, doc.isDirty);
    this.bridge.reportDirty(p, doc.isDirty);
  }

  private closed(doc: vscode.TextDocument): void {
    if (!isFile(doc.uri)) return;
    const p = doc.uri.fsPath;
    if (this.dirty.get(p)) this.bridge.reportDirty(p, false);
    this.dirty.delete(p);
  }

  private diagnosticsChanged(uris: readonly vscode.Uri[]): void {
    for (const uri of uris) if (isFile(uri)) this.pendingDiagnostics.add(uri.toString());
    if (this.pendingDiagnostics.size === 0 || this.diagnosticsTimer) return;
    this.diagnosticsTimer = setTimeout(() => this.flushDiagnostics(), this.diagnosticDelay());
  }

  private flushDiagnostics(): void {
    this.diagnosticsTimer = undefined;
    for (const s of this.pendingDiagnostics) {
      const uri = vscode.Uri.parse(s);
      this.bridge.reportDiagnostics(uri.fsPath, vscode.languages.getDiagnostics(uri).map(toDiagnostic));
    }
    this.pendingDiagnostics.clear();
  }
}
