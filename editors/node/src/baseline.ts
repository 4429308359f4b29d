/**
 * The "before" side of a changed file, for an editor's diff view of the
 * session review.
 *
 * The protocol's `changes` answer carries each hunk's removed lines but no
 * request returns the file's whole content at the session's start: a diff
 * view would otherwise need one more round trip per file, and the sidecar
 * may run on another machine. The current text plus the hunks is enough,
 * as long as every hunk is fully described, so the text is put back
 * together here, and checked against the hunks' added lines: a file that
 * changed since the review was fetched gives `undefined`, never a wrong
 * "before".
 *
 * The hunks' lines come without terminators. A removed line gets the
 * file's own line break (CRLF if the current text uses it); whether the
 * old last line ended with one follows the current text, unless the hunk
 * is that last line alone with the same text: that is taken to be the
 * final line break added or removed (the usual case; a last line whose
 * CRLF alone became LF would be shown without its break). A hunk of
 * several lines whose text did not change is a change of line endings,
 * which the hunks cannot describe: `undefined` then, rather than a guess.
 */
import type { ChangedFile } from "./protocol.js";

/** Lines as the review counts them: each with its `\n` (and `\r`); text after the last `\n` is a line too. */
export function splitLines(text: string): string[] {
  const out: string[] = [];
  let from = 0;
  for (;;) {
    const nl = text.indexOf("\n", from);
    if (nl < 0) break;
    out.push(text.slice(from, nl + 1));
    from = nl + 1;
  }
  if (from < text.length) out.push(text.slice(from));
  return out;
}

function bare(line: string): string {
  return line.replace(/\r?\n$/, "");
}

/**
 * `file`'s content at the session's start, rebuilt from `now` (its text as
 * the review saw it) and its hunks; `undefined` when that cannot be done
 * exactly (a binary or unknown file, a hunk cut short, hunks not listed,
 * or `now` not the text the hunks describe).
 */
export function beforeText(file: ChangedFile, now: string): string | undefined {
  if (file.status === "binary" || file.status === "unknown" || file.moreHunks > 0) return undefined;
  if (file.status === "created") return "";
  if (file.hunks.some((h) => h.cut)) return undefined;
  const current = splitLines(now);
  const eol = now.includes("\r\n") ? "\r\n" : "\n";
  const out: string[] = [];
  let at = 0;
  for (const h of file.hunks) {
    if (h.newStart < at || h.newStart + h.newLines > current.length) return undefined;
    if (h.added.length !== h.newLines || h.removed.length !== h.oldLines) return undefined;
    const sameText = h.oldLines === h.newLines && h.removed.every((r, j) => r === h.added[j]);
    const atEnd = h.newStart + h.newLines === current.length;
    // Only line breaks changed: knowable for the final one alone.
    if (sameText && !(atEnd && h.newLines === 1)) return undefined;
    for (let i = 0; i < h.newLines; i++) {
      if (bare(current[h.newStart + i] ?? "") !== h.added[i]) return undefined;
    }
    out.push(...current.slice(at, h.newStart));
    h.removed.forEach((line, i) => {
      const last = i === h.removed.length - 1;
      if (!(last && atEnd)) {
        out.push(line + eol);
        return;
      }
      // The old file's last line: does it end with a line break?
      const nowLast = current[current.length - 1];
      const nowEnds = nowLast === undefined ? true : nowLast.endsWith("\n");
      out.push(line + ((sameText ? !nowEnds : nowEnds) ? eol : ""));
    });
    at = h.newStart + h.newLines;
  }
  out.push(...current.slice(at));
  return out.join("");
}
