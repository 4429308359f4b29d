/**
 * The errors this package throws, one class per thing that can go wrong, so
 * an editor can tell "ccbridge is not installed" (show the install hint)
 * from "ccbridge crashed" (show its stderr) without parsing messages.
 *
 * Every class extends {@link BridgeError} and carries a stable `code`
 * string; `instanceof` works in both the ESM and the CommonJS build as long
 * as one copy of the package is loaded.
 */
import type { ChangeConflict } from "./protocol.js";

/** The `code` of each error class. */
export type BridgeErrorCode =
  | "CCBRIDGE_SPAWN"
  | "CCBRIDGE_PROTOCOL_VERSION"
  | "CCBRIDGE_EXITED"
  | "CCBRIDGE_TIMEOUT"
  | "CCBRIDGE_REMOTE"
  | "CCBRIDGE_STOPPED";

/** Base class of every error this package throws or emits. */
export class BridgeError extends Error {
  readonly code: BridgeErrorCode;

  constructor(code: BridgeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The hint shown whenever the binary cannot be run. */
export const INSTALL_HINT =
  "install ccbridge (`cargo install --path crates/ccbridge` in a ccbridge checkout) " +
  "or point the `bin` option or the CCBRIDGE_BIN environment variable at the binary";

/**
 * `ccbridge` could not be started at all: not found (`ENOENT`), not
 * executable (`EACCES`), or another `spawn` failure.
 */
export class SpawnError extends BridgeError {
  /** The binary that was tried. */
  readonly bin: string;
  /** The system error code (`ENOENT`, `EACCES`, ...) when there is one. */
  readonly errno: string | undefined;

  constructor(bin: string, cause: unknown) {
    const errno = errnoOf(cause);
    const why =
      errno === "ENOENT"
        ? "not found"
        : errno === "EACCES"
          ? "not executable"
          : cause instanceof Error
            ? cause.message
            : String(cause);
    super("CCBRIDGE_SPAWN", `cannot start \`${bin}\`: ${why}; ${INSTALL_HINT}`, { cause });
    this.bin = bin;
    this.errno = errno;
  }
}

/**
 * The sidecar does not speak the editor-protocol version this package
 * needs (an older or newer ccbridge than this package was written for).
 */
export class ProtocolVersionError extends BridgeError {
  /** The version this package asked for. */
  readonly wanted: number;
  /** The versions the sidecar says it speaks, when it said. */
  readonly supported: readonly number[];

  constructor(wanted: number, supported: readonly number[], detail?: string) {
    const list = supported.length > 0 ? supported.join(", ") : "unknown";
    super(
      "CCBRIDGE_PROTOCOL_VERSION",
      `ccbridge does not speak editor protocol version ${wanted} (it speaks: ${list})` +
        `${detail ? `: ${detail}` : ""}; install a ccbridge that matches this package`,
    );
    this.wanted = wanted;
    this.supported = supported;
  }
}

/**
 * The sidecar exited without being asked to (a crash, bad arguments, a
 * signal from elsewhere). `stderrTail` holds its last lines of stderr,
 * which usually say why.
 */
export class SidecarExitedError extends BridgeError {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderrTail: string;

  constructor(exitCode: number | null, signal: NodeJS.Signals | null, stderrTail: string, when?: string) {
    const how = signal ? `was killed by ${signal}` : `exited with status ${exitCode ?? "unknown"}`;
    const tail = stderrTail.trim();
    super(
      "CCBRIDGE_EXITED",
      `ccbridge ${how}${when ? ` ${when}` : ""}` + (tail ? `; its last output:\n${tail}` : ""),
    );
    this.exitCode = exitCode;
    this.signal = signal;
    this.stderrTail = stderrTail;
  }
}

/** Something the sidecar should have answered did not come in time. */
export class BridgeTimeoutError extends BridgeError {
  readonly afterMs: number;

  constructor(what: string, afterMs: number, stderrTail?: string) {
    const tail = stderrTail?.trim();
    super(
      "CCBRIDGE_TIMEOUT",
      `ccbridge did not answer ${what} within ${afterMs} ms` + (tail ? `; its last output:\n${tail}` : ""),
    );
    this.afterMs = afterMs;
  }
}

/** The sidecar answered one of our requests with a JSON-RPC error. */
export class RemoteError extends BridgeError {
  readonly method: string;
  /** The JSON-RPC error code (`-32602` for invalid params, ...). */
  readonly rpcCode: number;
  readonly data: unknown;

  constructor(method: string, rpcCode: number, message: string, data?: unknown) {
    super("CCBRIDGE_REMOTE", `ccbridge refused ${method} (${rpcCode}): ${message}`);
    this.method = method;
    this.rpcCode = rpcCode;
    this.data = data;
  }
}

/**
 * A `revert` (or `keep`) named a version of the file older than the one
 * ccbridge has seen: the review on screen is out of date. Nothing was
 * done; fetch `changes` again and let the user decide on what is there now.
 */
export class ChangeStaleError extends RemoteError {
  readonly stale = true;
}

/**
 * A revert was refused because the file changed on disk since ccbridge
 * read it; nothing was written. `conflict` holds the three versions (at
 * the session's start, as the review showed it, on disk now) for the user
 * to compare.
 */
export class ChangeConflictError extends RemoteError {
  readonly conflict: ChangeConflict;

  constructor(method: string, rpcCode: number, message: string, data: unknown, conflict: ChangeConflict) {
    super(method, rpcCode, message, data);
    this.conflict = conflict;
  }
}

/** A request was made on a bridge that was stopped or whose sidecar exited. */
export class BridgeStoppedError extends BridgeError {
  constructor(method: string, cause?: unknown) {
    super("CCBRIDGE_STOPPED", `cannot send ${method}: the bridge is stopped`, { cause });
  }
}

/** `error.code` of a Node system error, if any. */
export function errnoOf(e: unknown): string | undefined {
  if (typeof e === "object" && e !== null && "code" in e) {
    const code = (e as { code: unknown }).code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}
