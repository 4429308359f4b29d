// The small notification area ([data-note], aria-live): why a review was
// closed, a refused request, a change made in another tab. The latest note
// stays readable in the element; it fades from view after a while.

import { h } from "./dom";

let box: HTMLElement | null = null;
let text: HTMLElement | null = null;
let timer = 0;

export function notesElement(): HTMLElement {
  text = h("span", { class: "note-text" });
  const close = h("button", { class: "note-close", type: "button", "aria-label": "Dismiss the note", title: "Dismiss", onclick: () => hide() }, "×");
  box = h("div", { class: "note", "data-note": "", role: "status", "aria-live": "polite", hidden: true }, text, close);
  return box;
}

function hide(): void {
  if (box) box.hidden = true;
}

/** Shows `message` (plain text) as the latest note. */
export function note(message: string, kind: "info" | "warn" | "error" = "info"): void {
  if (!box || !text) return;
  text.textContent = message;
  box.dataset["kind"] = kind;
  box.hidden = false;
  window.clearTimeout(timer);
  timer = window.setTimeout(hide, kind === "error" ? 20_000 : 10_000);
}
