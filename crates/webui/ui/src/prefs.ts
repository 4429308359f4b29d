// What the page remembers in localStorage: choices, not data (the server
// keeps the reviews, their edits and decisions).

export type Layout = "split" | "unified";

const PREFIX = "ccbridge.";

function read(key: string): string | null {
  try {
    return localStorage.getItem(PREFIX + key);
  } catch {
    return null;
  }
}

function write(key: string, value: string | null): void {
  try {
    if (value === null) localStorage.removeItem(PREFIX + key);
    else localStorage.setItem(PREFIX + key, value);
  } catch {
    // Storage full or disabled: the choice lasts until the reload.
  }
}

export const prefs = {
  layout(): Layout {
    return read("layout") === "unified" ? "unified" : "split";
  },
  setLayout(l: Layout): void {
    write("layout", l);
  },
  /** The review and hunk last focused, restored after a reload. */
  focus(): { review: number; hunk: number } | null {
    const v = read("focus");
    const m = v ? /^(\d+):(\d+)$/.exec(v) : null;
    return m ? { review: Number(m[1]), hunk: Number(m[2]) } : null;
  },
  setFocus(review: number, hunk: number): void {
    write("focus", `${review}:${hunk}`);
  },
  notify(): boolean {
    return read("notify") === "1";
  },
  setNotify(on: boolean): void {
    write("notify", on ? "1" : null);
  },
  severities(): Set<string> {
    const v = read("severities");
    return new Set(v === null ? ["Error", "Warning", "Information", "Hint"] : v.split(",").filter(Boolean));
  },
  setSeverities(s: Set<string>): void {
    write("severities", [...s].join(","));
  },
  view(): string | null {
    return read("view");
  },
  setView(v: string): void {
    write("view", v);
  },
};
