/**
 * Starting, watching and ending the `ccbridge serve --stdio` child.
 *
 * Kept apart from the protocol so the lifetime rules are in one place:
 * the child is spawned in its own process group (a Ctrl-C in the host's
 * terminal is the host's to handle; the child follows the host through
 * {@link ./exit-hooks} or through its stdin closing), its stderr is kept as
 * a short tail for error messages, and its end is reported once, after its
 * output has been read to the end.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { SpawnError } from "./errors.js";

/** What the child's end looked like. */
export interface ExitStatus {
  /** The exit status, or `null` when a signal ended it. */
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** How to run the sidecar. */
export interface SidecarCommand {
  bin: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string | undefined;
}

/**
 * The binary to run: `bin` if given, else `$CCBRIDGE_BIN`, else `ccbridge`
 * looked up on `PATH` by the system.
 */
export function resolveBin(bin: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (bin !== undefined && bin !== "") return bin;
  const fromEnv = env["CCBRIDGE_BIN"];
  return fromEnv !== undefined && fromEnv !== "" ? fromEnv : "ccbridge";
}

/** The arguments of `ccbridge serve --stdio` for these options. */
export function serveArgs(o: {
  workspaceFolders: readonly string[];
  ideName: string;
  logFile?: string | undefined;
  pid?: number | undefined;
  extra?: readonly string[] | undefined;
}): string[] {
  const args = ["serve", "--stdio", "--ide-name", o.ideName];
  for (const dir of o.workspaceFolders) args.push("--workspace", dir);
  if (o.logFile !== undefined) args.push("--log-file", o.logFile);
  // On the command line rather than in `initialize`: the lock file is
  // written before `initialize`, and should name the right process at once.
  if (o.pid !== undefined) args.push("--pid", String(o.pid));
  return args.concat(o.extra ?? []);
}

/** The last lines a stream wrote, bounded in lines and bytes. */
export class StderrTail {
  private lines: string[] = [];
  private partial = "";

  constructor(
    private readonly maxLines = 40,
    private readonly maxChars = 16_384,
  ) {}

  /** Adds a chunk; returns the lines it completed. */
  push(chunk: string): string[] {
    const parts = (this.partial + chunk).split(/\r?\n/);
    this.partial = parts.pop() ?? "";
    if (this.partial.length > this.maxChars) this.partial = this.partial.slice(-this.maxChars);
    for (const line of parts) this.lines.push(line);
    this.trim();
    return parts;
  }

  text(): string {
    const all = this.partial ? [...this.lines, this.partial] : this.lines;
    return all.join("\n");
  }

  private trim(): void {
    if (this.lines.length > this.maxLines) this.lines.splice(0, this.lines.length - this.maxLines);
    let size = this.lines.reduce((n, l) => n + l.length + 1, 0);
    while (size > this.maxChars && this.lines.length > 1) size -= (this.lines.shift()?.length ?? 0) + 1;
  }
}

/** A running (or ended) sidecar process. */
export class Sidecar {
  readonly child: ChildProcessWithoutNullStreams;
  readonly bin: string;
  /** Resolves once the process runs; rejects with {@link SpawnError}. */
  readonly spawned: Promise<void>;
  /** Resolves once the process has exited and its output was read. */
  readonly exited: Promise<ExitStatus>;
  private readonly tail = new StderrTail();
  private status: ExitStatus | undefined;
  private readonly lineListeners: Array<(line: string) => void> = [];

  constructor(cmd: SidecarCommand) {
    this.bin = cmd.bin;
    this.child = spawn(cmd.bin, cmd.args, {
      cwd: cmd.cwd,
      env: cmd.env,
      stdio: ["pipe", "pipe", "pipe"],
      // Its own process group: signals from the host's terminal reach the
      // host, which decides (exit-hooks.ts); the child never outlives it
      // because its stdin closes when the host goes.
      detached: process.platform !== "win32",
      windowsHide: true,
    });
    // A write after the child died must not crash the host with an
    // unhandled 'error'; the end is reported through `exited`.
    this.child.stdin.on("error", () => {});
    this.child.stdout.on("error", () => {});
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk: string) => {
      for (const line of this.tail.push(chunk)) for (const l of this.lineListeners) l(line);
    });
    this.child.stderr.on("error", () => {});

    let failed: ((e: Error) => void) | undefined;
    this.spawned = new Promise<void>((resolve, reject) => {
      this.child.once("spawn", () => resolve());
      failed = (e) => reject(new SpawnError(cmd.bin, e));
    });
    // Never an unhandled rejection: callers that care await `spawned`.
    this.spawned.catch(() => {});

    this.exited = new Promise<ExitStatus>((resolve) => {
      const done = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (this.status) return;
        this.status = { code, signal };
        resolve(this.status);
      };
      // 'close' comes after stdout and stderr ended, so the last frames and
      // the last stderr lines are in; 'exit' alone might be early. A
      // grandchild holding the pipes open must not keep us waiting, hence
      // the bound after 'exit'.
      this.child.once("close", (code, signal) => done(code, signal));
      this.child.once("exit", (code, signal) => {
        setTimeout(() => done(code, signal), 1_000).unref();
      });
      // One permanent listener: 'error' also comes for a failed kill, and
      // an 'error' without a listener would crash the host.
      this.child.on("error", (e) => {
        if (this.child.pid === undefined) {
          failed?.(e);
          done(null, null);
        }
      });
    });
  }

  /** The child's pid (`undefined` if it never started). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether the process has ended (and its end was observed). */
  get hasExited(): boolean {
    return this.status !== undefined || this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** The last lines the child wrote on stderr. */
  stderrTail(): string {
    return this.tail.text();
  }

  /** Calls `listener` with each complete stderr line. */
  onStderrLine(listener: (line: string) => void): void {
    this.lineListeners.push(listener);
  }

  /** Ends the child's stdin: the sidecar treats that as "the editor is gone" and exits 0. */
  closeStdin(): void {
    if (!this.child.stdin.destroyed) this.child.stdin.end();
  }

  /** Sends `signal` if the child still runs. Never throws. */
  kill(signal: NodeJS.Signals): void {
    if (this.hasExited) return;
    try {
      this.child.kill(signal);
    } catch {
      // Already gone.
    }
  }

  /** Resolves `true` once the child exited, `false` after `ms`. */
  async waitExit(ms: number): Promise<boolean> {
    if (this.status) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), Math.max(0, ms));
    });
    try {
      return await Promise.race([this.exited.then(() => true as const), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
