/**
 * The package's own public types: handlers, options, events. The wire's
 * types are in protocol.ts; these are what an editor writes against.
 */
import type { SidecarExitedError } from "./errors.js";
import type { ExitStatus } from "./process.js";
import type { PathMapping } from "./remote.js";
import type {
  ApproveParams,
  Capabilities,
  ClaudeClient,
  ClientDisconnectedParams,
  CloseDiffParams,
  CloseTabParams,
  ReviewTextParams,
  CloseTabResult,
  CodeParams,
  CommandEvent,
  DiffVerdict,
  DocumentParams,
  ExecuteCodeResult,
  InvalidNotificationParams,
  OpenFileParams,
  OpenFileResult,
  OpenFilesParams,
  OpenFilesResult,
  ShowDiffParams,
  ApprovalMode,
  ChangesChangedParams,
  DiagnosticsSource,
} from "./protocol.js";

export type Awaitable<T> = T | Promise<T>;

/** What `on*` methods return: `dispose()` removes the handler. */
export interface Disposable {
  dispose(): void;
}

/** The second argument of a `showDiff` handler. */
export interface DiffContext {
  /**
   * Aborted when ccbridge closes the diff before the handler resolved;
   * `signal.reason` is the {@link CloseReason} (`claudeClosed`: the user
   * answered in Claude's terminal; `replaced`, `newPrompt`, `disconnected`,
   * `shutdown`). Close the view then; a verdict after it is dropped.
   */
  signal: AbortSignal;
}

/** Resolves with the user's verdict, whenever the user decides. */
export type ShowDiffHandler = (diff: ShowDiffParams, context: DiffContext) => Awaitable<DiffVerdict>;
/** ccbridge closes a diff (also after a verdict: Claude closes every diff tab it opened). */
export type CloseDiffHandler = (params: CloseDiffParams) => Awaitable<void>;
/** `true` (or `{approved: true}`) lets the workspace tool call go ahead. */
export type ApproveHandler = (request: ApproveParams) => Awaitable<boolean | { approved: boolean }>;

/** Handlers for the requests ccbridge sends the editor. */
export interface RequestHandlers {
  showDiff?: ShowDiffHandler;
  closeDiff?: CloseDiffHandler;
  /**
   * The proposed side of the open diff view `id` as the user left it, or
   * `null` when it is gone. Answer at once: the agent waits at most 5 s.
   */
  reviewText?: (params: ReviewTextParams) => Awaitable<string | null | undefined>;
  /** Resolve with the file's info, or `null`. */
  openFile?: (params: OpenFileParams) => Awaitable<OpenFileResult | null | void>;
  /** Optional with `openFile`: without it each path goes to `openFile`. */
  openFiles?: (params: OpenFilesParams) => Awaitable<OpenFilesResult>;
  closeTab?: (params: CloseTabParams) => Awaitable<CloseTabResult>;
  saveDocument?: (params: DocumentParams) => Awaitable<void>;
  reformatFile?: (params: DocumentParams) => Awaitable<void>;
  /** Asked before every `executeCode`; `true` runs it. */
  confirmExecute?: (params: CodeParams) => Awaitable<boolean>;
  executeCode?: (params: CodeParams) => Awaitable<ExecuteCodeResult>;
  approve?: ApproveHandler;
}

/** Options of {@link start}. */
export interface StartOptions {
  /** Absolute paths; Claude connects to the editor whose folder holds its cwd. */
  workspaceFolders: string[];
  /** The name Claude Code shows for this editor (`/ide`, `/status`). */
  ideName: string;
  /**
   * Declares exactly these capabilities. Omitted (recommended): they follow
   * the registered handlers (see {@link RequestHandlers}).
   */
  capabilities?: Capabilities;
  /** When the workspace tools ask the user; ccbridge's default is `write-only`. */
  approvalMode?: ApprovalMode;
  /**
   * Whose diagnostics Claude gets: ccbridge's default `auto` runs its
   * language servers for the files this editor reports nothing for
   * ({@link DiagnosticsSource}).
   */
  diagnostics?: DiagnosticsSource;
  /** Handlers in place before ccbridge can send anything. */
  handlers?: RequestHandlers;
  /**
   * The ccbridge binary; default `$CCBRIDGE_BIN`, else `ccbridge` on `PATH`.
   * With `command`, the binary on the sidecar's side (default `ccbridge`,
   * found on that side's `PATH`; `$CCBRIDGE_BIN` is this side's and not used).
   */
  bin?: string;
  /**
   * A prefix that starts the sidecar elsewhere, e.g. `["ssh", "-T", "devbox"]`,
   * `["docker", "exec", "-i", "devbox"]`: the sidecar runs where the agent
   * runs, and only the editor protocol crosses the pipe (docs/remote.md).
   * The binary and its arguments follow the prefix; after `ssh` (which hands
   * one command line to a remote shell) each of them is quoted for a POSIX
   * shell.
   */
  command?: string[];
  /** Quote the words after `command` for a shell: default only after `ssh`, `autossh`, `mosh`. */
  quoteCommand?: boolean;
  /**
   * Folders named differently on the two sides: every path the bridge sends
   * (workspace folders, selection, open editors, diagnostics, dirty flags,
   * @-mentions, session-review decisions) goes local → remote, every path it
   * receives (diffs, `openFile`, `openFiles`, `saveDocument`, `reformatFile`,
   * the session review) remote → local; the longest matching prefix wins and
   * other paths pass unchanged. Absolute POSIX paths on both sides.
   */
  pathMap?: PathMapping[];
  /** More arguments for `ccbridge serve --stdio` (`--multi-client`, `--lock-dir DIR`, ...). */
  args?: string[];
  /** Variables added to the child's environment (e.g. `CCBRIDGE_LOG: "debug"`). */
  env?: Record<string, string | undefined>;
  /** ccbridge logs here instead of its stderr (`--log-file`). */
  logFile?: string;
  /** The child's working directory. */
  cwd?: string;
  /**
   * The editor's pid for the lock file (`--pid`); default: this process,
   * the sidecar's parent. Claude accepts a lock only if this process is an
   * ancestor of the terminal `claude` runs in: start the bridge from the
   * Electron main process, or pass the main process's pid here. Not sent
   * through a `command` prefix: on the other machine the sidecar records
   * its own parent.
   */
  pid?: number;
  /** Bound on spawning plus `initialize`; default 15000 ms. */
  initializeTimeoutMs?: number;
}

/** How the sidecar ended (the `exit` event). */
export interface ExitInfo extends ExitStatus {
  /** Set when nobody asked it to stop. */
  error?: SidecarExitedError;
}

/** Something that went wrong without stopping the bridge (the `warning` event). */
export interface BridgeWarning {
  kind: "handlerError" | "invalidNotification" | "capabilities" | "exited";
  message: string;
  /** The protocol method concerned. */
  method?: string;
  error?: unknown;
}

/** The bridge's events and their arguments. */
export interface BridgeEvents {
  /** A Claude Code session connected; selections and @-mentions now reach it. */
  clientConnected: [client: ClaudeClient];
  clientDisconnected: [client: ClaudeClient | ClientDisconnectedParams];
  /** An approved workspace command started, wrote output, or exited. */
  commandEvent: [event: CommandEvent];
  /** The session review changed: fetch `changes()` again if it is shown. */
  changesChanged: [params: ChangesChangedParams];
  /** ccbridge could not (fully) use a report; show it once. */
  invalidNotification: [params: InvalidNotificationParams];
  /**
   * Problems that do not stop the bridge. Without a listener they go to
   * `process.emitWarning`, once each.
   */
  warning: [warning: BridgeWarning];
  /** The sidecar ended; `info.error` is set when it was not asked to. */
  exit: [info: ExitInfo];
  /** A line ccbridge wrote on stderr (its log, unless `logFile` is set). */
  stderr: [line: string];
}

/** A listener of event `E`. */
export type BridgeListener<E extends keyof BridgeEvents> = (...args: BridgeEvents[E]) => void;

export type BridgeState = "starting" | "running" | "stopping" | "stopped";

/** The capabilities the handlers provide. */
export function capabilitiesOf(h: RequestHandlers): Capabilities {
  return {
    diff: h.showDiff !== undefined,
    openFile: h.openFile !== undefined,
    closeTab: h.closeTab !== undefined,
    saveDocument: h.saveDocument !== undefined,
    reformat: h.reformatFile !== undefined,
    // ccbridge asks confirmExecute before every executeCode.
    executeCode: h.executeCode !== undefined && h.confirmExecute !== undefined,
    approve: h.approve !== undefined,
    reviewText: h.reviewText !== undefined,
  };
}
