// The chrome of one review card: everything around its editors. The
// header (path, "New file", the +/− counts, what the proposed text
// introduces by the language servers' count, the status), the toolbar
// (hunk navigation and decisions, the save state, show all lines, the
// file's decisions), the notes above the editors (closed by the agent, no
// original to show), copying the proposed text and the reject-with-a-note
// dialog.
//
// Separate from the card so that what the reviewer sees outside the
// editors, and which buttons work, is one function of the card's state
// (`ChromeState`, drawn by `render`), and the card's logic never touches
// that DOM; the buttons only call back (`ChromeActions`).

import type { Diagnostic, FileDiagnostics, Review } from "./api";
import { baseName, clock, displayPath, flag, h, replace } from "./dom";
import { note } from "./notes";

const STATUS_TEXT: Record<string, string> = {
  pending: "Waiting for your review",
  accepted: "Accepted — Claude is writing the file",
  rejected: "Rejected — the file stays as it was",
  dismissed: "Dismissed — answer in the terminal",
};

/** What the chrome's buttons do (the card does it). */
export interface ChromeActions {
  moveHunk(dir: 1 | -1): void;
  /** Accepts or rejects the current hunk. */
  decideHunk(decision: "accept" | "reject"): void;
  toggleShowAll(): void;
  fileAction(kind: "accept" | "reject" | "dismiss"): void;
  rejectWithNote(): void;
  /** Removes the card (one the agent closed) from the page. */
  forget(): void;
  /** The card took the keyboard focus or a click. */
  focused(): void;
  /** The proposed text as it is now, edits included. */
  proposedText(): string;
  /** Selects all of it in its editor, for a copy by hand. */
  selectProposed(): void;
}

/** The card's state as the chrome shows it. */
export interface ChromeState {
  review: Review;
  /** Why the agent closed the review undecided, if it did. */
  closedNote: string | null;
  /** Pending and not closed: decisions can be taken. */
  pending: boolean;
  /** A decision or file action is out. */
  busy: boolean;
  /** Typing not yet saved; a text request out. */
  dirty: boolean;
  inFlight: boolean;
  /** The editors show exactly the server's hunks. */
  exact: boolean;
  /** The current hunk. */
  current: number;
  /** The layout the editors show (or will, once built). */
  layout: "split" | "unified" | "single";
  /** The unchanged lines are shown, not folded. */
  showAll: boolean;
}

export class ReviewChrome {
  /** The card: chrome, notes and the editors' box. */
  readonly el: HTMLElement;
  private readonly path: string;
  private readonly statusEl: HTMLElement;
  private readonly statusText: HTMLElement;
  private readonly countsEl: HTMLElement;
  /** What a language server found in the proposed text that the file does
   * not have now ("introduces 2 errors"), before anyone accepts it. */
  private readonly problemsEl: HTMLElement = h("span", { class: "badge problems", "data-proposal-problems": "", hidden: true });
  private readonly saveEl: HTMLElement;
  private readonly hunkLabel: HTMLElement;
  private readonly messageBox: HTMLElement;
  private readonly closedBox: HTMLElement;
  private readonly closedText: HTMLElement;
  private readonly buttons: Record<string, HTMLButtonElement> = {};

  constructor(
    review: Review,
    folders: readonly string[],
    editorBox: HTMLElement,
    private readonly actions: ChromeActions,
  ) {
    this.path = review.path;
    const shown = displayPath(review.path, folders);
    const slash = shown.lastIndexOf("/");
    const dir = slash >= 0 ? shown.slice(0, slash + 1) : "";
    const btn = (action: string, label: string, title: string, onclick: () => void, cls = "btn") => {
      const b = h("button", { type: "button", class: cls, "data-action": action, title, onclick }, label);
      this.buttons[action] = b;
      return b;
    };
    this.statusText = h("span", { class: "status-text" });
    this.statusEl = h("span", { class: "status" }, this.statusText);
    this.countsEl = h("span", { class: "counts" });
    this.saveEl = h("span", { class: "save-state", "aria-live": "polite" });
    this.hunkLabel = h("span", { class: "hunk-position", "aria-live": "polite" });
    this.messageBox = h("div", { class: "review-message", hidden: true });
    this.closedText = h("span", { class: "closed-text" });
    this.closedBox = h(
      "div",
      { class: "review-message closed-message", "data-closed": "", role: "status", hidden: true },
      this.closedText,
      h(
        "span",
        { class: "closed-actions" },
        btn("copy-proposed", "Copy proposed text", "Copy the text on the right (your edits included) to the clipboard", () => this.copyProposed()),
        btn("forget", "Dismiss", "Remove this card from the page", () => actions.forget()),
      ),
    );

    const header = h(
      "header",
      { class: "card-header" },
      h(
        "h2",
        { class: "path", title: review.path },
        dir ? h("span", { class: "dir" }, dir) : null,
        h("span", { class: "name" }, baseName(shown)),
      ),
      review.isNewFile ? h("span", { class: "badge new" }, "New file") : null,
      this.countsEl,
      this.problemsEl,
      this.statusEl,
      h("span", { class: "spacer" }),
      h(
        "span",
        { class: "meta" },
        review.session ? `from ${review.session.agent.name} #${review.session.id} · ` : "",
        clock(review.createdAt),
      ),
    );

    const toolbar = h(
      "div",
      { class: "card-toolbar", role: "toolbar", "aria-label": `Review of ${baseName(review.path)}` },
      h(
        "div",
        { class: "group hunk-nav" },
        btn("prev-hunk", "‹", "Previous hunk (k)", () => actions.moveHunk(-1), "btn icon"),
        this.hunkLabel,
        btn("next-hunk", "›", "Next hunk (j)", () => actions.moveHunk(1), "btn icon"),
        btn("accept-hunk", "Accept hunk", "Accept the current hunk (a)", () => actions.decideHunk("accept"), "btn accept"),
        btn("reject-hunk", "Reject hunk", "Reject the current hunk (r)", () => actions.decideHunk("reject"), "btn reject"),
      ),
      this.saveEl,
      h("span", { class: "spacer" }),
      h(
        "div",
        { class: "group" },
        btn("toggle-collapse", "Show all lines", "Show or fold the unchanged lines (e)", () => actions.toggleShowAll(), "btn quiet"),
      ),
      h(
        "div",
        { class: "group decide" },
        btn("dismiss", "Dismiss", "Close without deciding: Claude's prompt in the terminal decides", () => actions.fileAction("dismiss")),
        btn("reject-note", "Reject with a note…", "Reject every change to this file and tell the agent why", () => actions.rejectWithNote(), "btn quiet"),
        btn("reject-file", "Reject file", "Reject every change to this file (R)", () => actions.fileAction("reject"), "btn reject"),
        btn("accept-file", "Accept file", "Accept the file as it is on the right (A)", () => actions.fileAction("accept"), "btn primary"),
      ),
    );

    this.el = h(
      "article",
      {
        class: "card review",
        "data-review": review.id,
        "data-status": review.status,
        tabindex: -1,
        "aria-label": `Review of ${shown}`,
        onfocusin: () => actions.focused(),
      },
      header,
      toolbar,
      this.closedBox,
      this.messageBox,
      editorBox,
    );
    this.el.addEventListener("mousedown", () => actions.focused());
  }

  /** Buttons, labels and status outside the editors. */
  render(s: ChromeState): void {
    const r = s.review;
    const closed = s.closedNote !== null;
    this.el.dataset["status"] = closed ? "closed" : r.status;
    // The review's version as this card shows it (tests and benchmarks
    // wait for a decision to be shown by it).
    this.el.dataset["version"] = String(r.version);
    this.closedBox.hidden = !closed;
    if (closed) this.closedText.textContent = s.closedNote ?? "";
    flag(this.el, "data-new-file", r.isNewFile);
    const hunks = r.hunks;
    const added = hunks.reduce((sum, x) => sum + x.newLines, 0);
    const removed = hunks.reduce((sum, x) => sum + x.oldLines, 0);
    replace(
      this.countsEl,
      r.originalUnreadable ? null : h("span", { class: "added" }, `+${added}`),
      r.originalUnreadable ? null : h("span", { class: "removed" }, `−${removed}`),
    );
    const accepted = hunks.filter((x) => x.accepted).length;
    this.statusText.textContent = closed
      ? "Closed by the agent, not decided here"
      : r.status === "pending" && accepted
        ? `${STATUS_TEXT["pending"]} · ${accepted} of ${hunks.length} hunks accepted`
        : (STATUS_TEXT[r.status] ?? r.status);
    this.statusEl.dataset["status"] = closed ? "closed" : r.status;

    const exact = s.exact;
    const canHunk = s.pending && exact && !s.busy && !s.inFlight && hunks.length > 0 && !r.originalUnreadable;
    const cur = hunks[s.current];
    this.hunkLabel.textContent = r.originalUnreadable
      ? "Whole file only"
      : hunks.length
        ? `Hunk ${Math.min(s.current + 1, hunks.length)} of ${hunks.length}`
        : "No changes";
    const set = (name: string, enabled: boolean) => {
      const b = this.buttons[name];
      if (b) b.disabled = !enabled;
    };
    set("prev-hunk", hunks.length > 1 && exact);
    set("next-hunk", hunks.length > 1 && exact);
    set("accept-hunk", canHunk && !!cur && !cur.accepted);
    set("reject-hunk", canHunk && !!cur);
    set("accept-file", s.pending && !s.busy);
    set("reject-file", s.pending && !s.busy);
    set("dismiss", s.pending && !s.busy);
    const collapseBtn = this.buttons["toggle-collapse"];
    if (collapseBtn) {
      collapseBtn.textContent = s.showAll ? "Fold unchanged" : "Show all lines";
      collapseBtn.hidden = s.layout === "single";
    }
    for (const name of ["prev-hunk", "next-hunk", "accept-hunk", "reject-hunk"]) {
      const b = this.buttons[name];
      if (b) b.hidden = r.originalUnreadable || closed;
    }
    for (const name of ["dismiss", "reject-note", "reject-file", "accept-file"]) {
      const b = this.buttons[name];
      if (b) b.hidden = closed;
    }
    this.hunkLabel.hidden = closed;
    if (r.originalUnreadable) {
      this.messageBox.hidden = false;
      this.messageBox.textContent =
        "Cannot display the original (binary, not UTF-8, or over 16 MiB). Only the whole file can be accepted or rejected; the proposed text is below.";
    } else {
      this.messageBox.hidden = true;
    }
    this.el.classList.toggle("is-dirty", s.dirty || s.inFlight);
    this.el.classList.toggle("is-finished", !s.pending);
  }

  setSaveState(text: string, kind: "" | "saving" | "error" = ""): void {
    this.saveEl.textContent = text;
    this.saveEl.dataset["kind"] = kind;
  }

  /** Errors (and warnings) in the proposed text beyond those the file has
   * now, by message: "introduces 2 errors". Hidden when none. */
  setProblems(files: FileDiagnostics[], proposed: FileDiagnostics[]): void {
    const of = (list: FileDiagnostics[]) => list.find((f) => f.path === this.path)?.diagnostics ?? [];
    const added = (severity: string): Diagnostic[] => {
      const before = new Map<string, number>();
      for (const d of of(files)) if (d.severity === severity) before.set(d.message, (before.get(d.message) ?? 0) + 1);
      return of(proposed).filter((d) => {
        if (d.severity !== severity) return false;
        const n = before.get(d.message) ?? 0;
        if (n > 0) before.set(d.message, n - 1);
        return n === 0;
      });
    };
    const errors = added("Error");
    const warnings = added("Warning");
    const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? "" : "s"}`;
    const parts = [errors.length ? plural(errors.length, "error") : "", warnings.length ? plural(warnings.length, "warning") : ""].filter(Boolean);
    this.problemsEl.hidden = parts.length === 0;
    this.problemsEl.classList.toggle("has-errors", errors.length > 0);
    this.problemsEl.dataset.errors = String(errors.length);
    this.problemsEl.textContent = parts.length ? `introduces ${parts.join(", ")}` : "";
    this.problemsEl.title = [...errors, ...warnings].map((d) => `line ${d.range.start.line + 1}: ${d.message}`).join("\n");
  }

  /** Copies the proposed text to the clipboard; where the page may not,
   * selects it for a copy by hand. */
  private copyProposed(): void {
    const text = this.actions.proposedText();
    const name = baseName(this.path);
    const selectIt = () => {
      this.actions.selectProposed();
      note(`The proposed text of ${name} is selected: copy it with Ctrl-C.`);
    };
    if (!navigator.clipboard) {
      selectIt();
      return;
    }
    navigator.clipboard.writeText(text).then(
      () => {
        this.el.dataset["copied"] = "";
        note(`Copied the proposed text of ${name}.`);
      },
      selectIt,
    );
  }

  /** Asks for a note to the agent; `send` gets it (undefined when left
   * empty) unless the reviewer cancels. */
  askRejectNote(send: (why: string | undefined) => void): void {
    const text = h("textarea", { rows: 4, "data-note-text": "", "aria-label": "Note for the agent" }) as HTMLTextAreaElement;
    const dialog = h("dialog", { class: "link-dialog", "data-reject-note": "", "aria-labelledby": "reject-note-title" }) as HTMLDialogElement;
    const done = (ok: boolean): void => {
      const said = text.value.trim();
      dialog.close();
      dialog.remove();
      if (ok) send(said || undefined);
    };
    replace(
      dialog,
      h("h2", { id: "reject-note-title" }, `Reject ${baseName(this.path)}: tell the agent why`),
      text,
      h(
        "div",
        { class: "dialog-actions" },
        h("button", { type: "button", class: "btn", "data-action": "cancel", onclick: () => done(false) }, "Cancel"),
        h("button", { type: "button", class: "btn reject", "data-action": "reject-with-note", onclick: () => done(true) }, "Reject with this note"),
      ),
    );
    dialog.addEventListener("cancel", () => dialog.remove());
    document.body.append(dialog);
    dialog.showModal();
    text.focus();
  }
}
