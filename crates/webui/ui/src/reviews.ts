// The reviews view: one card per review (`ReviewCard`), newest first, the
// page's one layout switch, and the keys that move between cards and hunks.

import { api, ApiError, type ClosedReview, type FileDiagnostics, type HunkDecided, type Review } from "./api";
import { baseName, clock, h, replace } from "./dom";
import { note } from "./notes";
import { prefs, type Layout } from "./prefs";

import { ReviewCard, wideQuery, type ReviewHost } from "./review-card";

// ---------------------------------------------------------------- the list

export interface ReviewListHost {
  folders(): readonly string[];
  /** The pending count changed. */
  counted(pending: number): void;
  /** A review appeared that the reviewer has not seen. */
  arrived(review: Review): void;
}

/** Close reasons for which an undecided card stays (see `closed`); the
 * server keeps the same ones for a reload. */
const KEPT_WHEN_CLOSED = new Set(["claudeClosed", "newPrompt", "disconnected"]);

/** What a card the agent closed undecided says, from the server's note
 * (`<path>: closed by ...`). */
function closedText(path: string, noteText: string): string {
  const what = noteText.startsWith(`${path}: `) ? noteText.slice(path.length + 2) : noteText;
  return `Not decided here: ${what}. ccbridge did not write it; its text (your edits included) stays here to copy until you dismiss it.`;
}

export class ReviewList {
  readonly el: HTMLElement;
  private readonly list: HTMLElement;
  private readonly empty: HTMLElement;
  /** What happened to the last review that left (shown when none is left). */
  private readonly lastReview: HTMLElement;
  private readonly cards = new Map<number, ReviewCard>();
  private layout: Layout = prefs.layout();
  private focusedId: number | null = null;
  private readonly layoutButtons: Record<Layout, HTMLButtonElement>;
  private restored = false;
  private mountQueue: ReviewCard[] = [];

  constructor(private readonly host: ReviewListHost) {
    const seg = (l: Layout, label: string) =>
      h(
        "button",
        {
          type: "button",
          class: "seg",
          "data-layout": l,
          "aria-pressed": String(this.layout === l),
          onclick: () => this.setLayout(l),
        },
        label,
      );
    this.layoutButtons = { split: seg("split", "Side by side"), unified: seg("unified", "Unified") };
    this.list = h("div", { class: "review-list" });
    this.lastReview = h("p", { class: "last-review", "data-last-review": "", hidden: true });
    this.empty = h(
      "div",
      { class: "empty" },
      h("p", { class: "empty-title" }, "Nothing to review"),
      this.lastReview,
      h("p", null, "When an agent proposes an edit, it appears here for you to accept or reject, hunk by hunk."),
    );
    this.el = h(
      "div",
      { class: "reviews" },
      h(
        "div",
        { class: "view-toolbar" },
        h("h1", { class: "view-title" }, "Reviews"),
        h("span", { class: "spacer" }),
        h("div", { class: "segmented", role: "group", "aria-label": "Layout of every review" }, this.layoutButtons.split, this.layoutButtons.unified),
      ),
      this.empty,
      this.list,
    );
    wideQuery.addEventListener("change", () => {
      this.renderLayoutSwitch();
      for (const c of this.cards.values()) c.relayout();
    });
    this.renderLayoutSwitch();
  }

  /** The one layout switch says what the reviews show: unified, with side
   * by side unavailable, where the window is too narrow for it. */
  private renderLayoutSwitch(): void {
    const wide = wideQuery.matches;
    const shown: Layout = wide ? this.layout : "unified";
    for (const [k, b] of Object.entries(this.layoutButtons)) b.setAttribute("aria-pressed", String(k === shown));
    const split = this.layoutButtons.split;
    split.disabled = !wide;
    split.title = wide ? "Side by side: the original on the left, the proposal on the right (l)" : "The window is too narrow for side by side";
    this.layoutButtons.unified.title = "Unified: removed and added lines in one column (l)";
  }

  private makeHost(): ReviewHost {
    return {
      folders: () => this.host.folders(),
      changed: () => this.count(),
      focused: (card) => this.setFocused(card.id, false),
      forget: (card) => {
        this.remove(card.id);
        this.count();
        this.order();
        // Remembered by the server, so a reload or another tab drops it too.
        api.forgetClosed(card.id).catch((e: unknown) => {
          if (!(e instanceof ApiError && e.status === 404)) note(`Dismissed here, but ccbridge did not hear it: ${e instanceof Error ? e.message : String(e)}`, "warn");
        });
      },
    };
  }

  /** The snapshot's reviews (newest first) and, from a server that keeps
   * them, the proposals the agent closed undecided: the list becomes
   * exactly these. */
  setAll(reviews: Review[], closed?: ClosedReview[]): void {
    const ids = new Set(reviews.map((r) => r.id));
    const closedIds = closed ? new Set(closed.map((c) => c.review.id)) : null;
    for (const [id, card] of this.cards) {
      if (!ids.has(id)) {
        // Closed cards stay if the server keeps them (or cannot say).
        if (!card.closed || (closedIds && !closedIds.has(id))) this.remove(id);
      } else card.serverUpdate(reviews.find((r) => r.id === id)!);
    }
    for (const r of reviews) if (!this.cards.has(r.id)) this.add(r, false);
    for (const c of closed ?? []) {
      if (this.cards.has(c.review.id)) continue;
      this.add(c.review, false);
      this.cards.get(c.review.id)?.closedByAgent(closedText(c.review.path, c.note));
    }
    this.order();
    if (!this.restored) {
      this.restored = true;
      const f = prefs.focus();
      const card = f ? this.cards.get(f.review) : undefined;
      if (card && f) {
        card.mount();
        this.setFocused(card.id, false);
        card.current = Math.min(f.hunk, Math.max(0, card.review.hunks.length - 1));
        requestAnimationFrame(() => {
          card.setCurrent(card.current, true);
        });
      } else {
        const first = this.sorted()[0];
        if (first) this.setFocused(first.id, false);
      }
    }
    this.mountSoon();
    this.count();
  }

  /** A per-hunk decision (see `HunkDecided`). */
  hunk(d: HunkDecided): void {
    this.cards.get(d.id)?.serverHunk(d);
    this.count();
  }

  /** A closed proposal was dismissed (here or in another tab). */
  forgotten(id: number): void {
    const card = this.cards.get(id);
    if (!card?.closed) return;
    this.remove(id);
    this.count();
    this.order();
  }

  /** A review appeared or changed. */
  update(r: Review): void {
    const card = this.cards.get(r.id);
    if (card) {
      card.serverUpdate(r);
      this.count();
      return;
    }
    this.add(r, true);
    this.order();
    this.mountSoon();
    this.count();
    if (r.status === "pending") this.host.arrived(r);
  }

  /** The agent closed a review. One it closed before the reviewer decided
   * (answered in its terminal, cancelled, a new prompt, gone) stays on the
   * page, read-only, with the note, until dismissed: its text (the
   * reviewer's edits too) would otherwise be lost. */
  closed(id: number, reason: string, noteText: string): void {
    const card = this.cards.get(id);
    if (!card) return;
    note(noteText);
    this.remember(card.review, noteText);
    if (card.pending && KEPT_WHEN_CLOSED.has(reason)) {
      card.closedByAgent(closedText(card.review.path, noteText));
    } else {
      this.remove(id);
    }
    this.order();
    this.count();
  }

  /** Says, where the list is empty, how the last review ended (the
   * server's note: `<path>: you accepted it (...)`, `<path>: closed by ...`). */
  private remember(r: Review, noteText: string): void {
    const what = noteText.startsWith(`${r.path}: `) ? noteText.slice(r.path.length + 2) : noteText;
    replace(this.lastReview, `Last review (${clock(Date.now())}): ${baseName(r.path)}: ${what}.`);
    this.lastReview.hidden = false;
  }

  /** The language servers' diagnostics: each card says what its proposed
   * text introduces. */
  setDiagnostics(files: FileDiagnostics[], proposed: FileDiagnostics[]): void {
    this.diagnostics = { files, proposed };
    for (const c of this.cards.values()) c.setProblems(this.diagnostics.files, this.diagnostics.proposed);
  }

  private diagnostics: { files: FileDiagnostics[]; proposed: FileDiagnostics[] } = { files: [], proposed: [] };

  private add(r: Review, fresh: boolean): void {
    const card = new ReviewCard(r, this.makeHost(), this.layout);
    card.setProblems(this.diagnostics.files, this.diagnostics.proposed);
    this.cards.set(r.id, card);
    this.mountQueue.push(card);
    if (fresh && this.focusedId === null) this.setFocused(r.id, false);
  }

  private remove(id: number): void {
    const card = this.cards.get(id);
    if (!card) return;
    const wasFocused = this.focusedId === id;
    const next = wasFocused ? this.neighbour(id, 1) ?? this.neighbour(id, -1) : null;
    card.destroy();
    card.el.remove();
    this.cards.delete(id);
    this.mountQueue = this.mountQueue.filter((c) => c !== card);
    if (wasFocused) {
      this.focusedId = null;
      if (next) this.setFocused(next.id, document.activeElement === document.body);
    }
  }

  private sorted(): ReviewCard[] {
    return [...this.cards.values()].sort((a, b) => b.review.createdAt - a.review.createdAt || b.id - a.id);
  }

  private order(): void {
    const cards = this.sorted();
    cards.forEach((c, i) => {
      if (this.list.children[i] !== c.el) this.list.insertBefore(c.el, this.list.children[i] ?? null);
    });
    this.empty.hidden = cards.length > 0;
  }

  /** Builds the editors one card per frame, the focused and newest first,
   * so a big review does not hold up the others' first paint. */
  private mountSoon(): void {
    const order = this.sorted();
    this.mountQueue.sort((a, b) => {
      const fa = a.id === this.focusedId ? -1 : order.indexOf(a);
      const fb = b.id === this.focusedId ? -1 : order.indexOf(b);
      return fa - fb;
    });
    const step = () => {
      const card = this.mountQueue.shift();
      if (!card) return;
      if (this.cards.get(card.id) === card) card.mount();
      if (this.mountQueue.length) requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  }

  private count(): void {
    let pending = 0;
    for (const c of this.cards.values()) if (c.pending) pending++;
    this.host.counted(pending);
  }

  setLayout(l: Layout): void {
    this.layout = l;
    prefs.setLayout(l);
    this.renderLayoutSwitch();
    for (const c of this.cards.values()) c.setGlobalLayout(l);
  }

  /** `l`: the other layout for every review (the page has one switch). */
  toggleGlobalLayout(): void {
    if (!wideQuery.matches) {
      note("The window is too narrow for side by side; the reviews stay unified.");
      return;
    }
    this.setLayout(this.layout === "split" ? "unified" : "split");
  }

  private neighbour(id: number, dir: 1 | -1): ReviewCard | null {
    const cards = this.sorted();
    const i = cards.findIndex((c) => c.id === id);
    return cards[i + dir] ?? null;
  }

  setFocused(id: number, move: boolean): void {
    if (this.focusedId !== id) {
      this.cards.get(this.focusedId ?? -1)?.el.classList.remove("is-focused");
      this.focusedId = id;
    }
    const card = this.cards.get(id);
    if (!card) return;
    card.el.classList.add("is-focused");
    prefs.setFocus(id, card.current);
    if (move) card.focusCard();
  }

  /** The card the keys act on. */
  focused(): ReviewCard | null {
    const id = this.focusedId;
    const card = id === null ? undefined : this.cards.get(id);
    if (card) return card;
    const first = this.sorted()[0];
    if (first) this.setFocused(first.id, false);
    return first ?? null;
  }

  /** `n`/`p`: the next or previous review. Wherever the keyboard focus is
   * (no card holding it, the card gone, a view just shown): with no card
   * picked, `n` picks the first and `p` the last; at either end the card
   * stays picked and comes into view. */
  moveReview(dir: 1 | -1): void {
    const cards = this.sorted();
    if (!cards.length) return;
    const id = this.focusedId;
    const at = id === null ? -1 : cards.findIndex((c) => c.id === id);
    const next = at < 0 ? (dir === 1 ? cards[0] : cards[cards.length - 1]) : (cards[at + dir] ?? cards[at]);
    if (next) this.setFocused(next.id, true);
  }

  pendingCount(): number {
    let n = 0;
    for (const c of this.cards.values()) if (c.pending) n++;
    return n;
  }

  /** Saves every unsaved edit now; on exit, false if one may be lost. */
  flushAll(exiting: boolean): boolean {
    let safe = true;
    for (const c of this.cards.values()) {
      if (exiting) safe = c.flushOnExit() && safe;
      else void c.flush();
    }
    return safe;
  }

  hasUnsaved(): boolean {
    for (const c of this.cards.values()) if (c.hasUnsaved()) return true;
    return false;
  }
}
