/**
 * The requests ccbridge sends VS Code besides reviews: opening files, closing
 * tabs, saving, formatting, running notebook code (with a confirmation), and
 * the workspace tools' approvals, whose commands then show their output in an
 * integrated terminal.
 */
import * as vscode from "vscode";
import type {
  ApproveParams,
  CloseTabParams,
  CloseTabResult,
  CodeParams,
  CommandEvent,
  DocumentParams,
  ExecuteCodeContent,
  ExecuteCodeResult,
  OpenFileParams,
  OpenFileResult,
} from "@ccbridge/client";

export async function openFile(p: OpenFileParams): Promise<OpenFileResult> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(p.filePath));
  let selection: vscode.Range | undefined;
  if (p.startLine !== undefined) {
    const start = Math.max(0, Math.min(p.startLine - 1, doc.lineCount - 1));
    const end = Math.max(start, Math.min((p.endLine ?? p.startLine) - 1, doc.lineCount - 1));
    selection = new vscode.Range(start, 0, end, doc.lineAt(end).range.end.character);
  } else if (p.startText !== undefined && p.startText !== "") {
    const text = doc.getText();
    const from = text.indexOf(p.startText);
    if (from >= 0) {
      let to = from + p.startText.length;
      if (p.endText !== undefined && p.endText !== "") {
        const e = text.indexOf(p.endText, from);
        if (e >= 0) to = e + p.endText.length;
      }
      let endPos = doc.positionAt(to);
      if (p.selectToEndOfLine) endPos = doc.lineAt(endPos.line).range.end;
      selection = new vscode.Range(doc.positionAt(from), endPos);
    }
  }
  const options: vscode.TextDocumentShowOptions = { preview: p.preview, preserveFocus: !p.makeFrontmost };
  if (selection) options.selection = selection;
  await vscode.window.showTextDocument(doc, options);
  return { filePath: p.filePath, languageId: doc.languageId, lineCount: doc.lineCount };
}

export async function closeTab(p: CloseTabParams): Promise<CloseTabResult> {
  const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.label === p.tabName);
  if (tabs.length === 0) return { closed: false };
  return { closed: await vscode.window.tabGroups.close(tabs) };
}

function openDocument(p: DocumentParams): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === p.path);
}

/** Saves the open document of `path`; a file not open in VS Code has nothing unsaved. */
export async function saveDocument(p: DocumentParams): Promise<void> {
  const doc = openDocument(p);
  if (doc?.isDirty && !(await doc.save())) throw new Error(`VS Code could not save ${p.path}`);
}

/** Format Document with the file's formatter; saved when it had no unsaved changes before. */
export async function reformatFile(p: DocumentParams): Promise<void> {
  const doc = openDocument(p) ?? (await vscode.workspace.openTextDocument(vscode.Uri.file(p.path)));
  const wasDirty = doc.isDirty;
  const editor = vscode.window.visibleTextEditors.find((e) => e.document === doc);
  const options = {
    tabSize: typeof editor?.options.tabSize === "number" ? editor.options.tabSize : 4,
    insertSpaces: typeof editor?.options.insertSpaces === "boolean" ? editor.options.insertSpaces : true,
  };
  const edits = await vscode.commands.executeCommand<vscode.TextEdit[] | undefined>(
    "vscode.executeFormatDocumentProvider",
    doc.uri,
    options,
  );
  if (!edits || edits.length === 0) return;
  const edit = new vscode.WorkspaceEdit();
  edit.set(doc.uri, edits);
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`VS Code could not format ${p.path}`);
  if (!wasDirty) await doc.save();
}

/** Claude's `executeCode`: asks first, with the exact code. */
export async function confirmExecute(p: CodeParams): Promise<boolean> {
  const run = "Run it";
  const answer = await vscode.window.showWarningMessage(
    "Claude wants to run this code in the active notebook's kernel.",
    { modal: true, detail: p.code },
    run,
  );
  return answer === run;
}

/** Runs the code as a new cell at the end of the active notebook and returns its outputs. */
export async function executeCode(p: CodeParams): Promise<ExecuteCodeResult> {
  const editor = vscode.window.activeNotebookEditor;
  if (!editor) throw new Error("no notebook is active in VS Code");
  const nb = editor.notebook;
  const index = nb.cellCount;
  const edit = new vscode.WorkspaceEdit();
  const language = nb.cellAt(0)?.document.languageId ?? "python";
  edit.set(nb.uri, [
    vscode.NotebookEdit.insertCells(index, [
      new vscode.NotebookCellData(vscode.NotebookCellKind.Code, p.code, language),
    ]),
  ]);
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error("could not add a cell to the notebook");
  const cell = nb.cellAt(index);
  const finished = new Promise<void>((resolve) => {
    const sub = vscode.workspace.onDidChangeNotebookDocument((e) => {
      if (e.notebook !== nb) return;
      if (e.cellChanges.some((c) => c.cell === cell && c.executionSummary?.success !== undefined)) {
        sub.dispose();
        resolve();
      }
    });
  });
  await vscode.commands.executeCommand("notebook.cell.execute", {
    ranges: [{ start: index, end: index + 1 }],
    document: nb.uri,
  });
  await finished;
  const content: ExecuteCodeContent[] = [];
  const decoder = new TextDecoder();
  for (const output of cell.outputs) {
    for (const item of output.items) {
      if (item.mime.startsWith("image/")) {
        content.push({ type: "image", data: Buffer.from(item.data).toString("base64"), mimeType: item.mime });
      } else if (item.mime === "application/vnd.code.notebook.error") {
        const err = JSON.parse(decoder.decode(item.data)) as { name?: string; message?: string };
        content.push({ type: "text", text: `${err.name ?? "Error"}: ${err.message ?? ""}` });
      } else if (item.mime.startsWith("text/") || item.mime.startsWith("application/vnd.code.notebook.std")) {
        content.push({ type: "text", text: decoder.decode(item.data) });
      }
    }
  }
  return { content };
}

/** The workspace tools ask: a modal prompt with exactly what will run and where. */
export async function approve(req: ApproveParams): Promise<boolean> {
  const hidden = req.hiddenCharacters.length;
  const warning =
    hidden > 0
      ? `⚠ This contains ${hidden} hidden character${hidden === 1 ? "" : "s"}, shown as ⟨U+…⟩.\n\n`
      : "";
  const run = req.tool === "execute_command" ? "Run it" : "Allow";
  let detail: string;
  if (req.commandShown !== undefined) {
    detail = `${warning}Command:\n${req.commandShown}\n\nIn folder:\n${req.cwdShown ?? ""}`;
  } else {
    detail = `${warning}${req.summary}`;
  }
  const message =
    req.tool === "execute_command"
      ? "The workspace tools ask to run a command"
      : `The workspace tools ask: ${req.tool}`;
  const answer = await vscode.window.showWarningMessage(message, { modal: true, detail }, run);
  return answer === run;
}

/**
 * The commands the user allowed, shown as they run: one integrated terminal
 * ("ccbridge tools") that prints each command, its output with its colours,
 * and its exit status. ccbridge runs them; the terminal shows them.
 */
export class CommandTerminal implements vscode.Disposable {
  private terminal: vscode.Terminal | undefined;
  private readonly write = new vscode.EventEmitter<string>();
  private ready: Promise<void> | undefined;

  private open(): Promise<void> {
    if (this.terminal && this.ready) return this.ready;
    let opened!: () => void;
    this.ready = new Promise<void>((r) => (opened = r));
    const pty: vscode.Pseudoterminal = {
      onDidWrite: this.write.event,
      open: () => opened(),
      close: () => {
        this.terminal = undefined;
        this.ready = undefined;
      },
    };
    this.terminal = vscode.window.createTerminal({ name: "ccbridge tools", pty });
    return this.ready;
  }

  async event(e: CommandEvent): Promise<void> {
    await this.open();
    const out = (s: string) => this.write.fire(s.replace(/\r?\n/g, "\r\n"));
    switch (e.event) {
      case "started":
        this.terminal?.show(true);
        out(`\x1b[1m$ ${e.commandShown}\x1b[0m  \x1b[2m(in ${e.cwdShown})\x1b[0m\n`);
        break;
      case "output":
        out(e.data);
        break;
      case "exited": {
        const how = e.cancelled
          ? "cancelled"
          : e.timedOut
            ? "timed out"
            : e.exitCode === null
              ? "ended by a signal"
              : `exit status ${e.exitCode}`;
        out(`\x1b[2m[${how}]\x1b[0m\n\n`);
        break;
      }
    }
  }

  dispose(): void {
    this.terminal?.dispose();
    this.write.dispose();
  }
}
