// A command's output as a terminal would leave it on screen, as plain text:
// escape sequences (colours, cursor moves, window titles, shell
// integration marks) removed, and a line rewritten after a carriage return
// (progress bars) showing only its last version. The output is hostile
// input like everything else from the server; this only ever feeds a text
// node.

// CSI (ESC [ … final), OSC (ESC ] … BEL or ST), and the other two- or
// three-byte escapes (charset selection, keypad modes, …).
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[()*+][0-9A-Za-z]|\x1b[@-Z\\-_a-z=>78]/g;
// Control characters a text view cannot show (tab and newline stay; a
// carriage return is handled per line).
const CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g;

/** `raw` cleaned for a text view. */
export function cleanTerminal(raw: string): string {
  const text = raw.replace(ESCAPES, "").replace(/\r\n/g, "\n");
  return text
    .split("\n")
    .map((line) => {
      const cr = line.lastIndexOf("\r", line.length - 2);
      const last = cr >= 0 ? line.slice(cr + 1) : line;
      return last.replace(/\r/g, "").replace(CONTROLS, "");
    })
    .join("\n");
}
