// The proposal's sync with the server, for one review card: the
// reviewer's edits to the proposed text go to the server ~200 ms after
// the last keystroke (`edited`, `flush`; a keepalive request as the page
// goes away), retried with a growing wait while ccbridge cannot be
// reached, and answered by the review the server made of them (a 409: the
// review another tab made). While an edit is unsaved or a request is out,
// the reviews and per-hunk decisions the event stream brings are held
// back and followed once it is answered (`catchUp`): an answer never
// replaces a newer review, nor a newer review the reviewer's typing.
//
// Separate from the card so that what is unsaved, what is out and what
// waits is decided in one place. It shows nothing itself: it hands the
// server's reviews to the card (`SyncHost.apply`) and says how the saving
// goes (`SyncHost.saveState`).

import { api, ApiError, type HunkDecided, type Review } from "./api";
import { baseName } from "./dom";
import { note } from "./notes";

/** Edits are posted this long after the last keystroke. */
const EDIT_DEBOUNCE_MS = 200;

/** What the sync needs from its card. */
export interface SyncHost {
  /** The review shown (its id, version, path). */
  review(): Review;
  /** The agent closed the review: the server's changes are not followed. */
  closed(): boolean;
  /** A decision or file action is out. */
  busy(): boolean;
  /** Per-hunk decisions shown ahead of their answers are out; a text goes
   * on the version they make, once `answered` resolves. */
  deciding(): boolean;
  answered(): Promise<void>;
  /** Whether the editors are built (there is a proposed side to send). */
  mounted(): boolean;
  /** The proposed side's text, edits included; undefined before the
   * editors are built. */
  text(): string | undefined;
  /** Its length in editor positions (a line break counts one). */
  size(): number;
  /** Shows `r`, a review the server made. */
  apply(r: Review): void;
  /** Takes `r` as the review shown without showing it (the editor has
   * newer typing than its text). */
  keep(r: Review): void;
  /** Follows a per-hunk decision in place; false when it does not follow
   * from the review shown. */
  applyHunk(d: HunkDecided): boolean;
  /** The card's save state ("Saving…", "Saved"). */
  saveState(text: string, kind?: "" | "saving" | "error"): void;
  /** Something the card's chrome shows changed (a request went out or
   * came back). */
  render(): void;
}

export class ProposalSync {
  /** Unsaved typing; posted after the debounce. */
  private edit = false;
  /** The text request out, if any. */
  private sending: Promise<boolean> | null = null;
  private timer = 0;
  private retry = 0;
  /** The newest review the stream sent while a request was out. */
  private later: Review | null = null;
  /** The newest version a per-hunk event announced while a request was
   * out (the review itself is fetched if the request did not reach it). */
  private laterVersion = 0;

  constructor(private readonly host: SyncHost) {}

  /** The proposed side has typing the server does not have yet. */
  get dirty(): boolean {
    return this.edit;
  }

  /** A text request is out. */
  get inFlight(): boolean {
    return this.sending !== null;
  }

  /** Typing not yet saved, or a text request out. */
  unsaved(): boolean {
    return this.edit || this.inFlight;
  }

  /** The reviewer typed: the text goes after the debounce. */
  edited(): void {
    this.edit = true;
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.flush(), EDIT_DEBOUNCE_MS);
    this.host.saveState("Editing…", "saving");
  }

  /** Cancels the post the debounce (or a retry) has planned. */
  holdOff(): void {
    window.clearTimeout(this.timer);
  }

  /** The unsaved edit is not to be sent: it went with an acceptance, or
   * a review the server made takes its place. */
  discard(): void {
    this.edit = false;
  }

  /** The agent closed the review: nothing more is sent or followed. */
  close(): void {
    window.clearTimeout(this.timer);
    this.edit = false;
    this.later = null;
  }

  /** Posts the right side's text if it changed. Resolves when the server
   * has it (true) or refused it or could not be reached (false). */
  async flush(keepalive = false): Promise<boolean> {
    window.clearTimeout(this.timer);
    // The text goes on the version the decisions shown make.
    if (this.host.deciding()) await this.host.answered();
    while (this.sending) await this.sending;
    if (!this.edit || !this.host.mounted()) return !this.edit;
    this.sending = this.send(keepalive);
    try {
      return await this.sending;
    } finally {
      this.sending = null;
      this.catchUp();
    }
  }

  private async send(keepalive: boolean): Promise<boolean> {
    const text = this.host.text();
    if (text === undefined) return false;
    const review = this.host.review();
    const version = review.version;
    this.host.saveState("Saving…", "saving");
    this.host.render();
    try {
      const r = await api.reviewText(review.id, text, version, keepalive);
      this.retry = 0;
      if (this.host.text() === text) {
        this.edit = false;
        this.host.saveState("Saved");
        this.sending = null;
        this.host.apply(r);
      } else {
        // More typing meanwhile: keep the new version; the pending timer
        // posts the rest.
        this.host.keep(r);
      }
      return true;
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError(0, String(e), null);
      const current = err.review;
      if (current) {
        this.edit = false;
        this.host.saveState(err.status === 409 ? "Changed elsewhere" : "Not saved", "error");
        const name = baseName(this.host.review().path);
        note(
          err.status === 409
            ? `${name} changed in another tab; showing its current text (the edit made here was not applied).`
            : `${name}: ${err.message}`,
          "warn",
        );
        this.sending = null;
        this.host.apply(current);
      } else if (err.status === 404) {
        this.edit = false;
        this.host.saveState("Review closed", "error");
      } else if (err.status >= 400 && err.status < 500) {
        // Refused for what the edit is (413: larger than ccbridge takes):
        // sending it again would be refused again, every 16 s for ever.
        // It stays here, unsaved, for the reviewer to change.
        const why = err.status === 413 ? "it is larger than ccbridge takes (40 MiB)" : err.message;
        this.host.saveState("Not saved", "error");
        note(`${baseName(this.host.review().path)}: the edit was not saved: ${why}.`, "error");
      } else {
        // ccbridge unreachable or failing: keep the edit, try again.
        this.retry = Math.min(this.retry + 1, 5);
        const wait = 500 * 2 ** this.retry;
        this.host.saveState(`Not saved yet — retrying in ${Math.round(wait / 1000)} s`, "error");
        window.clearTimeout(this.timer);
        this.timer = window.setTimeout(() => void this.flush(), wait);
      }
      return false;
    } finally {
      this.host.render();
    }
  }

  /** Sends unsaved edits as the page goes away. A keepalive request (which
   * survives the page) carries at most 64 KiB; false when the edit is
   * bigger and may be lost. */
  flushOnExit(): boolean {
    if (!this.edit) return true;
    const size = this.host.size();
    const keepalive = size < 60_000;
    void this.flush(keepalive);
    return keepalive;
  }

  // ------------------------------------------------------------ server updates

  /** A review from the event stream (or a snapshot). */
  serverUpdate(r: Review): void {
    const shown = this.host.review();
    if (r.id !== shown.id || this.host.closed()) return;
    if (r.version < shown.version) return;
    if (r.version === shown.version && r.status === shown.status) return;
    if (this.edit || this.inFlight || this.host.busy()) {
      // Our own request's answer may be older than this (the stream can
      // overtake it): keep it for when the request is done.
      if (!this.later || r.version > this.later.version) this.later = r;
      return;
    }
    this.host.apply(r);
  }

  /** A per-hunk decision from the event stream (this tab's or another's). */
  serverHunk(d: HunkDecided): void {
    if (d.id !== this.host.review().id || this.host.closed() || d.version <= this.host.review().version) return;
    if (this.edit || this.inFlight || this.host.busy()) {
      this.laterVersion = Math.max(this.laterVersion, d.version);
      return;
    }
    if (!this.host.applyHunk(d)) void this.reload();
  }

  /** Fetches the whole review and shows it, if it is newer than the one
   * shown (what the events said could not be followed). */
  private async reload(): Promise<void> {
    try {
      const r = await api.review(this.host.review().id);
      if (r.version > this.host.review().version) this.serverUpdate(r);
    } catch {
      // Closed meanwhile: its `closed` event says so.
    }
  }

  /** After a request: shows a newer review the stream brought meanwhile.
   * (With unsaved edits the next text request gets a 409 instead.) */
  catchUp(): void {
    const r = this.later;
    this.later = null;
    if (this.edit || this.inFlight || this.host.busy()) return;
    if (r && r.version > this.host.review().version) this.host.apply(r);
    if (this.laterVersion > this.host.review().version) void this.reload();
  }
}
