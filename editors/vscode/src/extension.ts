/**
 * ccbridge for VS Code: spawns `ccbridge serve --stdio` (the sidecar) through
 * `@ccbridge/client` and answers the editor protocol with VS Code's own
 * APIs. The sidecar is the IDE server Claude Code (and Gemini CLI, Qwen
 * Code) connect to; this extension is its face.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { start, type AgentEnv, type ApprovalMode, type Bridge, type DiagnosticsSource, type PathMapping } from "@ccbridge/client";
import { Changes } from "./changes";
import { Reports } from "./reports";
import { Reviews } from "./review";
import {
  approve,
  closeTab,
  CommandTerminal,
  confirmExecute,
  executeCode,
  openFile,
  reformatFile,
  saveDocument,
} from "./requests";

let state: State | undefined;

/** `name` looked up on the extension host's PATH, as a shell would. */
function findOnPath(name: string): string | undefined {
  for (const dir of (process.env["PATH"] ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

class State implements vscode.Disposable {
  readonly output = vscode.window.createOutputChannel("ccbridge");
  readonly status = vscode.window.createStatusBarItem("ccbridge.status", vscode.StatusBarAlignment.Right, 100);
  readonly reviews = new Reviews((line) => this.log(line));
  readonly commands = new CommandTerminal();
  readonly changes = new Changes((line) => this.log(line));
  bridge: Bridge | undefined;
  private reports: Reports | undefined;
  private starting: Promise<Bridge | undefined> | undefined;
  private stopping = false;

  constructor() {
    this.status.name = "ccbridge";
    this.status.command = "ccbridge.showStatus";
    this.render();
    this.status.show();
  }

  log(line: string): void {
    this.output.appendLine(line);
  }

  private config() {
    return vscode.workspace.getConfiguration("ccbridge");
  }

  private folders(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
  }

  async start(): Promise<Bridge | undefined> {
    if (this.bridge) return this.bridge;
    if (this.starting) return this.starting;
    this.starting = this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<Bridge | undefined> {
    const folders = this.folders();
    if (folders.length === 0) {
      this.log("no folder is open: the sidecar starts once one is (Claude connects to the editor of its folder)");
      this.render();
      return undefined;
    }
    const cfg = this.config();
    const args: string[] = [];
    const port = cfg.get<number>("port", 0);
    if (port > 0) args.push("--port", String(port));
    const traffic = cfg.get<string>("logTraffic", "");
    if (traffic !== "") args.push("--log-traffic", traffic);
    args.push(...cfg.get<string[]>("args", []).filter((a) => typeof a === "string"));
    const bin = cfg.get<string>("path", "");
    const approvalMode = cfg.get<ApprovalMode>("approvalMode", "write-only");
    const diagnostics = cfg.get<DiagnosticsSource>("diagnosticsSource", "auto");
    const command = cfg.get<unknown[]>("command", []).filter((w): w is string => typeof w === "string");
    const pathMap = cfg.get<PathMapping[]>("pathMap", []);
    this.log(`starting ${[...command, bin || "ccbridge"].join(" ")} serve --stdio for ${folders.join(", ")}`);
    try {
      const bridge = await start({
        workspaceFolders: folders,
        ideName: vscode.env.appName,
        ...(bin !== "" ? { bin } : {}),
        ...(command.length > 0 ? { command } : {}),
        pathMap,
        args,
        approvalMode,
        diagnostics,
        env: { CCBRIDGE_LOG: cfg.get<string>("logLevel", "info") },
        // The lock file names a process that is an ancestor of the shells of
        // VS Code's terminals (Claude checks that inside IDE terminals): the
        // extension host's parent (the main process, or the server of a
        // remote window), whose children include the terminals' pty host.
        // Through a prefix the sidecar is on another machine, where this pid
        // means nothing: it records its own parent there.
        ...(command.length === 0 ? { pid: process.ppid } : {}),
        handlers: {
          showDiff: (diff, ctx) => this.reviews.show(diff, ctx),
          closeDiff: (p) => this.reviews.closed(p.id),
          reviewText: (p) => this.reviews.text(p.id),
          openFile,
          closeTab,
          saveDocument,
          reformatFile,
          approve,
          // Only with a notebook kernel to run it in (Jupyter).
          ...(vscode.extensions.getExtension("ms-toolsai.jupyter") ? { confirmExecute, executeCode } : {}),
        },
      });
      bridge.on("stderr", (line) => this.log(line));
      bridge.on("clientConnected", (c) => {
        this.log(`${c.agent?.name ?? c.name} connected (session ${c.id}, ${c.name} ${c.version})`);
        this.render();
      });
      bridge.on("clientDisconnected", (c) => {
        this.log(`session ${c.id} disconnected`);
        this.render();
      });
      bridge.on("commandEvent", (e) => void this.commands.event(e));
      bridge.on("invalidNotification", (p) => this.log(`ccbridge could not use ${p.method}: ${p.message}`));
      bridge.on("warning", (w) => this.log(`warning (${w.kind}): ${w.message}`));
      bridge.on("exit", (info) => {
        this.log(`the sidecar exited (${info.signal ?? `status ${String(info.code)}`})`);
        if (this.bridge === bridge) this.detach();
        if (info.error && !this.stopping) {
          void vscode.window
            .showErrorMessage(`ccbridge stopped: ${info.error.message.split("\n")[0] ?? ""}`, "Show log", "Restart")
            .then((a) => {
              if (a === "Show log") this.output.show();
              if (a === "Restart") void this.start();
            });
        }
      });
      this.bridge = bridge;
      this.changes.attach(bridge);
      this.reports = new Reports(bridge, () => this.config().get<number>("diagnosticDelay", 500));
      this.log(
        `ccbridge ${bridge.initializeResult.serverInfo.version} listening on port ${bridge.port}; lock file ${bridge.lockFile ?? "(none)"}` +
          (bridge.tools ? `; workspace tools at ${bridge.tools.url} (${bridge.tools.approvalMode})` : ""),
      );
      this.render();
      return bridge;
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      this.log(`could not start the sidecar: ${message}`);
      this.render(message);
      void vscode.window
        .showErrorMessage(`ccbridge could not start: ${message.split("\n")[0] ?? ""}`, "Show log", "Settings")
        .then((a) => {
          if (a === "Show log") this.output.show();
          if (a === "Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "ccbridge.");
        });
      return undefined;
    }
  }

  private detach(): void {
    this.reports?.dispose();
    this.reports = undefined;
    this.bridge = undefined;
    this.changes.attach(undefined);
    this.render();
  }

  async stop(): Promise<void> {
    const bridge = this.bridge;
    if (!bridge) return;
    this.stopping = true;
    this.detach();
    try {
      await bridge.stop();
    } finally {
      this.stopping = false;
    }
  }

  render(error?: string): void {
    const b = this.bridge;
    if (!b) {
      this.status.text = "$(debug-disconnect) ccbridge";
      this.status.tooltip = error
        ? `ccbridge could not start: ${error}`
        : this.folders().length === 0
          ? "ccbridge: open a folder to start the sidecar"
          : "ccbridge: the sidecar is not running (click for more)";
      return;
    }
    const clients = b.clients;
    const names = clients.map((c) => c.agent?.name ?? c.name);
    const mode = b.tools?.approvalMode;
    this.status.text =
      `$(sparkle) ${clients.length === 0 ? "no agent" : clients.length === 1 ? (names[0] ?? "1 agent") : `${clients.length} agents`}` +
      (b.tools ? ` · tools: ${mode ?? ""}` : "");
    const md = new vscode.MarkdownString(undefined, true);
    md.appendMarkdown(`**ccbridge** on port ${b.port}\n\n`);
    md.appendMarkdown(
      clients.length === 0 ? "No agent connected.\n\n" : `Connected: ${names.map((n) => `\`${n}\``).join(", ")}\n\n`,
    );
    md.appendMarkdown(b.tools ? `Workspace tools: \`${b.tools.url}\`, asking: **${mode ?? ""}**` : "Workspace tools: off");
    this.status.tooltip = md;
  }

  async changeFolders(): Promise<void> {
    const folders = this.folders();
    if (!this.bridge) {
      if (folders.length > 0 && this.config().get<boolean>("autoStart", true)) await this.start();
      return;
    }
    if (folders.length === 0) await this.stop();
    else this.bridge.updateWorkspace({ workspaceFolders: folders });
  }

  async startAgent(id?: string): Promise<void> {
    const bridge = await this.start();
    if (!bridge) return;
    if (this.config().get<unknown[]>("command", []).length > 0) {
      // Its lock file, port and environment are on the sidecar's side.
      void vscode.window.showInformationMessage(
        "ccbridge: the sidecar runs through `ccbridge.command`, on the agents' side: start the agent there (in the workspace folder), and `/ide` finds this window.",
      );
      return;
    }
    let agent: AgentEnv | undefined;
    if (id === undefined) {
      const pick = await vscode.window.showQuickPick(
        bridge.agents.map((a) => ({ label: a.name, description: a.id, agent: a })),
        { placeHolder: "Which agent to start, connected to this window?" },
      );
      agent = pick?.agent;
    } else {
      agent = bridge.agents.find((a) => a.id === id);
      if (!agent) {
        void vscode.window.showErrorMessage(`ccbridge does not offer ${id} (see its --agents)`);
        return;
      }
    }
    if (!agent) return;
    // VS Code runs a terminal's shellPath as given, without a PATH search.
    const program = findOnPath(agent.id);
    if (!program) {
      void vscode.window.showErrorMessage(
        `ccbridge: \`${agent.id}\` (${agent.name}) is not on the PATH of VS Code's extension host; install it, or start it yourself in a terminal with ${Object.keys(agent.env).join(", ")} set as the status shows.`,
      );
      return;
    }
    const cwd = this.folders()[0];
    const terminal = vscode.window.createTerminal({
      name: agent.name,
      ...(cwd !== undefined ? { cwd } : {}),
      env: agent.env,
      shellPath: program,
      shellArgs: agent.args ?? [],
      iconPath: new vscode.ThemeIcon("sparkle"),
    });
    terminal.show();
    this.log(`started ${agent.name} in a terminal (${agent.id}${agent.args ? " with ccbridge's review settings" : ""})`);
  }

  async showStatus(): Promise<void> {
    const b = this.bridge;
    const items: (vscode.QuickPickItem & { run: () => unknown })[] = [];
    if (b) {
      const st = await b.status().catch(() => undefined);
      const clients = st?.clients ?? b.clients;
      items.push({
        label: `$(plug) Port ${b.port}`,
        description: b.lockFile ?? "",
        run: () => this.output.show(),
      });
      for (const c of clients) {
        items.push({
          label: `$(sparkle) ${c.agent?.name ?? c.name}`,
          description: `session ${c.id}, ${c.name} ${c.version}`,
          run: () => undefined,
        });
      }
      for (const r of this.reviews.list()) {
        items.push({ label: `$(diff) ${r.title}`, description: "open review", run: () => undefined });
      }
      if (b.tools) {
        items.push({
          label: `$(tools) Workspace tools: ${b.tools.approvalMode}`,
          description: b.tools.url,
          run: () => vscode.commands.executeCommand("ccbridge.setApprovalMode"),
        });
      }
      for (const a of b.agents) {
        items.push({ label: `$(terminal) Start ${a.name}`, run: () => this.startAgent(a.id) });
      }
      items.push({ label: "$(debug-restart) Restart the sidecar", run: () => this.restart() });
      items.push({ label: "$(debug-stop) Stop the sidecar", run: () => this.stop() });
    } else {
      items.push({ label: "$(play) Start the sidecar", run: () => this.start() });
    }
    items.push({ label: "$(output) Show the log", run: () => this.output.show() });
    const pick = await vscode.window.showQuickPick(items, { placeHolder: "ccbridge" });
    if (pick) await pick.run();
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async setApprovalMode(): Promise<void> {
    const modes: ApprovalMode[] = ["write-only", "always", "never"];
    const pick = await vscode.window.showQuickPick(modes, { placeHolder: "When should the workspace tools ask you?" });
    if (!pick) return;
    await this.config().update("approvalMode", pick, vscode.ConfigurationTarget.Global);
  }

  async applyApprovalMode(): Promise<void> {
    const b = this.bridge;
    if (!b) return;
    const mode = await b.setApprovalMode(this.config().get<ApprovalMode>("approvalMode", "write-only"));
    this.log(`the workspace tools now ask: ${mode}`);
    this.render();
  }

  sendSelection(): void {
    const editor = vscode.window.activeTextEditor;
    const b = this.bridge;
    if (!b || !editor || editor.document.uri.scheme !== "file") return;
    const s = editor.selection;
    if (s.isEmpty) b.atMention({ filePath: editor.document.uri.fsPath });
    else b.atMention({ filePath: editor.document.uri.fsPath, lineStart: s.start.line, lineEnd: s.end.line });
  }

  dispose(): void {
    this.reviews.dispose();
    this.changes.dispose();
    this.reports?.dispose();
    this.commands.dispose();
    this.status.dispose();
    this.output.dispose();
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const s = new State();
  state = s;
  context.subscriptions.push(
    s,
    vscode.commands.registerCommand("ccbridge.start", () => s.start()),
    vscode.commands.registerCommand("ccbridge.stop", () => s.stop()),
    vscode.commands.registerCommand("ccbridge.restart", () => s.restart()),
    vscode.commands.registerCommand("ccbridge.startClaude", () => s.startAgent("claude")),
    vscode.commands.registerCommand("ccbridge.startGemini", () => s.startAgent("gemini")),
    vscode.commands.registerCommand("ccbridge.startQwen", () => s.startAgent("qwen")),
    vscode.commands.registerCommand("ccbridge.startCodex", () => s.startAgent("codex")),
    vscode.commands.registerCommand("ccbridge.startAgent", () => s.startAgent()),
    vscode.commands.registerCommand("ccbridge.acceptDiff", (arg: unknown) => s.reviews.accept(arg)),
    vscode.commands.registerCommand("ccbridge.rejectDiff", (arg: unknown) => s.reviews.reject(arg)),
    vscode.commands.registerCommand("ccbridge.acceptHunk", (id: unknown, i: unknown) => s.reviews.acceptHunk(id, i)),
    vscode.commands.registerCommand("ccbridge.rejectHunk", (id: unknown, i: unknown) => s.reviews.rejectHunk(id, i)),
    vscode.commands.registerCommand("ccbridge.sendSelection", () => s.sendSelection()),
    vscode.commands.registerCommand("ccbridge.setApprovalMode", () => s.setApprovalMode()),
    vscode.commands.registerCommand("ccbridge.showStatus", () => s.showStatus()),
    vscode.commands.registerCommand("ccbridge.showLog", () => s.output.show()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => s.changeFolders()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("ccbridge.approvalMode")) void s.applyApprovalMode();
      const startup = ["path", "command", "pathMap", "port", "logTraffic", "logLevel", "args"].filter((k) => e.affectsConfiguration(`ccbridge.${k}`));
      if (startup.length > 0 && s.bridge) {
        void vscode.window
          .showInformationMessage(`ccbridge: ${startup.join(", ")} take effect when the sidecar restarts.`, "Restart now")
          .then((a) => (a === "Restart now" ? s.restart() : undefined));
      }
    }),
  );
  if (vscode.workspace.getConfiguration("ccbridge").get<boolean>("autoStart", true)) await s.start();
}

export async function deactivate(): Promise<void> {
  const s = state;
  state = undefined;
  // Stopping removes the lock file at once; if VS Code ends the extension
  // host before, the sidecar sees its stdin close and removes it itself.
  await s?.stop();
}
