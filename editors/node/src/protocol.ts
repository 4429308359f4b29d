/**
 * The editor protocol of `ccbridge serve --stdio`, typed
 * (docs/editor-protocol.md in the ccbridge repository is the contract;
 * the Rust side is `crates/sidecar/src/messages.rs`).
 *
 * Names and field spellings are the wire's, so a message seen in
 * `--log-traffic` output can be found here by name. Positions are 0-based
 * and `character` counts UTF-16 code units, which is what JavaScript string
 * indices count too: an editor can pass its offsets through unchanged.
 */

/** The editor-protocol version this package speaks (and requires). */
export const PROTOCOL_VERSION = 3;

/** Method names on the wire. */
export const Method = {
  // editor → ccbridge, requests
  initialize: "initialize",
  status: "status",
  shutdown: "shutdown",
  changes: "changes",
  changeAction: "changeAction",
  // editor → ccbridge, notifications
  selectionChanged: "selectionChanged",
  openEditorsChanged: "openEditorsChanged",
  diagnosticsChanged: "diagnosticsChanged",
  diagnosticsCleared: "diagnosticsCleared",
  documentDirtyChanged: "documentDirtyChanged",
  atMentioned: "atMentioned",
  workspaceChanged: "workspaceChanged",
  diffResolved: "diffResolved",
  // ccbridge → editor, requests
  showDiff: "showDiff",
  closeDiff: "closeDiff",
  reviewText: "reviewText",
  openFile: "openFile",
  openFiles: "openFiles",
  closeTab: "closeTab",
  saveDocument: "saveDocument",
  reformatFile: "reformatFile",
  confirmExecute: "confirmExecute",
  executeCode: "executeCode",
  approve: "approve",
  // ccbridge → editor, notifications
  clientConnected: "clientConnected",
  clientDisconnected: "clientDisconnected",
  invalidNotification: "invalidNotification",
  commandEvent: "commandEvent",
  changesChanged: "changesChanged",
} as const;

/** JSON-RPC error codes the protocol uses. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  /** Reported to Claude as "the editor does not support <method>". */
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
} as const;

// ------------------------------------------------------------ shared types

/** 0-based line; `character` in UTF-16 code units (JS string indices). */
export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

// ------------------------------------------------------------ initialize

/**
 * Which requests the editor answers. In an `initialize` every omitted
 * capability is `false`.
 */
export interface Capabilities {
  /** `showDiff` (Claude's `openDiff`). */
  diff?: boolean;
  /** `openFile`, `openFiles`. */
  openFile?: boolean;
  /** `closeTab` for tabs that are not ccbridge's diffs. */
  closeTab?: boolean;
  saveDocument?: boolean;
  /** `reformatFile`. */
  reformat?: boolean;
  /** `confirmExecute` + `executeCode` (Jupyter); the tool is only offered with it. */
  executeCode?: boolean;
  /** `approve` requests and `commandEvent` notifications (the workspace tools). */
  approve?: boolean;
  /** `reviewText`: the text the user left in an open diff view. */
  reviewText?: boolean;
}

/** When the workspace tools ask the user (see the protocol's `initialize`). */
export type ApprovalMode = "write-only" | "always" | "never";

export interface InitializeParams {
  protocolVersion?: number;
  ideName?: string;
  workspaceFolders?: string[];
  pid?: number;
  capabilities?: Capabilities;
  approvalMode?: ApprovalMode;
  /** Asks for `changesChanged` notifications (the session review). */
  changes?: boolean;
  /** Whose diagnostics Claude gets; ccbridge's default is `auto`. */
  diagnostics?: DiagnosticsSource;
}

/**
 * Whose diagnostics Claude's `getDiagnostics` answers with: `auto`
 * (ccbridge's language servers for a file until the editor reports on it),
 * `editor` (the editor's only; no language server is started) or
 * `ccbridge` (the servers' only).
 */
export type DiagnosticsSource = "auto" | "editor" | "ccbridge";

/** The workspace tools' MCP server, when ccbridge serves it. */
export interface ToolsEndpoint {
  /** `http://127.0.0.1:<port>/mcp` */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token: string;
  /** The mode now in force: show it to the user. */
  approvalMode: ApprovalMode;
}

export interface InitializeResult {
  protocolVersion: number;
  serverInfo: { name: string; version: string };
  /** The WebSocket port Claude Code connects to. */
  port: number;
  /** `null` only when ccbridge runs without a lock file. */
  lockFile: string | null;
  /**
   * Variables for the terminal that runs `claude`
   * (`CLAUDE_CODE_SSE_PORT`, `ENABLE_IDE_INTEGRATION`): with them Claude
   * connects to this editor at once.
   */
  env: Record<string, string>;
  /** Absent when ccbridge runs with `--no-tools`. */
  tools?: ToolsEndpoint;
  /** Every agent offered (`--agents`), with its terminal environment (protocol 3). */
  agents?: AgentEnv[];
  /** Whose diagnostics Claude gets now (what was asked, or `editor` when ccbridge runs no language servers). */
  diagnostics?: DiagnosticsSource;
}

/** A Claude Code session connected to the sidecar. */
/** A coding agent (protocol 3): `id` is also its command. */
export interface Agent {
  id: "claude" | "gemini" | "qwen" | "codex";
  /** For people: "Claude Code", "Gemini CLI", "Qwen Code", "Codex CLI". */
  name: string;
}

/** An agent that can find this editor, and the environment of a terminal that starts it connected here. */
export interface AgentEnv extends Agent {
  env: Record<string, string>;
  /**
   * Arguments to give the agent before the user's own. For Claude Code:
   * `--settings <json>` with a hook that makes every edit ask, so it is
   * reviewed in this editor even in the auto mode Claude starts in.
   */
  args?: string[];
}

/** A connected agent session (Claude Code, Gemini CLI or Qwen Code). */
export interface ClaudeClient {
  id: number;
  name: string;
  version: string;
  /** `null` until (or unless) the CLI reported it; always for Gemini CLI and Qwen Code. */
  pid: number | null;
  /** Which agent (protocol 3). */
  agent?: Agent;
}

export interface StatusResult {
  port: number;
  lockFile: string | null;
  clients: ClaudeClient[];
}

// ------------------------------------------------------------ editor → ccbridge notifications

/** `selectionChanged`: a selection, or a bare cursor (`text` empty or omitted). */
export interface SelectionReport {
  filePath: string;
  /** The selected text; `""` or omitted for a bare cursor. */
  text?: string;
  /** A selection whose end comes before its start is turned around by ccbridge. */
  selection: Range;
}

/** One tab of `openEditorsChanged`. */
export interface EditorTab {
  /** Absolute unless `isUntitled`. */
  path: string;
  isActive: boolean;
  isDirty: boolean;
  languageId?: string;
  label?: string;
  isUntitled?: boolean;
}

/** Any case of the names, or LSP's numbers (1 = Error … 4 = Hint). */
export type DiagnosticSeverity =
  | "Error"
  | "Warning"
  | "Information"
  | "Hint"
  | "error"
  | "warning"
  | "information"
  | "hint"
  | 1
  | 2
  | 3
  | 4;

export interface Diagnostic {
  message: string;
  severity: DiagnosticSeverity;
  range: Range;
  source?: string;
  code?: string | number;
}

/** `atMentioned`: a file, or a 0-based line range of it. */
export interface AtMention {
  filePath: string;
  lineStart?: number;
  lineEnd?: number;
}

/** `workspaceChanged`: omitted fields keep their value. */
export interface WorkspaceChange {
  workspaceFolders?: string[];
  ideName?: string;
  pid?: number;
}

/** The user's verdict on a diff, as a `showDiff` handler returns it. */
export type DiffVerdict =
  /** `contents`: the final text with the user's edits; omitted = the proposal as shown. */
  | { decision: "accepted"; contents?: string }
  /** Claude is told "rejected" and ends its turn. */
  | { decision: "rejected" }
  /** The view was closed without a decision: Claude's own terminal prompt decides. */
  | { decision: "dismissed" };

/** `diffResolved` params: the verdict for the diff `id`. */
export type DiffResolvedParams = DiffVerdict & { id: number };

// ------------------------------------------------------------ ccbridge → editor requests

/** `showDiff` params: a proposal to review. */
export interface ShowDiffParams {
  /** The diff's id (not the JSON-RPC request id). */
  id: number;
  /** The agent session that asked; `null` for the workspace tools' reviews. */
  clientId: number | null;
  /** Which agent proposes it (protocol 3; absent for the workspace tools): show "<name> proposes …". */
  agent?: Agent;
  tabName: string;
  oldFilePath: string;
  newFilePath: string;
  /** The file on disk; `null` for a new file, a file over 16 MiB, or one that is not UTF-8. */
  originalContents: string | null;
  /** Tells a new file from an unreadable one when `originalContents` is `null`. */
  isNewFile: boolean;
  proposedContents: string;
  /**
   * The changes between `originalContents` (empty for a new file) and
   * `proposedContents` as ccbridge computes them, the hunks the browser UI
   * shows: use these for per-hunk decisions instead of a diff of your own.
   * Absent when the original could not be read (only the whole proposal can
   * be decided), and from a ccbridge older than the field.
   */
  hunks?: Hunk[];
}

/**
 * One change of a `showDiff`: lines `oldStart` to `oldStart + oldLines - 1`
 * of the original became lines `newStart` to `newStart + newLines - 1` of
 * the proposal. 0-based; either count may be 0. A line ends with its `\n`
 * (`\r` included); text after the last `\n` is a line too, so a change of
 * the final newline alone is a hunk of the last line.
 */
export interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
}

/** Why ccbridge closes a diff. */
export type CloseReason = "decided" | "claudeClosed" | "newPrompt" | "replaced" | "disconnected" | "shutdown";

export interface CloseDiffParams {
  id: number;
  reason: CloseReason;
}

/** `openFile`: Claude's `openFile` tool arguments (`startLine`/`endLine` are 1-based). */
export interface OpenFileParams {
  filePath: string;
  preview: boolean;
  startText?: string;
  endText?: string;
  selectToEndOfLine: boolean;
  makeFrontmost: boolean;
  startLine?: number;
  endLine?: number;
}

export interface OpenFileResult {
  filePath: string;
  languageId?: string;
  lineCount?: number;
}

export interface OpenFilesParams {
  paths: string[];
}

export interface OpenFilesResult {
  opened: string[];
}

/**
 * `reviewText`: the user answered an agent in its own terminal (Gemini
 * CLI), which writes the text the user left in the diff view `id` (their
 * edits included) instead of its proposal.
 */
export interface ReviewTextParams {
  id: number;
}

export interface ReviewTextResult {
  /** `null`: the view is gone; the agent writes its own proposal. */
  contents: string | null;
}

export interface CloseTabParams {
  tabName: string;
}

export interface CloseTabResult {
  closed: boolean;
}

/** `saveDocument` and `reformatFile`. */
export interface DocumentParams {
  path: string;
}

/** `confirmExecute` and `executeCode`. */
export interface CodeParams {
  code: string;
}

export type ExecuteCodeContent = { type: "text"; text: string } | { type: "image"; data: string; mimeType: string };

export interface ExecuteCodeResult {
  content: ExecuteCodeContent[];
}

/** `approve`: a workspace tool call that needs the user's yes. */
export interface ApproveParams {
  /** Also the `id` of the `commandEvent`s of an approved command. */
  id: number;
  /** `execute_command`, `read_file`, ... */
  tool: string;
  /** One line for a person, e.g. "Run `make` in /ws"; hidden characters as ⟨U+XXXX⟩ markers. */
  summary: string;
  /** For `execute_command`: exactly what will run. Do not show it: show `commandShown`. */
  command?: string;
  /** For `execute_command`: where (absolute). Do not show it: show `cwdShown`. */
  cwd?: string;
  /**
   * `command` as a person must see it: every character that draws invisibly or
   * misleadingly (bidi controls, zero-width, control characters, look-alike
   * spaces, the marker's own `⟨`) as a `⟨U+XXXX⟩` marker; line feeds kept.
   */
  commandShown?: string;
  /** `cwd` as a person must see it (one line). */
  cwdShown?: string;
  /** Every character shown as a marker; when not empty, warn the user. */
  hiddenCharacters: HiddenCharacter[];
}

/** A character of an `approve` request shown as a `⟨U+XXXX⟩` marker. */
export interface HiddenCharacter {
  /** Which text it is in (`summary` for a call without a command). */
  field: "command" | "cwd" | "summary";
  /** `U+2067`, as in the marker. */
  codePoint: string;
  /** Its Unicode name, for the common ones. */
  name?: string;
  /** Its position in that text, in code points from 0. */
  index: number;
}

// ------------------------------------------------------------ ccbridge → editor notifications

/** `commandEvent`: an approved command is running. */
export type CommandEvent =
  /** Show `commandShown` and `cwdShown` (see `ApproveParams`), not `command` and `cwd`. */
  | { event: "started"; id: number; command: string; cwd: string; commandShown: string; cwdShown: string }
  /** stdout and stderr as they come, terminal escapes included. */
  | { event: "output"; id: number; data: string }
  /** `exitCode` is `null` when a signal ended the command. */
  | { event: "exited"; id: number; exitCode: number | null; timedOut: boolean; cancelled: boolean };

/** `invalidNotification`: one of our notifications ccbridge could not (fully) use. */
export interface InvalidNotificationParams {
  method: string;
  message: string;
  /** `true` when the usable rest was applied. */
  partial: boolean;
}

/** `clientDisconnected` params. */
export interface ClientDisconnectedParams {
  id: number;
}

// ------------------------------------------------------------ the session review

/**
 * Who changed a file, as far as ccbridge can tell: a review it held
 * accepted exactly this text, an agent's hook reported the edit, or it was
 * only seen on disk (anyone may have made it).
 */
export type ChangeSource =
  | { kind: "reviewed"; agent: string }
  | { kind: "agent"; agent: string; tool: string }
  /** `agents`: the agents connected when the change was seen (Gemini CLI and Qwen Code report nothing else). */
  | { kind: "disk"; agents?: string[] };

/** `binary`: not text or too large (reverted as a whole only); `unknown`: its earlier content is not known (listed only). */
export type ChangedFileStatus = "created" | "modified" | "deleted" | "binary" | "unknown";

/**
 * One hunk of a changed file: lines `oldStart` to `oldStart + oldLines - 1`
 * of the file at the session's start became lines `newStart` to
 * `newStart + newLines - 1` of the file now (0-based, as {@link Hunk}).
 */
export interface ChangedHunk extends Hunk {
  /** Names the hunk by place and content: a decision reaches this hunk only (identical hunks have different keys). */
  key: string;
  /** Up to 3 lines before the hunk (from the file now), without line terminators. */
  contextBefore: string[];
  /** The lines the hunk removed, without terminators. */
  removed: string[];
  /** The lines the hunk added, without terminators. */
  added: string[];
  contextAfter: string[];
  /** Some lines were left out of `removed`/`added` (a huge hunk). */
  cut: boolean;
  /** Kept by the reviewer. */
  kept: boolean;
}

/** One file changed in the workspace folders while ccbridge runs. */
export interface ChangedFile {
  path: string;
  status: ChangedFileStatus;
  sources: ChangeSource[];
  /** The version a `keep`/`revert` must name: a decision on another version is refused as stale. */
  version: string;
  viewed: boolean;
  /** Viewed, or every hunk kept. */
  reviewed: boolean;
  /** Lines added and removed, over every hunk. */
  added: number;
  removed: number;
  hunks: ChangedHunk[];
  /** Hunks not described (beyond ccbridge's cap); a decision on them waits for a reload. */
  moreHunks: number;
  /** `false` when the content before is not known. */
  revertible: boolean;
  /** Milliseconds since the epoch. */
  changedAt: number;
}

/** The `changes` answer: the session review. */
export interface ChangesView {
  /** The baseline is taken and the folders are watched. */
  ready: boolean;
  files: ChangedFile[];
  /** How many files are reviewed. */
  reviewed: number;
  /** `undo` would undo a revert. */
  canUndo: boolean;
  watchedFolders: number;
  /** Why some changes may not be seen (the system's watch limit, lost events). */
  limit: string | null;
}

/**
 * A decision in the session review (`changeAction`). `keep` and `revert`
 * without `key` act on the whole file; `version` is always the file's
 * `version` as the review showed it.
 */
export type ChangeAction =
  | { action: "keep" | "revert"; path: string; version: string; key?: string }
  | { action: "viewed"; path: string; viewed?: boolean }
  | { action: "keepAll" | "revertAll" | "undo" };

export interface ChangeActionResult {
  /** What `revertAll` could not revert, one message per file; empty otherwise. */
  failed: string[];
}

/**
 * The three versions of a file a refused revert would have overwritten
 * (`null`: no file): at the session's start, as the review showed it, and
 * on disk now.
 */
export interface ChangeConflict {
  path: string;
  before: string | null;
  shown: string | null;
  disk: string | null;
}

/** `changesChanged`: the session review changed; fetch `changes` again if it is shown. */
export interface ChangesChangedParams {
  revision: number;
}
