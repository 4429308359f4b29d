// The typed client of the HTTP API in docs/web-ui.md. Every request is
// same-origin and carries the page's session as `Authorization: Bearer`
// (never a cookie: cookies reach every port of 127.0.0.1, this origin's
// storage does not); every POST is application/json (the server refuses
// anything else). Nothing here touches the DOM.

/** A coding agent: Claude Code, Gemini CLI or Qwen Code. `id` is also the
 * command that starts it. */
export interface Agent {
  id: string;
  name: string;
}

/** An agent that can find this IDE, with a terminal's environment. */
export interface AgentOffer extends Agent {
  env: Record<string, string>;
}

export interface ServerInfo {
  version: string;
  ideName: string;
  workspaceFolders: string[];
  idePort: number;
  agents: AgentOffer[];
}

export interface Session {
  id: number;
  name: string;
  version: string;
  pid: number | null;
  connectedAt: number;
  agent: Agent;
}

export interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  accepted: boolean;
}

export type ReviewStatus = "pending" | "accepted" | "rejected" | "dismissed";

/** A hunk's place, without its mark. */
export type HunkPlace = Omit<Hunk, "accepted">;

/** One per-hunk decision, as the server answers and announces it: only
 * what changed, not the whole review. `hunk` is the decided hunk as it
 * stood in version `version - 1`; an accept marks it, a reject reverts it
 * in `working` (its lines become the original's) and moves the later
 * hunks by the lines that took out or put back. */
export interface HunkDecided {
  id: number;
  version: number;
  index: number;
  decision: "accept" | "reject";
  hunk: HunkPlace;
  status: ReviewStatus;
}

/** A proposal the agent closed before the reviewer decided: kept by the
 * server (the last 50) until dismissed, read-only. */
export interface ClosedReview {
  review: Review;
  reason: string;
  note: string;
  closedAt: number;
}

export interface Review {
  id: number;
  tabName: string;
  path: string;
  /** VS Code's language id of the file (`plaintext` when none is known). */
  language: string;
  isNewFile: boolean;
  original: string | null;
  originalUnreadable: boolean;
  proposed: string;
  working: string;
  version: number;
  hunks: Hunk[];
  session: { id: number; name: string; agent: Agent } | null;
  createdAt: number;
  status: ReviewStatus;
}

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export type Severity = "Error" | "Warning" | "Information" | "Hint";

export interface Diagnostic {
  message: string;
  severity: Severity;
  range: Range;
  source?: string;
  code?: string | number;
}

export interface FileDiagnostics {
  path: string;
  diagnostics: Diagnostic[];
}

/** A language without diagnostics, and why (its server is not installed,
 * or it kept exiting). */
export interface UnavailableServer {
  language: string;
  why: string;
}

/** The diagnostics part of the state: the files', the proposals' (of
 * each open review's proposed text), and the languages without any. */
export interface DiagnosticsState {
  diagnostics: FileDiagnostics[];
  diagnosticsSource: boolean;
  proposedDiagnostics?: FileDiagnostics[];
  unavailableServers?: UnavailableServer[];
}

export type Activity =
  | { at: number; kind: "toolCall"; session: number | null; tool: string; isError: boolean; summary: string; elapsedMs: number }
  | { at: number; kind: "connected"; session: Session }
  | { at: number; kind: "disconnected"; session: number }
  | { at: number; kind: "replaced"; old: number; by: number }
  | { at: number; kind: "proposed"; review: number; path: string; agent: string | null; hunks: number; isNewFile: boolean }
  | {
      at: number;
      kind: "closed";
      review: number;
      path: string;
      reason: string;
      note: string;
      /** From servers that know them (for the history). */
      status?: ReviewStatus;
      agent?: string | null;
      /** Hunks of the agent's proposal, and of the text as it ended. */
      proposedHunks?: number;
      keptHunks?: number;
      /** The reviewer changed the text itself. */
      edited?: boolean;
      isNewFile?: boolean;
    }
  | { at: number; kind: "approval"; tool: string; summary: string; allowed: boolean }
  /** A file changed without a review ccbridge held (from the session
   * review); `by` the agent that reported it, if one did; seen on disk,
   * `connected` the agents connected then. */
  | { at: number; kind: "unreviewed"; path: string; by: string | null; connected?: string[] }
  | { at: number; kind: "run"; run: number; command: string; exitCode: number | null; timedOut: boolean; cancelled: boolean; elapsedMs: number };

export type ApprovalMode = "write-only" | "always" | "never";

/** The workspace tools server, or why it does not run. */
export type ToolsInfo =
  | { url: string; token: string; approvalMode: ApprovalMode; addCommand: string }
  | { off: string };

/** A workspace tool call waiting for the user's yes or no. */
export interface ApprovalRequest {
  id: number;
  tool: string;
  summary: string;
  command?: string;
  cwd?: string;
  /** `command` and `cwd` as shown: hidden characters as ⟨U+XXXX⟩ markers. Show these, never the raw ones. */
  commandShown?: string;
  cwdShown?: string;
  hiddenCharacters: HiddenCharacter[];
  askedAt: number;
}

/** A character shown as a ⟨U+XXXX⟩ marker because it renders invisibly or misleadingly. */
export interface HiddenCharacter {
  field: "command" | "cwd" | "summary";
  codePoint: string;
  name?: string;
  index: number;
}

export interface RunExit {
  /** null: a signal ended it. */
  exitCode: number | null;
  timedOut: boolean;
  cancelled: boolean;
  at: number;
}

/** A command the workspace tools ran (the last 64 KiB of its output). */
export interface Run {
  id: number;
  command: string;
  cwd: string;
  /** What to show of `command` and `cwd` (hidden characters as markers). */
  commandShown: string;
  cwdShown: string;
  startedAt: number;
  output: string;
  truncated: boolean;
  exit: RunExit | null;
}

export interface Tabs {
  open: string[];
  active: string | null;
}

export interface Snapshot {
  type: "snapshot";
  server: ServerInfo | null;
  sessions: Session[];
  reviews: Review[];
  /** Proposals the agent closed undecided, newest first (from servers that keep them). */
  closedReviews?: ClosedReview[];
  activity: Activity[];
  tabs: Tabs;
  diagnostics: FileDiagnostics[];
  diagnosticsSource: boolean;
  proposedDiagnostics?: FileDiagnostics[];
  unavailableServers?: UnavailableServer[];
  tools: ToolsInfo | null;
  approvals: ApprovalRequest[];
  runs: Run[];
  /** The workspace is watched for the session review (Changes). */
  changes: boolean;
}

/** Who changed a file in the session review, as far as ccbridge knows. */
export type ChangeSource =
  | { kind: "reviewed"; agent: string }
  | { kind: "agent"; agent: string; tool: string }
  /** `agents`: the agents connected when it was seen (none: nobody ccbridge knows of). */
  | { kind: "disk"; agents?: string[] };

export type ChangeStatus = "created" | "modified" | "deleted" | "binary" | "unknown";

export interface ChangeHunk {
  /** Names this hunk (its place and content) in a decision. */
  key: string;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  contextBefore: string[];
  removed: string[];
  added: string[];
  contextAfter: string[];
  cut: boolean;
  kept: boolean;
}

export interface ChangedFile {
  path: string;
  status: ChangeStatus;
  sources: ChangeSource[];
  version: string;
  viewed: boolean;
  reviewed: boolean;
  added: number;
  removed: number;
  hunks: ChangeHunk[];
  moreHunks: number;
  revertible: boolean;
  changedAt: number;
}

export interface ChangesList {
  ready: boolean;
  files: ChangedFile[];
  reviewed: number;
  canUndo: boolean;
  watchedFolders: number;
  limit: string | null;
}

/** The three versions a refused revert carries (409). */
export interface RevertConflict {
  path: string;
  before: string | null;
  shown: string | null;
  disk: string | null;
}

export type ServerEvent =
  | Snapshot
  | { type: "review"; review: Review }
  | ({ type: "hunk" } & HunkDecided)
  | { type: "closed"; id: number; reason: string; note: string }
  /** A closed proposal was dismissed (in this tab or another). */
  | { type: "forgotten"; id: number }
  | { type: "sessions"; sessions: Session[] }
  | { type: "activity"; entry: Activity }
  | { type: "open"; path: string; line: number | null }
  | ({ type: "diagnostics" } & DiagnosticsState)
  | { type: "tools"; tools: ToolsInfo }
  | { type: "approval"; approval: ApprovalRequest }
  /** `allowed` null: the call was cancelled before an answer. */
  | { type: "approvalClosed"; id: number; allowed: boolean | null }
  | { type: "run"; run: Run }
  | { type: "runOutput"; id: number; data: string }
  | { type: "runExited"; id: number; exit: RunExit }
  | { type: "changes"; revision: number };

export type EntryKind = "dir" | "file" | "symlink" | "other";

export interface TreeEntry {
  name: string;
  kind: EntryKind;
  path: string;
}

export interface TreeListing {
  path: string | null;
  entries: TreeEntry[];
  truncated?: boolean;
}

export type FileContent =
  | { path: string; kind: "text"; text: string; language: string }
  | { path: string; kind: "binary"; size: number };

/** A request that got an error answer (or none at all: `status` 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The answer's JSON body, when it had one (a 409 carries `review`). */
    readonly body: unknown,
  ) {
    super(message);
  }

  /** The current review a refused review request carries (409 and 400). */
  get review(): Review | null {
    const b = this.body;
    if (b && typeof b === "object" && "review" in b) {
      const r = (b as { review: unknown }).review;
      if (isReview(r)) return r;
    }
    return null;
  }
}

export function isReview(v: unknown): v is Review {
  if (!v || typeof v !== "object") return false;
  const r = v as Record<string, unknown>;
  return (
    typeof r["id"] === "number" &&
    typeof r["path"] === "string" &&
    typeof r["working"] === "string" &&
    typeof r["version"] === "number" &&
    Array.isArray(r["hunks"])
  );
}

/** Where the page keeps its session: this origin's storage, which pages
 * on other ports of 127.0.0.1 cannot read (a cookie would reach them). */
const SESSION_KEY = "ccbridge.session";
let memorySession: string | null = null;

export const session = {
  get(): string | null {
    try {
      return localStorage.getItem(SESSION_KEY);
    } catch {
      return null;
    }
  },
  set(value: string): void {
    try {
      localStorage.setItem(SESSION_KEY, value);
    } catch {
      // Storage refused (private mode quota): the session lasts this page.
    }
    memorySession = value;
  },
  clear(): void {
    memorySession = null;
    try {
      localStorage.removeItem(SESSION_KEY);
    } catch {
      // Nothing stored.
    }
  },
};
/** The headers that sign a request in (none before signing in). */
export function authHeaders(): Record<string, string> {
  const s = memorySession ?? session.get();
  return s ? { Authorization: `Bearer ${s}` } : {};
}

async function request(method: "GET" | "POST", path: string, body?: unknown, keepalive = false): Promise<unknown> {
  const headers: Record<string, string> = authHeaders();
  const init: RequestInit = { method, credentials: "omit", cache: "no-store", keepalive, headers };
  if (method === "POST") {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body ?? {});
  }
  let resp: Response;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, "ccbridge did not answer (is it still running?)", null);
  }
  if (resp.status === 204) return null;
  const text = await resp.text();
  let parsed: unknown = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
  }
  if (!resp.ok) {
    const msg =
      parsed && typeof parsed === "object" && typeof (parsed as { error?: unknown }).error === "string"
        ? (parsed as { error: string }).error
        : `${resp.status} ${resp.statusText}`;
    throw new ApiError(resp.status, msg, parsed);
  }
  return parsed;
}

export function isHunkDecided(v: unknown): v is HunkDecided {
  if (!v || typeof v !== "object") return false;
  const d = v as Record<string, unknown>;
  const hunk = d["hunk"] as Record<string, unknown> | null | undefined;
  return (
    typeof d["id"] === "number" &&
    typeof d["version"] === "number" &&
    typeof d["index"] === "number" &&
    (d["decision"] === "accept" || d["decision"] === "reject") &&
    typeof d["status"] === "string" &&
    !!hunk &&
    typeof hunk === "object" &&
    typeof hunk["oldStart"] === "number" &&
    typeof hunk["oldLines"] === "number" &&
    typeof hunk["newStart"] === "number" &&
    typeof hunk["newLines"] === "number"
  );
}

function expectReview(v: unknown): Review {
  if (!isReview(v)) throw new ApiError(500, "ccbridge answered with something that is not a review", v);
  return v;
}

const enc = encodeURIComponent;

export const api = {
  /** Trades the one-time token of the printed link for a session, kept
   * in this origin's storage. */
  async session(token: string): Promise<void> {
    const v = (await request("POST", "/api/session", { token })) as { session?: unknown } | null;
    if (!v || typeof v.session !== "string") throw new ApiError(500, "no session in the answer", v);
    session.set(v.session);
  },
  /** A new one-time link, for another browser. */
  async link(): Promise<string> {
    const v = (await request("POST", "/api/link", {})) as { url?: unknown } | null;
    if (!v || typeof v.url !== "string") throw new ApiError(500, "no link in the answer", v);
    return v.url;
  },
  async state(): Promise<Snapshot> {
    return (await request("GET", "/api/state")) as Snapshot;
  },
  async reviewText(id: number, text: string, version: number, keepalive = false): Promise<Review> {
    return expectReview(await request("POST", `/api/reviews/${id}/text`, { text, version }, keepalive));
  },
  /** The review as the server has it now (after a change the page could
   * not follow from the events alone). */
  async review(id: number): Promise<Review> {
    return expectReview(await request("GET", `/api/reviews/${id}`));
  },
  /** Decides one hunk; the answer says what changed (`HunkDecided`). */
  async reviewHunk(id: number, index: number, decision: "accept" | "reject", version: number): Promise<HunkDecided> {
    const v = await request("POST", `/api/reviews/${id}/hunks/${index}`, { decision, version });
    if (!isHunkDecided(v)) throw new ApiError(500, "ccbridge answered with something that is not a hunk decision", v);
    return v;
  },
  /** Forgets a proposal the agent closed undecided (every tab drops it). */
  async forgetClosed(id: number): Promise<void> {
    await request("POST", `/api/reviews/${id}/forget`, {});
  },
  /** Accepts `working`, or with `text` the page's right side (edits not
   * yet sent), set and accepted in one step. */
  async reviewAccept(id: number, version: number, text?: string): Promise<Review> {
    const body = text === undefined ? { version } : { version, text };
    return expectReview(await request("POST", `/api/reviews/${id}/accept`, body));
  },
  /** Rejects the whole proposal; `note` (why) is passed on to the agent
   * where its launcher allows. */
  async reviewReject(id: number, note?: string): Promise<Review> {
    return expectReview(await request("POST", `/api/reviews/${id}/reject`, note ? { note } : {}));
  },
  async reviewDismiss(id: number): Promise<Review> {
    return expectReview(await request("POST", `/api/reviews/${id}/dismiss`, {}));
  },
  async tree(path: string | null): Promise<TreeListing> {
    const v = (await request("GET", path === null ? "/api/tree" : `/api/tree?path=${enc(path)}`)) as TreeListing;
    if (!v || !Array.isArray(v.entries)) throw new ApiError(500, "no entries in the listing", v);
    return v;
  },
  async file(path: string): Promise<FileContent> {
    return (await request("GET", `/api/file?path=${enc(path)}`)) as FileContent;
  },
  async selection(path: string | null, text = "", start?: Position, end?: Position): Promise<void> {
    const body = path === null ? { path: null } : { path, text, selection: { start, end } };
    await request("POST", "/api/selection", body);
  },
  async tabs(tabs: Tabs): Promise<void> {
    await request("POST", "/api/tabs", tabs);
  },
  async mention(path: string, lineStart?: number, lineEnd?: number): Promise<void> {
    const body: { path: string; lineStart?: number; lineEnd?: number } = { path };
    if (lineStart !== undefined && lineEnd !== undefined) {
      body.lineStart = lineStart;
      body.lineEnd = lineEnd;
    }
    await request("POST", "/api/mention", body);
  },
  /** Allows or denies a workspace tool call. */
  async answerApproval(id: number, allow: boolean): Promise<void> {
    await request("POST", `/api/approvals/${id}`, { allow });
  },
  /** When the workspace tools ask, until ccbridge restarts. */
  async setApprovalMode(mode: ApprovalMode): Promise<ToolsInfo> {
    return (await request("POST", "/api/tools/approval-mode", { mode })) as ToolsInfo;
  },
  async changes(): Promise<ChangesList> {
    const v = (await request("GET", "/api/changes")) as ChangesList | null;
    if (!v || !Array.isArray(v.files)) throw new ApiError(500, "no files in the session review", v);
    return v;
  },
  /** A decision in the session review. `key` names one hunk; without it
   * the whole file. `version` is the file's as the page showed it. */
  async changeAction(
    action: "keep" | "revert" | "viewed" | "keep-all" | "revert-all" | "undo",
    body: { path?: string; key?: string; version?: string; viewed?: boolean } = {},
  ): Promise<{ failed?: string[] }> {
    return ((await request("POST", `/api/changes/${action}`, body)) ?? {}) as { failed?: string[] };
  },
  async diagnostics(): Promise<{ diagnostics: FileDiagnostics[]; diagnosticsSource: boolean }> {
    return (await request("GET", "/api/diagnostics")) as { diagnostics: FileDiagnostics[]; diagnosticsSource: boolean };
  },
};
