/**
 * An Electron main process wired to ccbridge: the editor's renderer reports
 * its state over IPC, and Claude's requests (review a diff, approve a
 * command, open a file) go to the window and come back as answers.
 *
 * In an app:
 *
 * ```ts
 * import * as electron from "electron";
 * import { runEditor } from "./electron-main.js";
 * await runEditor(electron, "/path/to/project");
 * ```
 *
 * So that this file type-checks without Electron installed, the few pieces
 * of Electron it uses are declared below as a small interface
 * ({@link ElectronLike}); Electron's real `app`, `BrowserWindow` and
 * `ipcMain` satisfy it. `examples/headless.mjs` is the runnable example.
 *
 * IPC channels (renderer → main): `editor:selection`, `editor:tabs`,
 * `editor:diagnostics`, `editor:dirty`, `editor:mention`,
 * `ccbridge:diff-verdict`, `ccbridge:approve-answer`;
 * (main → renderer): `ccbridge:status`, `ccbridge:show-diff`,
 * `ccbridge:close-diff`, `ccbridge:approve`, `ccbridge:command-event`,
 * `ccbridge:open-file`, `ccbridge:warning`.
 */
import {
  start,
  BridgeError,
  type AtMention,
  type Bridge,
  type Diagnostic,
  type DiffVerdict,
  type EditorTab,
  type SelectionReport,
  type ShowDiffParams,
} from "@ccbridge/client";

// ---------------------------------------------------------------- the Electron we use

interface IpcMainEvent {
  sender: WebContents;
}

interface WebContents {
  send(channel: string, ...args: unknown[]): void;
}

interface BrowserWindowLike {
  webContents: WebContents;
  loadFile(path: string): Promise<void>;
  isDestroyed(): boolean;
}

interface QuitEvent {
  preventDefault(): void;
}

export interface ElectronLike {
  app: {
    whenReady(): Promise<void>;
    on(event: "before-quit", listener: (event: QuitEvent) => void): void;
    on(event: "window-all-closed", listener: () => void): void;
    quit(): void;
  };
  BrowserWindow: new (options: {
    width: number;
    height: number;
    webPreferences?: { preload?: string };
  }) => BrowserWindowLike;
  ipcMain: {
    on(channel: string, listener: (event: IpcMainEvent, ...args: any[]) => void): void;
    handle(channel: string, handler: (event: IpcMainEvent, ...args: any[]) => unknown): void;
  };
  dialog: {
    showErrorBox(title: string, content: string): void;
  };
}

// ---------------------------------------------------------------- the wiring

/** Answers the renderer sends for Claude's diffs and approvals, by id. */
class Pending<T> {
  private readonly waiting = new Map<number, (answer: T) => void>();

  wait(id: number): Promise<T> {
    return new Promise((resolve) => this.waiting.set(id, resolve));
  }

  answer(id: number, answer: T): void {
    const resolve = this.waiting.get(id);
    this.waiting.delete(id);
    resolve?.(answer);
  }

  drop(id: number): void {
    this.waiting.delete(id);
  }
}

export async function runEditor(electron: ElectronLike, folder: string): Promise<Bridge | undefined> {
  const { app, BrowserWindow, ipcMain, dialog } = electron;
  await app.whenReady();
  const win = new BrowserWindow({ width: 1200, height: 800 });
  const toWindow = (channel: string, ...args: unknown[]): void => {
    if (!win.isDestroyed()) win.webContents.send(channel, ...args);
  };

  const verdicts = new Pending<DiffVerdict>();
  const approvals = new Pending<boolean>();

  let bridge: Bridge;
  try {
    bridge = await start({
      workspaceFolders: [folder],
      ideName: "Kale",
      // Handlers given here are declared in the very first `initialize`.
      handlers: {
        // Claude (or a workspace tool) proposes a change: show it in the
        // window and wait as long as the user takes.
        showDiff: (diff: ShowDiffParams, { signal }) => {
          toWindow("ccbridge:show-diff", diff);
          // Claude moved on (the user answered in its terminal, a newer
          // proposal, ...): close the view; the verdict is not needed.
          signal.addEventListener("abort", () => {
            verdicts.drop(diff.id);
            toWindow("ccbridge:close-diff", { id: diff.id, reason: signal.reason });
          });
          return verdicts.wait(diff.id);
        },
        closeDiff: ({ id, reason }) => toWindow("ccbridge:close-diff", { id, reason }),
        // A workspace tool wants to run a command: ask in the window. The
        // window must show request.commandShown and request.cwdShown (hidden
        // characters as ⟨U+XXXX⟩ markers), with a warning when
        // request.hiddenCharacters is not empty, never request.command.
        approve: (request) => {
          toWindow("ccbridge:approve", request);
          return approvals.wait(request.id);
        },
        openFile: (params) => {
          toWindow("ccbridge:open-file", params);
          return null;
        },
      },
    });
  } catch (e) {
    // SpawnError carries the install hint; SidecarExitedError ccbridge's stderr.
    dialog.showErrorBox("Claude Code integration", e instanceof BridgeError ? e.message : String(e));
    return undefined;
  }

  // The renderer's state, as it changes. ccbridge debounces selections and
  // replays them to Claude sessions that connect later: send every change.
  ipcMain.on("editor:selection", (_e, selection: SelectionReport | null) => bridge.reportSelection(selection));
  ipcMain.on("editor:tabs", (_e, tabs: EditorTab[]) => bridge.reportOpenEditors(tabs));
  ipcMain.on("editor:diagnostics", (_e, path: string, diagnostics: Diagnostic[]) =>
    bridge.reportDiagnostics(path, diagnostics),
  );
  ipcMain.on("editor:dirty", (_e, path: string, isDirty: boolean) => bridge.reportDirty(path, isDirty));
  // Alt+K in the editor: send the selection to Claude's prompt.
  ipcMain.on("editor:mention", (_e, mention: AtMention) => bridge.atMention(mention));

  // The user's answers.
  ipcMain.on("ccbridge:diff-verdict", (_e, id: number, verdict: DiffVerdict) => verdicts.answer(id, verdict));
  ipcMain.on("ccbridge:approve-answer", (_e, id: number, approved: boolean) => approvals.answer(id, approved));

  // For the integrated terminal: start `claude` with these variables and it
  // connects to this window at once (no `/ide` needed).
  ipcMain.handle("ccbridge:terminal-env", () => bridge.claudeEnv);

  // What the status bar shows.
  const status = (): void =>
    toWindow("ccbridge:status", { port: bridge.port, clients: bridge.clients, tools: bridge.tools });
  bridge.on("clientConnected", status);
  bridge.on("clientDisconnected", status);
  bridge.on("commandEvent", (event) => toWindow("ccbridge:command-event", event));
  bridge.on("invalidNotification", (p) => toWindow("ccbridge:warning", `${p.method}: ${p.message}`));
  bridge.on("warning", (w) => toWindow("ccbridge:warning", w.message));
  bridge.on("exit", ({ error }) => {
    if (error) toWindow("ccbridge:warning", error.message);
    status();
  });

  // Quit: stop the sidecar first (it removes its lock file and settles
  // Claude's open diffs), then let the app go. If the process exits some
  // other way the package's exit hooks still clean up.
  let stopped = false;
  app.on("before-quit", (event) => {
    if (stopped) return;
    event.preventDefault();
    void bridge.stop().finally(() => {
      stopped = true;
      app.quit();
    });
  });
  app.on("window-all-closed", () => app.quit());

  await win.loadFile("index.html");
  status();
  return bridge;
}
