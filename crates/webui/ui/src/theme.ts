// Light and dark, following prefers-color-scheme, for the page (app.css)
// and every CodeMirror editor (this file). Colours live in CSS variables
// defined in app.css, so one editor theme serves both schemes; only
// CodeMirror's own `darkTheme` flag (which picks the merge view's built-in
// colours) is switched when the scheme changes.

import { Compartment, type Extension } from "@codemirror/state";
import { EditorView } from "@codemirror/view";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { tags as t } from "@lezer/highlight";

/** The style nonce the server put in the page (`<meta name="ccbridge-nonce">`). */
export function styleNonce(): string {
  const meta = document.querySelector('meta[name="ccbridge-nonce"]');
  const v = meta?.getAttribute("content") ?? "";
  return v === "{{NONCE}}" ? "" : v;
}

const darkQuery = window.matchMedia("(prefers-color-scheme: dark)");
const schemeCompartment = new Compartment();
const views = new Set<EditorView>();

export function isDark(): boolean {
  return darkQuery.matches;
}

darkQuery.addEventListener("change", () => {
  for (const v of views) {
    if (!v.dom.isConnected) {
      views.delete(v);
      continue;
    }
    v.dispatch({ effects: schemeCompartment.reconfigure(EditorView.darkTheme.of(isDark())) });
  }
});

/** Follows the colour scheme from now on (until the view leaves the page). */
export function trackScheme(view: EditorView): void {
  views.add(view);
}

export function forgetScheme(view: EditorView): void {
  views.delete(view);
}

const highlight = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.moduleKeyword, t.operatorKeyword, t.definitionKeyword, t.modifier], color: "var(--tok-keyword)" },
  { tag: [t.string, t.special(t.string), t.regexp, t.character], color: "var(--tok-string)" },
  { tag: [t.number, t.bool, t.null, t.atom], color: "var(--tok-number)" },
  { tag: [t.comment, t.lineComment, t.blockComment, t.docComment], color: "var(--tok-comment)", fontStyle: "italic" },
  { tag: [t.function(t.variableName), t.function(t.propertyName), t.macroName], color: "var(--tok-function)" },
  { tag: [t.typeName, t.className, t.namespace, t.standard(t.typeName)], color: "var(--tok-type)" },
  { tag: [t.definition(t.variableName), t.definition(t.propertyName)], color: "var(--tok-def)" },
  { tag: [t.propertyName, t.attributeName], color: "var(--tok-property)" },
  { tag: [t.tagName, t.angleBracket], color: "var(--tok-tag)" },
  { tag: [t.meta, t.annotation, t.processingInstruction], color: "var(--tok-meta)" },
  { tag: [t.heading], color: "var(--tok-keyword)", fontWeight: "600" },
  { tag: [t.emphasis], fontStyle: "italic" },
  { tag: [t.strong], fontWeight: "600" },
  { tag: [t.link, t.url], color: "var(--tok-string)", textDecoration: "underline" },
  { tag: [t.invalid], color: "var(--tok-invalid)" },
]);

const editorTheme = EditorView.theme({
  "&": {
    color: "var(--text)",
    backgroundColor: "var(--code-bg)",
    fontSize: "var(--code-size)",
  },
  "&.cm-focused": { outline: "none" },
  ".cm-scroller": {
    fontFamily: "var(--mono)",
    lineHeight: "1.5",
  },
  ".cm-content": { caretColor: "var(--text)", tabSize: "4" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--text)" },
  "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, ::selection": {
    backgroundColor: "var(--selection) !important",
  },
  ".cm-gutters": {
    backgroundColor: "var(--code-bg)",
    color: "var(--muted-2)",
    border: "none",
  },
  ".cm-lineNumbers .cm-gutterElement": { padding: "0 10px 0 12px", minWidth: "3ch" },
  ".cm-activeLine": { backgroundColor: "var(--active-line)" },
  ".cm-final-break": { color: "var(--muted)", fontStyle: "italic", marginInlineStart: "1ch" },
  ".cm-activeLineGutter": { backgroundColor: "var(--active-line)", color: "var(--text)" },
  ".cm-panels": { backgroundColor: "var(--surface-2)", color: "var(--text)" },
  ".cm-panels.cm-panels-top": { borderBottom: "1px solid var(--line)" },
  ".cm-panels.cm-panels-bottom": { borderTop: "1px solid var(--line)" },
  ".cm-searchMatch": { backgroundColor: "var(--search-match)" },
  ".cm-searchMatch.cm-searchMatch-selected": { backgroundColor: "var(--search-match-strong)" },
  ".cm-collapsedLines": {
    color: "var(--muted) !important",
    background: "var(--collapsed-bg) !important",
    fontFamily: "var(--sans)",
    fontSize: "12px",
  },
  ".cm-collapsedLines:hover": { color: "var(--text) !important" },
  ".cm-collapsedLines:before": { content: '"↕"', marginInlineEnd: "8px" },
  ".cm-collapsedLines:after": { content: '""', marginInlineStart: "0" },
  // The merge view's colours, from app.css's variables.
  "&.cm-merge-a .cm-changedLine, .cm-deletedChunk": { backgroundColor: "var(--del-bg) !important" },
  "&.cm-merge-b .cm-changedLine, .cm-inlineChangedLine": { backgroundColor: "var(--add-bg) !important" },
  "&.cm-merge-a .cm-changedText, .cm-deletedChunk .cm-deletedText": {
    background: "var(--del-strong) !important",
    borderRadius: "2px",
  },
  "&.cm-merge-b .cm-changedText": { background: "var(--add-strong) !important", borderRadius: "2px" },
  "&.cm-merge-a .cm-changedLineGutter, .cm-deletedLineGutter": { background: "var(--del-mark) !important" },
  "&.cm-merge-b .cm-changedLineGutter": { background: "var(--add-mark) !important" },
  ".cm-changeGutter": { width: "3px", paddingLeft: "0" },
  ".cm-deletedChunk": { paddingLeft: "0 !important" },
  ".cm-deletedChunk .cm-deletedLine": { paddingLeft: "6px" },
  ".cm-mergeSpacer": {
    backgroundImage: "var(--spacer-bg)",
  },
});

/** The theme every editor gets: colours, syntax colours, scheme flag. */
export function themeExtensions(): Extension[] {
  return [
    editorTheme,
    syntaxHighlighting(highlight),
    schemeCompartment.of(EditorView.darkTheme.of(isDark())),
  ];
}
