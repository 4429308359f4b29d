// One review card: the diff as the server computed it, side by side
// (MergeView: original on the left, read-only; `working` on the right,
// editable) or unified, with the reviewer's decisions per hunk and per
// file.
//
// The server holds the truth (the working text, the decisions, the
// version); the card is a view of it that never decides on its own:
// - every decision names the version whose hunks were on screen, and hunk
//   buttons are disabled while an edit is unsaved or a request is out;
// - edits are posted ~200 ms after the last keystroke (and flushed when the
//   page is hidden); until the server answers, CodeMirror's own diff is
//   drawn; then the server's hunks, keeping cursor and scroll;
// - a 409 (another tab changed the review) takes the server's review.
//
// `ReviewCard` is what the rest of the page holds: the review shown, the
// decisions taken on it (per hunk, shown ahead of their answers; per
// file), and the parts it is made of, one file each, which know nothing
// of each other and ask the card through a narrow host interface:
// - `review-editors`: the editors (side by side, unified, the proposed
//   text alone) with the hunks drawn on them (by `review-deco`), the
//   current hunk, scrolling;
// - `review-sync`: the proposal's sync with the server (unsaved edits,
//   the text request, the reviews held back while one is out);
// - `review-chrome`: everything around the editors (header, toolbar,
//   status, save state, notes).

import { api, ApiError, type FileDiagnostics, type HunkDecided, type HunkPlace, type Review } from "./api";
import { anchorDocumentSelection } from "./editor";
import { baseName } from "./dom";
import { note } from "./notes";
import type { Layout } from "./prefs";
import { ReviewChrome } from "./review-chrome";
import { ReviewEditors } from "./review-editors";
import { ProposalSync } from "./review-sync";

export { wideQuery } from "./review-editors";

/** A per-hunk decision shows its buttons disabled once its answer has
 * taken this long. */
const BUSY_SHOWN_AFTER_MS = 150;

export interface ReviewHost {
  folders(): readonly string[];
  /** Something changed that the view's badges show. */
  changed(): void;
  /** The card took the keyboard focus (or was picked). */
  focused(card: ReviewCard): void;
  /** The reviewer dismissed a card the agent had closed. */
  forget(card: ReviewCard): void;
}

export class ReviewCard {
  readonly el: HTMLElement;
  review: Review;
  private readonly editors: ReviewEditors;
  private readonly sync: ProposalSync;
  private readonly chrome: ReviewChrome;

  /** A decision or file action is out, and the card waits for its answer
   * before taking another. */
  private busy = false;
  /** Per-hunk decisions already shown and sent (in order, each after the
   * one before it is answered), not yet answered: see `decideHunk`. */
  private unanswered = 0;
  private decisions: Promise<void> = Promise.resolve();
  /** Counts the times the server's answers did not bear out what this card
   * showed ahead of them; decisions queued before one are not sent. */
  private resyncs = 0;
  /** The review as the server last confirmed it, while decisions shown
   * ahead of their answers are out: shown again if ccbridge cannot be
   * reached, so the card never shows a decision the server does not have. */
  private confirmed: Review | null = null;
  /** Why the agent closed this review before a decision, when it did: the
   * card then stays, read-only, so the proposed text is not lost. */
  private closedNote: string | null = null;

  constructor(
    review: Review,
    private readonly host: ReviewHost,
    globalLayout: Layout,
  ) {
    this.review = review;
    this.editors = new ReviewEditors(
      review,
      {
        review: () => this.review,
        pending: () => this.pending,
        closed: () => this.closed,
        mayDecide: () => this.pending && !this.busy && !this.sync.inFlight,
        dirty: () => this.sync.dirty,
        typed: () => this.sync.edited(),
        decide: (i, d) => void this.decideHunk(i, d),
        leave: () => this.el.focus(),
        render: () => this.renderChrome(),
      },
      globalLayout,
    );
    this.sync = new ProposalSync({
      review: () => this.review,
      closed: () => this.closed,
      busy: () => this.busy,
      deciding: () => this.unanswered > 0,
      answered: () => this.answered(),
      mounted: () => this.editors.mounted,
      text: () => this.editors.text(),
      size: () => this.editors.size(),
      apply: (r) => this.apply(r),
      keep: (r) => {
        this.review = r;
      },
      applyHunk: (d) => this.applyHunk(d),
      saveState: (text, kind) => this.chrome.setSaveState(text, kind),
      render: () => this.renderChrome(),
    });
    this.chrome = new ReviewChrome(review, host.folders(), this.editors.dom, {
      moveHunk: (dir) => this.moveHunk(dir),
      decideHunk: (d) => void this.decideHunk(this.current, d),
      toggleShowAll: () => this.toggleShowAll(),
      fileAction: (kind) => void this.fileAction(kind),
      rejectWithNote: () => this.rejectWithNote(),
      forget: () => this.host.forget(this),
      focused: () => this.host.focused(this),
      proposedText: () => this.proposedText(),
      selectProposed: () => this.editors.selectAll(),
    });
    this.el = this.chrome.el;
    this.renderChrome();
  }

  get id(): number {
    return this.review.id;
  }

  get pending(): boolean {
    return this.review.status === "pending" && this.closedNote === null;
  }

  /** The agent closed it undecided; the card is kept until dismissed. */
  get closed(): boolean {
    return this.closedNote !== null;
  }

  /** The hunk the toolbar and the keys act on. */
  get current(): number {
    return this.editors.current;
  }

  set current(i: number) {
    this.editors.current = i;
  }

  /** The agent closed this review before the reviewer decided (from its
   * terminal, at a new prompt, or by going away): the card stays, read-only,
   * with `why`, a way to copy the proposed text (the reviewer's edits
   * included) and one to dismiss it. */
  closedByAgent(why: string): void {
    this.sync.close();
    this.closedNote = why;
    this.editors.lock();
    this.renderChrome();
  }

  /** The text on the right as it is now, edits included. */
  proposedText(): string {
    return this.editors.text() ?? this.review.working;
  }

  /** Errors (and warnings) in the proposed text beyond those the file has
   * now, by message: "introduces 2 errors". Hidden when none. */
  setProblems(files: FileDiagnostics[], proposed: FileDiagnostics[]): void {
    this.chrome.setProblems(files, proposed);
  }

  /** Creates the editors (separately from the constructor, so the page can
   * paint the first card before building the others). */
  mount(): void {
    this.editors.mount();
  }

  setGlobalLayout(l: Layout): void {
    this.editors.setGlobalLayout(l);
  }

  /** Re-checks the effective layout (window width, choices). */
  relayout(): void {
    this.editors.relayout();
  }

  toggleShowAll(): void {
    this.editors.toggleShowAll();
  }

  destroy(): void {
    this.sync.holdOff();
    this.editors.destroy();
  }

  /** Buttons, labels and status outside the editors. */
  private renderChrome(): void {
    this.chrome.render({
      review: this.review,
      closedNote: this.closedNote,
      pending: this.pending,
      busy: this.busy,
      dirty: this.sync.dirty,
      inFlight: this.sync.inFlight,
      exact: this.editors.exact(),
      current: this.current,
      layout: this.editors.kind,
      showAll: this.editors.showingAll,
    });
  }

  // ------------------------------------------------------------ server updates

  /** A review from the event stream (or a snapshot). */
  serverUpdate(r: Review): void {
    this.sync.serverUpdate(r);
  }

  /** A per-hunk decision from the event stream (this tab's or another's). */
  serverHunk(d: HunkDecided): void {
    this.sync.serverHunk(d);
  }

  /** Follows a per-hunk decision without the whole review, as the server
   * made it: an accept marks the hunk; a reject puts the original's lines
   * back on the proposed side and moves the later hunks by the lines that
   * took out or put back. Only the hunks whose look changed are redrawn.
   * False when `d` does not follow from the review shown (another
   * version, another hunk at that number): then the whole review is
   * needed. `next` picks the hunk current afterwards. */
  private applyHunk(d: HunkDecided, next?: (r: Review) => number): boolean {
    const r = this.review;
    const h = r.hunks[d.index];
    if (d.id !== r.id || d.version !== r.version + 1 || !h || r.originalUnreadable) return false;
    const p = d.hunk;
    if (h.oldStart !== p.oldStart || h.oldLines !== p.oldLines || h.newStart !== p.newStart || h.newLines !== p.newLines) return false;
    const prev = this.current;
    if (d.decision === "accept") {
      const hunks = r.hunks.slice();
      hunks[d.index] = { ...h, accepted: true };
      const after: Review = { ...r, version: d.version, status: d.status, hunks };
      if (d.status !== r.status || !this.editors.mounted) {
        this.current = next ? next(after) : prev;
        this.apply(after);
        return true;
      }
      this.review = after;
      this.current = next ? next(after) : prev;
      this.editors.redrawHunks([d.index, prev, this.current]);
      this.host.changed();
      return true;
    }
    // A reject: the original's lines for the hunk's.
    const rv = this.editors.revert(h);
    if (!rv) return false;
    const shift = h.oldLines - h.newLines;
    const hunks = r.hunks.filter((_, i) => i !== d.index);
    for (let i = d.index; i < hunks.length; i++) hunks[i] = { ...hunks[i]!, newStart: hunks[i]!.newStart + shift };
    const after: Review = { ...r, version: d.version, status: d.status, hunks, working: rv.working };
    const pick = (x: Review) => (next ? next(x) : prev > d.index ? prev - 1 : prev);
    if (!rv.tr || d.status !== r.status) {
      this.current = pick(after);
      this.apply(after);
      return true;
    }
    this.review = after;
    this.current = pick(after);
    this.editors.showRevert(d.index, rv, hunks);
    this.host.changed();
    return true;
  }

  /** Shows `r`: its text on the right, its hunks, its status. */
  private apply(r: Review): void {
    const before = this.review;
    this.review = r;
    if (!this.editors.show(before)) {
      this.renderChrome();
      return;
    }
    this.host.changed();
  }

  /** Posts the right side's text if it changed. Resolves when the server
   * has it (true) or refused it or could not be reached (false). */
  flush(keepalive = false): Promise<boolean> {
    return this.sync.flush(keepalive);
  }

  // ------------------------------------------------------------ decisions

  /** Says why nothing can be decided any more. */
  private notPending(): void {
    const name = baseName(this.review.path);
    note(this.closed ? `${name} was closed by the agent: nothing can be decided here any more.` : `${name} is already ${this.review.status}.`);
  }

  private ready(what: string): boolean {
    if (!this.pending) {
      this.notPending();
      return false;
    }
    if (this.busy) return false;
    if (this.sync.dirty || this.sync.inFlight || !this.editors.exact()) {
      note(`Wait a moment: your edit to ${baseName(this.review.path)} is being saved before you can ${what}.`);
      return false;
    }
    return true;
  }

  /** Accepts or rejects hunk `index`. While other hunks stay undecided
   * afterwards, the review stays pending whatever the answer (the server
   * finishes it when none is left), so the decision is shown at once, as
   * the server will make it (`applyHunk`), and sent behind the ones before
   * it: the reviewer goes on to the next hunk without waiting for the
   * round trip. Each request names the version it was made on, so the
   * server refuses it if anything else changed the review meanwhile; then
   * the card shows the server's review and says so, and the decisions
   * queued after it are not sent. The last undecided hunk's decision
   * finishes the review (the file is written or left): that one waits for
   * the server's answer, as file actions do. */
  async decideHunk(index: number, decision: "accept" | "reject"): Promise<void> {
    if (this.review.originalUnreadable || !this.ready(`${decision} a hunk`)) return;
    const hunk = this.review.hunks[index];
    if (!hunk) return;
    if (decision === "accept" && hunk.accepted) return;
    anchorDocumentSelection();
    if (this.current !== index) {
      const prev = this.current;
      this.current = index;
      this.editors.redrawHunks([prev, index]);
    }
    const next = (r: Review) => (decision === "accept" ? this.nextUndecided(index, r) : this.nextUndecided(index - 1, r));
    const seen = this.review.version;
    const staysPending = this.review.hunks.some((h, i) => i !== index && !h.accepted);
    const ahead: HunkDecided = { id: this.id, version: seen + 1, index, decision, hunk, status: "pending" };
    const before = this.review;
    if (staysPending && this.applyHunk(ahead, next)) {
      this.editors.scrollToCurrent();
      if (!this.unanswered) this.confirmed = before;
      this.unanswered++;
      const resyncs = this.resyncs;
      this.decisions = this.decisions.then(async () => {
        try {
          if (this.resyncs !== resyncs || this.closed) return;
          const d = await api.reviewHunk(this.id, index, decision, seen);
          if (d.version !== seen + 1 || d.status !== "pending" || !sameHunk(d.hunk, hunk)) await this.resync();
        } catch (e) {
          this.resyncs++;
          if (e instanceof ApiError && e.review) {
            this.refused(e);
          } else {
            note(`${baseName(this.review.path)}: the hunk was not ${decision === "accept" ? "accepted" : "rejected"}, ccbridge could not be reached (${e instanceof Error ? e.message : String(e)}).`, "error");
            if (this.confirmed) this.showConfirmed(this.confirmed);
            await this.resync();
          }
        } finally {
          this.unanswered--;
          if (!this.unanswered) {
            this.confirmed = null;
            this.sync.catchUp();
          }
        }
      });
      return;
    }
    await this.answered();
    if (this.review.version !== seen || !this.pending) return;
    // Keys and clicks are refused from now on (`busy`), but the buttons
    // show it only if the answer is slow: a fast one would flash them off
    // and on, and drawing that costs a frame before the answer is shown.
    this.busy = true;
    const showBusy = window.setTimeout(() => {
      if (!this.busy) return;
      this.editors.syncMarkers();
      this.renderChrome();
    }, BUSY_SHOWN_AFTER_MS);
    try {
      const d = await api.reviewHunk(this.id, index, decision, seen);
      this.busy = false;
      if (!this.applyHunk(d, next)) {
        // Not what this page showed (another tab decided too): the whole review.
        const r = await api.review(this.id);
        this.current = next(r);
        this.apply(r);
      }
      this.editors.scrollToCurrent();
    } catch (e) {
      this.busy = false;
      this.refused(e);
      this.editors.redraw();
    } finally {
      window.clearTimeout(showBusy);
    }
    this.sync.catchUp();
  }

  /** Resolves once every decision shown ahead of its answer is answered. */
  private async answered(): Promise<void> {
    while (this.unanswered) await this.decisions;
  }

  /** Shows the server's review, after an answer this card did not expect. */
  private async resync(): Promise<void> {
    this.resyncs++;
    try {
      this.showConfirmed(await api.review(this.id));
    } catch {
      // Unreachable (what was confirmed last stays shown), or closed
      // meanwhile (its `closed` event says so).
    }
  }

  /** Shows `r`, a review the server made, in place of decisions shown
   * ahead of their answers. */
  private showConfirmed(r: Review): void {
    this.current = Math.max(0, Math.min(this.current, r.hunks.length - 1));
    this.apply(r);
  }

  /** The first undecided hunk after `from` (wrapping), else `from`. */
  private nextUndecided(from: number, r: Review): number {
    const n = r.hunks.length;
    for (let k = 1; k <= n; k++) {
      const i = (((from + k) % n) + n) % n;
      if (!r.hunks[i]?.accepted) return i;
    }
    return Math.max(0, Math.min(from, n - 1));
  }

  /** Asks for a note, then rejects the file with it: the agent is told
   * why (Claude Code with its next request, when `ccbridge claude` runs
   * it). */
  rejectWithNote(): void {
    if (!this.pending) {
      this.notPending();
      return;
    }
    this.chrome.askRejectNote((why) => void this.fileAction("reject", why));
  }

  async fileAction(kind: "accept" | "reject" | "dismiss", why?: string): Promise<void> {
    if (!this.pending) {
      this.notPending();
      return;
    }
    if (this.busy) return;
    this.busy = true;
    this.renderChrome();
    try {
      // On the version the decisions already shown make.
      const resyncs = this.resyncs;
      await this.answered();
      if (kind === "accept" && this.resyncs !== resyncs) {
        // One of them was refused or lost: the card shows the server's
        // review now, which may hold a hunk the reviewer rejected. That is
        // not what they chose to accept.
        note(`${baseName(this.review.path)} was not accepted: a hunk decision did not reach ccbridge. The review is shown as it stands; decide again.`, "error");
        this.busy = false;
        this.renderChrome();
        return;
      }
      let r: Review;
      if (kind === "accept") {
        // Accept what the reviewer sees, their last edit included. The edit
        // is saved first (a server that predates `text` on accept would
        // ignore it); a keystroke made in between goes with the acceptance.
        if (this.sync.dirty || this.sync.inFlight) {
          const saved = await this.flush();
          if (!saved) {
            note(`${baseName(this.review.path)} was not accepted: the last edit could not be saved.`, "error");
            this.busy = false;
            this.renderChrome();
            return;
          }
        }
        this.sync.holdOff();
        const now = this.editors.text();
        const text = now !== undefined && now !== this.review.working ? now : undefined;
        r = await api.reviewAccept(this.id, this.review.version, text);
        if (text !== undefined && this.editors.text() === text) this.sync.discard();
      } else {
        this.sync.holdOff();
        this.sync.discard();
        r = kind === "reject" ? await api.reviewReject(this.id, why) : await api.reviewDismiss(this.id);
      }
      this.busy = false;
      this.apply(r);
    } catch (e) {
      this.busy = false;
      this.refused(e);
    }
    this.sync.catchUp();
    this.renderChrome();
  }

  private refused(e: unknown): void {
    const err = e instanceof ApiError ? e : new ApiError(0, String(e), null);
    const name = baseName(this.review.path);
    if (err.review) {
      note(
        err.status === 409
          ? `${name} changed in another tab, so nothing was decided: look at it again.`
          : `${name}: ${err.message}`,
        "warn",
      );
      this.sync.discard();
      this.apply(err.review);
    } else {
      note(`${name}: ${err.message}`, "error");
    }
  }

  // ------------------------------------------------------------ navigation

  moveHunk(dir: 1 | -1): void {
    this.editors.moveHunk(dir);
  }

  setCurrent(i: number, scroll: boolean): void {
    this.editors.setCurrent(i, scroll);
  }

  /** Brings the current hunk into sight, unless it is already well inside
   * the editor (`ReviewEditors.scrollToCurrent`). */
  scrollToCurrent(): void {
    this.editors.scrollToCurrent();
  }

  /** The current hunk's marker, for focus. */
  focusCard(): void {
    this.el.focus({ preventScroll: true });
    this.el.scrollIntoView({ block: "nearest" });
  }

  /** Puts the keyboard in the proposed text. */
  focusEditor(): void {
    this.editors.focus();
  }

  /** Sends unsaved edits as the page goes away. A keepalive request (which
   * survives the page) carries at most 64 KiB; false when the edit is
   * bigger and may be lost. */
  flushOnExit(): boolean {
    return this.sync.flushOnExit();
  }

  hasUnsaved(): boolean {
    return this.sync.unsaved() || this.unanswered > 0;
  }
}

function sameHunk(a: HunkPlace, b: HunkPlace): boolean {
  return a.oldStart === b.oldStart && a.oldLines === b.oldLines && a.newStart === b.newStart && a.newLines === b.newLines;
}
