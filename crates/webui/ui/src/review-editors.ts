// The editors of one review card and the hunks drawn on them: a MergeView
// (the original on the left, read-only; the proposed text on the right,
// editable), a unified view, or the proposed text alone where there is no
// diff to show (`layout`); rebuilt on a layout switch keeping text, cursor
// and scroll; the server's hunks as markers and line colours (the widgets
// and decoration fields are `review-deco`'s), redrawn a few hunks at a
// time where they can be; the current hunk, and scrolling to it.
//
// Separate from the card because it is the one part that knows CodeMirror:
// the card asks it for the proposed text, whether the editors show
// exactly the server's hunks (`exact`), and to show what the server made
// (`show`, `revert`); it asks the card back through `EditorsHost` (the
// review, the typing, a marker's decision) and sends nothing itself.

import { Annotation, ChangeSet, Compartment, EditorSelection, EditorState, RangeSet, StateEffect, Text, Transaction, type Extension, type Range as CMRange } from "@codemirror/state";
import { Decoration, EditorView, type ViewUpdate } from "@codemirror/view";
import { MergeView, unifiedMergeView, updateOriginalDoc, type Change } from "@codemirror/merge";
import type { Hunk, HunkPlace, Review } from "./api";
import { baseEditor, wrappedLines } from "./editor";
import { ServerDiff, installExactChunks, lineSeparatorOf, lineStart, serverDiffConfig, textOf } from "./hunks";
import { languageExtension } from "./languages";
import { forgetScheme, trackScheme } from "./theme";
import { baseName, h, replace } from "./dom";
import { prefs, type Layout } from "./prefs";

import { coalesceMergeMeasures, finalBreakNote, keepingAlignment, sameHeight, setHunkDeco, patchHunkDeco, hunkDeco, markerLabel, HunkMarker, HunkMirror, acceptedLine, currentLine, lineDecos, type HunkPatch, type MarkerActions } from "./review-deco";

installExactChunks();
coalesceMergeMeasures();

const COLLAPSE = { margin: 3, minSize: 6 };
/** Narrower than this, side by side falls back to unified. */
export const wideQuery = window.matchMedia("(min-width: 900px)");

/** Marks a transaction the page made itself (a server text, a redraw), as
 * opposed to the reviewer's typing. */
const Remote = Annotation.define<boolean>();

/** What a card shows its review in. */
export type EditorsKind = "split" | "unified" | "single";

type Editors =
  | { kind: "split"; merge: MergeView; a: EditorView; b: EditorView }
  | { kind: "unified"; b: EditorView }
  | { kind: "single"; b: EditorView };

/** What the editors need from their card. */
export interface EditorsHost {
  /** The review the card shows. */
  review(): Review;
  /** Pending, and not closed by the agent: the proposed side takes typing. */
  pending(): boolean;
  /** Closed by the agent: the proposed side is not editable at all. */
  closed(): boolean;
  /** Pending, with no decision and no text request out: the hunk buttons
   * work if the editors show the server's hunks. */
  mayDecide(): boolean;
  /** The proposed side has typing the server does not have yet. */
  dirty(): boolean;
  /** The reviewer typed on the proposed side. */
  typed(): void;
  /** A hunk marker's Accept or Reject. */
  decide(index: number, decision: "accept" | "reject"): void;
  /** Escape in an editor: the keyboard goes back to the card. */
  leave(): void;
  /** Something the card's chrome shows changed (layout, current hunk,
   * markers, whether the text is the server's). */
  render(): void;
}

/** A hunk taken back on the proposed side (see `ReviewEditors.revert`). */
export interface Revert {
  /** Where the original's lines now start on the proposed side. */
  from: number;
  /** Where the hunk's lines ended on the proposed side before. */
  to: number;
  /** The original's lines for the hunk's. */
  insert: Text;
  /** The proposed side afterwards, and as the server's `working`. */
  doc: Text;
  working: string;
  /** The change on the proposed editor; null before it is built. */
  tr: Transaction | null;
}

export class ReviewEditors {
  /** Holds the editors (the card places it). */
  readonly dom: HTMLElement = h("div", { class: "editor-box" });
  /** The hunk the toolbar, the keys and the colours single out. */
  current = 0;
  private showAll = false;
  private editors: Editors | null = null;
  private readonly original: Text;
  private readonly sepA: string;
  private sepB: string;
  private serverDiff: ServerDiff | null = null;
  /** The key of the pending "is the current hunk in sight" measure. */
  private readonly scrollCheck = {};
  private readonly diffConfig = serverDiffConfig(() => this.serverDiff);
  private readonly readOnly = new Compartment();
  private readonly unifiedConf = new Compartment();
  private readonly actions: MarkerActions;
  /** The hunk decorations stand for the server's diff as it is now
   * (`redraw` drew them for it, and every change since was patched in):
   * a few hunks can be redrawn on their own. */
  private decorated = false;

  constructor(
    review: Review,
    private readonly host: EditorsHost,
    private globalLayout: Layout,
  ) {
    const orig = review.original ?? "";
    this.sepA = lineSeparatorOf(orig);
    this.sepB = lineSeparatorOf(review.working || orig);
    this.original = textOf(orig, this.sepA);
    this.actions = {
      decide: (el, d) => {
        const i = this.markerIndex(el);
        if (i !== null) this.host.decide(i, d);
      },
      select: (el) => {
        const i = this.markerIndex(el);
        if (i !== null) this.setCurrent(i, false);
      },
      enabled: () => this.enabled(),
      place: (oldStart) => {
        const i = this.hunkByOldStart(oldStart);
        return i === null ? null : { index: i, total: this.host.review().hunks.length };
      },
    };
  }

  /** Whether the editors are built (`mount`). */
  get mounted(): boolean {
    return this.editors !== null;
  }

  /** The layout shown, or to be shown once built. */
  get kind(): EditorsKind {
    return this.editors?.kind ?? this.layout();
  }

  /** Whether the unchanged lines are shown rather than folded. */
  get showingAll(): boolean {
    return this.showAll;
  }

  /** The text on the right as it is now, edits included; undefined before
   * the editors are built. */
  text(): string | undefined {
    return this.editors?.b.state.sliceDoc();
  }

  /** Its length in editor positions (a line break counts one). */
  size(): number {
    return this.editors?.b.state.doc.length ?? 0;
  }

  /** Creates the editors (separately from the card, so the page can paint
   * the first card before building the others). */
  mount(): void {
    if (this.editors) return;
    const t = performance.now();
    this.build();
    // A performance mark (shown in the browser's performance tools): how long building the editors took.
    performance.measure(`ccbridge:mount:${this.host.review().id}`, { start: t, end: performance.now() });
  }

  /** The layout this card shows: the page's one layout switch, except
   * where it cannot apply (a new file has no left side; a window narrower
   * than `wideQuery` has no room for two; an unreadable original has no
   * diff). */
  private layout(): EditorsKind {
    const review = this.host.review();
    if (review.originalUnreadable) return "single";
    if (review.isNewFile) return "unified";
    return this.globalLayout === "split" && wideQuery.matches ? "split" : "unified";
  }

  // ------------------------------------------------------------ building

  /** Whether the right side takes typing: read-only once decided; once
   * closed by the agent not editable at all (its text can still be
   * selected and copied). */
  private lockedExtension(): Extension {
    return this.host.closed() ? [EditorState.readOnly.of(true), EditorView.editable.of(false)] : EditorState.readOnly.of(!this.host.pending());
  }

  private proposedExtensions(): Extension[] {
    const review = this.host.review();
    return [
      baseEditor({
        lineSeparator: this.sepB,
        editable: true,
        onEscape: () => this.host.leave(),
        label: `Proposed text of ${baseName(review.path)} (editable; Escape leaves it)`,
      }),
      languageExtension(review.language),
      EditorView.editorAttributes.of({ "data-side": "proposed" }),
      wrappedLines(),
      this.readOnly.of(this.lockedExtension()),
      hunkDeco,
      finalBreakNote(this.original, this.sepA, this.sepB),
      EditorView.updateListener.of((u) => this.onUpdate(u)),
    ];
  }

  private build(keep?: { doc: string; head: number; topLine: number }): void {
    const review = this.host.review();
    const kind = this.layout();
    const working = keep ? keep.doc : review.working;
    const b = textOf(working, this.sepB);
    if (!keep) this.serverDiff = new ServerDiff(this.original, b, review.hunks);
    replace(this.dom);
    const collapse = this.showAll ? undefined : COLLAPSE;
    if (kind === "split") {
      const merge = new MergeView({
        a: {
          doc: this.original,
          extensions: [
            baseEditor({
              lineSeparator: this.sepA,
              editable: false,
              onEscape: () => this.host.leave(),
              label: `Original text of ${baseName(review.path)} (read-only)`,
            }),
            languageExtension(review.language),
            EditorView.editorAttributes.of({ "data-side": "original" }),
            wrappedLines(),
            hunkDeco,
          ],
        },
        b: { doc: b, extensions: this.proposedExtensions() },
        parent: this.dom,
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
        parent: this.dom,
        state: EditorState.create({
          doc: b,
          extensions: [this.proposedExtensions(), this.unifiedConf.of(this.unifiedExtension())],
        }),
      });
      this.editors = { kind, b: view };
      trackScheme(view);
    } else {
      const view = new EditorView({
        parent: this.dom,
        state: EditorState.create({ doc: b, extensions: this.proposedExtensions() }),
      });
      this.editors = { kind, b: view };
      trackScheme(view);
    }
    this.dom.dataset["layout"] = kind;
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
    this.host.render();
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
    else this.host.render();
  }

  toggleShowAll(): void {
    this.showAll = !this.showAll;
    const ed = this.editors;
    if (ed?.kind === "split") {
      ed.merge.reconfigure({ collapseUnchanged: this.showAll ? undefined : COLLAPSE });
    } else if (ed?.kind === "unified") {
      ed.b.dispatch({ effects: this.unifiedConf.reconfigure(this.unifiedExtension()) });
    }
    this.host.render();
  }

  destroy(): void {
    this.destroyEditors();
  }

  /** The agent closed the review: the proposed side stops taking typing
   * (see `lockedExtension`). */
  lock(): void {
    const ed = this.editors;
    if (ed) {
      ed.b.dispatch({ effects: this.readOnly.reconfigure(this.lockedExtension()), annotations: Remote.of(true) });
      this.redraw();
    }
  }

  // ------------------------------------------------------------ drawing

  /** Whether the editors show exactly the texts of the server's hunks. */
  exact(): boolean {
    const ed = this.editors;
    if (!ed || !this.serverDiff || !this.serverDiff.changes) return false;
    return !this.host.dirty() && this.serverDiff.matches(this.originalDoc(), ed.b.state.doc);
  }

  private originalDoc(): Text {
    const ed = this.editors;
    return ed?.kind === "split" ? ed.a.state.doc : this.original;
  }

  /** Hunk markers and colours for the current state. While the right side
   * has unsaved edits the markers stay where they are (mapped through the
   * edits, so nothing jumps) and are switched off by the card's
   * `is-dirty` class; the server's answer redraws them. */
  redraw(): void {
    const ed = this.editors;
    if (!ed) return;
    if (this.host.dirty() && this.serverDiff) {
      this.host.render();
      return;
    }
    const d = this.serverDiff;
    const hunks = this.host.review().hunks;
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
    this.host.render();
  }

  /** Hunk `i`'s marker (and its mirror) and line colours, into `outB` and
   * `outA`. */
  private hunkDecos(i: number, c: Change, a: Text, b: Text, outB: CMRange<Decoration>[], outA: CMRange<Decoration>[]): void {
    const hunks = this.host.review().hunks;
    const hunk = hunks[i];
    const ed = this.editors;
    if (!hunk || !ed) return;
    const current = i === this.current && this.host.pending();
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
  redrawHunks(
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
    if (!this.decorated || this.host.dirty() || !d?.changes || !d.matches(this.originalDoc(), b)) {
      if (changeB) ed.b.dispatch(changeB);
      this.redraw();
      return;
    }
    const hunks = this.host.review().hunks;
    if (this.current >= hunks.length) this.current = Math.max(0, hunks.length - 1);
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
    this.host.render();
  }

  /** The number of the hunk that starts at line `oldStart` of the
   * original (hunks are in order there, and never start at one line). */
  private hunkByOldStart(oldStart: number): number | null {
    const hunks = this.host.review().hunks;
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
  private enabled(): boolean {
    return this.host.mayDecide() && this.exact();
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
  syncMarkers(): void {
    const ed = this.editors;
    if (!ed) return;
    const hunks = this.host.review().hunks;
    const total = hunks.length;
    const enabled = this.enabled();
    for (const el of this.dom.querySelectorAll<HTMLElement>(".hunk-marker")) {
      const i = this.markerIndex(el);
      if (i === null) continue;
      const hunk = hunks[i];
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

  // ------------------------------------------------------------ showing the server's reviews

  /** Shows the card's review (`before`: the one shown until now): its
   * text on the right, as the smallest change (so cursor and scroll
   * stay), its hunks, whether the right side takes typing. False when
   * the editors are not built (nothing to show it in). */
  show(before: Review): boolean {
    const r = this.host.review();
    const ed = this.editors;
    if (!ed) return false;
    if (r.working.includes("\n") && lineSeparatorOf(r.working) !== this.sepB) {
      // The line endings changed: start over with the new ones.
      this.sepB = lineSeparatorOf(r.working);
      this.destroyEditors();
      this.build();
      return true;
    }
    const b = ed.b;
    const effects: StateEffect<unknown>[] = [];
    if (r.status !== before.status) effects.push(this.readOnly.reconfigure(EditorState.readOnly.of(!this.host.pending())));
    const d = this.serverDiff;
    if (r.working === before.working && d && d.samePlaces(r.hunks) && d.matches(this.originalDoc(), b.state.doc)) {
      // The same text and the same hunks (a hunk accepted, say): the
      // chunks stand; only the markers change.
      if (effects.length) b.dispatch({ effects, annotations: [Remote.of(true), Transaction.addToHistory.of(false)] });
      this.redraw();
      return true;
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
    return true;
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

  /** Hunk `h` of the review shown, rejected as the server rejects it: the
   * original's lines in place of its lines on the proposed side. Nothing
   * is shown yet (`showRevert` does). Null when the two sides' line
   * separators differ (the server's lines cannot be followed here). */
  revert(h: HunkPlace): Revert | null {
    const ed = this.editors;
    const a = this.originalDoc();
    if (this.sepA !== this.sepB && a.lines > 1) return null;
    const b = ed ? ed.b.state.doc : textOf(this.host.review().working, this.sepB);
    const from = lineStart(b, h.newStart);
    const to = lineStart(b, h.newStart + h.newLines);
    const insert = a.slice(lineStart(a, h.oldStart), lineStart(a, h.oldStart + h.oldLines));
    const annotations = [Remote.of(true), Transaction.addToHistory.of(false)];
    const tr = ed ? ed.b.state.update({ changes: { from, to, insert }, annotations }) : null;
    const doc = tr ? tr.newDoc : b.replace(from, to, insert);
    return { from, to, insert, doc, working: doc.sliceString(0, doc.length, this.sepB), tr };
  }

  /** Shows `rv`, hunk `index` taken back, in place (the card's review is
   * already the one after it, `hunks` its hunks): its change and the
   * hunk's decorations gone, in one update, the current hunk redrawn. */
  showRevert(index: number, rv: Revert, hunks: readonly Hunk[]): void {
    const ed = this.editors;
    if (!ed || !rv.tr) return;
    const gone = this.serverDiff?.changes?.[index];
    // Taking back a hunk whose two sides are as tall as each other moves
    // nothing below it: the merge view need not align again.
    const aligned = !!gone && ed.kind === "split" && sameHeight(ed.a, gone.fromA, gone.toA, ed.b, rv.from, rv.to);
    this.serverDiff = this.serverDiff ? this.serverDiff.without(index, rv.doc, hunks) : new ServerDiff(this.originalDoc(), rv.doc, hunks);
    this.redrawHunks([this.current], [rv.from, rv.from + rv.insert.length], gone ? [gone.fromA, Math.max(gone.fromA, gone.toA - 1)] : null, rv.tr, aligned);
  }

  // ------------------------------------------------------------ typing

  private onUpdate(u: ViewUpdate): void {
    const typed = u.transactions.some((tr) => tr.docChanged && !tr.annotation(Remote));
    if (typed) {
      this.host.typed();
      // Markers cannot be redrawn inside an update; next frame.
      requestAnimationFrame(() => this.redraw());
    } else if (u.selectionSet && !u.transactions.some((tr) => tr.annotation(Remote))) {
      const i = this.hunkAt(u.state.selection.main.head);
      if (i !== null && i !== this.current) {
        this.current = i;
        requestAnimationFrame(() => this.redraw());
        prefs.setFocus(this.host.review().id, i);
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

  // ------------------------------------------------------------ navigation

  moveHunk(dir: 1 | -1): void {
    const n = this.host.review().hunks.length;
    if (!n) return;
    this.setCurrent((((this.current + dir) % n) + n) % n, true);
  }

  setCurrent(i: number, scroll: boolean): void {
    const prev = this.current;
    this.current = i;
    prefs.setFocus(this.host.review().id, i);
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
    const box = this.dom.getBoundingClientRect();
    if (where === "third" && (box.top < 0 || box.bottom > window.innerHeight)) this.dom.scrollIntoView({ block: "nearest" });
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

  /** Puts the keyboard in the proposed text, at the current hunk. */
  focus(): void {
    const b = this.editors?.b;
    if (!b) return;
    const c = this.exact() ? this.serverDiff?.changes?.[this.current] : null;
    if (c) b.dispatch({ selection: EditorSelection.cursor(c.fromB), annotations: Remote.of(true) });
    b.focus();
  }

  /** Selects the whole proposed text and puts the keyboard in it (for a
   * copy by hand). */
  selectAll(): void {
    const b = this.editors?.b;
    if (b) {
      b.dispatch({ selection: EditorSelection.single(0, b.state.doc.length), annotations: Remote.of(true) });
      b.focus();
    }
  }
}

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

/** The smallest replacement turning `cur` into `next` (common prefix and
 * suffix kept), so the cursor and scroll stay where they are. Works on the
 * "\n"-joined strings, whose indices are CodeMirror positions whatever the
 * line separator; the inserted part is a Text, so it is never re-split. */
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
