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
