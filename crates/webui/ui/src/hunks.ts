// From the server's hunks (0-based line ranges, computed once in Rust) to
// what CodeMirror draws, so the page shows exactly ccbridge's hunks.
//
// A server line is a line with its terminator (Rust's split_inclusive on
// "\n"); a document "a\nb\n" has two lines, "a\nb" has two as well (the last
// without a newline), "" has none. CodeMirror's Text has one more line
// when the text ends with a line break (an empty last line), and positions
// count each line break as one character, whatever the separator. Editors
// are created with the separator the text uses (see `lineSeparatorOf`), so
// CodeMirror's lines are exactly the server's.
//
// `@codemirror/merge` accepts an external diff (`diffConfig.override`) but
// then still post-processes it for presentation (moving insertions along
// repeated lines, merging changes a few characters apart) and merges
// chunks one empty line apart. To draw the server's hunks and nothing else,
// `installExactChunks` wraps `Chunk.build`/`updateA`/`updateB`: when both
// documents are exactly the ones the server's hunks were computed for, the
// chunks are made from those hunks directly; otherwise (while the reviewer
// types, before the server has answered) CodeMirror's own diff runs.

import { Text } from "@codemirror/state";
import { Change, Chunk, diff, presentableDiff, type DiffConfig } from "@codemirror/merge";
import type { Hunk } from "./api";

/** The line separator to give CodeMirror for `text`: "\r\n" when every
 * line break is one, else "\n" (a lone "\r" then stays in its line, as in
 * the file). */
export function lineSeparatorOf(text: string): "\n" | "\r\n" {
  const lf = text.indexOf("\n");
  if (lf <= 0 || text[lf - 1] !== "\r") return "\n";
  for (let i = text.indexOf("\n", lf + 1); i >= 0; i = text.indexOf("\n", i + 1)) {
    if (text[i - 1] !== "\r") return "\n";
  }
  return "\r\n";
}

/** `text` as a CodeMirror document split on `sep`. */
export function textOf(text: string, sep: string): Text {
  return Text.of(text.split(sep));
}

/** How many server lines `doc` has. */
export function serverLineCount(doc: Text): number {
  if (doc.length === 0) return 0;
  return doc.line(doc.lines).length === 0 ? doc.lines - 1 : doc.lines;
}

/** The position where server line `line` starts (the end of the document
 * for the line after the last). */
export function lineStart(doc: Text, line: number): number {
  return line < doc.lines ? doc.line(line + 1).from : doc.length;
}

/** The server's hunks as CodeMirror `Change`s between `a` and `b`: whole
 * lines, in UTF-16 positions of each document. Null when the hunks do not
 * fit the documents (they were computed for other texts). */
export function hunksToChanges(hunks: readonly Hunk[], a: Text, b: Text): Change[] | null {
  const linesA = serverLineCount(a);
  const linesB = serverLineCount(b);
  const out: Change[] = [];
  let lastA = 0;
  let lastB = 0;
  for (const h of hunks) {
    if (h.oldStart < lastA || h.newStart < lastB) return null;
    if (h.oldStart + h.oldLines > linesA || h.newStart + h.newLines > linesB) return null;
    out.push(
      new Change(
        lineStart(a, h.oldStart),
        lineStart(a, h.oldStart + h.oldLines),
        lineStart(b, h.newStart),
        lineStart(b, h.newStart + h.newLines),
      ),
    );
    lastA = h.oldStart + h.oldLines;
    lastB = h.newStart + h.newLines;
  }
  return out;
}

/** Inline (character) differences inside a hunk are drawn only for hunks
 * this small; bigger ones keep the line colours alone. */
const INLINE_DIFF_MAX = 8000;

/** One CodeMirror chunk per server hunk (chunk ends are one past the last
 * line's end, as `Chunk` defines them), with the character-level changes
 * inside each for highlighting. Those are computed the first time
 * CodeMirror reads them, which it does only for chunks in view: diffing
 * every hunk of a 20,000-line review at once took ~80 ms of its first
 * frame (docs/benchmarks.md). */
export function chunksFor(changes: readonly Change[], a: Text, b: Text): Chunk[] {
  return changes.map((c) => chunkFor(c, a, b));
}

/** The documents a `LazyChunk`'s inner changes are computed from, and
 * those changes once computed. */
interface Inner {
  a: Text;
  b: Text;
  changes: readonly Change[] | null;
}
const inners = new WeakMap<Chunk, Inner>();

/** A chunk whose `changes` are computed when first read (an accessor on
 * the prototype: defining one on each of 2,000 chunks cost milliseconds
 * per diff). */
class LazyChunk extends Chunk {}
Object.defineProperty(LazyChunk.prototype, "changes", {
  configurable: true,
  enumerable: true,
  get(this: LazyChunk): readonly Change[] {
    const inner = inners.get(this);
    if (!inner) return [];
    return (inner.changes ??= presentableDiff(
      inner.a.sliceString(this.fromA, Math.min(this.toA, inner.a.length)),
      inner.b.sliceString(this.fromB, Math.min(this.toB, inner.b.length)),
      { scanLimit: 500, timeout: 50 },
    ));
  },
  // Chunk's constructor sets `changes` (to []): the accessor computes them.
  set(this: LazyChunk, _ignored: readonly Change[]) {},
});

function chunkFor(c: Change, a: Text, b: Text): Chunk {
  const toA = chunkEnd(a, c.fromA, c.toA);
  const toB = chunkEnd(b, c.fromB, c.toB);
  const lenA = toA - c.fromA;
  const lenB = toB - c.fromB;
  if (lenA > 0 && lenB > 0 && lenA < INLINE_DIFF_MAX && lenB < INLINE_DIFF_MAX) {
    const chunk = new LazyChunk([], c.fromA, toA, c.fromB, toB);
    inners.set(chunk, { a, b, changes: null });
    return chunk;
  }
  return new Chunk([], c.fromA, toA, c.fromB, toB);
}

/** A chunk's end: one past the end of its last line, which is the start
 * of the next line, or the document's length + 1 when the last changed
 * line is the final one and has no line break. */
function chunkEnd(doc: Text, from: number, to: number): number {
  if (to <= from) return from;
  return to === doc.length && !endsWithBreak(doc) ? doc.length + 1 : to;
}

/** Whether `doc` ends with a line break (its last line is empty). */
export function endsWithBreak(doc: Text): boolean {
  return doc.length > 0 && doc.line(doc.lines).length === 0;
}

/** The diff of one review as the server computed it: the documents the
 * hunks belong to, and the changes and chunks made from them. */
export class ServerDiff {
  readonly changes: Change[] | null;
  readonly chunks: Chunk[] | null;
  private strA: string | null = null;
  private strB: string | null = null;

  constructor(
    readonly a: Text,
    readonly b: Text,
    private readonly hunks: readonly Hunk[],
    made?: { changes: Change[]; chunks: Chunk[] },
  ) {
    this.seenA = a;
    this.seenB = b;
    this.changes = made ? made.changes : hunksToChanges(hunks, a, b);
    this.chunks = made ? made.chunks : this.changes && chunksFor(this.changes, a, b);
  }

  /** This diff after hunk `index` was reverted (its lines in `b` made the
   * original's again, giving `b`; `hunks` the server's hunks after it): the
   * hunks before it stand as they were, those after it moved by the
   * characters the revert took out or put back. As `new ServerDiff(a, b,
   * hunks)` would make them, without looking every hunk up again. */
  without(index: number, b: Text, hunks: readonly Hunk[]): ServerDiff {
    const changes = this.changes;
    const chunks = this.chunks;
    if (!changes || !chunks || !changes[index] || hunks.length !== changes.length - 1) return new ServerDiff(this.a, b, hunks);
    const by = b.length - this.b.length;
    const moved = changes.slice(index + 1).map((c) => new Change(c.fromA, c.toA, c.fromB + by, c.toB + by));
    return new ServerDiff(this.a, b, hunks, {
      changes: [...changes.slice(0, index), ...moved],
      chunks: [...chunks.slice(0, index), ...moved.map((c) => chunkFor(c, this.a, b))],
    });
  }

  /** Documents found equal to `a` and `b` (Texts never change, so once
   * compared, the same objects match at once). */
  private seenA: Text;
  private seenB: Text;

  /** Whether `a` and `b` are the documents this diff is about. The
   * editors ask this many times per decision; comparing a 20,000-line
   * document each time cost ~20 ms per decision. */
  matches(a: Text, b: Text): boolean {
    if (a === this.seenA && b === this.seenB) return true;
    if (a.length !== this.a.length || b.length !== this.b.length) return false;
    const same = (a === this.a || a === this.seenA || a.eq(this.a)) && (b === this.b || b === this.seenB || b.eq(this.b));
    if (same) {
      this.seenA = a;
      this.seenB = b;
    }
    return same;
  }

  /** Whether `hunks` have the places this diff was made from (so the same
   * texts give the same chunks: an accepted mark changes none). */
  samePlaces(hunks: readonly Hunk[]): boolean {
    const c = this.hunks;
    if (c.length !== hunks.length) return false;
    for (let i = 0; i < c.length; i++) {
      const x = c[i]!;
      const y = hunks[i]!;
      if (x.oldStart !== y.oldStart || x.oldLines !== y.oldLines || x.newStart !== y.newStart || x.newLines !== y.newLines) return false;
    }
    return true;
  }

  /** The `diffConfig.override` answer: the server's changes for the
   * server's documents, CodeMirror's diff for anything else. */
  override(a: string, b: string): readonly Change[] {
    if (this.changes) {
      this.strA ??= this.a.toString();
      this.strB ??= this.b.toString();
      if (a === this.strA && b === this.strB) return this.changes;
    }
    return diff(a, b, FALLBACK);
  }
}

const FALLBACK: DiffConfig = { scanLimit: 500, timeout: 100 };

/** A `DiffConfig` whose diff is `current()`'s: the review's latest server
 * diff. */
export function serverDiffConfig(current: () => ServerDiff | null): DiffConfig {
  const override = (a: string, b: string): readonly Change[] => {
    const d = current();
    return d ? d.override(a, b) : diff(a, b, FALLBACK);
  };
  sources.set(override, current);
  return { override, scanLimit: 500, timeout: 100 };
}

const sources = new WeakMap<object, () => ServerDiff | null>();

function exact(a: Text, b: Text, conf: DiffConfig | undefined): readonly Chunk[] | null {
  const source = conf?.override && sources.get(conf.override);
  if (!source) return null;
  const d = source();
  return d && d.chunks && d.matches(a, b) ? d.chunks : null;
}

let installed = false;

/** Makes merge views whose `diffConfig` came from `serverDiffConfig` draw
 * the server's chunks exactly (see the top of this file). */
export function installExactChunks(): void {
  if (installed) return;
  installed = true;
  const C = Chunk as unknown as {
    build: typeof Chunk.build;
    updateA: typeof Chunk.updateA;
    updateB: typeof Chunk.updateB;
  };
  const build = C.build.bind(Chunk);
  const updateA = C.updateA.bind(Chunk);
  const updateB = C.updateB.bind(Chunk);
  C.build = (a, b, conf) => exact(a, b, conf) ?? build(a, b, conf);
  C.updateA = (chunks, a, b, changes, conf) => exact(a, b, conf) ?? updateA(chunks, a, b, changes, conf);
  C.updateB = (chunks, a, b, changes, conf) => exact(a, b, conf) ?? updateB(chunks, a, b, changes, conf);
}

/** Where hunk `i` starts in document B (the proposed side). */
export function hunkPosB(d: ServerDiff, i: number): number | null {
  const c = d.changes?.[i];
  return c ? c.fromB : null;
}
