// What every CodeMirror editor of the page has: the CSP nonce (without it
// CodeMirror's styles would not load), the theme, line numbers, search,
// and the line separator of its text.

import { EditorSelection, EditorState, RangeSetBuilder, type Extension, type Transaction, type TransactionSpec } from "@codemirror/state";
import {
  Decoration,
  EditorView,
  ViewPlugin,
  type DecorationSet,
  type ViewUpdate,
  crosshairCursor,
  drawSelection,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  keymap,
  lineNumbers,
  rectangularSelection,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { highlightSelectionMatches, search, searchKeymap } from "@codemirror/search";
import { bracketMatching, indentOnInput } from "@codemirror/language";
import { styleNonce, themeExtensions } from "./theme";

const nonce = styleNonce();

/** The nonce for CodeMirror's generated styles, for every editor. */
export function cspNonce(): Extension {
  return EditorView.cspNonce.of(nonce);
}

/** Gives the document a (collapsed, invisible) selection if it has none.
 * While the document has no selection, every CodeMirror editor reads it
 * again on each of its updates, and in Chromium reading it after the DOM
 * changed forces a layout: a per-hunk decision on a large review updates
 * both sides several times, and those forced layouts were a third of its
 * time. With a selection anywhere (here: the start of the body, as after a
 * click on empty page), the editors keep what they read last. Called before
 * the page changes editors in answer to a key, when the layout is still
 * clean, so the check itself costs nothing. */
export function anchorDocumentSelection(): void {
  const sel = document.getSelection();
  if (sel && !sel.focusNode) sel.collapse(document.body, 0);
}

export interface EditorOptions {
  /** The text's line separator ("\n" or "\r\n"; see hunks.ts). */
  lineSeparator: string;
  /** Takes typing (the proposed side of a review) or not. */
  editable: boolean;
  /** Escape in the editor hands the keyboard back to the page. */
  onEscape?: (view: EditorView) => void;
  /** The editor's accessible name. */
  label: string;
}

/** Pasted or dropped text with the document's line breaks. CodeMirror
 * splits inserted text on the document's separator only: in a CRLF file,
 * lines copied from elsewhere (LF) stayed one line holding bare line feeds,
 * and were saved so. */
export function withBreaks(text: string, state: EditorState): string {
  return state.lineBreak === "\r\n" ? text.replace(/\r\n|\r|\n/g, "\r\n") : text;
}

/**
 * A cursor at the end of a line that ends in a carriage return (a CRLF
 * line of a file whose endings are mixed, held with its CR as text: see
 * hunks.ts) moved before it. End, or a click past the line, put it after
 * the CR, and what was typed there landed between the CR and the line
 * feed (`ab\r` + `x` → `ab\rx`), a line the file never had.
 */
export function beforeCarriageReturn(tr: Transaction): Transaction | readonly (Transaction | TransactionSpec)[] {
  if (!tr.selection) return tr;
  const doc = tr.newDoc;
  const sel = tr.newSelection;
  let moved = false;
  const ranges = sel.ranges.map((r) => {
    if (!r.empty || r.head === 0) return r;
    const line = doc.lineAt(r.head);
    if (r.head !== line.to || doc.sliceString(r.head - 1, r.head) !== "\r") return r;
    moved = true;
    return EditorSelection.cursor(r.head - 1);
  });
  if (!moved) return tr;
  return [tr, { selection: EditorSelection.create(ranges, sel.mainIndex), sequential: true }];
}

/** The extensions shared by every editor. */
export function baseEditor(opts: EditorOptions): Extension[] {
  const ext: Extension[] = [
    cspNonce(),
    themeExtensions(),
    EditorState.lineSeparator.of(opts.lineSeparator),
    lineNumbers(),
    highlightActiveLineGutter(),
    highlightSpecialChars(),
    drawSelection(),
    highlightActiveLine(),
    rectangularSelection(),
    crosshairCursor(),
    highlightSelectionMatches(),
    search({ top: true }),
    bracketMatching(),
    EditorView.contentAttributes.of({ "aria-label": opts.label }),
  ];
  const keys = [...searchKeymap, ...defaultKeymap];
  if (opts.onEscape) {
    const onEscape = opts.onEscape;
    keys.unshift({
      key: "Escape",
      run: (view) => {
        onEscape(view);
        return true;
      },
    });
  }
  if (opts.editable) {
    ext.push(history(), indentOnInput(), keymap.of([...keys, ...historyKeymap]));
    if (opts.lineSeparator === "\r\n") ext.push(EditorView.clipboardInputFilter.of(withBreaks));
    else ext.push(EditorState.transactionFilter.of(beforeCarriageReturn));
  } else {
    ext.push(EditorState.readOnly.of(true), keymap.of(keys));
  }
  return ext;
}

// ---------------------------------------------------------------- wrapped lines

/** Indentation kept on wrapped lines is capped at this many columns. */
const MAX_INDENT = 48;
/** `.cm-line`'s own left padding (CodeMirror's base theme). */
const LINE_PADDING = "6px";

const indentDeco = Array.from({ length: MAX_INDENT + 1 }, (_, n) => Decoration.line({ class: `cm-wrapIndent-${n}` }));

/** The columns of `text`'s leading spaces and tabs. */
export function indentColumns(text: string, tabSize: number): number {
  let col = 0;
  for (let i = 0; i < text.length && col < MAX_INDENT; i++) {
    const c = text.charCodeAt(i);
    if (c === 32) col += 1;
    else if (c === 9) col += tabSize - (col % tabSize);
    else break;
  }
  return Math.min(col, MAX_INDENT);
}

function indentDecorations(view: EditorView): DecorationSet {
  const b = new RangeSetBuilder<Decoration>();
  const doc = view.state.doc;
  const tab = view.state.tabSize;
  for (const { from, to } of view.visibleRanges) {
    for (let pos = from; pos <= to; ) {
      const line = doc.lineAt(pos);
      const n = indentColumns(line.text, tab);
      if (n > 0) b.add(line.from, line.from, indentDeco[n]!);
      pos = line.to + 1;
    }
  }
  return b.finish();
}

const wrapIndent = ViewPlugin.fromClass(
  class {
    decorations: DecorationSet;
    constructor(view: EditorView) {
      this.decorations = indentDecorations(view);
    }
    update(u: ViewUpdate) {
      if (u.docChanged || u.viewportChanged) this.decorations = indentDecorations(u.view);
    }
  },
  { decorations: (v) => v.decorations },
);

/** A hanging indent: the continuation of a wrapped line starts under its
 * first character, not at the left edge. Classes, not inline styles (the
 * page's CSP allows none): one per indentation width. */
const wrapIndentTheme = EditorView.baseTheme(
  Object.fromEntries(
    indentDeco.slice(1).map((_, i) => {
      const n = i + 1;
      return [`.cm-line.cm-wrapIndent-${n}`, { paddingLeft: `calc(${n}ch + ${LINE_PADDING})`, textIndent: `-${n}ch` }];
    }),
  ),
);

/** Long lines wrap, keeping their indentation (at 200% zoom a review's
 * lines wrap often). */
export function wrappedLines(): Extension[] {
  return [EditorView.lineWrapping, wrapIndent, wrapIndentTheme];
}
