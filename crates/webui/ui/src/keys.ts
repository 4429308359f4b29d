// Page-wide keys (docs/web-ui.md lists them) and the `?` overlay. Keys act
// only when the focus is not in something that takes typing (the proposed
// side of a review, an input); Escape in an editor hands the keyboard back.

import { h, isTyping } from "./dom";

export interface KeyActions {
  view(n: 1 | 2 | 3 | 4 | 5 | 6): void;
  nextHunk(): void;
  prevHunk(): void;
  acceptHunk(): void;
  rejectHunk(): void;
  acceptFile(): void;
  rejectFile(): void;
  nextReview(): void;
  prevReview(): void;
  /** The page's one layout switch (every review). */
  toggleLayout(): void;
  toggleCollapse(): void;
  editProposed(): void;
  sendToClaude(): void;
  focusTree(): void;
  currentView(): string;
}

export const KEY_LIST: [string, string][] = [
  ["j / k", "next / previous hunk"],
  ["a / r", "accept / reject the hunk"],
  ["A / R", "accept / reject the whole file (asks first)"],
  ["n / p", "next / previous review"],
  ["l", "side by side ⇄ unified"],
  ["e", "show all lines ⇄ fold unchanged lines"],
  ["i", "edit the proposed text (Escape to leave it)"],
  ["1 – 6", "Reviews, Files, Diagnostics, Activity, Tools, Changes"],
  ["t", "the file tree (Files)"],
  ["s", "send the selected lines (or the file) to Claude (Files)"],
  ["Ctrl-F", "search in an editor"],
  ["?", "this list"],
];

let dialog: HTMLDialogElement | null = null;

export function keysDialog(): HTMLDialogElement {
  const rows = KEY_LIST.map(([k, what]) => h("tr", null, h("th", { scope: "row" }, h("kbd", null, k)), h("td", null, what)));
  dialog = h(
    "dialog",
    { class: "keys-dialog", "aria-labelledby": "keys-title" },
    h("h2", { id: "keys-title" }, "Keyboard"),
    h("table", { class: "keys-table" }, h("tbody", null, ...rows)),
    h("div", { class: "dialog-actions" }, h("button", { class: "btn", type: "button", autofocus: true, onclick: () => dialog?.close() }, "Close")),
  );
  return dialog;
}

export function showKeys(): void {
  if (dialog && !dialog.open) dialog.showModal();
}

export function installKeys(a: KeyActions): void {
  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    // No shortcut acts behind an open dialog (keys, link, confirmation).
    if (document.querySelector("dialog[open]")) return;
    if (isTyping(e.target)) return;
    const inReviews = a.currentView() === "reviews";
    const inFiles = a.currentView() === "files";
    let done = true;
    switch (e.key) {
      case "1": a.view(1); break;
      case "2": a.view(2); break;
      case "3": a.view(3); break;
      case "4": a.view(4); break;
      case "5": a.view(5); break;
      case "6": a.view(6); break;
      case "?": showKeys(); break;
      case "j": if (inReviews) a.nextHunk(); else done = false; break;
      case "k": if (inReviews) a.prevHunk(); else done = false; break;
      case "a": if (inReviews) a.acceptHunk(); else done = false; break;
      case "r": if (inReviews) a.rejectHunk(); else done = false; break;
      case "A": if (inReviews) a.acceptFile(); else done = false; break;
      case "R": if (inReviews) a.rejectFile(); else done = false; break;
      case "n": if (inReviews) a.nextReview(); else done = false; break;
      case "p": if (inReviews) a.prevReview(); else done = false; break;
      case "l": if (inReviews) a.toggleLayout(); else done = false; break;
      case "L": if (inReviews) a.toggleLayout(); else done = false; break;
      case "e": if (inReviews) a.toggleCollapse(); else done = false; break;
      case "i": if (inReviews) a.editProposed(); else done = false; break;
      case "s": if (inFiles) a.sendToClaude(); else done = false; break;
      case "t": if (inFiles) a.focusTree(); else done = false; break;
      default: done = false;
    }
    if (done) e.preventDefault();
  });
}
