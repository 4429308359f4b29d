/**
 * The text a proposal goes back as. VS Code holds a document with one line
 * ending (the most common one of the text it loaded; a lone carriage return
 * is a line break too) and without a leading byte-order mark, so the text it
 * gives is not always the bytes that were proposed. Unchanged, the proposal
 * goes back byte for byte (a file with mixed line endings is not rewritten
 * whole); edited, it gets the proposal's byte-order mark back, its line
 * endings being VS Code's (the proposal's own when it used one throughout).
 */
const BOM = "\uFEFF";

/** `text` without a byte-order mark, every line break (CRLF, CR, LF) as LF. */
function normalized(text: string): string {
  return (text.startsWith(BOM) ? text.slice(1) : text).replace(/\r\n?/g, "\n");
}

/** What to send for `text`, the document as the user left it, of a review of `proposed`. */
export function asSent(text: string, proposed: string): string {
  if (normalized(text) === normalized(proposed)) return proposed;
  return proposed.startsWith(BOM) && !text.startsWith(BOM) ? BOM + text : text;
}

/** The proposal's lines a hunk covers: `start` (0-based) and how many. */
export interface Lines {
  start: number;
  count: number;
}

/** An edit of the proposal, as VS Code reports it: the replaced range and how many line breaks its new text has. */
export interface Edit {
  startLine: number;
  endLine: number;
  endCharacter: number;
  addedLines: number;
}

/**
 * Where a hunk's lines are after `edit`. Before it: shifted. After it:
 * unchanged. Overlapping it: the hunk grows to cover every line the edit
 * touched, from the edit's first line when it began above the hunk, so a
 * later Reject puts the original's lines back in place of all of them (a
 * hunk that only shrank kept its start, and a rejected line that the edit
 * had pulled above it survived the rejection).
 */
export function track(h: Lines, edit: Edit): Lines {
  const { startLine, endLine, endCharacter, addedLines } = edit;
  const delta = addedLines - (endLine - startLine);
  const end = h.start + h.count;
  if (endLine < h.start || (endLine === h.start && endCharacter === 0)) {
    return { start: h.start + delta, count: h.count };
  }
  if (startLine >= end) return h;
  // The last line the edit changed (an edit ending at a line's start leaves that line alone).
  const lastTouched = endCharacter === 0 && endLine > startLine ? endLine - 1 : endLine;
  const start = Math.min(h.start, startLine);
  const newEnd = lastTouched < end ? end + delta : startLine + addedLines + 1;
  return { start, count: Math.max(0, newEnd - start) };
}

/**
 * Whether VS Code's diff editor shows nothing of the change from `before`
 * to `after` (lines without their line breaks) under its default
 * `diffEditor.ignoreTrimWhitespace`: as many lines, each changed at most in
 * its leading or trailing whitespace (re-indented code, trailing spaces
 * removed). Such a change still has its own CodeLens, and needs a mark of
 * its own to be seen.
 */
export function onlyTrimWhitespace(before: readonly string[], after: readonly string[]): boolean {
  return (
    before.length === after.length &&
    before.some((line, i) => line !== after[i]) &&
    before.every((line, i) => line.trim() === after[i]?.trim())
  );
}
