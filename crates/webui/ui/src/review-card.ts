// One review card: the diff as the server computed it, side by side
// (MergeView: original on the left, read-only; `working` on the right,
// editable) or unified, with the reviewer's decisions per hunk and per
// file. Its hunks are drawn by `review-deco`.
//
// The server holds the truth (the working text, the decisions, the
// version); the card is a view of it that never decides on its own:
// - every decision names the version whose hunks were on screen, and hunk
//   buttons are disabled while an edit is unsaved or a request is out;
// - edits are posted ~200 ms after the last keystroke (and flushed when the
//   page is hidden); until the server answers, CodeMirror's own diff is
//   drawn; then the server's hunks, keeping cursor and scroll;
// - a 409 (another tab changed the review) takes the server's review.

import { Annotation, ChangeSet, Compartment, EditorSelection, EditorState, RangeSet, StateEffect, Text, Transaction, type Extension, type Range as CMRange } from "@codemirror/state";
import { Decoration, EditorView, type ViewUpdate } from "@codemirror/view";
import { MergeView, unifiedMergeView, updateOriginalDoc, type Change } from "@codemirror/merge";
import { api, ApiError, type Diagnostic, type FileDiagnostics, type HunkDecided, type HunkPlace, type Review } from "./api";
import { anchorDocumentSelection, baseEditor, wrappedLines } from "./editor";
import { ServerDiff, installExactChunks, lineSeparatorOf, lineStart, serverDiffConfig, textOf } from "./hunks";
import { languageExtension } from "./languages";
import { forgetScheme, trackScheme } from "./theme";
import { baseName, clock, displayPath, flag, h, replace } from "./dom";
import { note } from "./notes";
import { prefs, type Layout } from "./prefs";

import { coalesceMergeMeasures, keepingAlignment, sameHeight, setHunkDeco, patchHunkDeco, hunkDeco, markerLabel, HunkMarker, HunkMirror, acceptedLine, currentLine, lineDecos, type HunkPatch, type MarkerActions } from "./review-deco";

installExactChunks();
coalesceMergeMeasures();

/** A per-hunk decision shows its buttons disabled once its answer has
 * taken this long. */
const BUSY_SHOWN_AFTER_MS = 150;
/** Edits are posted this long after the last keystroke. */
const EDIT_DEBOUNCE_MS = 200;
const COLLAPSE = { margin: 3, minSize: 6 };
/** Narrower than this, side by side falls back to unified. */
export const wideQuery = window.matchMedia("(min-width: 900px)");

/** Marks a transaction the page made itself (a server text, a redraw), as
 * opposed to the reviewer's typing. */
const Remote = Annotation.define<boolean>();

// ---------------------------------------------------------------- the card

type Editors =
  | { kind: "split"; merge: MergeView; a: EditorView; b: EditorView }
  | { kind: "unified"; b: EditorView }
  | { kind: "single"; b: EditorView };

export interface ReviewHost {
  folders(): readonly string[];
  /** Something changed that the view's badges show. */
  changed(): void;
  /** The card took the keyboard focus (or was picked). */
  focused(card: ReviewCard): void;
  /** The reviewer dismissed a card the agent had closed. */
  forget(card: ReviewCard): void;
}

const STATUS_TEXT: Record<string, string> = {
  pending: "Waiting for your review",
  accepted: "Accepted — Claude is writing the file",
  rejected: "Rejected — the file stays as it was",
  dismissed: "Dismissed — answer in the terminal",
};

export class ReviewCard {
  readonly el: HTMLElement;
  review: Review;
  private showAll = false;
  private editors: Editors | null = null;
  private original: Text;
  private sepA: string;
  private sepB: string;
  private serverDiff: ServerDiff | null = null;
  /** The key of the pending "is the current hunk in sight" measure. */
  private readonly scrollCheck = {};
  private readonly diffConfig = serverDiffConfig(() => this.serverDiff);
  private readonly readOnly = new Compartment();
  private readonly unifiedConf = new Compartment();

  /** Unsaved typing; posted after the debounce. */
  private dirty = false;
  /** The text request out, if any. */
  private sending: Promise<boolean> | null = null;
  private timer = 0;
  private retry = 0;
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
  /** The newest review the stream sent while a request was out. */
  private later: Review | null = null;
  /** Why the agent closed this review before a decision, when it did: the
   * card then stays, read-only, so the proposed text is not lost. */
  private closedNote: string | null = null;
  current = 0;
  private actions: MarkerActions;

  // Parts of the card updated in place.
  private statusEl: HTMLElement;
  private statusText: HTMLElement;
  private countsEl: HTMLElement;
  /** What a language server found in the proposed text that the file does
   * not have now ("introduces 2 errors"), before anyone accepts it. */
  private readonly problemsEl: HTMLElement = h("span", { class: "badge problems", "data-proposal-problems": "", hidden: true });
  private saveEl: HTMLElement;
  private hunkLabel: HTMLElement;
  private editorBox: HTMLElement;
  private messageBox: HTMLElement;
  private closedBox: HTMLElement;
  private closedText: HTMLElement;
  private buttons: Record<string, HTMLButtonElement> = {};

  constructor(
    review: Review,
    private readonly host: ReviewHost,
    private globalLayout: Layout,
  ) {
    this.review = review;
    const orig = review.original ?? "";
    this.sepA = lineSeparatorOf(orig);
    this.sepB = lineSeparatorOf(review.working || orig);
    this.original = textOf(orig, this.sepA);
    this.actions = {
      decide: (el, d) => {
        const i = this.markerIndex(el);
        if (i !== null) void this.decideHunk(i, d);
      },
      select: (el) => {
        const i = this.markerIndex(el);
        if (i !== null) this.setCurrent(i, false);
      },
      enabled: () => this.hunksEnabled(),
      place: (oldStart) => {
        const i = this.hunkByOldStart(oldStart);
        return i === null ? null : { index: i, total: this.review.hunks.length };
      },
    };

    const folders = host.folders();
    const shown = displayPath(review.path, folders);
    const slash = shown.lastIndexOf("/");
    const dir = slash >= 0 ? shown.slice(0, slash + 1) : "";
    const btn = (action: string, label: string, title: string, onclick: () => void, cls = "btn") => {
      const b = h("button", { type: "button", class: cls, "data-action": action, title, onclick }, label);
      this.buttons[action] = b;
      return b;
    };
    this.statusText = h("span", { class: "status-text" });
    this.statusEl = h("span", { class: "status" }, this.statusText);
    this.countsEl = h("span", { class: "counts" });
    this.saveEl = h("span", { class: "save-state", "aria-live": "polite" });
    this.hunkLabel = h("span", { class: "hunk-position", "aria-live": "polite" });
    this.editorBox = h("div", { class: "editor-box" });
    this.messageBox = h("div", { class: "review-message", hidden: true });
    this.closedText = h("span", { class: "closed-text" });
    this.closedBox = h(
      "div",
      { class: "review-message closed-message", "data-closed": "", role: "status", hidden: true },
      this.closedText,
      h(
        "span",
        { class: "closed-actions" },
        btn("copy-proposed", "Copy proposed text", "Copy the text on the right (your edits included) to the clipboard", () => this.copyProposed()),
        btn("forget", "Dismiss", "Remove this card from the page", () => this.host.forget(this)),
      ),
    );

    const header = h(
      "header",
      { class: "card-header" },
      h(
        "h2",
        { class: "path", title: review.path },
        dir ? h("span", { class: "dir" }, dir) : null,
        h("span", { class: "name" }, baseName(shown)),
      ),
      review.isNewFile ? h("span", { class: "badge new" }, "New file") : null,
      this.countsEl,
      this.problemsEl,
      this.statusEl,
      h("span", { class: "spacer" }),
      h(
        "span",
        { class: "meta" },
        review.session ? `from ${review.session.agent.name} #${review.session.id} · ` : "",
        clock(review.createdAt),
      ),
    );

    const toolbar = h(
      "div",
      { class: "card-toolbar", role: "toolbar", "aria-label": `Review of ${baseName(review.path)}` },
      h(
        "div",
        { class: "group hunk-nav" },
        btn("prev-hunk", "‹", "Previous hunk (k)", () => this.moveHunk(-1), "btn icon"),
        this.hunkLabel,
        btn("next-hunk", "›", "Next hunk (j)", () => this.moveHunk(1), "btn icon"),
        btn("accept-hunk", "Accept hunk", "Accept the current hunk (a)", () => void this.decideHunk(this.current, "accept"), "btn accept"),
        btn("reject-hunk", "Reject hunk", "Reject the current hunk (r)", () => void this.decideHunk(this.current, "reject"), "btn reject"),
      ),
      this.saveEl,
      h("span", { class: "spacer" }),
      h(
        "div",
        { class: "group" },
        btn("toggle-collapse", "Show all lines", "Show or fold the unchanged lines (e)", () => this.toggleShowAll(), "btn quiet"),
      ),
      h(
        "div",
        { class: "group decide" },
        btn("dismiss", "Dismiss", "Close without deciding: Claude's prompt in the terminal decides", () => void this.fileAction("dismiss")),
        btn("reject-note", "Reject with a note…", "Reject every change to this file and tell the agent why", () => this.rejectWithNote(), "btn quiet"),
        btn("reject-file", "Reject file", "Reject every change to this file (R)", () => void this.fileAction("reject"), "btn reject"),
        btn("accept-file", "Accept file", "Accept the file as it is on the right (A)", () => void this.fileAction("accept"), "btn primary"),
      ),
    );

    this.el = h(
      "article",
      {
        class: "card review",
        "data-review": review.id,
        "data-status": review.status,
        tabindex: -1,
        "aria-label": `Review of ${shown}`,
        onfocusin: () => this.host.focused(this),
      },
      header,
      toolbar,
      this.closedBox,
      this.messageBox,
      this.editorBox,
    );
    this.el.addEventListener("mousedown", () => this.host.focused(this));
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

  /** The agent closed this review before the reviewer decided (from its
   * terminal, at a new prompt, or by going away): the card stays, read-only,
   * with `why`, a way to copy the proposed text (the reviewer's edits
   * included) and one to dismiss it. */
  closedByAgent(why: string): void {
    window.clearTimeout(this.timer);
    this.dirty = false;
    this.later = null;
    this.closedNote = why;
    const ed = this.editors;
    if (ed) {
      ed.b.dispatch({ effects: this.readOnly.reconfigure(this.lockedExtension()), annotations: Remote.of(true) });
      this.redraw();
    }
    this.renderChrome();
  }

  /** Whether the right side takes typing: read-only once decided; once
   * closed by the agent not editable at all (its text can still be
   * selected and copied). */
  private lockedExtension(): Extension {
    return this.closed ? [EditorState.readOnly.of(true), EditorView.editable.of(false)] : EditorState.readOnly.of(!this.pending);
  }

  /** The text on the right as it is now, edits included. */
  proposedText(): string {
    return this.editors?.b.state.sliceDoc() ?? this.review.working;
  }

  /** Errors (and warnings) in the proposed text beyond those the file has
   * now, by message: "introduces 2 errors". Hidden when none. */
  setProblems(files: FileDiagnostics[], proposed: FileDiagnostics[]): void {
    const of = (list: FileDiagnostics[]) => list.find((f) => f.path === this.review.path)?.diagnostics ?? [];
    const added = (severity: string): Diagnostic[] => {
      const before = new Map<string, number>();
      for (const d of of(files)) if (d.severity === severity) before.set(d.message, (before.get(d.message) ?? 0) + 1);
      return of(proposed).filter((d) => {
        if (d.severity !== severity) return false;
        const n = before.get(d.message) ?? 0;
        if (n > 0) before.set(d.message, n - 1);
        return n === 0;
      });
    };
    const errors = added("Error");
    const warnings = added("Warning");
    const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? "" : "s"}`;
    const parts = [errors.length ? plural(errors.length, "error") : "", warnings.length ? plural(warnings.length, "warning") : ""].filter(Boolean);
    this.problemsEl.hidden = parts.length === 0;
    this.problemsEl.classList.toggle("has-errors", errors.length > 0);
    this.problemsEl.dataset.errors = String(errors.length);
    this.problemsEl.textContent = parts.length ? `introduces ${parts.join(", ")}` : "";
    this.problemsEl.title = [...errors, ...warnings].map((d) => `line ${d.range.start.line + 1}: ${d.message}`).join("\n");
  }

  private copyProposed(): void {
    const text = this.proposedText();
    const name = baseName(this.review.path);
    const selectIt = () => {
      const b = this.editors?.b;
      if (b) {
        b.dispatch({ selection: EditorSelection.single(0, b.state.doc.length), annotations: Remote.of(true) });
        b.focus();
      }
      note(`The proposed text of ${name} is selected: copy it with Ctrl-C.`);
    };
    if (!navigator.clipboard) {
      selectIt();
      return;
    }
    navigator.clipboard.writeText(text).then(
      () => {
        this.el.dataset["copied"] = "";
        note(`Copied the proposed text of ${name}.`);
      },
      selectIt,
    );
  }

  /** Creates the editors (separately from the constructor, so the page can
   * paint the first card before building the others). */
  mount(): void {
    if (this.editors) return;
    const t = performance.now();
    this.build();
    // A performance mark (shown in the browser's performance tools): how long building the editors took.
    performance.measure(`ccbridge:mount:${this.id}`, { start: t, end: performance.now() });
  }

  /** The layout this card shows: the page's one layout switch, except
   * where it cannot apply (a new file has no left side; a window narrower
   * than `wideQuery` has no room for two; an unreadable original has no
   * diff). */
  private layout(): "split" | "unified" | "single" {
    if (this.review.originalUnreadable) return "single";
    if (this.review.isNewFile) return "unified";
    return this.globalLayout === "split" && wideQuery.matches ? "split" : "unified";
  }

  // ------------------------------------------------------------ building

  private proposedExtensions(): Extension[] {
    return [
      baseEditor({
        lineSeparator: this.sepB,
        editable: true,
        onEscape: () => this.el.focus(),
        label: `Proposed text of ${baseName(this.review.path)} (editable; Escape leaves it)`,
      }),
      languageExtension(this.review.language),
      EditorView.editorAttributes.of({ "data-side": "proposed" }),
      wrappedLines(),
      this.readOnly.of(this.lockedExtension()),
      hunkDeco,
      EditorView.updateListener.of((u) => this.onUpdate(u)),
    ];
  }

  private build(keep?: { doc: string; head: number; topLine: number }): void {
    const kind = this.layout();
    const working = keep ? keep.doc : this.review.working;
    const b = textOf(working, this.sepB);
    if (!keep) this.serverDiff = new ServerDiff(this.original, b, this.review.hunks);
    replace(this.editorBox);
    const collapse = this.showAll ? undefined : COLLAPSE;
    if (kind === "split") {
      const merge = new MergeView({
        a: {
          doc: this.original,
          extensions: [
            baseEditor({
              lineSeparator: this.sepA,
              editable: false,
              onEscape: () => this.el.focus(),
              label: `Original text of ${baseName(this.review.path)} (read-only)`,
            }),
            languageExtension(this.review.language),
            EditorView.editorAttributes.of({ "data-side": "original" }),
            wrappedLines(),
            hunkDeco,
          ],
        },
        b: { doc: b, extensions: this.proposedExtensions() },
        parent: this.editorBox,
        gutter: true,
        highlightChanges: true,
        diffConfig: this.diffConfig,
        ...(collapse ? { collapseUnchanged: collapse } : {}),
      });
      this.editors = { kind, merge, a: merge.a, b: merge.b };
      trackScheme(merge.a);
      trackScheme(merge.b);
    } else if (kind === "unified") {
      const view = new EditorView({
        parent: this.editorBox,
        state: EditorState.create({
          doc: b,
          extensions: [this.proposedExtensions(), this.unifiedConf.of(this.unifiedExtension())],
        }),
      });
      this.editors = { kind, b: view };
      trackScheme(view);
    } else {
      const view = new EditorView({
        parent: this.editorBox,
        state: EditorState.create({ doc: b, extensions: this.proposedExtensions() }),
      });
      this.editors = { kind, b: view };
      trackScheme(view);
    }
    this.editorBox.dataset["layout"] = kind;
    const bView = this.editors.b;
    if (keep) {
      const head = Math.min(keep.head, bView.state.doc.length);
      const line = bView.state.doc.line(Math.min(Math.max(1, keep.topLine), bView.state.doc.lines));
      bView.dispatch({ selection: EditorSelection.cursor(head), annotations: Remote.of(true) });
      this.redraw();
      if (keep.topLine > 1) this.scrollTo(line.from, "top");
    } else {
      this.redraw();
    }
    this.renderChrome();
  }

  private unifiedExtension(): Extension {
    return unifiedMergeView({
      original: this.original,
      mergeControls: false,
      gutter: true,
      highlightChanges: true,
      syntaxHighlightDeletions: true,
      diffConfig: this.diffConfig,
      ...(this.showAll ? {} : { collapseUnchanged: COLLAPSE }),
    });
  }

  private destroyEditors(): { doc: string; head: number; topLine: number } | null {
    const ed = this.editors;
    if (!ed) return null;
    const b = ed.b;
    const scroller = ed.kind === "split" ? ed.merge.dom : b.scrollDOM;
    const rect = scroller.getBoundingClientRect();
    const top = b.lineBlockAtHeight(Math.max(0, rect.top - b.documentTop + 4));
    const keep = {
      doc: b.state.sliceDoc(),
      head: b.state.selection.main.head,
      topLine: b.state.doc.lineAt(top.from).number,
    };
    if (ed.kind === "split") {
      forgetScheme(ed.a);
      forgetScheme(ed.b);
      ed.merge.destroy();
    } else {
      forgetScheme(b);
      b.destroy();
    }
    this.editors = null;
    return keep;
  }

  /** Rebuilds the editors (layout change), keeping text, cursor, scroll. */
  private rebuild(): void {
    const keep = this.destroyEditors();
    this.build(keep ?? undefined);
  }

  setGlobalLayout(l: Layout): void {
    this.globalLayout = l;
    this.relayout();
  }

  /** Re-checks the effective layout (window width, choices). */
  relayout(): void {
    if (!this.editors) return;
    const want = this.layout();
    if (want !== this.editors.kind) this.rebuild();
    else this.renderChrome();
  }

  toggleShowAll(): void {
    this.showAll = !this.showAll;
    const ed = this.editors;
    if (ed?.kind === "split") {
      ed.merge.reconfigure({ collapseUnchanged: this.showAll ? undefined : COLLAPSE });
    } else if (ed?.kind === "unified") {
      ed.b.dispatch({ effects: this.unifiedConf.reconfigure(this.unifiedExtension()) });
    }
    this.renderChrome();
  }

  destroy(): void {
    window.clearTimeout(this.timer);
    this.destroyEditors();
  }

  // ------------------------------------------------------------ drawing

  /** Whether the editors show exactly the texts of the server's hunks. */
  private exact(): boolean {
    const ed = this.editors;
    if (!ed || !this.serverDiff || !this.serverDiff.changes) return false;
    return !this.dirty && this.serverDiff.matches(this.originalDoc(), ed.b.state.doc);
  }

  private originalDoc(): Text {
    const ed = this.editors;
    return ed?.kind === "split" ? ed.a.state.doc : this.original;
  }

  /** Hunk markers and colours for the current state. While the right side
   * has unsaved edits the markers stay where they are (mapped through the
   * edits, so nothing jumps) and are switched off by the card's
   * `is-dirty` class; the server's answer redraws them. */
  private redraw(): void {
    const ed = this.editors;
    if (!ed) return;
    if (this.dirty && this.serverDiff) {
      this.renderChrome();
      return;
    }
    const d = this.serverDiff;
    const hunks = this.review.hunks;
    if (this.current >= hunks.length) this.current = Math.max(0, hunks.length - 1);
    const decoB: CMRange<Decoration>[] = [];
    const decoA: CMRange<Decoration>[] = [];
    this.decorated = false;
    if (d?.changes && this.exact()) {
      const a = this.originalDoc();
      const b = ed.b.state.doc;
      d.changes.forEach((c, i) => this.hunkDecos(i, c, a, b, decoB, decoA));
      this.decorated = true;
    }
    ed.b.dispatch({ effects: setHunkDeco.of(RangeSet.of(decoB, true)), annotations: Remote.of(true) });
    if (ed.kind === "split") {
      ed.a.dispatch({ effects: setHunkDeco.of(RangeSet.of(decoA, true)), annotations: Remote.of(true) });
    }
    this.syncMarkers();
    this.renderChrome();
  }

  /** The hunk decorations stand for the server's diff as it is now
   * (`redraw` drew them for it, and every change since was patched in):
   * a few hunks can be redrawn on their own. */
  private decorated = false;

  /** Hunk `i`'s marker (and its mirror) and line colours, into `outB` and
   * `outA`. */
  private hunkDecos(i: number, c: Change, a: Text, b: Text, outB: CMRange<Decoration>[], outA: CMRange<Decoration>[]): void {
    const hunks = this.review.hunks;
    const hunk = hunks[i];
    const ed = this.editors;
    if (!hunk || !ed) return;
    const current = i === this.current && this.pending;
    outB.push(
      Decoration.widget({
        widget: new HunkMarker(i, hunks.length, hunk.oldStart, hunk.accepted, current, hunk.newLines, hunk.oldLines, this.actions),
        block: true,
        side: -2,
      }).range(c.fromB),
    );
    if (ed.kind === "split") {
      outA.push(
        Decoration.widget({
          widget: new HunkMirror(i, hunks.length, hunk.oldStart, hunk.accepted, current, hunk.oldLines, this.actions),
          block: true,
          side: -2,
        }).range(c.fromA),
      );
    }
    if (hunk.accepted) {
      lineDecos(b, c.fromB, c.toB, acceptedLine, outB);
      lineDecos(a, c.fromA, c.toA, acceptedLine, outA);
    }
    if (current) {
      lineDecos(b, c.fromB, c.toB, currentLine, outB);
      lineDecos(a, c.fromA, c.toA, currentLine, outA);
    }
  }

  /** Redraws hunks `touched` only (their markers and colours), where
   * `redraw` would have redrawn every hunk; `goneB`/`goneA`: places (in
   * each document as it is after `changeB`) whose decorations go as well,
   * those of a reverted hunk. `changeB`, a transaction on the proposed
   * side, is dispatched with the new decorations in one update;
   * `changeAligned`: it leaves the two sides aligned (see
   * `keepingAlignment`; a change of markers alone always does). Falls
   * back to `redraw` when the decorations are not the diff's. */
  private redrawHunks(
    touched: readonly number[],
    goneB: [number, number] | null = null,
    goneA: [number, number] | null = null,
    changeB: Transaction | null = null,
    changeAligned = false,
  ): void {
    const ed = this.editors;
    const d = this.serverDiff;
    if (!ed) return;
    const b = changeB ? changeB.newDoc : ed.b.state.doc;
    if (!this.decorated || this.dirty || !d?.changes || !d.matches(this.originalDoc(), b)) {
      if (changeB) ed.b.dispatch(changeB);
      this.redraw();
      return;
    }
    if (this.current >= this.review.hunks.length) this.current = Math.max(0, this.review.hunks.length - 1);
    const a = this.originalDoc();
    const patchesB: HunkPatch[] = [];
    const patchesA: HunkPatch[] = [];
    if (goneB) patchesB.push({ from: goneB[0], to: goneB[1], add: [] });
    if (goneA) patchesA.push({ from: goneA[0], to: goneA[1], add: [] });
    for (const i of new Set(touched)) {
      const c = d.changes[i];
      if (!c) continue;
      const addB: CMRange<Decoration>[] = [];
      const addA: CMRange<Decoration>[] = [];
      this.hunkDecos(i, c, a, b, addB, addA);
      patchesB.push({ from: c.fromB, to: Math.max(c.fromB, c.toB - 1), add: addB });
      patchesA.push({ from: c.fromA, to: Math.max(c.fromA, c.toA - 1), add: addA });
    }
    const annotations = [Remote.of(true), Transaction.addToHistory.of(false)];
    keepingAlignment(ed.kind === "split" ? ed.merge : null, !changeB || changeAligned, () => {
      if (changeB) {
        ed.b.dispatch([changeB, changeB.state.update({ effects: patchHunkDeco.of(patchesB), annotations })]);
      } else {
        ed.b.dispatch({ effects: patchHunkDeco.of(patchesB), annotations });
      }
      if (ed.kind === "split" && patchesA.length) ed.a.dispatch({ effects: patchHunkDeco.of(patchesA), annotations });
    });
    this.syncMarkers();
    this.renderChrome();
  }

  /** The number of the hunk that starts at line `oldStart` of the
   * original (hunks are in order there, and never start at one line). */
  private hunkByOldStart(oldStart: number): number | null {
    const hunks = this.review.hunks;
    let lo = 0;
    let hi = hunks.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const at = hunks[mid]!.oldStart;
      if (at === oldStart) return mid;
      if (at < oldStart) lo = mid + 1;
      else hi = mid - 1;
    }
    return null;
  }

  /** Whether the hunk buttons can decide now. */
  private hunksEnabled(): boolean {
    return this.pending && !this.busy && !this.inFlight && this.exact();
  }

  /** The number of the hunk whose marker (or mirror) holds `el`, from
   * where the marker is in its document. */
  private markerIndex(el: Element): number | null {
    const ed = this.editors;
    const ch = this.exact() ? this.serverDiff?.changes : null;
    if (!ed || !ch) return null;
    const marker = el.closest(".hunk-marker");
    if (!marker) return null;
    const mirror = marker.classList.contains("mirror");
    const view = mirror && ed.kind === "split" ? ed.a : ed.b;
    if (!view.contentDOM.contains(marker)) return null;
    let pos: number;
    try {
      pos = view.posAtDOM(marker);
    } catch {
      return null;
    }
    // Markers stand at the start of their hunk, in ascending order; hunks
    // on one side never start at the same place.
    let lo = 0;
    let hi = ch.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const at = mirror ? ch[mid]!.fromA : ch[mid]!.fromB;
      if (at === pos) return mid;
      if (at < pos) lo = mid + 1;
      else hi = mid - 1;
    }
    return null;
  }

  /** Brings the markers on screen up to date: their numbers (a reject
   * renumbers the hunks after it) and whether their buttons work (off
   * while a request is out). Markers drawn later get both from `toDOM`. */
  private syncMarkers(): void {
    const ed = this.editors;
    if (!ed) return;
    const total = this.review.hunks.length;
    const enabled = this.hunksEnabled();
    for (const el of this.editorBox.querySelectorAll<HTMLElement>(".hunk-marker")) {
      const i = this.markerIndex(el);
      if (i === null) continue;
      const hunk = this.review.hunks[i];
      const accepted = hunk?.accepted ?? false;
      const label = el.querySelector(".hunk-label");
      const text = markerLabel(i, total, accepted);
      if (label && label.textContent !== text) label.textContent = text;
      if (el.classList.contains("mirror")) continue;
      if (el.dataset["hunk"] !== String(i)) el.dataset["hunk"] = String(i);
      for (const b of el.querySelectorAll<HTMLButtonElement>("button[data-action]")) {
        const accept = b.dataset["action"] === "accept-hunk";
        const off = !enabled || (accept && accepted);
        if (b.disabled !== off) b.disabled = off;
        const aria = `${accept ? "Accept" : "Reject"} hunk ${i + 1}`;
        if (b.getAttribute("aria-label") !== aria) b.setAttribute("aria-label", aria);
      }
    }
  }

  /** Buttons, labels and status outside the editors. */
  private renderChrome(): void {
    const r = this.review;
    const closed = this.closedNote !== null;
    this.el.dataset["status"] = closed ? "closed" : r.status;
    // The review's version as this card shows it (tests and benchmarks
    // wait for a decision to be shown by it).
    this.el.dataset["version"] = String(r.version);
    this.closedBox.hidden = !closed;
    if (closed) this.closedText.textContent = this.closedNote ?? "";
    flag(this.el, "data-new-file", r.isNewFile);
    const hunks = r.hunks;
    const added = hunks.reduce((s, x) => s + x.newLines, 0);
    const removed = hunks.reduce((s, x) => s + x.oldLines, 0);
    replace(
      this.countsEl,
      r.originalUnreadable ? null : h("span", { class: "added" }, `+${added}`),
      r.originalUnreadable ? null : h("span", { class: "removed" }, `−${removed}`),
    );
    const accepted = hunks.filter((x) => x.accepted).length;
    this.statusText.textContent = closed
      ? "Closed by the agent, not decided here"
      : r.status === "pending" && accepted
        ? `${STATUS_TEXT["pending"]} · ${accepted} of ${hunks.length} hunks accepted`
        : (STATUS_TEXT[r.status] ?? r.status);
    this.statusEl.dataset["status"] = closed ? "closed" : r.status;

    const exact = this.exact();
    const canHunk = this.pending && exact && !this.busy && !this.inFlight && hunks.length > 0 && !r.originalUnreadable;
    const cur = hunks[this.current];
    this.hunkLabel.textContent = r.originalUnreadable
      ? "Whole file only"
      : hunks.length
        ? `Hunk ${Math.min(this.current + 1, hunks.length)} of ${hunks.length}`
        : "No changes";
    const set = (name: string, enabled: boolean) => {
      const b = this.buttons[name];
      if (b) b.disabled = !enabled;
    };
    set("prev-hunk", hunks.length > 1 && exact);
    set("next-hunk", hunks.length > 1 && exact);
    set("accept-hunk", canHunk && !!cur && !cur.accepted);
    set("reject-hunk", canHunk && !!cur);
    set("accept-file", this.pending && !this.busy);
    set("reject-file", this.pending && !this.busy);
    set("dismiss", this.pending && !this.busy);
    const kind = this.editors?.kind ?? this.layout();
    const collapseBtn = this.buttons["toggle-collapse"];
    if (collapseBtn) {
      collapseBtn.textContent = this.showAll ? "Fold unchanged" : "Show all lines";
      collapseBtn.hidden = kind === "single";
    }
    for (const name of ["prev-hunk", "next-hunk", "accept-hunk", "reject-hunk"]) {
      const b = this.buttons[name];
      if (b) b.hidden = r.originalUnreadable || closed;
    }
    for (const name of ["dismiss", "reject-note", "reject-file", "accept-file"]) {
      const b = this.buttons[name];
      if (b) b.hidden = closed;
    }
    this.hunkLabel.hidden = closed;
    if (r.originalUnreadable) {
      this.messageBox.hidden = false;
      this.messageBox.textContent =
        "Cannot display the original (binary, not UTF-8, or over 16 MiB). Only the whole file can be accepted or rejected; the proposed text is below.";
    } else {
      this.messageBox.hidden = true;
    }
    this.el.classList.toggle("is-dirty", this.dirty || this.inFlight);
    this.el.classList.toggle("is-finished", !this.pending);
  }

  private setSaveState(text: string, kind: "" | "saving" | "error" = ""): void {
    this.saveEl.textContent = text;
    this.saveEl.dataset["kind"] = kind;
  }

  // ------------------------------------------------------------ server updates

  /** A review from the event stream (or a snapshot). */
  serverUpdate(r: Review): void {
    if (r.id !== this.review.id || this.closed) return;
    if (r.version < this.review.version) return;
    if (r.version === this.review.version && r.status === this.review.status) return;
    if (this.dirty || this.inFlight || this.busy) {
      // Our own request's answer may be older than this (the stream can
      // overtake it): keep it for when the request is done.
      if (!this.later || r.version > this.later.version) this.later = r;
      return;
    }
    this.apply(r);
  }

  /** A per-hunk decision from the event stream (this tab's or another's). */
  serverHunk(d: HunkDecided): void {
    if (d.id !== this.review.id || this.closed || d.version <= this.review.version) return;
    if (this.dirty || this.inFlight || this.busy) {
      this.laterVersion = Math.max(this.laterVersion, d.version);
      return;
    }
    if (!this.applyHunk(d)) void this.reload();
  }

  /** The newest version a per-hunk event announced while a request was
   * out (the review itself is fetched if the request did not reach it). */
  private laterVersion = 0;

  /** Fetches the whole review and shows it, if it is newer than the one
   * shown (what the events said could not be followed). */
  private async reload(): Promise<void> {
    try {
      const r = await api.review(this.id);
      if (r.version > this.review.version) this.serverUpdate(r);
    } catch {
      // Closed meanwhile: its `closed` event says so.
    }
  }

  /** After a request: shows a newer review the stream brought meanwhile.
   * (With unsaved edits the next text request gets a 409 instead.) */
  private catchUp(): void {
    const r = this.later;
    this.later = null;
    if (this.dirty || this.inFlight || this.busy) return;
    if (r && r.version > this.review.version) this.apply(r);
    if (this.laterVersion > this.review.version) void this.reload();
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
    const ed = this.editors;
    const prev = this.current;
    const annotations = [Remote.of(true), Transaction.addToHistory.of(false)];
    if (d.decision === "accept") {
      const hunks = r.hunks.slice();
      hunks[d.index] = { ...h, accepted: true };
      const after: Review = { ...r, version: d.version, status: d.status, hunks };
      if (d.status !== r.status || !ed) {
        this.current = next ? next(after) : prev;
        this.apply(after);
        return true;
      }
      this.review = after;
      this.current = next ? next(after) : prev;
      this.redrawHunks([d.index, prev, this.current]);
      this.host.changed();
      return true;
    }
    // A reject: the original's lines for the hunk's.
    const a = this.originalDoc();
    if (this.sepA !== this.sepB && a.lines > 1) return false;
    const b = ed ? ed.b.state.doc : textOf(r.working, this.sepB);
    const from = lineStart(b, h.newStart);
    const to = lineStart(b, h.newStart + h.newLines);
    const insert = a.slice(lineStart(a, h.oldStart), lineStart(a, h.oldStart + h.oldLines));
    const shift = h.oldLines - h.newLines;
    const hunks = r.hunks.filter((_, i) => i !== d.index);
    for (let i = d.index; i < hunks.length; i++) hunks[i] = { ...hunks[i]!, newStart: hunks[i]!.newStart + shift };
    const tr = ed ? ed.b.state.update({ changes: { from, to, insert }, annotations }) : null;
    const doc = tr ? tr.newDoc : b.replace(from, to, insert);
    const after: Review = { ...r, version: d.version, status: d.status, hunks, working: doc.sliceString(0, doc.length, this.sepB) };
    const pick = (x: Review) => (next ? next(x) : prev > d.index ? prev - 1 : prev);
    if (!ed || !tr || d.status !== r.status) {
      this.current = pick(after);
      this.apply(after);
      return true;
    }
    const gone = this.serverDiff?.changes?.[d.index];
    // Taking back a hunk whose two sides are as tall as each other moves
    // nothing below it: the merge view need not align again.
    const aligned = !!gone && ed.kind === "split" && sameHeight(ed.a, gone.fromA, gone.toA, ed.b, from, to);
    this.review = after;
    this.serverDiff = this.serverDiff ? this.serverDiff.without(d.index, doc, hunks) : new ServerDiff(a, doc, hunks);
    this.current = pick(after);
    this.redrawHunks([this.current], [from, from + insert.length], gone ? [gone.fromA, Math.max(gone.fromA, gone.toA - 1)] : null, tr, aligned);
    this.host.changed();
    return true;
  }

  /** Shows `r`: its text on the right, its hunks, its status. */
  private apply(r: Review): void {
    const statusChanged = r.status !== this.review.status;
    const before = this.review;
    this.review = r;
    const ed = this.editors;
    if (!ed) {
      this.renderChrome();
      return;
    }
    if (r.working.includes("\n") && lineSeparatorOf(r.working) !== this.sepB) {
      // The line endings changed: start over with the new ones.
      this.sepB = lineSeparatorOf(r.working);
      this.destroyEditors();
      this.build();
      this.host.changed();
      return;
    }
    const b = ed.b;
    const effects: StateEffect<unknown>[] = [];
    if (statusChanged) effects.push(this.readOnly.reconfigure(EditorState.readOnly.of(!this.pending)));
    const d = this.serverDiff;
    if (r.working === before.working && d && d.samePlaces(r.hunks) && d.matches(this.originalDoc(), b.state.doc)) {
      // The same text and the same hunks (a hunk accepted, say): the
      // chunks stand; only the markers change.
      if (effects.length) b.dispatch({ effects, annotations: [Remote.of(true), Transaction.addToHistory.of(false)] });
      this.redraw();
      this.host.changed();
      return;
    }
    const next = textOf(r.working, this.sepB);
    this.serverDiff = new ServerDiff(this.originalDoc(), next, r.hunks);
    const change = smallestChange(b.state.doc, next);
    if (change) {
      b.dispatch({
        changes: change,
        effects,
        annotations: [Remote.of(true), Transaction.addToHistory.of(false)],
      });
    } else {
      this.touch(effects);
    }
    this.redraw();
    this.host.changed();
  }

  /** Makes the merge view recompute its chunks (from the server's hunks)
   * without changing any text. */
  private touch(effects: StateEffect<unknown>[]): void {
    const ed = this.editors;
    if (!ed) return;
    const annotations = [Remote.of(true), Transaction.addToHistory.of(false)];
    if (ed.kind === "unified") {
      const orig = this.original;
      effects.push(updateOriginalDoc.of({ doc: orig, changes: ChangeSet.empty(orig.length) }));
      ed.b.dispatch({ effects, annotations });
    } else if (ed.kind === "split") {
      // MergeView recomputes chunks only when a document changes: replace
      // one character by itself.
      const target = ed.b.state.doc.length ? ed.b : ed.a.state.doc.length ? ed.a : null;
      if (target) {
        target.dispatch({ changes: { from: 0, to: 1, insert: target.state.sliceDoc(0, 1) }, annotations });
      }
      if (effects.length) ed.b.dispatch({ effects, annotations });
    } else if (effects.length) {
      ed.b.dispatch({ effects, annotations });
    }
  }

  // ------------------------------------------------------------ typing

  private onUpdate(u: ViewUpdate): void {
    const typed = u.transactions.some((tr) => tr.docChanged && !tr.annotation(Remote));
    if (typed) {
      this.dirty = true;
      window.clearTimeout(this.timer);
      this.timer = window.setTimeout(() => void this.flush(), EDIT_DEBOUNCE_MS);
      this.setSaveState("Editing…", "saving");
      // Markers cannot be redrawn inside an update; next frame.
      requestAnimationFrame(() => this.redraw());
    } else if (u.selectionSet && !u.transactions.some((tr) => tr.annotation(Remote))) {
      const i = this.hunkAt(u.state.selection.main.head);
      if (i !== null && i !== this.current) {
        this.current = i;
        requestAnimationFrame(() => this.redraw());
        prefs.setFocus(this.id, i);
      }
    }
  }

  /** The hunk whose proposed lines hold `pos`, if any. */
  private hunkAt(pos: number): number | null {
    const ch = this.exact() ? this.serverDiff?.changes : null;
    if (!ch) return null;
    let lo = 0;
    let hi = ch.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const c = ch[mid]!;
      if (pos < c.fromB) hi = mid - 1;
      else if (pos > Math.max(c.fromB, c.toB - 1)) lo = mid + 1;
      else return mid;
    }
    return null;
  }

  /** Posts the right side's text if it changed. Resolves when the server
   * has it (true) or refused it or could not be reached (false). */
  async flush(keepalive = false): Promise<boolean> {
    window.clearTimeout(this.timer);
    // The text goes on the version the decisions shown make.
    if (this.unanswered) await this.answered();
    while (this.sending) await this.sending;
    if (!this.dirty || !this.editors) return !this.dirty;
    this.sending = this.send(keepalive);
    try {
      return await this.sending;
    } finally {
      this.sending = null;
      this.catchUp();
    }
  }

  private get inFlight(): boolean {
    return this.sending !== null;
  }

  private async send(keepalive: boolean): Promise<boolean> {
    const ed = this.editors;
    if (!ed) return false;
    const text = ed.b.state.sliceDoc();
    const version = this.review.version;
    this.setSaveState("Saving…", "saving");
    this.renderChrome();
    try {
      const r = await api.reviewText(this.id, text, version, keepalive);
      this.retry = 0;
      if (this.editors?.b.state.sliceDoc() === text) {
        this.dirty = false;
        this.setSaveState("Saved");
        this.sending = null;
        this.apply(r);
      } else {
        // More typing meanwhile: keep the new version; the pending timer
        // posts the rest.
        this.review = r;
      }
      return true;
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError(0, String(e), null);
      const current = err.review;
      if (current) {
        this.dirty = false;
        this.setSaveState(err.status === 409 ? "Changed elsewhere" : "Not saved", "error");
        note(
          err.status === 409
            ? `${baseName(this.review.path)} changed in another tab; showing its current text (the edit made here was not applied).`
            : `${baseName(this.review.path)}: ${err.message}`,
          "warn",
        );
        this.sending = null;
        this.apply(current);
      } else if (err.status === 404) {
        this.dirty = false;
        this.setSaveState("Review closed", "error");
      } else {
        // ccbridge unreachable or failing: keep the edit, try again.
        this.retry = Math.min(this.retry + 1, 5);
        const wait = 500 * 2 ** this.retry;
        this.setSaveState(`Not saved yet — retrying in ${Math.round(wait / 1000)} s`, "error");
        window.clearTimeout(this.timer);
        this.timer = window.setTimeout(() => void this.flush(), wait);
      }
      return false;
    } finally {
      this.renderChrome();
    }
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
    if (this.dirty || this.inFlight || !this.exact()) {
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
      this.redrawHunks([prev, index]);
    }
    const next = (r: Review) => (decision === "accept" ? this.nextUndecided(index, r) : this.nextUndecided(index - 1, r));
    const seen = this.review.version;
    const staysPending = this.review.hunks.some((h, i) => i !== index && !h.accepted);
    const ahead: HunkDecided = { id: this.id, version: seen + 1, index, decision, hunk, status: "pending" };
    const before = this.review;
    if (staysPending && this.applyHunk(ahead, next)) {
      this.scrollToCurrent();
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
            this.catchUp();
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
      this.syncMarkers();
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
      this.scrollToCurrent();
    } catch (e) {
      this.busy = false;
      this.refused(e);
      this.redraw();
    } finally {
      window.clearTimeout(showBusy);
    }
    this.catchUp();
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
    const text = h("textarea", { rows: 4, "data-note-text": "", "aria-label": "Note for the agent" }) as HTMLTextAreaElement;
    const dialog = h("dialog", { class: "link-dialog", "data-reject-note": "", "aria-labelledby": "reject-note-title" }) as HTMLDialogElement;
    const done = (send: boolean): void => {
      const said = text.value.trim();
      dialog.close();
      dialog.remove();
      if (send) void this.fileAction("reject", said || undefined);
    };
    replace(
      dialog,
      h("h2", { id: "reject-note-title" }, `Reject ${baseName(this.review.path)}: tell the agent why`),
      text,
      h(
        "div",
        { class: "dialog-actions" },
        h("button", { type: "button", class: "btn", "data-action": "cancel", onclick: () => done(false) }, "Cancel"),
        h("button", { type: "button", class: "btn reject", "data-action": "reject-with-note", onclick: () => done(true) }, "Reject with this note"),
      ),
    );
    dialog.addEventListener("cancel", () => dialog.remove());
    document.body.append(dialog);
    dialog.showModal();
    text.focus();
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
      await this.answered();
      let r: Review;
      if (kind === "accept") {
        // Accept what the reviewer sees, their last edit included. The edit
        // is saved first (a server that predates `text` on accept would
        // ignore it); a keystroke made in between goes with the acceptance.
        if (this.dirty || this.inFlight) {
          const saved = await this.flush();
          if (!saved) {
            note(`${baseName(this.review.path)} was not accepted: the last edit could not be saved.`, "error");
            this.busy = false;
            this.renderChrome();
            return;
          }
        }
        window.clearTimeout(this.timer);
        const now = this.editors?.b.state.sliceDoc();
        const text = now !== undefined && now !== this.review.working ? now : undefined;
        r = await api.reviewAccept(this.id, this.review.version, text);
        if (text !== undefined && this.editors?.b.state.sliceDoc() === text) this.dirty = false;
      } else {
        window.clearTimeout(this.timer);
        this.dirty = false;
        r = kind === "reject" ? await api.reviewReject(this.id, why) : await api.reviewDismiss(this.id);
      }
      this.busy = false;
      this.apply(r);
    } catch (e) {
      this.busy = false;
      this.refused(e);
    }
    this.catchUp();
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
      this.dirty = false;
      this.apply(err.review);
    } else {
      note(`${name}: ${err.message}`, "error");
    }
  }

  // ------------------------------------------------------------ navigation

  moveHunk(dir: 1 | -1): void {
    const n = this.review.hunks.length;
    if (!n) return;
    this.setCurrent((((this.current + dir) % n) + n) % n, true);
  }

  setCurrent(i: number, scroll: boolean): void {
    const prev = this.current;
    this.current = i;
    prefs.setFocus(this.id, i);
    this.redrawHunks([prev, i]);
    if (scroll) this.scrollToCurrent();
  }

  /** Brings the current hunk into sight: a third down the editor, unless
   * it is already drawn well inside it (as VS Code's next-change does: the
   * view stays put while the hunks it shows are gone through, and does not
   * jump a few lines per decision). */
  scrollToCurrent(): void {
    const ed = this.editors;
    if (!ed) return;
    // Read in CodeMirror's next measure, after this task's updates (and the
    // merge view's alignment they queued), where the layout it reads anyway
    // serves this check too: read here and now, it forced a layout of its
    // own after every decision.
    ed.b.requestMeasure({
      key: this.scrollCheck,
      read: () => {
        const c = this.exact() ? this.serverDiff?.changes?.[this.current] : null;
        if (!c || this.editors !== ed) return null;
        return inMiddleOfView(ed.b, ed.kind === "split" ? ed.merge.dom : ed.b.scrollDOM, c.fromB) ? null : c.fromB;
      },
      // Not in the measure's write phase itself: a unified view scrolls by
      // a transaction, which cannot be dispatched from there.
      write: (pos) => {
        if (pos !== null) queueMicrotask(() => this.editors === ed && this.scrollTo(pos, "third"));
      },
    });
  }

  /** Scrolls the proposed side so `pos` is a third down ("third") or at
   * the top ("top") of the editor's scroller, and the editor in sight. */
  private scrollTo(pos: number, where: "third" | "top"): void {
    const ed = this.editors;
    if (!ed) return;
    if (ed.kind !== "split") {
      ed.b.dispatch({
        effects: EditorView.scrollIntoView(pos, where === "top" ? { y: "start" } : { y: "start", yMargin: ed.b.scrollDOM.clientHeight / 3 }),
        annotations: Remote.of(true),
      });
      return;
    }
    // In a merge view the scroller is shared by both editors; CodeMirror's
    // scrollIntoView on one of them fights the other's re-alignment (its
    // measure loop restarts). Scroll the shared scroller directly, then
    // correct once the heights around the target are measured.
    const scroller = ed.merge.dom;
    const b = ed.b;
    const place = () => {
      const box = scroller.getBoundingClientRect();
      const top = b.documentTop - box.top + scroller.scrollTop + b.lineBlockAt(Math.min(pos, b.state.doc.length)).top;
      return Math.max(0, top - (where === "top" ? 0 : scroller.clientHeight / 3));
    };
    scroller.scrollTop = place();
    const box = this.editorBox.getBoundingClientRect();
    if (where === "third" && (box.top < 0 || box.bottom > window.innerHeight)) this.editorBox.scrollIntoView({ block: "nearest" });
    let tries = 0;
    const settle = () => {
      if (this.editors !== ed) return;
      const want = place();
      if (Math.abs(scroller.scrollTop - want) > 2 && tries++ < 4) {
        scroller.scrollTop = want;
        requestAnimationFrame(settle);
      }
    };
    requestAnimationFrame(() => requestAnimationFrame(settle));
  }

  /** The current hunk's marker, for focus. */
  focusCard(): void {
    this.el.focus({ preventScroll: true });
    this.el.scrollIntoView({ block: "nearest" });
  }

  /** Puts the keyboard in the proposed text. */
  focusEditor(): void {
    const b = this.editors?.b;
    if (!b) return;
    const c = this.exact() ? this.serverDiff?.changes?.[this.current] : null;
    if (c) b.dispatch({ selection: EditorSelection.cursor(c.fromB), annotations: Remote.of(true) });
    b.focus();
  }

  /** Sends unsaved edits as the page goes away. A keepalive request (which
   * survives the page) carries at most 64 KiB; false when the edit is
   * bigger and may be lost. */
  flushOnExit(): boolean {
    if (!this.dirty) return true;
    const size = this.editors?.b.state.doc.length ?? 0;
    const keepalive = size < 60_000;
    void this.flush(keepalive);
    return keepalive;
  }

  hasUnsaved(): boolean {
    return this.dirty || this.inFlight || this.unanswered > 0;
  }
}

/** The smallest replacement turning `cur` into `next` (common prefix and
 * suffix kept), so the cursor and scroll stay where they are. Works on the
 * "\n"-joined strings, whose indices are CodeMirror positions whatever the
 * line separator; the inserted part is a Text, so it is never re-split. */
/** Whether the line at `pos` is between a tenth and four fifths down the
 * part of `scroller` inside the window. From the editor's height map, not
 * `coordsAtPos`, which would run the editor's pending measure first. */
function inMiddleOfView(view: EditorView, scroller: HTMLElement, pos: number): boolean {
  const line = view.lineBlockAt(Math.min(pos, view.state.doc.length));
  const lineTop = view.documentTop + line.top;
  const box = scroller.getBoundingClientRect();
  const top = Math.max(box.top, 0);
  const height = Math.min(box.bottom, window.innerHeight) - top;
  return height > 0 && lineTop >= top + height / 10 && lineTop + line.height <= top + (height * 4) / 5;
}

function sameHunk(a: HunkPlace, b: HunkPlace): boolean {
  return a.oldStart === b.oldStart && a.oldLines === b.oldLines && a.newStart === b.newStart && a.newLines === b.newLines;
}

function smallestChange(cur: Text, next: Text): { from: number; to: number; insert: Text } | null {
  if (cur.length === next.length && cur.eq(next)) return null;
  const a = cur.toString();
  const b = next.toString();
  const max = Math.min(a.length, b.length);
  let start = 0;
  while (start < max && a.charCodeAt(start) === b.charCodeAt(start)) start++;
  let end = 0;
  while (end < max - start && a.charCodeAt(a.length - 1 - end) === b.charCodeAt(b.length - 1 - end)) end++;
  // Never split a surrogate pair.
  if (start > 0 && isHighSurrogate(a.charCodeAt(start - 1))) start--;
  if (end > 0 && isLowSurrogate(a.charCodeAt(a.length - end))) end--;
  return { from: start, to: a.length - end, insert: next.slice(start, b.length - end) };
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;
