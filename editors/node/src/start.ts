/**
 * `start()`: the package's entry point. Checks the options, spawns the
 * sidecar, and hands back a bridge only once ccbridge has answered
 * `initialize`, so a caller never holds a half-started bridge; on any
 * failure the child is ended before the error is thrown.
 */
import { isAbsolute } from "node:path";
import { Bridge } from "./bridge.js";
import { resolveBin, serveArgs, Sidecar } from "./process.js";
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
  const bin = resolveBin(options.bin);
  const sidecar = new Sidecar({
    bin,
    args: serveArgs({
      workspaceFolders: options.workspaceFolders,
      ideName: options.ideName,
      logFile: options.logFile,
      pid: options.pid,
      extra: options.args,
    }),
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
  });
  await sidecar.spawned;
  const bridge = Bridge._create(sidecar, options);
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
  if (typeof o.ideName !== "string" || o.ideName === "") {
    throw new TypeError("start(): `ideName` must be a non-empty string");
  }
}
