/**
 * Removing the sidecar's lock file when the sidecar could not.
 *
 * ccbridge removes its own lock file on every orderly way out (stdin closed,
 * `shutdown`, SIGINT/SIGTERM/SIGHUP). It cannot after SIGKILL, and when the
 * host process is exiting nobody waits for it to do so: then this module
 * removes it, synchronously (it runs in `process.on("exit")`). Only a lock
 * file that is provably this sidecar's is removed: its `serverProcess.pid`
 * (a ccbridge extension of the lock file) must be the child's pid, so a
 * newer ccbridge that reused the port keeps its file.
 */
import { readFileSync, rmSync } from "node:fs";

/** Removes `lockFile` if it belongs to the sidecar `serverPid`; never throws. */
export function removeOwnLockFile(lockFile: string | null | undefined, serverPid: number | undefined): boolean {
  if (!lockFile || serverPid === undefined) return false;
  try {
    const lock: unknown = JSON.parse(readFileSync(lockFile, "utf8"));
    if (!isOwnedBy(lock, serverPid)) return false;
    rmSync(lockFile, { force: true });
    return true;
  } catch {
    // Gone already (the usual case), or unreadable: not ours to touch.
    return false;
  }
}

function isOwnedBy(lock: unknown, serverPid: number): boolean {
  if (typeof lock !== "object" || lock === null) return false;
  const server = (lock as { serverProcess?: unknown }).serverProcess;
  if (typeof server === "object" && server !== null) {
    return (server as { pid?: unknown }).pid === serverPid;
  }
  // A ccbridge too old to record itself: the editor's pid is ours.
  return (lock as { pid?: unknown }).pid === process.pid;
}
