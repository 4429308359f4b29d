// What every CodeMirror editor of the page has: the CSP nonce (without it
// CodeMirror's styles would not load), the theme, line numbers, search,
// and the line separator of its text.

import { EditorState, type Extension } from "@codemirror/state";
import {
  EditorView,
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
  } else {
    ext.push(EditorState.readOnly.of(true), keymap.of(keys));
  }
  return ext;
}
