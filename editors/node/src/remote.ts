/**
 * The sidecar on another machine (SSH, a container, WSL): the command that
 * starts it through a prefix, and the paths of the two sides.
 *
 * Claude Code needs the lock file, the port and the pid check where it
 * runs, so the sidecar runs there and only the editor protocol crosses the
 * pipe (docs/remote.md). The editor may then name the workspace differently
 * (`/home/me/proj` here, `/srv/proj` there): every path the bridge sends is
 * mapped local → remote and every path it receives remote → local, in one
 * place (the bridge's wire functions), so no handler or report can forget.
 * The same rules as the Neovim plugin's (editors/nvim/lua/ccbridge/remote.lua):
 * longest prefix first, paths outside every mapping unchanged, the whole
 * map a no-op when empty.
 *
 * Everything here is pure, so it is tested on its own.
 */
import { basename } from "node:path";

/** One mapping: a folder as the editor names it and as the sidecar's side names it. */
export interface PathMapping {
  /** Absolute, on the editor's side. */
  local: string;
  /** Absolute, on the sidecar's side. */
  remote: string;
}

/** An entry of a checked map; `outOnly` for a folder's real name, used for paths going over only. */
interface Entry extends PathMapping {
  outOnly?: boolean;
}

type Side = "local" | "remote";
type Rename = (path: string) => string;

/** Strips trailing slashes ("/" stays "/"). */
function trim(p: string): string {
  return p.length > 1 ? p.replace(/\/+$/, "") || "/" : p;
}

/** `path` with the folder `from` replaced by `to`, if it lies in it. */
function swap(path: string, from: string, to: string): string | undefined {
  if (path === from) return to;
  const head = from === "/" ? "/" : `${from}/`;
  if (!path.startsWith(head)) return undefined;
  const rest = path.slice(head.length);
  return to === "/" ? `/${rest}` : `${to}/${rest}`;
}

/** Deep copy of a JSON value (what crosses the pipe), so the caller's object is never changed. */
function copy<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

function mapList(list: unknown, f: Rename): unknown {
  return Array.isArray(list) ? list.map((v) => (typeof v === "string" ? f(v) : v)) : list;
}

function mapField(o: unknown, key: string, f: (v: unknown) => unknown): void {
  if (typeof o === "object" && o !== null && key in o) {
    const r = o as Record<string, unknown>;
    r[key] = f(r[key]);
  }
}

const str = (f: Rename) => (v: unknown) => (typeof v === "string" ? f(v) : v);

/** `file:///a/b` mapped (plain paths only; percent-escapes are left as they are). */
function mapUri(f: Rename) {
  return (u: unknown) => (typeof u === "string" && u.startsWith("file://") ? `file://${f(u.slice(7))}` : u);
}

const folders = (p: unknown, f: Rename): void => mapField(p, "workspaceFolders", (l) => mapList(l, f));

/** The editor's messages (notifications, and its own requests' params): which fields are paths. */
const outgoing: Record<string, (p: unknown, f: Rename) => void> = {
  initialize: folders,
  workspaceChanged: folders,
  selectionChanged: (p, f) => mapField(p, "filePath", str(f)),
  atMentioned: (p, f) => mapField(p, "filePath", str(f)),
  openEditorsChanged: (p, f) => {
    const tabs = (p as { tabs?: unknown }).tabs;
    if (!Array.isArray(tabs)) return;
    for (const tab of tabs) {
      if (typeof tab === "object" && tab !== null && (tab as { isUntitled?: unknown }).isUntitled !== true) {
        mapField(tab, "path", str(f));
      }
    }
  },
  diagnosticsChanged: (p, f) => {
    mapField(p, "path", str(f));
    mapField(p, "uri", mapUri(f));
  },
  documentDirtyChanged: (p, f) => mapField(p, "path", str(f)),
  changeAction: (p, f) => mapField(p, "path", str(f)),
};

/** The sidecar's requests to the editor: their params' paths. */
const incoming: Record<string, (p: unknown, f: Rename) => void> = {
  showDiff: (p, f) => {
    mapField(p, "oldFilePath", str(f));
    mapField(p, "newFilePath", str(f));
  },
  openFile: (p, f) => mapField(p, "filePath", str(f)),
  openFiles: (p, f) => mapField(p, "paths", (l) => mapList(l, f)),
  saveDocument: (p, f) => mapField(p, "path", str(f)),
  reformatFile: (p, f) => mapField(p, "path", str(f)),
};

/** The editor's answers to those requests: their paths go back. */
const answers: Record<string, (r: unknown, f: Rename) => void> = {
  openFile: (r, f) => mapField(r, "filePath", str(f)),
  openFiles: (r, f) => mapField(r, "opened", (l) => mapList(l, f)),
};

/** The sidecar's answers to the editor's requests. */
const results: Record<string, (r: unknown, f: Rename) => void> = {
  changes: (r, f) => {
    const files = (r as { files?: unknown }).files;
    if (Array.isArray(files)) for (const file of files) mapField(file, "path", str(f));
  },
};

/**
 * A checked path map. Throws a `TypeError` naming the bad entry: a map that
 * silently skipped an entry would send paths the other side does not have.
 */
export class PathMap {
  private readonly entries: Entry[];

  constructor(user: readonly PathMapping[] = []) {
    if (!Array.isArray(user)) throw new TypeError("`pathMap` must be an array of {local, remote}");
    this.entries = user.map((e, i) => {
      const ok = (v: unknown): v is string => typeof v === "string" && v.startsWith("/");
      if (typeof e !== "object" || e === null || !ok(e.local) || !ok(e.remote)) {
        throw new TypeError(
          `pathMap[${i}] must be {local: <absolute path>, remote: <absolute path>} (got ${JSON.stringify(e)})`,
        );
      }
      return { local: trim(e.local), remote: trim(e.remote) };
    });
  }

  /**
   * This map with each local folder also under its real name (`realpath`:
   * symbolic links resolved, undefined where it cannot be), for paths going
   * over only: an editor that names a file by its real path (Neovim names
   * every buffer so) still has it mapped when the user named the folder
   * through a link. Paths coming back keep the user's name.
   */
  withRealNames(realpath: (path: string) => string | undefined): PathMap {
    const out = new PathMap();
    for (const e of this.entries) {
      out.entries.push(e);
      const real = realpath(e.local);
      if (real !== undefined && real.startsWith("/") && trim(real) !== e.local) {
        out.entries.push({ local: trim(real), remote: e.remote, outOnly: true });
      }
    }
    return out;
  }

  /** This map and `more` (mappings of folders it does not map yet). */
  with(more: readonly PathMapping[]): PathMap {
    const out = new PathMap();
    out.entries.push(...this.entries);
    for (const e of new PathMap(more).entries) {
      if (!out.entries.some((known) => known.local === e.local)) out.entries.push(e);
    }
    return out;
  }

  /** No mapping at all: every path passes unchanged. */
  get empty(): boolean {
    return this.entries.length === 0;
  }

  /** A path of the editor's side as the sidecar's side names it. */
  toRemote(path: string): string {
    return this.translate(path, "local", "remote");
  }

  /** A path of the sidecar's side as the editor names it. */
  toLocal(path: string): string {
    return this.translate(path, "remote", "local");
  }

  /** Params the editor sends (a notification, or a request of its own), local → remote. */
  outgoing<T>(method: string, params: T): T {
    return this.apply(outgoing, method, params, (p) => this.toRemote(p));
  }

  /** Params of a request from the sidecar, remote → local. */
  incoming<T>(method: string, params: T): T {
    return this.apply(incoming, method, params, (p) => this.toLocal(p));
  }

  /** The editor's answer to a request from the sidecar, local → remote. */
  answer<T>(method: string, result: T): T {
    return this.apply(answers, method, result, (p) => this.toRemote(p));
  }

  /** The sidecar's answer to a request of the editor, remote → local. */
  result<T>(method: string, result: T): T {
    return this.apply(results, method, result, (p) => this.toLocal(p));
  }

  private translate(path: string, from: Side, to: Side): string {
    // The most specific mapping wins: longest prefix on the side we come from.
    const sorted = [...this.entries].sort((a, b) => b[from].length - a[from].length);
    for (const m of sorted) {
      if (m.outOnly && from === "remote") continue;
      const p = swap(path, m[from], m[to]);
      if (p !== undefined) return p;
    }
    return path;
  }

  private apply<T>(table: Record<string, (v: unknown, f: Rename) => void>, method: string, value: T, f: Rename): T {
    const fn = table[method];
    if (this.empty || !fn || typeof value !== "object" || value === null) return value;
    const out = copy(value);
    fn(out, f);
    return out;
  }
}

/** `s` quoted for a POSIX shell (what `ssh` hands its command line to). */
export function shellQuote(s: string): string {
  if (s !== "" && /^[\w\-._/=:,+@%]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Whether the prefix hands the command to a remote shell as one string
 * (`ssh` joins its arguments with spaces; `docker exec`, `podman exec`,
 * `env`, `wsl.exe -e` pass the words as they are).
 */
export function needsQuoting(prefix: readonly string[], quote?: boolean): boolean {
  if (quote !== undefined) return quote;
  const prog = prefix[0] === undefined ? "" : basename(prefix[0]);
  return prog === "ssh" || prog === "autossh" || prog === "mosh";
}

/** The program and its arguments: `prefix`, then `argv` (each word quoted when the prefix needs it). */
export function commandLine(prefix: readonly string[], argv: readonly string[], quote?: boolean): string[] {
  if (prefix.length === 0) return [...argv];
  const q = needsQuoting(prefix, quote);
  return [...prefix, ...argv.map((a) => (q ? shellQuote(a) : a))];
}
