/**
 * `start()`: the package's entry point. Checks the options, spawns the
 * sidecar, and hands back a bridge only once ccbridge has answered
 * `initialize`, so a caller never holds a half-started bridge; on any
 * failure the child is ended before the error is thrown.
 */
import { realpathSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { Bridge } from "./bridge.js";
import { resolveBin, serveArgs, Sidecar } from "./process.js";
import { commandLine, PathMap, type PathMapping } from "./remote.js";
import type { StartOptions } from "./types.js";

/**
 * Spawns `ccbridge serve --stdio`, sends `initialize` (protocol version 3)
 * and resolves with the bridge once ccbridge answered.
 *
 * @throws {SpawnError} the binary cannot be run (with the install hint)
 * @throws {SidecarExitedError} it exited before answering (bad arguments, ...), with its stderr
 * @throws {ProtocolVersionError} it does not speak version 3
 * @throws {BridgeTimeoutError} no answer within `initializeTimeoutMs`
 * @throws {RemoteError} it refused `initialize` (e.g. a relative workspace folder)
 */
export async function start(options: StartOptions): Promise<Bridge> {
  checkOptions(options);
  // Before anything is spawned: a bad map is a TypeError naming the entry.
  const paths = pathMapOf(options);
  const prefix = options.command ?? [];
  // Across a prefix the binary is the other side's: this side's
  // $CCBRIDGE_BIN names nothing there.
  const bin = prefix.length > 0 ? options.bin || "ccbridge" : resolveBin(options.bin);
  const argv = serveArgs({
    workspaceFolders: options.workspaceFolders.map((f) => paths.toRemote(f)),
    ideName: options.ideName,
    logFile: options.logFile,
    // Across a prefix the lock file is the other machine's, where this
    // side's pids name no process (Claude and Qwen Code drop a lock whose
    // pid is dead): the sidecar records its own parent there.
    pid: prefix.length > 0 ? undefined : options.pid,
    extra: options.args,
  });
  const [program, ...args] = commandLine(prefix, [bin, ...argv], options.quoteCommand);
  const sidecar = new Sidecar({
    bin: program ?? bin,
    args,
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
  });
  await sidecar.spawned;
  const automatic = (options.pathMap ?? []).length === 0 && prefix.length === 0;
  const bridge = Bridge._create(sidecar, options, paths, automatic ? linkedFolders : undefined);
  try {
    await bridge._initialize(options.initializeTimeoutMs ?? 15_000);
  } catch (e) {
    await bridge._abort();
    throw e;
  }
  // One turn after the caller's `await start()` continued: what ccbridge
  // sent meanwhile is delivered to the handlers registered by then.
  setImmediate(() => bridge._open());
  return bridge;
}

function checkOptions(o: StartOptions): void {
  if (!Array.isArray(o.workspaceFolders) || o.workspaceFolders.length === 0) {
    throw new TypeError("start(): `workspaceFolders` needs at least one absolute path");
  }
  for (const f of o.workspaceFolders) {
    if (typeof f !== "string" || !isAbsolute(f)) {
      throw new TypeError(`start(): workspace folders must be absolute paths (got ${JSON.stringify(f)})`);
    }
  }
  if (
    o.command !== undefined &&
    (!Array.isArray(o.command) || o.command.some((w) => typeof w !== "string") || o.command[0] === "")
  ) {
    throw new TypeError("start(): `command` must be an array of strings, the program first (e.g. [\"ssh\", \"-T\", \"host\"])");
  }
  if (typeof o.ideName !== "string" || o.ideName === "") {
    throw new TypeError("start(): `ideName` must be a non-empty string");
  }
}

/**
 * The paths the bridge renames. With a map (a sidecar elsewhere), the user's,
 * each local folder also under its real name for paths going over. Without
 * one, on this machine: a workspace folder named through a symbolic link is
 * mapped to its real path both ways. The sidecar and Claude name it by its
 * real path (as Claude names its working directory), the editor by the
 * link's: unmapped, a dirty buffer was not seen as the file Claude asked
 * about, and `openFile` opened a second tab under the real name.
 */
function pathMapOf(options: StartOptions): PathMap {
  if ((options.pathMap ?? []).length > 0 || (options.command ?? []).length > 0) {
    return new PathMap(options.pathMap ?? []).withRealNames(realpathOrNothing);
  }
  return new PathMap(linkedFolders(options.workspaceFolders));
}

/**
 * Each of `folders` named through a symbolic link, mapped to its real
 * path: the sidecar and Claude name the files by the real one, the editor
 * by the link's (the same machine, no map given).
 */
function linkedFolders(folders: readonly string[]): PathMapping[] {
  return folders.flatMap((folder) => {
    const real = realpathOrNothing(folder);
    return real !== undefined && real !== resolve(folder) ? [{ local: folder, remote: real }] : [];
  });
}

/** `path` with symbolic links resolved, or undefined where it cannot be (it does not exist). */
function realpathOrNothing(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
