/**
 * The bridge: one `ccbridge serve --stdio` child and the editor protocol
 * spoken with it, as a typed object for an editor's main process.
 *
 * Design notes (the why):
 *
 * - **Reports are fire-and-forget.** `reportSelection` and friends return
 *   `true` when the message was handed to the sidecar and `false` once the
 *   bridge is stopped; they never throw and never return a promise an
 *   editor could forget to handle on every keystroke. ccbridge checks what
 *   it gets and says what it could not use with `invalidNotification`,
 *   which is the `invalidNotification` event here.
 * - **A diff is one promise.** The protocol answers `showDiff` at once
 *   ("shown") and sends the verdict later as a `diffResolved` notification,
 *   because a person decides and may take an hour. Here a `showDiff`
 *   handler simply resolves with the verdict whenever the user decides; the
 *   "shown" answer and the `diffResolved` notification are sent for it. If
 *   ccbridge closes the diff first (the user answered in Claude's terminal,
 *   a newer proposal replaced it, ...) the handler's `AbortSignal` fires
 *   with the reason, and a verdict that comes later is dropped.
 * - **Capabilities follow the handlers.** Unless `start()` is given
 *   explicit `capabilities`, the bridge declares exactly what it has
 *   handlers for and tells ccbridge again (`initialize` may be re-sent)
 *   whenever a handler is added or disposed. A capability without a
 *   handler would make Claude's tool fail with "not supported" anyway; a
 *   handler without its capability would never be called.
 * - **Nothing is lost at start.** ccbridge writes its lock file before the
 *   editor says anything, so a request can come before `start()` resolves.
 *   Everything ccbridge sends is held until one turn after `start()`
 *   resolved, so handlers and listeners registered right after
 *   `await start()` see it.
 * - **The session review is asked for, always.** `initialize` says
 *   `changes: true`, so ccbridge sends `changesChanged` whenever the list
 *   changes: one small notification, and an editor that shows the review
 *   needs no polling. A refused decision becomes an error class of its own
 *   (`ChangeStaleError`, `ChangeConflictError` with the three versions), so
 *   the editor can tell "reload" from "show the conflict" without parsing.
 * - **Paths are mapped at the wire.** With a `pathMap` (the sidecar on
 *   another machine), `notify`, `request` and the incoming-request wrapper
 *   rename every path field as it crosses, so handlers, listeners and
 *   callers only ever see the editor's own paths.
 */
import { EventEmitter } from "node:events";
import {
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import { OpenDiffs } from "./diffs.js";
import {
  BridgeError,
  BridgeStoppedError,
  ChangeConflictError,
  ChangeStaleError,
  ProtocolVersionError,
  RemoteError,
  SidecarExitedError,
} from "./errors.js";
import { registerHostExit } from "./exit-hooks.js";
import { removeOwnLockFile } from "./lockfile.js";
import type { ExitStatus, Sidecar } from "./process.js";
import { PathMap, type PathMapping } from "./remote.js";
import {
  ErrorCode,
  Method,
  PROTOCOL_VERSION,
  type ApprovalMode,
  type ApproveParams,
  type AtMention,
  type Capabilities,
  type AgentEnv,
  type ChangeAction,
  type ChangeActionResult,
  type ChangeConflict,
  type ChangesChangedParams,
  type ChangesView,
  type ClaudeClient,
  type ClientDisconnectedParams,
  type DiagnosticsSource,
  type CloseDiffParams,
  type CloseTabParams,
  type ReviewTextParams,
  type CodeParams,
  type CommandEvent,
  type Diagnostic,
  type DocumentParams,
  type EditorTab,
  type InitializeParams,
  type InitializeResult,
  type InvalidNotificationParams,
  type OpenFileParams,
  type OpenFilesParams,
  type SelectionReport,
  type ShowDiffParams,
  type StatusResult,
  type ToolsEndpoint,
  type WorkspaceChange,
} from "./protocol.js";
import {
  capabilitiesOf,
  type ApproveHandler,
  type Awaitable,
  type BridgeEvents,
  type BridgeListener,
  type BridgeState,
  type BridgeWarning,
  type CloseDiffHandler,
  type Disposable,
  type ExitInfo,
  type RequestHandlers,
  type ShowDiffHandler,
  type StartOptions,
} from "./types.js";
import { delay, isTransportError, messageOf, methodNotFound, supportedOf, withTimeout } from "./wire.js";

/** How long `shutdown` may take before stdin is closed anyway. */
const SHUTDOWN_ANSWER_MS = 2_000;
/** Between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 1_000;
/** The `code` of errors our handlers answer with (the message reaches Claude). */
const HANDLER_FAILED = 1;


/** Typed listener methods, merged into the class below. */
export interface Bridge {
  on<E extends keyof BridgeEvents>(event: E, listener: BridgeListener<E>): this;
  once<E extends keyof BridgeEvents>(event: E, listener: BridgeListener<E>): this;
  off<E extends keyof BridgeEvents>(event: E, listener: BridgeListener<E>): this;
  addListener<E extends keyof BridgeEvents>(event: E, listener: BridgeListener<E>): this;
  removeListener<E extends keyof BridgeEvents>(event: E, listener: BridgeListener<E>): this;
  prependListener<E extends keyof BridgeEvents>(event: E, listener: BridgeListener<E>): this;
}

/**
 * A running sidecar. Create it with {@link start}; end it with
 * {@link Bridge.stop}.
 */
export class Bridge extends EventEmitter {
  private readonly sidecar: Sidecar;
  private readonly conn: MessageConnection;
  private readonly handlers: RequestHandlers = {};
  private readonly explicitCapabilities: Capabilities | undefined;
  private approvalMode: ApprovalMode | undefined;
  private readonly diagnostics: DiagnosticsSource | undefined;
  private init: InitializeResult | undefined;
  private current: BridgeState = "starting";
  private readonly connected = new Map<number, ClaudeClient>();
  private readonly diffs = new OpenDiffs();
  private sentCapabilities = "";
  private capabilityUpdate: Promise<void> | undefined;
  private readonly warned = new Set<string>();
  private isOpen = false;
  private readonly held: Array<() => void> = [];
  private stopping: Promise<void> | undefined;
  private readonly unregisterHostExit: () => void;
  private readonly ended: Promise<void>;
  /** Aborted once the sidecar has ended, so pending requests fail at once. */
  private readonly gone = new AbortController();
  private exitError: SidecarExitedError | undefined;
  /** The paths of the two sides (empty: the same machine, or the same names). */
  get pathMap(): PathMap {
    return this.paths;
  }
  private paths: PathMap;
  /** Folders named through a link, mapped to their real paths; set when the map is the bridge's own (no map given, the same machine). */
  private readonly linksOf: ((folders: readonly string[]) => PathMapping[]) | undefined;
  /** Started through a `command` prefix: its lock file is on the other side. */
  private readonly remote: boolean;

  /** @internal Used by `start()`, the only way to make a bridge. */
  static _create(
    sidecar: Sidecar,
    options: StartOptions,
    paths: PathMap = new PathMap(),
    linksOf?: (folders: readonly string[]) => PathMapping[],
  ): Bridge {
    return new Bridge(sidecar, options, paths, linksOf);
  }

  private constructor(
    sidecar: Sidecar,
    options: StartOptions,
    paths: PathMap,
    linksOf: ((folders: readonly string[]) => PathMapping[]) | undefined,
  ) {
    super();
    this.sidecar = sidecar;
    this.paths = paths;
    this.linksOf = linksOf;
    this.remote = (options.command?.length ?? 0) > 0;
    this.explicitCapabilities = options.capabilities ? { ...options.capabilities } : undefined;
    this.approvalMode = options.approvalMode;
    this.diagnostics = options.diagnostics;
    Object.assign(this.handlers, options.handlers);
    this.unregisterHostExit = registerHostExit(this);
    sidecar.onStderrLine((line) => this.tell("stderr", line));

    this.conn = createMessageConnection(
      new StreamMessageReader(sidecar.child.stdout),
      new StreamMessageWriter(sidecar.child.stdin),
    );
    this.conn.onError(() => {
      // Write errors mean the child is gone; its exit is reported once,
      // through `exited`, with its stderr.
    });
    this.registerIncoming();
    this.conn.listen();
    this.ended = sidecar.exited.then((status) => this.onExited(status));
  }

  // ---------------------------------------------------------------- state

  /** `starting` → `running` → `stopping` → `stopped`. */
  get state(): BridgeState {
    return this.current;
  }

  /** ccbridge's `initialize` result (updated when it is re-sent). */
  get initializeResult(): InitializeResult {
    return this.initResult();
  }

  /** The WebSocket port Claude Code connects to. */
  get port(): number {
    return this.initResult().port;
  }

  /** The lock file Claude Code finds this editor by (`null` with no lock file). */
  get lockFile(): string | null {
    return this.initResult().lockFile;
  }

  /**
   * Set these on the terminal that runs `claude` (the protocol's `env`:
   * `CLAUDE_CODE_SSE_PORT`, `ENABLE_IDE_INTEGRATION`) so it connects here
   * at once. Pass the `claude` entry of {@link agents}'s `args` too: without
   * them Claude Code starts in auto mode and writes edits without showing
   * them here.
   */
  get claudeEnv(): Record<string, string> {
    return { ...this.initResult().env };
  }

  /**
   * Every agent that can find this editor (Claude Code, Gemini CLI, Qwen
   * Code, as `ccbridge serve --agents` offers them), each with the
   * environment and leading arguments of a terminal that starts it
   * connected here: `spawn(a.id, [...(a.args ?? []), ...userArgs], {env:
   * {...process.env, ...a.env}})`. For Claude Code the arguments are a
   * `--settings` whose hook makes every edit ask, so edits are reviewed
   * here even in the auto mode it starts in.
   */
  get agents(): AgentEnv[] {
    return (this.initResult().agents ?? []).map((a) => ({ ...a, env: { ...a.env } }));
  }

  /** The workspace tools' MCP endpoint, when ccbridge serves them. */
  get tools(): ToolsEndpoint | undefined {
    return this.initResult().tools;
  }

  /**
   * Whose diagnostics Claude gets: `auto` (ccbridge's language servers for
   * a file until this editor reports on it), `editor` or `ccbridge`, as
   * asked with `diagnostics` and possible (`editor` when ccbridge runs
   * without language servers).
   */
  get diagnosticsSource(): DiagnosticsSource {
    return this.initResult().diagnostics ?? "editor";
  }

  /** ccbridge's name and version. */
  get serverInfo(): { name: string; version: string } {
    return this.initResult().serverInfo;
  }

  /** The sidecar's pid. */
  get pid(): number | undefined {
    return this.sidecar.pid;
  }

  /** The Claude Code sessions connected now (from the events). */
  get clients(): ClaudeClient[] {
    return [...this.connected.values()];
  }

  /** What the bridge declares (explicit, or following the handlers). */
  get capabilities(): Capabilities {
    return { ...(this.explicitCapabilities ?? capabilitiesOf(this.handlers)) };
  }

  /** The last lines ccbridge wrote on stderr. */
  stderrTail(): string {
    return this.sidecar.stderrTail();
  }

  // ---------------------------------------------------------------- reports (editor → ccbridge)

  /**
   * The selection or cursor of the active editor (`selectionChanged`);
   * `null` when no editor is active. Send it on every change: ccbridge
   * debounces and replays it to Claude sessions that connect later.
   */
  reportSelection(selection: SelectionReport | null): boolean {
    return this.notify(Method.selectionChanged, selection ?? { filePath: null });
  }

  /** The full list of open tabs (`openEditorsChanged`). */
  reportOpenEditors(tabs: EditorTab[]): boolean {
    return this.notify(Method.openEditorsChanged, { tabs });
  }

  /** One file's diagnostics, replacing earlier ones; `[]` clears (`diagnosticsChanged`). */
  reportDiagnostics(path: string, diagnostics: Diagnostic[]): boolean {
    return this.notify(Method.diagnosticsChanged, { path, diagnostics });
  }

  /** Forgets every file's diagnostics (`diagnosticsCleared`), e.g. after a language server restart. */
  clearDiagnostics(): boolean {
    return this.notify(Method.diagnosticsCleared, undefined);
  }

  /** A document's unsaved-changes flag (`documentDirtyChanged`). */
  reportDirty(path: string, isDirty: boolean): boolean {
    return this.notify(Method.documentDirtyChanged, { path, isDirty });
  }

  /**
   * Sends a file, or 0-based lines of it, to Claude's prompt
   * (`atMentioned`); held by ccbridge until a session is connected.
   */
  atMention(mention: AtMention): boolean {
    return this.notify(Method.atMentioned, mention);
  }

  /**
   * New workspace folders, name or pid for the lock file (`workspaceChanged`).
   * Through a `command` prefix the pid is left out, as at start: it names
   * no process on the other machine. A new folder named through a symbolic
   * link is mapped to its real path, as at start, when no map was given.
   */
  updateWorkspace(change: WorkspaceChange): boolean {
    if (this.linksOf && change.workspaceFolders) {
      this.paths = this.paths.with(this.linksOf(change.workspaceFolders));
    }
    if (this.remote && change.pid !== undefined) {
      const { pid: _local, ...rest } = change;
      return this.notify(Method.workspaceChanged, rest);
    }
    return this.notify(Method.workspaceChanged, change);
  }

  // ---------------------------------------------------------------- requests (editor → ccbridge)

  /** ccbridge's port, lock file and connected sessions (`status`). */
  async status(): Promise<StatusResult> {
    return this.request<StatusResult>(Method.status, undefined, 10_000);
  }

  /**
   * Changes when the workspace tools ask (re-sends `initialize`); resolves
   * with the mode now in force, or `null` when the tools are off.
   */
  async setApprovalMode(mode: ApprovalMode): Promise<ApprovalMode | null> {
    this.approvalMode = mode;
    const result = await this.sendInitialize(10_000);
    return result.tools?.approvalMode ?? null;
  }

  /**
   * The session review (`changes`): every file changed in the workspace
   * folders while ccbridge runs, each as hunks against its content at the
   * start. Fails with a {@link RemoteError} (`-32600`) when ccbridge runs
   * with `--no-changes`.
   */
  async changes(): Promise<ChangesView> {
    return this.request<ChangesView>(Method.changes, {}, 10_000);
  }

  /**
   * A decision in the session review (`changeAction`): keep or revert one
   * hunk (`key`) or a whole file (no `key`), mark a file viewed, keep or
   * revert everything, undo the last revert. A revert is written
   * atomically and only over the version named.
   *
   * @throws {ChangeStaleError} ccbridge has seen a newer version of the file than `version`: fetch `changes` again
   * @throws {ChangeConflictError} the file changed on disk since; nothing was written; `conflict` has the three versions
   * @throws {RemoteError} anything else refused (an unknown hunk, nothing to undo, ...), with ccbridge's message
   */
  async changeAction(action: ChangeAction): Promise<ChangeActionResult> {
    try {
      // revertAll writes every file: a slow disk gets time.
      return await this.request<ChangeActionResult>(Method.changeAction, action, 60_000);
    } catch (e) {
      if (!(e instanceof RemoteError) || typeof e.data !== "object" || e.data === null) throw e;
      const data = e.data as { stale?: unknown; conflict?: unknown };
      const message = e.message.replace(/^ccbridge refused changeAction \(-?\d+\): /, "");
      if (data.stale === true) throw new ChangeStaleError(e.method, e.rpcCode, message, e.data);
      if (isConflict(data.conflict)) {
        const conflict = { ...data.conflict, path: this.pathMap.toLocal(data.conflict.path) };
        throw new ChangeConflictError(e.method, e.rpcCode, message, e.data, conflict);
      }
      throw e;
    }
  }

  // ---------------------------------------------------------------- handlers (ccbridge → editor)

  /**
   * Reviews a proposed change: resolve with `{decision: "accepted",
   * contents?}` (the final text, the user's edits included; omitted = the
   * proposal), `{decision: "rejected"}`, or `{decision: "dismissed"}` (the
   * view was closed without deciding: Claude's terminal prompt decides).
   * A handler that throws counts as `dismissed`.
   */
  onShowDiff(handler: ShowDiffHandler): Disposable {
    return this.setHandler("showDiff", handler);
  }

  /** ccbridge closes a diff; the bridge answers for you (`null`). */
  onCloseDiff(handler: CloseDiffHandler): Disposable {
    return this.setHandler("closeDiff", handler);
  }

  /** A workspace tool call needs the user's yes (no time limit). */
  onApprove(handler: ApproveHandler): Disposable {
    return this.setHandler("approve", handler);
  }

  onOpenFile(handler: NonNullable<RequestHandlers["openFile"]>): Disposable {
    return this.setHandler("openFile", handler);
  }

  onOpenFiles(handler: NonNullable<RequestHandlers["openFiles"]>): Disposable {
    return this.setHandler("openFiles", handler);
  }

  /**
   * Gives ccbridge the text the user left in an open diff view, for an
   * agent the user answered in its own terminal (Gemini CLI writes it
   * instead of its proposal, so the user's edits there are not lost).
   */
  onReviewText(handler: NonNullable<RequestHandlers["reviewText"]>): Disposable {
    return this.setHandler("reviewText", handler);
  }

  onCloseTab(handler: NonNullable<RequestHandlers["closeTab"]>): Disposable {
    return this.setHandler("closeTab", handler);
  }

  onSaveDocument(handler: NonNullable<RequestHandlers["saveDocument"]>): Disposable {
    return this.setHandler("saveDocument", handler);
  }

  onReformatFile(handler: NonNullable<RequestHandlers["reformatFile"]>): Disposable {
    return this.setHandler("reformatFile", handler);
  }

  onConfirmExecute(handler: NonNullable<RequestHandlers["confirmExecute"]>): Disposable {
    return this.setHandler("confirmExecute", handler);
  }

  onExecuteCode(handler: NonNullable<RequestHandlers["executeCode"]>): Disposable {
    return this.setHandler("executeCode", handler);
  }

  /**
   * Resolves once ccbridge has been told the capabilities the current
   * handlers provide. Handlers registered after `start()` are declared by
   * re-sending `initialize` right away; await this when it matters that
   * the next request from Claude already sees them (tests, or before
   * telling the user "ready").
   */
  async syncCapabilities(): Promise<void> {
    if (this.explicitCapabilities) return;
    if (!this.isOpen) await new Promise<void>((resolve) => this.held.push(resolve));
    this.scheduleCapabilityUpdate();
    await this.capabilityUpdate;
    if (JSON.stringify(this.capabilities) !== this.sentCapabilities) {
      throw this.exitError ?? new BridgeStoppedError(Method.initialize);
    }
  }

  /** An approved command's progress (`commandEvent`); same as `on("commandEvent")`. */
  onCommandEvent(listener: (event: CommandEvent) => void): Disposable {
    this.on("commandEvent", listener);
    return { dispose: () => this.off("commandEvent", listener) };
  }

  // ---------------------------------------------------------------- stopping

  /**
   * Stops the sidecar: `shutdown` (ccbridge settles open diffs, removes
   * its lock file and exits), then stdin closed; after `timeoutMs` SIGTERM,
   * and SIGKILL a second later (the lock file is then removed here).
   * Resolves once the child has exited. Safe to call more than once.
   */
  stop(options: { timeoutMs?: number } = {}): Promise<void> {
    this.stopping ??= this.doStop(options.timeoutMs ?? 3_000);
    return this.stopping;
  }

  private async doStop(timeoutMs: number): Promise<void> {
    if (this.current !== "stopped") {
      this.current = "stopping";
      const deadline = Date.now() + timeoutMs;
      try {
        const answered = this.conn.sendRequest(Method.shutdown);
        await this.withTimeout(answered, Math.min(SHUTDOWN_ANSWER_MS, timeoutMs), Method.shutdown);
      } catch {
        // Not answered (gone, or stuck): closing stdin and the signals below decide.
      }
      this.sidecar.closeStdin();
      if (!(await this.sidecar.waitExit(deadline - Date.now()))) {
        this.sidecar.kill("SIGTERM");
        if (!(await this.sidecar.waitExit(KILL_GRACE_MS))) {
          this.sidecar.kill("SIGKILL");
          await this.sidecar.waitExit(KILL_GRACE_MS);
        }
      }
    }
    await this.ended;
  }

  /** @internal Synchronous cleanup when the host process exits. */
  onHostExit(): void {
    if (this.current === "stopped") return;
    this.current = "stopping";
    this.sidecar.kill("SIGTERM");
    if (!this.remote) removeOwnLockFile(this.init?.lockFile, this.sidecar.pid);
  }

  // ---------------------------------------------------------------- internals: start

  /** @internal */
  async _initialize(timeoutMs: number): Promise<void> {
    await this.sendInitialize(timeoutMs);
    // Unless the child exited in the meantime.
    if (this.current === "starting") this.current = "running";
  }

  /** @internal Start failed: end the child quickly, without `shutdown`. */
  async _abort(): Promise<void> {
    this.current = "stopping";
    this.sidecar.closeStdin();
    if (!(await this.sidecar.waitExit(KILL_GRACE_MS))) {
      this.sidecar.kill("SIGKILL");
      await this.sidecar.waitExit(KILL_GRACE_MS);
    }
    await this.ended;
  }

  /** @internal Delivers what was held while `start()` was pending. */
  _open(): void {
    if (this.isOpen) return;
    this.isOpen = true;
    for (const run of this.held.splice(0)) run();
    // Handlers added between `initialize` and now.
    this.scheduleCapabilityUpdate();
  }

  private initResult(): InitializeResult {
    if (!this.init) throw new BridgeError("CCBRIDGE_STOPPED", "the bridge has not been initialized");
    return this.init;
  }

  /**
   * `initialize` with the capabilities and approval mode; workspace folders,
   * name and pid went on the command line (`updateWorkspace` changes them),
   * so the lock file is not rewritten by it.
   */
  private async sendInitialize(timeoutMs: number): Promise<InitializeResult> {
    const capabilities = this.capabilities;
    const params: InitializeParams = { protocolVersion: PROTOCOL_VERSION, capabilities, changes: true };
    if (this.approvalMode !== undefined) params.approvalMode = this.approvalMode;
    if (this.diagnostics !== undefined) params.diagnostics = this.diagnostics;
    let result: InitializeResult;
    try {
      result = await this.request<InitializeResult>(Method.initialize, params, timeoutMs);
    } catch (e) {
      if (e instanceof RemoteError && e.rpcCode === ErrorCode.InvalidParams && supportedOf(e.data)) {
        throw new ProtocolVersionError(PROTOCOL_VERSION, supportedOf(e.data) ?? [], e.message);
      }
      throw e;
    }
    if (typeof result !== "object" || result === null || typeof result.port !== "number") {
      throw new ProtocolVersionError(PROTOCOL_VERSION, [], "its initialize answer is not version 3's");
    }
    if (result.protocolVersion !== PROTOCOL_VERSION) {
      throw new ProtocolVersionError(PROTOCOL_VERSION, [result.protocolVersion]);
    }
    this.init = result;
    this.sentCapabilities = JSON.stringify(capabilities);
    if (result.tools) this.approvalMode = result.tools.approvalMode;
    return result;
  }

  // ---------------------------------------------------------------- internals: handlers

  private setHandler<K extends keyof RequestHandlers>(method: K, handler: RequestHandlers[K]): Disposable {
    if (typeof handler !== "function") throw new TypeError(`${method} handler must be a function`);
    this.handlers[method] = handler;
    this.scheduleCapabilityUpdate();
    return {
      dispose: () => {
        if (this.handlers[method] !== handler) return;
        delete this.handlers[method];
        this.scheduleCapabilityUpdate();
      },
    };
  }

  /** Re-sends `initialize` once (per turn) when the declared capabilities changed. */
  private scheduleCapabilityUpdate(): void {
    if (this.explicitCapabilities || !this.isOpen || this.capabilityUpdate) return;
    this.capabilityUpdate = Promise.resolve().then(async () => {
      try {
        while (this.current === "running" && JSON.stringify(this.capabilities) !== this.sentCapabilities) {
          await this.sendInitialize(10_000);
        }
      } catch (e) {
        if (this.current === "running") {
          this.warn({
            kind: "capabilities",
            method: Method.initialize,
            message: `could not tell ccbridge the new capabilities: ${messageOf(e)}`,
            error: e,
          });
        }
      } finally {
        this.capabilityUpdate = undefined;
      }
    });
  }

  private registerIncoming(): void {
    const request = (method: string, run: (params: unknown) => unknown): void => {
      this.conn.onRequest(method, (params: unknown) =>
        this.whenOpen(() => {
          const answer = run(this.pathMap.incoming(method, params));
          // Unchanged (and as soon) without a map: `showDiff`'s "shown" must
          // go out before a verdict its handler may already have.
          if (this.pathMap.empty) return answer;
          const mapped = (a: unknown): unknown => (a instanceof ResponseError ? a : this.pathMap.answer(method, a));
          return answer instanceof Promise ? answer.then(mapped) : mapped(answer);
        }),
      );
    };
    request(Method.showDiff, (p) => this.handleShowDiff(p as ShowDiffParams));
    request(Method.closeDiff, (p) => this.handleCloseDiff(p as CloseDiffParams));
    request(Method.approve, (p) =>
      this.call("approve", p, async (h, params: ApproveParams) => {
        const r = await h(params);
        return { approved: typeof r === "boolean" ? r : r.approved === true };
      }),
    );
    request(Method.openFile, (p) =>
      this.call("openFile", p, async (h, params: OpenFileParams) => (await h(params)) ?? null),
    );
    request(Method.openFiles, (p) => this.handleOpenFiles(p as OpenFilesParams));
    request(Method.reviewText, (p) =>
      this.call("reviewText", p, async (h, params: ReviewTextParams) => {
        const text = await h(params);
        return { contents: typeof text === "string" ? text : null };
      }),
    );
    request(Method.closeTab, (p) => this.call("closeTab", p, (h, params: CloseTabParams) => h(params)));
    request(Method.saveDocument, (p) =>
      this.call("saveDocument", p, async (h, params: DocumentParams) => {
        await h(params);
        return null;
      }),
    );
    request(Method.reformatFile, (p) =>
      this.call("reformatFile", p, async (h, params: DocumentParams) => {
        await h(params);
        return null;
      }),
    );
    request(Method.confirmExecute, (p) =>
      this.call("confirmExecute", p, async (h, params: CodeParams) => ({ confirmed: (await h(params)) === true })),
    );
    request(Method.executeCode, (p) => this.call("executeCode", p, (h, params: CodeParams) => h(params)));
    // Anything else: the protocol's "method not found", which ccbridge
    // reports to Claude as "the editor does not support <method>".
    this.conn.onRequest((method: string) =>
      this.whenOpen(() => methodNotFound(method, "this version of @ccbridge/client")),
    );

    const notification = (method: string, run: (params: unknown) => void): void => {
      this.conn.onNotification(method, (params: unknown) => {
        void this.whenOpen(() => {
          try {
            run(params);
          } catch (e) {
            // A listener threw: there is no caller to hand it to, and
            // crashing the editor over it would be worse.
            const message = `a ${method} listener threw: ${messageOf(e)}`;
            this.warn({ kind: "handlerError", method, message, error: e });
          }
        });
      });
    };
    notification(Method.clientConnected, (p) => {
      const client = p as ClaudeClient;
      this.connected.set(client.id, client);
      this.emit("clientConnected", client);
    });
    notification(Method.clientDisconnected, (p) => {
      const { id } = p as ClientDisconnectedParams;
      const client = this.connected.get(id) ?? { id };
      this.connected.delete(id);
      this.emit("clientDisconnected", client);
    });
    notification(Method.commandEvent, (p) => this.emit("commandEvent", p as CommandEvent));
    notification(Method.changesChanged, (p) => this.emit("changesChanged", p as ChangesChangedParams));
    notification(Method.invalidNotification, (p) => {
      const params = p as InvalidNotificationParams;
      if (this.listenerCount("invalidNotification") > 0) this.emit("invalidNotification", params);
      else
        this.warn({
          kind: "invalidNotification",
          method: params.method,
          message: `could not use ${params.method}: ${params.message}`,
        });
    });
    // Unknown notifications from a newer ccbridge are ignored.
    this.conn.onNotification(() => {});
  }

  /** Runs `fn` now if `start()` has resolved, else once it has (in arrival order). */
  private whenOpen<T>(fn: () => T): T | Promise<T> {
    if (this.isOpen) return fn();
    return new Promise<T>((resolve, reject) => {
      this.held.push(() => {
        try {
          resolve(fn());
        } catch (e) {
          reject(e);
        }
      });
    });
  }

  /** Calls the handler for `method`, turning its failure into an error answer. */
  private async call<K extends keyof RequestHandlers, P>(
    method: K,
    params: unknown,
    run: (handler: NonNullable<RequestHandlers[K]>, params: P) => Awaitable<unknown>,
  ): Promise<unknown> {
    const handler = this.handlers[method];
    if (!handler) return methodNotFound(method);
    try {
      return await run(handler as NonNullable<RequestHandlers[K]>, params as P);
    } catch (e) {
      this.warn({ kind: "handlerError", method, message: `the ${method} handler failed: ${messageOf(e)}`, error: e });
      return new ResponseError(HANDLER_FAILED, messageOf(e));
    }
  }

  private handleShowDiff(diff: ShowDiffParams): null | ResponseError<unknown> {
    const handler = this.handlers.showDiff;
    if (!handler) return methodNotFound(Method.showDiff);
    if (typeof diff !== "object" || diff === null || typeof diff.id !== "number") {
      return new ResponseError(ErrorCode.InvalidParams, "showDiff needs an `id`");
    }
    const control = this.diffs.add(diff.id);
    // Answered "shown" by returning null below; the verdict follows as
    // `diffResolved` whenever the handler resolves.
    void Promise.resolve()
      .then(() => handler(diff, { signal: control.signal }))
      .then(
        (verdict) => this.settleDiff(diff.id, control, verdict),
        (e: unknown) => {
          this.warn({
            kind: "handlerError",
            method: Method.showDiff,
            message: `the showDiff handler failed (the diff is dismissed: Claude's terminal decides): ${messageOf(e)}`,
            error: e,
          });
          this.settleDiff(diff.id, control, { decision: "dismissed" });
        },
      );
    return null;
  }

  private settleDiff(id: number, control: AbortController, verdict: unknown): void {
    const settled = this.diffs.settle(id, control, verdict);
    if (!settled) return; // closed by ccbridge first: nobody waits for the verdict
    if (settled.problem) {
      this.warn({ kind: "handlerError", method: Method.showDiff, message: `${settled.problem}; the diff is dismissed` });
    }
    this.notify(Method.diffResolved, settled.params);
  }

  private async handleCloseDiff(params: CloseDiffParams): Promise<null> {
    this.diffs.close(params.id, params.reason);
    const handler = this.handlers.closeDiff;
    if (handler) {
      try {
        await handler(params);
      } catch (e) {
        const message = `the closeDiff handler failed: ${messageOf(e)}`;
        this.warn({ kind: "handlerError", method: Method.closeDiff, message, error: e });
      }
    }
    return null;
  }

  private async handleOpenFiles(params: OpenFilesParams): Promise<unknown> {
    if (this.handlers.openFiles) return this.call("openFiles", params, (h, p: OpenFilesParams) => h(p));
    const openFile = this.handlers.openFile;
    if (!openFile) return methodNotFound(Method.openFiles);
    const opened: string[] = [];
    for (const filePath of params.paths ?? []) {
      try {
        await openFile({ filePath, preview: false, selectToEndOfLine: false, makeFrontmost: false });
        opened.push(filePath);
      } catch (e) {
        const message = `opening ${filePath} failed: ${messageOf(e)}`;
        this.warn({ kind: "handlerError", method: Method.openFile, message, error: e });
      }
    }
    return { opened };
  }

  // ---------------------------------------------------------------- internals: wire

  private notify(method: string, params: object | undefined): boolean {
    if (this.current === "stopped" || this.current === "stopping") return false;
    params = this.pathMap.outgoing(method, params);
    try {
      const sent =
        params === undefined ? this.conn.sendNotification(method) : this.conn.sendNotification(method, params);
      sent.catch(() => {});
      return true;
    } catch {
      return false;
    }
  }

  private async request<R>(method: string, params: object | undefined, timeoutMs: number): Promise<R> {
    return this.pathMap.result(method, await this.send<R>(method, this.pathMap.outgoing(method, params), timeoutMs));
  }

  private async send<R>(method: string, params: object | undefined, timeoutMs: number): Promise<R> {
    if (this.current === "stopped" || this.current === "stopping") {
      throw this.exitError ?? new BridgeStoppedError(method);
    }
    let pending: Promise<R>;
    try {
      pending = params === undefined ? this.conn.sendRequest<R>(method) : this.conn.sendRequest<R>(method, params);
    } catch (e) {
      throw this.exitError ?? new BridgeStoppedError(method, e);
    }
    let onGone = (): void => {};
    const gone = new Promise<never>((_, reject) => {
      onGone = () => reject(this.exitError ?? new BridgeStoppedError(method));
      if (this.gone.signal.aborted) onGone();
      else this.gone.signal.addEventListener("abort", onGone, { once: true });
    });
    try {
      return await this.withTimeout(Promise.race([pending, gone]), timeoutMs, method);
    } catch (e) {
      if (e instanceof BridgeError) throw e;
      if (e instanceof ResponseError && !isTransportError(e.code)) {
        throw new RemoteError(method, e.code, e.message, e.data);
      }
      // Not ccbridge's answer but vscode-jsonrpc's: the write failed
      // (EPIPE) or the connection was disposed. The child is gone or going;
      // its exit, with its stderr, is the useful error.
      await Promise.race([this.ended, delay(KILL_GRACE_MS)]);
      throw this.exitError ?? new BridgeStoppedError(method, e);
    } finally {
      this.gone.signal.removeEventListener("abort", onGone);
      pending.catch(() => {});
    }
  }

  private withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
    return withTimeout(p, ms, what, () => this.sidecar.stderrTail());
  }

  private onExited(status: ExitStatus): void {
    const expected = this.current === "stopping";
    this.current = "stopped";
    this.unregisterHostExit();
    // After SIGKILL the sidecar could not remove its lock file (unless it
    // runs elsewhere: then its lock file is not on this disk, and its input
    // closing ends it there).
    if (!this.remote) removeOwnLockFile(this.init?.lockFile, this.sidecar.pid);
    if (!expected) {
      const when = this.init ? "unexpectedly" : "before answering initialize";
      this.exitError = new SidecarExitedError(status.code, status.signal, this.sidecar.stderrTail(), when);
    }
    this.gone.abort();
    this.conn.dispose();
    this.diffs.closeAll("shutdown");
    // Only a bridge that got going has listeners to tell.
    if (!this.init) return;
    const deliver = (): void => {
      for (const client of this.connected.values()) this.tell("clientDisconnected", client);
      this.connected.clear();
      const info: ExitInfo = this.exitError ? { ...status, error: this.exitError } : { ...status };
      if (this.exitError && this.listenerCount("exit") === 0) {
        this.warn({ kind: "exited", message: this.exitError.message, error: this.exitError });
      }
      this.tell("exit", info);
    };
    if (this.isOpen) deliver();
    else this.held.push(deliver);
  }

  /**
   * Emits `event` where a listener's throw has no caller to reach (the
   * sidecar's exit, its stderr): reported as a warning instead. Thrown out
   * of here it was an unhandled rejection of the exit's promise (which ends
   * a plain Node host, and failed `stop()`) or an uncaught exception in the
   * child's stream handler.
   */
  private tell<E extends keyof BridgeEvents>(event: E, ...args: BridgeEvents[E]): void {
    try {
      this.emit(event, ...args);
    } catch (e) {
      this.warn({ kind: "handlerError", method: event, message: `a ${event} listener threw: ${messageOf(e)}`, error: e });
    }
  }

  private warn(w: BridgeWarning): void {
    if (this.listenerCount("warning") > 0) {
      try {
        this.emit("warning", w);
      } catch {
        // A warning listener threw too: nothing is left to tell.
      }
      return;
    }
    const key = `${w.kind}:${w.method ?? ""}:${w.message}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    const code = `CCBRIDGE_${w.kind.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
    process.emitWarning(`ccbridge: ${w.message}`, { code });
  }
}

/** `data.conflict` of a refused revert, checked (ccbridge's, but the wire is untyped). */
function isConflict(c: unknown): c is ChangeConflict {
  if (typeof c !== "object" || c === null) return false;
  const o = c as Record<string, unknown>;
  const text = (v: unknown): boolean => v === null || typeof v === "string";
  return typeof o["path"] === "string" && text(o["before"]) && text(o["shown"]) && text(o["disk"]);
}
