/**
 * The diffs on screen: the bookkeeping behind "a diff is one promise".
 *
 * ccbridge asks with `showDiff`, the editor answers "shown" at once, and
 * the verdict follows as a `diffResolved` notification whenever the user
 * decides. Meanwhile ccbridge may close the diff itself (`closeDiff`: the
 * user answered in Claude's terminal, a newer proposal replaced it, the
 * session ended). Each open diff has an AbortController: closing aborts
 * its signal with the reason, and a verdict for a diff that is no longer
 * open is not sent (ccbridge would only report it as invalid).
 */
import type { CloseReason, DiffResolvedParams, DiffVerdict } from "./protocol.js";

/** What to send for a settled diff, and what was wrong with the verdict if anything. */
export interface Settled {
  params: DiffResolvedParams;
  /** Set when the handler's verdict was unusable; `params` then dismisses. */
  problem?: string;
}

export class OpenDiffs {
  private readonly open = new Map<number, AbortController>();

  /** A diff is shown. The same id again (not expected) aborts the older one as replaced. */
  add(id: number): AbortController {
    this.open.get(id)?.abort("replaced" satisfies CloseReason);
    const control = new AbortController();
    this.open.set(id, control);
    return control;
  }

  /**
   * The handler resolved `verdict` for the diff `control` belongs to:
   * what to send, or `undefined` when the diff was closed first.
   */
  settle(id: number, control: AbortController, verdict: unknown): Settled | undefined {
    if (this.open.get(id) !== control) return undefined;
    this.open.delete(id);
    const checked = checkVerdict(verdict);
    if (typeof checked === "string") return { params: { id, decision: "dismissed" }, problem: checked };
    return { params: { id, ...checked } };
  }

  /** ccbridge closed the diff: its handler's signal aborts with `reason`. */
  close(id: number, reason: CloseReason): void {
    const control = this.open.get(id);
    if (!control) return;
    this.open.delete(id);
    control.abort(reason);
  }

  /** The sidecar ended: every open diff is closed. */
  closeAll(reason: CloseReason): void {
    for (const id of [...this.open.keys()]) this.close(id, reason);
  }
}

/** The verdict as it goes on the wire, or what is wrong with it (handlers are plain JS too). */
export function checkVerdict(v: unknown): DiffVerdict | string {
  if (typeof v !== "object" || v === null) {
    return `the showDiff handler resolved with ${JSON.stringify(v)}, not a verdict`;
  }
  const { decision, contents } = v as { decision?: unknown; contents?: unknown };
  switch (decision) {
    case "accepted":
      if (contents === undefined || contents === null) return { decision };
      if (typeof contents !== "string") return "an accepted verdict's `contents` must be a string";
      return { decision, contents };
    case "rejected":
    case "dismissed":
      return { decision };
    default:
      return `unknown decision ${JSON.stringify(decision)} (use "accepted", "rejected" or "dismissed")`;
  }
}

