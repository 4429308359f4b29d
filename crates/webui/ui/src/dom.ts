// Building DOM without innerHTML: file names, paths and texts come from the
// server and are hostile input, so they only ever reach the page as text
// nodes or attribute values.

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((e: Event) => void)>;

/**
 * `h("button", {class: "x", "data-action": "accept-file", onclick: f}, "Accept")`.
 * `on*` attributes with a function become event listeners; `true` sets a
 * boolean attribute, `false`/null/undefined leave it out. No `style`
 * attribute is ever set (the CSP forbids inline styles).
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (typeof v === "function") {
        el.addEventListener(k.slice(2), v);
      } else if (k === "style") {
        throw new Error("inline styles are not allowed by the page's CSP");
      } else {
        el.setAttribute(k, v === true ? "" : String(v));
      }
    }
  }
  append(el, ...children);
  return el;
}

export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
}

/** Replaces every child of `el`. */
export function replace(el: Node, ...children: Child[]): void {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, ...children);
}

/** Sets or clears a boolean attribute. */
export function flag(el: Element, name: string, on: boolean): void {
  if (on) el.setAttribute(name, "");
  else el.removeAttribute(name);
}

/** "12:04:31" (today) or "Nov 23 12:04" (another day). */
export function clock(ms: number): string {
  const d = new Date(ms);
  const now = new Date();
  const time = d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  if (d.toDateString() === now.toDateString()) return time;
  return `${d.toLocaleDateString(undefined, { month: "short", day: "numeric" })} ${time}`;
}

/** "5.3 s", "120 ms", "2 min 4 s". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** The last component of a path. */
export function baseName(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  const i = trimmed.lastIndexOf("/");
  return i >= 0 ? trimmed.slice(i + 1) || trimmed : trimmed;
}

/** The path shown relative to the workspace folder it lies in, if any. */
export function displayPath(path: string, folders: readonly string[]): string {
  for (const f of folders) {
    const base = f.replace(/\/+$/, "");
    if (path === base) return baseName(base);
    if (path.startsWith(base + "/")) return path.slice(base.length + 1);
  }
  return path;
}

/** Whether keyboard input at `target` is typing (not a page shortcut). */
export function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof Element)) return false;
  if (target.closest("input, textarea, select, [contenteditable=''], [contenteditable=true]")) {
    // A read-only CodeMirror editor is focusable but takes no text: page
    // keys work there (`aria-readonly` is set on its content).
    const content = target.closest(".cm-content");
    if (content && content.getAttribute("aria-readonly") === "true") return false;
    return true;
  }
  return false;
}
