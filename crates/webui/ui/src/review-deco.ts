// The hunks of a review as CodeMirror draws them: a decoration field the
// card patches hunk by hunk (so a decision redraws one hunk, not 2,000),
// the marker widget with a hunk's buttons and its mirror on the other side,
// the accepted and current lines, and the merge view's alignment coalesced
// to once per task.

import { StateEffect, StateField, Text, type Extension, type Range as CMRange } from "@codemirror/state";
import { Decoration, EditorView, WidgetType, type DecorationSet } from "@codemirror/view";
import { MergeView } from "@codemirror/merge";
import { h } from "./dom";
import { endsWithBreak } from "./hunks";


/** What a merge view's alignment reads: both states, their heights and
 * viewports, the chunks. */
const alignmentInputs = (m: MergeView): readonly unknown[] => [
  m.a.state,
  m.b.state,
  m.a.contentHeight,
  m.b.contentHeight,
  m.a.viewport.from,
  m.a.viewport.to,
  m.b.viewport.from,
  m.b.viewport.to,
  m.chunks,
];

/** Per merge view, the inputs its spacers are known to be right for. */
const alignedFor = new WeakMap<MergeView, readonly unknown[]>();

/** A merge view aligns its two sides (spacer widgets, `measure`) after
 * every update that changed heights or the viewport, at once, walking every
 * chunk of the diff: ~8–10 ms a time with 2,000 hunks, and one decision makes
 * several such updates (the text, the markers of each side, the scroll to
 * the next hunk). Asked for more than once in one task, it now runs once,
 * at the task's end (a microtask: before the frame is drawn); and not again
 * when nothing it reads has changed since it last ran (both states, their
 * heights and viewports, the chunks), or since `keepingAlignment` said the
 * spacers still hold: after a reject the merge view asks once in the update
 * and once more in the next frame. */
export function coalesceMergeMeasures(): void {
  const proto = MergeView.prototype as unknown as { measure(this: MergeView): void };
  const measure = proto.measure;
  const asked = new WeakSet<MergeView>();
  proto.measure = function (this: MergeView) {
    if (asked.has(this)) return;
    asked.add(this);
    queueMicrotask(() => {
      asked.delete(this);
      if ((this.a as unknown as { destroyed: boolean }).destroyed) return;
      const last = alignedFor.get(this);
      if (last && alignmentInputs(this).every((v, i) => v === last[i])) return;
      measure.call(this);
      alignedFor.set(this, alignmentInputs(this));
    });
  };
}

/** Runs `update` (dispatches to `m`'s editors) and, when `keep` says they
 * leave both sides aligned as they were, skips the alignment they would
 * run next, a walk over every chunk. "Aligned as they were": no height
 * changed but in places that changed alike on both sides (a hunk's marker
 * and its mirror; a hunk taken back whose two sides were as tall as each
 * other). Only when the spacers were right before the update; a later
 * change of heights or viewport aligns again. */
export function keepingAlignment(m: MergeView | null, keep: boolean, update: () => void): void {
  const before = m && keep ? alignedFor.get(m) : undefined;
  const wasAligned = !!m && !!before && alignmentInputs(m).every((v, i) => v === before[i]);
  update();
  if (m && wasAligned) alignedFor.set(m, alignmentInputs(m));
}

/** Whether lines `fromA`..`toA` of `a` and `fromB`..`toB` of `b` (a hunk's
 * two sides, `to` exclusive) are drawn as tall as each other, block widgets
 * at their starts included: so nothing below them needs to move when one
 * side takes the other's text. From the editors' height maps, no layout. */
export function sameHeight(a: EditorView, fromA: number, toA: number, b: EditorView, fromB: number, toB: number): boolean {
  const extent = (v: EditorView, from: number, to: number): number | null => {
    if (to <= from || to > v.state.doc.length + 1) return null;
    return v.lineBlockAt(to - 1).bottom - v.lineBlockAt(from).top;
  };
  const ea = extent(a, fromA, toA);
  const eb = extent(b, fromB, toB);
  return ea !== null && eb !== null && Math.abs(ea - eb) < 0.01;
}

// ---------------------------------------------------------------- hunk decorations

export const setHunkDeco = StateEffect.define<DecorationSet>();

/** The decorations at positions `from`..`to` (inclusive) are replaced by
 * `add`; the rest of the set is left as it is. */
export interface HunkPatch {
  from: number;
  to: number;
  add: readonly CMRange<Decoration>[];
}

/** Replaces the decorations of a few hunks only (positions in the document
 * after the transaction's changes). A decision changes one or two hunks'
 * markers: rebuilding the ~4,000 ranges of a 2,000-hunk proposal made
 * CodeMirror compare both whole sets on every decision, where a patched
 * set shares all its other chunks with the old one. */
export const patchHunkDeco = StateEffect.define<readonly HunkPatch[]>();

/** Per editor: hunk markers (proposed side), accepted/current line colours. */
export const hunkDeco = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    for (const e of tr.effects) if (e.is(setHunkDeco)) return e.value;
    if (tr.docChanged) deco = deco.map(tr.changes);
    for (const e of tr.effects) {
      if (!e.is(patchHunkDeco)) continue;
      for (const p of e.value) {
        deco = deco.update({
          filterFrom: p.from,
          filterTo: p.to,
          filter: (from) => from < p.from || from > p.to,
          add: p.add,
          sort: true,
        });
      }
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

export interface MarkerActions {
  /** Decides the hunk whose marker holds `el`. The number is read from the
   * marker, not kept by the widget: a marker outlives renumbering (see
   * `HunkMarker.eq`). */
  decide(el: HTMLElement, decision: "accept" | "reject"): void;
  select(el: HTMLElement): void;
  /** Whether hunk decisions can be made now. */
  enabled(): boolean;
  /** The number of the hunk that starts at line `oldStart` of the
   * original now (a marker may have been made before a reject renumbered
   * the hunks), and how many hunks there are. */
  place(oldStart: number): { index: number; total: number } | null;
}

/** "Hunk 3 of 7", with a tick once accepted. */
export function markerLabel(index: number, total: number, accepted: boolean): string {
  return `${accepted ? "✓ " : ""}Hunk ${index + 1} of ${total}`;
}

/** The hunk marker above each hunk of the proposed side.
 *
 * Only what a decision changes about this hunk itself (accepted, current,
 * its counts) makes two markers differ. Its number, the total and whether
 * the buttons are enabled are drawn by `toDOM` and then kept up to date on
 * the markers on screen by `ReviewEditors.syncMarkers`: had they been part of
 * `eq`, every decision on a 2,000-hunk proposal would have replaced every
 * marker (a reject renumbers all hunks after it), and CodeMirror would have
 * re-measured the whole document, twice per decision (busy, then done). */
export class HunkMarker extends WidgetType {
  constructor(
    readonly index: number,
    readonly total: number,
    /** Where the hunk starts in the original, which no decision moves:
     * the marker's number is looked up by it when it is drawn. */
    readonly oldStart: number,
    readonly accepted: boolean,
    readonly current: boolean,
    readonly added: number,
    readonly removed: number,
    readonly actions: MarkerActions,
  ) {
    super();
  }

  override eq(o: HunkMarker): boolean {
    return (
      o.accepted === this.accepted &&
      o.current === this.current &&
      o.added === this.added &&
      o.removed === this.removed &&
      o.actions === this.actions
    );
  }

  toDOM(): HTMLElement {
    const place = this.actions.place(this.oldStart) ?? { index: this.index, total: this.total };
    const n = place.index + 1;
    const enabled = this.actions.enabled();
    const counts = h("span", { class: "hunk-counts" });
    if (this.added) counts.append(h("span", { class: "added" }, `+${this.added}`));
    if (this.removed) counts.append(h("span", { class: "removed" }, `−${this.removed}`));
    const accept = h(
      "button",
      {
        type: "button",
        class: "btn small accept",
        "data-action": "accept-hunk",
        "aria-label": `Accept hunk ${n}`,
        title: "Accept this hunk (a)",
        disabled: !enabled || this.accepted,
        onclick: () => this.actions.decide(el, "accept"),
      },
      this.accepted ? "Accepted" : "Accept",
    );
    const reject = h(
      "button",
      {
        type: "button",
        class: "btn small reject",
        "data-action": "reject-hunk",
        "aria-label": `Reject hunk ${n}`,
        title: "Reject this hunk: put the original lines back (r)",
        disabled: !enabled,
        onclick: () => this.actions.decide(el, "reject"),
      },
      "Reject",
    );
    const label = h("span", { class: "hunk-label" }, markerLabel(place.index, place.total, this.accepted));
    const el: HTMLElement = h(
      "div",
      {
        class: "hunk-marker",
        "data-hunk": place.index,
        "data-accepted": this.accepted,
        "data-current": this.current,
        onmousedown: (e: Event) => {
          if (!(e.target instanceof HTMLButtonElement)) this.actions.select(el);
        },
      },
      label,
      counts,
      accept,
      reject,
    );
    return el;
  }

  override ignoreEvent(): boolean {
    return true;
  }

  override get estimatedHeight(): number {
    return 28;
  }
}

/** The original side's twin of a hunk marker (side by side), so both
 * sides start a hunk at the same height. Shows, decides nothing. Its
 * number, like the marker's, is kept up to date by `syncMarkers`. */
export class HunkMirror extends WidgetType {
  constructor(
    readonly index: number,
    readonly total: number,
    readonly oldStart: number,
    readonly accepted: boolean,
    readonly current: boolean,
    readonly removed: number,
    readonly actions: MarkerActions,
  ) {
    super();
  }

  override eq(o: HunkMirror): boolean {
    return o.accepted === this.accepted && o.current === this.current && o.removed === this.removed;
  }

  toDOM(): HTMLElement {
    const place = this.actions.place(this.oldStart) ?? { index: this.index, total: this.total };
    return h(
      "div",
      { class: "hunk-marker mirror", "aria-hidden": "true", "data-accepted-mirror": this.accepted, "data-current": this.current },
      h("span", { class: "hunk-label" }, markerLabel(place.index, place.total, this.accepted)),
      h("span", { class: "hunk-counts" }, this.removed ? h("span", { class: "removed" }, `−${this.removed} original`) : h("span", null, "nothing removed")),
    );
  }

  override get estimatedHeight(): number {
    return 28;
  }
}

export const acceptedLine = Decoration.line({ class: "cm-hunkAccepted" });
export const currentLine = Decoration.line({ class: "cm-hunkCurrent" });

export function lineDecos(doc: Text, from: number, to: number, deco: Decoration, out: CMRange<Decoration>[]): void {
  if (to <= from) return;
  const end = Math.min(to, doc.length + 1) - 1;
  for (let pos = from; pos <= Math.min(end, doc.length); ) {
    const line = doc.lineAt(pos);
    out.push(deco.range(line.from));
    pos = line.to + 1;
  }
}

/** What the proposal `doc` does to the final line break of `original`, or
 * null: nothing, or no original text to compare with (a new or empty file,
 * an unreadable one). */
export function finalBreakChange(original: Text, doc: Text): string | null {
  if (original.length === 0 || doc.length === 0) return null;
  const before = endsWithBreak(original);
  if (before === endsWithBreak(doc)) return null;
  return before ? "⏎ removes the line break at the end of the file" : "⏎ adds a line break at the end of the file";
}

/** How the line breaks of `doc` (split on `sep`) end: "CRLF", "LF" or
 * "mixed"; null without a line break. */
export function lineEndings(doc: Text, sep: string): "CRLF" | "LF" | "mixed" | null {
  if (doc.lines < 2) return null;
  if (sep === "\r\n") return "CRLF";
  for (let i = 1; i < doc.lines; i++) {
    if (doc.line(i).text.endsWith("\r")) return "mixed";
  }
  return "LF";
}

/** What the proposal does to the line endings, or null: every line of a
 * file converted shows as changed with nothing different in it. */
export function lineEndingsChange(original: Text, sepA: string, doc: Text, sepB: string): string | null {
  const before = lineEndings(original, sepA);
  const after = lineEndings(doc, sepB);
  if (before === null || after === null || before === after) return null;
  return `⏎ line endings: ${before} → ${after}`;
}

/** A note in the proposal's text, inline or as a line of its own. */
class ReviewNote extends WidgetType {
  constructor(
    readonly text: string,
    readonly block = false,
  ) {
    super();
  }
  override eq(other: ReviewNote): boolean {
    return other.text === this.text && other.block === this.block;
  }
  toDOM(): HTMLElement {
    return h(this.block ? "div" : "span", { class: "cm-final-break" }, this.text);
  }
  override ignoreEvent(): boolean {
    return false;
  }
}

/** For the proposal's editor: a change to the final line break alone shows
 * no line of difference (the last line reads the same on both sides), so
 * it is said after the proposal's last character (the same words as the
 * Neovim and Vim reviews); so is a change of every line's ending, above
 * the first line. Follows the reviewer's edits. `sepA`, `sepB`: the line
 * separators the original and the proposal were split on. */
export function finalBreakNote(original: Text, sepA: string, sepB: string): Extension {
  const decos = (doc: Text): DecorationSet => {
    const notes: CMRange<Decoration>[] = [];
    const endings = lineEndingsChange(original, sepA, doc, sepB);
    if (endings !== null) {
      notes.push(Decoration.widget({ widget: new ReviewNote(endings, true), side: -1, block: true }).range(0));
    }
    const change = finalBreakChange(original, doc);
    if (change !== null) {
      notes.push(Decoration.widget({ widget: new ReviewNote(change), side: 1 }).range(doc.length));
    }
    return Decoration.set(notes, true);
  };
  return StateField.define<DecorationSet>({
    create: (state) => decos(state.doc),
    update: (value, tr) => (tr.docChanged ? decos(tr.state.doc) : value),
    provide: (field) => EditorView.decorations.from(field),
  });
}
