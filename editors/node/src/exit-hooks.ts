/**
 * Ending the sidecars when the host process ends.
 *
 * A sidecar must not outlive its editor with a lock file that points Claude
 * at a dead IDE. Three ways the host can go, three answers:
 *
 * - `process.exit()`, the event loop running dry, an uncaught exception:
 *   `process.on("exit")` runs, and each live bridge kills its child and
 *   removes its lock file synchronously.
 * - SIGINT, SIGTERM, SIGHUP: listening for a signal replaces Node's default
 *   (dying), so the hook only acts when it is the **only** listener: it
 *   cleans up, removes itself and raises the signal again, so the host dies
 *   of it exactly as it would have. When the host has listeners of its own,
 *   the host has taken the signal over: the hook does nothing, and if the
 *   host then exits, the "exit" hook cleans up.
 * - SIGKILL or a crash of the runtime: nothing runs in the host, but the
 *   child's stdin closes, and ccbridge exits on that and removes its lock
 *   file itself.
 *
 * Hooks are installed with the first live bridge and removed with the last,
 * so the package has no global effect while no bridge runs.
 */

/** What a live bridge does when the host goes; must be synchronous. */
export interface HostExitCleanup {
  onHostExit(): void;
}

const live = new Set<HostExitCleanup>();
const SIGNALS: NodeJS.Signals[] =
  process.platform === "win32" ? ["SIGINT", "SIGTERM"] : ["SIGINT", "SIGTERM", "SIGHUP"];
let installed = false;

function cleanupAll(): void {
  for (const c of [...live]) {
    try {
      c.onHostExit();
    } catch {
      // Best effort: the host is going away.
    }
  }
}

function onExit(): void {
  cleanupAll();
}

function onSignal(signal: NodeJS.Signals): void {
  // Our own listener counts as one.
  if (process.listenerCount(signal) > 1) return;
  cleanupAll();
  uninstall();
  process.kill(process.pid, signal);
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on("exit", onExit);
  for (const s of SIGNALS) process.on(s, onSignal);
}

function uninstall(): void {
  if (!installed) return;
  installed = false;
  process.removeListener("exit", onExit);
  for (const s of SIGNALS) process.removeListener(s, onSignal);
}

/** Registers a live bridge; returns the function that unregisters it. */
export function registerHostExit(c: HostExitCleanup): () => void {
  live.add(c);
  install();
  return () => {
    live.delete(c);
    if (live.size === 0) uninstall();
  };
}
