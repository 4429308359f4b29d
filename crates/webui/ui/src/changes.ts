// The Changes view: the session review. Every file changed in the
// workspace while ccbridge runs, as a diff against what it held before the
// first change, with keep/revert per hunk and per file, "viewed" marks, a
// progress line, keep-all/revert-all (confirmed) and undo of reverts until
// the agent changes something again. The server owns the list (it watches
// the workspace); this view draws it and sends decisions naming the file's
// version and the hunk's key, so a decision reaches exactly the hunk the
// reviewer pointed at and never a file that changed meanwhile.

import { api, ApiError, type ChangedFile, type ChangeHunk, type ChangesList, type ChangeSource, type RevertConflict } from "./api";
import { baseName, displayPath, h, replace } from "./dom";
import { note } from "./notes";

export interface ChangesHost {
  folders(): readonly string[];
  counted(unreviewed: number): void;
}

/** How the view names who made a change. */
export function sourceLabel(sources: readonly ChangeSource[]): string {
  const parts = sources.map((s) => {
    switch (s.kind) {
      case "reviewed":
        return `reviewed by you (${s.agent})`;
      case "agent":
        return `${s.agent} (${s.tool}), not reviewed`;
      case "disk":
        return diskLabel(s.agents ?? []);
    }
  });
  return parts.join("; ") || diskLabel([]);
}

/** A change seen on disk only, with the agents connected when it was. */
export function diskLabel(agents: readonly string[]): string {
  return agents.length > 0
    ? `changed on disk while ${agents.join(" and ")} ${agents.length > 1 ? "were" : "was"} connected`
    : "changed on disk while ccbridge ran";
}

const STATUS_LABEL: Record<ChangedFile["status"], string> = {
  created: "created",
  modified: "modified",
  deleted: "deleted",
  binary: "binary or too large",
  unknown: "earlier content unknown",
};

export class ChangesView {
  readonly el: HTMLElement;
  /** Confirmations and conflicts; the page puts it in the body. */
  readonly dialog: HTMLDialogElement;
  private readonly body: HTMLElement;
  private readonly progress: HTMLElement;
  private readonly undoButton: HTMLButtonElement;
  private readonly keepAllButton: HTMLButtonElement;
  private readonly revertAllButton: HTMLButtonElement;
  private list: ChangesList | null = null;
  private loading = false;
  private again = false;
  private enabled = true;
  private busy = false;

  constructor(private readonly host: ChangesHost) {
    this.progress = h("span", { class: "changes-progress", "data-changes-progress": "" });
    this.undoButton = h("button", { type: "button", class: "btn small", "data-action": "undo-revert", disabled: true, onclick: () => void this.act("undo") }, "Undo revert");
    this.keepAllButton = h("button", { type: "button", class: "btn small", "data-action": "keep-all", onclick: () => this.confirmAll("keep") }, "Keep all");
    this.revertAllButton = h("button", { type: "button", class: "btn small reject", "data-action": "revert-all", onclick: () => this.confirmAll("revert") }, "Revert all…");
    this.body = h("div", { class: "changes-body" });
    this.dialog = h("dialog", { class: "link-dialog", "aria-labelledby": "changes-dialog-title", "data-changes-dialog": "" });
    this.el = h(
      "div",
      { class: "changes" },
      h(
        "div",
        { class: "view-toolbar" },
        h("h1", { class: "view-title" }, "Changes"),
        this.progress,
        h("span", { class: "spacer" }),
        this.undoButton,
        this.keepAllButton,
        this.revertAllButton,
      ),
      this.body,
    );
    this.render();
  }

  /** Whether the server watches the workspace (from the snapshot). */
  setEnabled(on: boolean): void {
    this.enabled = on;
    if (on) void this.refresh();
    else this.render();
  }

  /** Fetches the list again (a `changes` event arrived). */
  async refresh(): Promise<void> {
    if (!this.enabled) return;
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = true;
    try {
      do {
        this.again = false;
        const list = await api.changes();
        this.list = list;
        this.render();
      } while (this.again);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) this.enabled = false;
      this.render();
    } finally {
      this.loading = false;
    }
  }

  private unreviewedCount(): number {
    return this.list ? this.list.files.length - this.list.reviewed : 0;
  }

  private render(): void {
    const list = this.list;
    this.host.counted(this.unreviewedCount());
    const files = list?.files ?? [];
    this.undoButton.disabled = !list?.canUndo || this.busy;
    this.keepAllButton.disabled = files.length === 0 || this.busy;
    this.revertAllButton.disabled = !files.some((f) => f.revertible) || this.busy;
    this.progress.textContent = files.length ? `${list?.reviewed ?? 0} of ${files.length} file${files.length === 1 ? "" : "s"} reviewed` : "";
    if (!this.enabled) {
      replace(this.body, h("div", { class: "empty" }, h("p", { class: "empty-title" }, "The workspace is not watched"), h("p", null, "ccbridge was started with --no-changes.")));
      return;
    }
    if (!list || !list.ready) {
      replace(this.body, h("div", { class: "empty" }, h("p", { class: "empty-title" }, "Reading the workspace…")));
      return;
    }
    const limit = list.limit ? h("div", { class: "banner warn", role: "status", "data-changes-limit": "" }, list.limit) : null;
    if (!files.length) {
      replace(
        this.body,
        limit,
        h(
          "div",
          { class: "empty" },
          h("p", { class: "empty-title" }, "No file changed in this session yet"),
          h("p", null, "Every file an agent (or anyone) changes in the workspace while ccbridge runs is listed here, reviewed or not, with what it held before."),
        ),
      );
      return;
    }
    const folders = this.host.folders();
    const sorted = [...files].sort((a, b) => Number(a.reviewed) - Number(b.reviewed) || b.changedAt - a.changedAt || a.path.localeCompare(b.path));
    replace(this.body, limit, ...sorted.map((f) => this.fileSection(f, folders)));
  }

  private fileSection(f: ChangedFile, folders: readonly string[]): HTMLElement {
    const viewed = h("input", {
      type: "checkbox",
      "data-action": "viewed",
      checked: f.viewed,
      onchange: (e: Event) => void this.act("viewed", { path: f.path, viewed: (e.target as HTMLInputElement).checked }),
    });
    const actions = h(
      "div",
      { class: "change-actions" },
      h("label", { class: "viewed-toggle" }, viewed, " Viewed"),
      f.hunks.length ? h("button", { type: "button", class: "btn small", "data-action": "keep-file", disabled: f.reviewed, onclick: () => void this.act("keep", { path: f.path, version: f.version }) }, "Keep file") : null,
      f.revertible ? h("button", { type: "button", class: "btn small reject", "data-action": "revert-file", onclick: () => this.confirmFile(f) }, "Revert file…") : null,
    );
    const header = h(
      "h2",
      { class: "diag-path change-path", title: f.path },
      h("span", { class: "name" }, baseName(f.path)),
      h("span", { class: "dir" }, displayPath(f.path, folders)),
      h("span", { class: `change-status status-${f.status}`, "data-status": f.status }, STATUS_LABEL[f.status]),
      f.hunks.length || f.moreHunks ? h("span", { class: "change-counts" }, h("span", { class: "plus" }, `+${f.added}`), " ", h("span", { class: "minus" }, `−${f.removed}`)) : null,
    );
    const source = h("p", { class: "change-source", "data-source": "" }, sourceLabel(f.sources));
    const hunks = f.viewed ? [] : f.hunks.map((x, i) => this.hunk(f, x, i));
    const more = f.moreHunks && !f.viewed ? h("p", { class: "muted" }, `${f.moreHunks} more hunk${f.moreHunks === 1 ? "" : "s"} not shown; decide these first.`) : null;
    return h(
      "section",
      { class: `change-file${f.reviewed ? " is-reviewed" : ""}`, "data-change-file": f.path, "data-reviewed": String(f.reviewed) },
      h("div", { class: "change-head" }, header, actions),
      source,
      ...hunks,
      more,
    );
  }

  private hunk(f: ChangedFile, x: ChangeHunk, i: number): HTMLElement {
    const lines: HTMLElement[] = [];
    const line = (cls: string, mark: string, text: string): HTMLElement => h("div", { class: `dl ${cls}` }, h("span", { class: "dl-mark", "aria-hidden": "true" }, mark), h("span", { class: "dl-text" }, text));
    for (const l of x.contextBefore) lines.push(line("ctx", " ", l));
    for (const l of x.removed) lines.push(line("del", "−", l));
    for (const l of x.added) lines.push(line("add", "+", l));
    for (const l of x.contextAfter) lines.push(line("ctx", " ", l));
    if (x.cut) lines.push(line("ctx", "…", "(some lines are not shown)"));
    const where = x.newLines ? `line ${x.newStart + 1}` : `after line ${x.newStart}`;
    return h(
      "div",
      { class: `change-hunk${x.kept ? " is-kept" : ""}`, "data-hunk": String(i), "data-hunk-key": x.key, "data-kept": String(x.kept) },
      h(
        "div",
        { class: "hunk-bar" },
        h("span", { class: "hunk-where" }, `Hunk ${i + 1} · ${where}`),
        x.kept ? h("span", { class: "kept-badge" }, "kept") : null,
        h("span", { class: "spacer" }),
        x.kept ? null : h("button", { type: "button", class: "btn small", "data-action": "keep-hunk", onclick: () => void this.act("keep", { path: f.path, key: x.key, version: f.version }) }, "Keep"),
        f.revertible && f.status !== "binary" ? h("button", { type: "button", class: "btn small reject", "data-action": "revert-hunk", onclick: () => void this.act("revert", { path: f.path, key: x.key, version: f.version }) }, "Revert") : null,
      ),
      h("div", { class: "diff-lines", role: "group", "aria-label": `Hunk ${i + 1} of ${baseName(f.path)}` }, ...lines),
    );
  }

  private async act(
    action: "keep" | "revert" | "viewed" | "keep-all" | "revert-all" | "undo",
    body: { path?: string; key?: string; version?: string; viewed?: boolean } = {},
  ): Promise<void> {
    this.busy = true;
    this.render();
    try {
      const r = await api.changeAction(action, body);
      if (r.failed?.length) note(`Not reverted: ${r.failed.join("; ")}`, "error");
      else if (action === "revert" && body.path) note(`Reverted ${body.key ? "the hunk in " : ""}${baseName(body.path)}. Undo brings it back.`);
    } catch (e) {
      const conflict = conflictOf(e);
      if (conflict) this.showConflict(conflict);
      else note(e instanceof Error ? e.message : String(e), "error");
    } finally {
      this.busy = false;
      await this.refresh();
    }
  }

  private confirm(title: string, text: string, yesLabel: string, yes: () => void): void {
    const button = h("button", { type: "button", class: "btn reject", "data-action": "confirm", onclick: () => (this.dialog.close(), yes()) }, yesLabel);
    replace(
      this.dialog,
      h("h2", { id: "changes-dialog-title" }, title),
      h("p", null, text),
      h("div", { class: "dialog-actions" }, h("button", { type: "button", class: "btn", "data-action": "cancel", onclick: () => this.dialog.close() }, "Cancel"), button),
    );
    this.dialog.showModal();
    button.focus();
  }

  private confirmFile(f: ChangedFile): void {
    const what = f.status === "created" ? "The file is removed (it did not exist before this session)." : f.status === "deleted" ? "The file is written back as it was." : "The file gets back what it held before this session.";
    this.confirm(`Revert ${baseName(f.path)}?`, `${what} Undo brings the change back until the agent changes something again.`, "Revert file", () => void this.act("revert", { path: f.path, version: f.version }));
  }

  private confirmAll(kind: "keep" | "revert"): void {
    const n = this.list?.files.length ?? 0;
    if (kind === "keep") {
      this.confirm(`Keep all ${n} changed files?`, "Every change is marked kept and every file viewed. Nothing on disk changes.", "Keep all", () => void this.act("keep-all"));
    } else {
      this.confirm(`Revert all ${n} changed files?`, "Every file gets back what it held before this session; files created in it are removed.", "Revert all", () => void this.act("revert-all"));
    }
  }

  /** A revert refused because the file changed since: the three versions. */
  private showConflict(c: RevertConflict): void {
    const pane = (title: string, text: string | null): HTMLElement => h("div", { class: "conflict-pane" }, h("h3", null, title), h("pre", { class: "conflict-text" }, text ?? "(no file)"));
    replace(
      this.dialog,
      h("h2", { id: "changes-dialog-title" }, `${baseName(c.path)} changed since the review showed it`),
      h("p", null, "Nothing was written: reverting now would lose the newer change. The list is up to date again; decide on what is there now."),
      h("div", { class: "conflict-panes", "data-conflict": "" }, pane("Before the session", c.before), pane("As the review showed it", c.shown), pane("On disk now", c.disk)),
      h("div", { class: "dialog-actions" }, h("button", { type: "button", class: "btn", onclick: () => this.dialog.close() }, "Close")),
    );
    this.dialog.showModal();
  }
}

function conflictOf(e: unknown): RevertConflict | null {
  if (!(e instanceof ApiError) || e.status !== 409) return null;
  const b = e.body;
  if (b && typeof b === "object" && "conflict" in b) {
    const c = (b as { conflict: unknown }).conflict;
    if (c && typeof c === "object" && typeof (c as { path?: unknown }).path === "string") return c as RevertConflict;
  }
  return null;
}
