// The Tools view: the workspace tools server (where it is, how to register
// it with Claude Code, when it asks), the tool calls waiting for the user's
// yes or no, and the commands run, with their output live.
//
// An approval shows exactly what will run and where, as text; nothing in it
// is focused or pre-selected, so no stray Enter allows a command. The text is
// the server's rendering (`commandShown`, `cwdShown`): characters that draw
// invisibly or reorder the line (bidi controls, zero-width, control
// characters) are ⟨U+XXXX⟩ markers there, with a warning above; it is laid
// out strictly left to right in logical order, so even right-to-left
// letters cannot move a part of the command elsewhere.

import { api, type ApprovalMode, type ApprovalRequest, type HiddenCharacter, type Run, type RunExit, type ToolsInfo } from "./api";
import { clock, duration, h, replace } from "./dom";
import { note } from "./notes";
import { cleanTerminal } from "./terminal";

/** Output kept per run in the page (the server keeps 64 KiB). */
const OUTPUT_KEPT = 256 * 1024;

const MODES: { mode: ApprovalMode; label: string; title: string }[] = [
  { mode: "write-only", label: "Writes and commands", title: "Ask before a file is written (as a diff to review) and before a command runs; reads are not asked about" },
  { mode: "always", label: "Every call", title: "Ask before every tool call, reads included" },
  { mode: "never", label: "Never", title: "Ask nothing: writes land at once (atomically) and commands run" },
];

export interface ToolsHooks {
  /** A call now waits for the user. */
  arrived(a: ApprovalRequest): void;
  /** How many calls wait. */
  counted(n: number): void;
}

interface RunRow {
  run: Run;
  el: HTMLElement;
  status: HTMLElement;
  output: HTMLElement;
  pending: boolean;
}

export class ToolsView {
  readonly el: HTMLElement;
  private readonly server: HTMLElement;
  private readonly approvalList: HTMLElement;
  private readonly approvalEmpty: HTMLElement;
  private readonly runList: HTMLElement;
  private readonly runEmpty: HTMLElement;
  private readonly approvals = new Map<number, HTMLElement>();
  private readonly runs = new Map<number, RunRow>();
  private tools: ToolsInfo | null = null;

  constructor(private readonly hooks: ToolsHooks) {
    this.server = h("section", { class: "card tools-server", "data-tools": "", "aria-labelledby": "tools-server-title" });
    this.approvalList = h("div", { class: "approval-list" });
    this.approvalEmpty = h("p", { class: "meta" }, "Nothing is waiting for you.");
    this.runList = h("div", { class: "run-list" });
    this.runEmpty = h("p", { class: "meta" }, "No command has run yet. Commands Claude runs through the workspace tools show here, with their output as it comes.");
    this.el = h(
      "div",
      { class: "tools" },
      h("div", { class: "view-toolbar" }, h("h1", { class: "view-title" }, "Workspace tools")),
      h("h2", { class: "section-title" }, "Waiting for you"),
      this.approvalEmpty,
      this.approvalList,
      h("h2", { class: "section-title" }, "Commands"),
      this.runEmpty,
      this.runList,
      this.server,
    );
    this.renderServer();
  }

  pendingCount(): number {
    return this.approvals.size;
  }

  setTools(t: ToolsInfo | null): void {
    this.tools = t;
    this.renderServer();
  }

  setAll(approvals: ApprovalRequest[], runs: Run[]): void {
    for (const el of this.approvals.values()) el.remove();
    this.approvals.clear();
    for (const a of approvals) this.addApproval(a, false);
    this.runs.clear();
    replace(this.runList);
    for (const r of runs) this.runStarted(r);
    this.counted();
  }

  approvalAsked(a: ApprovalRequest): void {
    this.addApproval(a, true);
    this.counted();
  }

  approvalClosed(id: number, allowed: boolean | null): void {
    const el = this.approvals.get(id);
    if (!el) return;
    this.approvals.delete(id);
    el.remove();
    this.counted();
    if (allowed === null) note("Claude cancelled a tool call that was waiting for you.");
  }

  runStarted(r: Run): void {
    const status = h("span", { class: "run-status", "data-run-status": "running" }, "running…");
    const output = h("pre", { class: "run-output", "data-run-output": "", tabindex: 0, "aria-label": `Output of ${r.commandShown}` });
    const el = h(
      "article",
      { class: "card run", "data-run": r.id },
      h(
        "div",
        { class: "card-header" },
        h("code", { class: "run-command shown-exactly" }, r.commandShown),
        h("span", { class: "spacer" }),
        status,
      ),
      h("div", { class: "run-meta meta" }, "in ", h("span", { class: "shown-exactly" }, r.cwdShown), ` · started ${clock(r.startedAt)}`),
      output,
    );
    const row: RunRow = { run: { ...r }, el, status, output, pending: false };
    this.runs.set(r.id, row);
    this.runList.prepend(el);
    this.runEmpty.hidden = true;
    this.renderOutput(row);
    if (r.exit) this.renderExit(row, r.exit);
  }

  runOutput(id: number, data: string): void {
    const row = this.runs.get(id);
    if (!row) return;
    let out = row.run.output + data;
    if (out.length > OUTPUT_KEPT) {
      out = out.slice(out.length - OUTPUT_KEPT);
      row.run.truncated = true;
    }
    row.run.output = out;
    // One repaint per frame however fast the command writes.
    if (row.pending) return;
    row.pending = true;
    window.requestAnimationFrame(() => {
      row.pending = false;
      this.renderOutput(row);
    });
  }

  runExited(id: number, exit: RunExit): void {
    const row = this.runs.get(id);
    if (!row) return;
    row.run.exit = exit;
    this.renderOutput(row);
    this.renderExit(row, exit);
  }

  private counted(): void {
    this.approvalEmpty.hidden = this.approvals.size > 0;
    this.hooks.counted(this.approvals.size);
  }

  private addApproval(a: ApprovalRequest, fresh: boolean): void {
    if (this.approvals.has(a.id)) return;
    const buttons: HTMLButtonElement[] = [];
    const decide = async (allow: boolean): Promise<void> => {
      for (const b of buttons) b.disabled = true;
      try {
        await api.answerApproval(a.id, allow);
        this.approvalClosed(a.id, allow);
      } catch (e) {
        note(`Not answered: ${e instanceof Error ? e.message : String(e)}`, "error");
        for (const b of buttons) b.disabled = false;
      }
    };
    const allow = h("button", { type: "button", class: "btn primary", "data-action": "allow", onclick: () => void decide(true) }, a.command === undefined ? "Allow" : "Run it");
    const deny = h("button", { type: "button", class: "btn reject", "data-action": "deny", onclick: () => void decide(false) }, "Deny");
    buttons.push(allow, deny);
    const warning = hiddenWarning(a.hiddenCharacters ?? []);
    const what: HTMLElement[] =
      a.command === undefined
        ? [h("p", { class: "approval-summary shown-exactly" }, a.summary)]
        : [
            h("p", { class: "approval-summary" }, "Claude wants to run this command:"),
            h("pre", { class: "approval-command shown-exactly", "data-approval-command": "" }, a.commandShown ?? ""),
            h("p", { class: "meta" }, "in ", h("code", { class: "shown-exactly" }, a.cwdShown ?? "the workspace")),
          ];
    if (warning) what.unshift(warning);
    const el = h(
      "article",
      { class: "card approval", "data-approval": a.id, role: "group", "aria-label": a.summary },
      h("div", { class: "card-header" }, h("code", { class: "tool" }, a.tool), h("span", { class: "meta" }, `asked ${clock(a.askedAt)}`)),
      h("div", { class: "approval-body" }, ...what),
      h("div", { class: "approval-actions" }, allow, deny),
    );
    this.approvals.set(a.id, el);
    this.approvalList.append(el);
    if (fresh) this.hooks.arrived(a);
  }

  private renderOutput(row: RunRow): void {
    const text = cleanTerminal(row.run.output);
    const o = row.output;
    // Follow the output unless the user scrolled up to read.
    const atEnd = o.scrollTop + o.clientHeight >= o.scrollHeight - 4;
    o.textContent = (row.run.truncated ? "[… earlier output not kept]\n" : "") + text;
    o.hidden = o.textContent === "" && row.run.exit !== null;
    if (atEnd) o.scrollTop = o.scrollHeight;
  }

  private renderExit(row: RunRow, exit: RunExit): void {
    const took = duration(Math.max(0, exit.at - row.run.startedAt));
    let text: string;
    let state: string;
    if (exit.timedOut) {
      text = `killed: took too long (${took})`;
      state = "failed";
    } else if (exit.cancelled) {
      text = `stopped: Claude cancelled it (${took})`;
      state = "failed";
    } else if (exit.exitCode === null) {
      text = `ended by a signal (${took})`;
      state = "failed";
    } else {
      text = `exit ${exit.exitCode} · ${took}`;
      state = exit.exitCode === 0 ? "ok" : "failed";
    }
    row.status.textContent = text;
    row.status.dataset["runStatus"] = state;
  }

  private renderServer(): void {
    const t = this.tools;
    const title = h("h2", { id: "tools-server-title", class: "card-title" }, "The tools server");
    if (t === null) {
      replace(this.server, title, h("p", { class: "meta" }, "Waiting for ccbridge…"));
      return;
    }
    if ("off" in t) {
      replace(this.server, title, h("p", { "data-tools-off": "" }, `Not served: ${t.off}.`));
      return;
    }
    const modes = h(
      "div",
      { class: "segmented", role: "group", "aria-label": "Ask before" },
      ...MODES.map(({ mode, label, title: tip }) =>
        h(
          "button",
          {
            type: "button",
            class: "seg",
            "data-mode": mode,
            "aria-pressed": String(mode === t.approvalMode),
            title: tip,
            onclick: () => void this.setMode(mode),
          },
          label,
        ),
      ),
    );
    const command = h("input", { class: "link-input", type: "text", readonly: true, value: t.addCommand, "aria-label": "The command that registers the tools with Claude Code", "data-add-command": "" });
    const copy = h(
      "button",
      {
        type: "button",
        class: "btn",
        onclick: () => {
          command.select();
          navigator.clipboard?.writeText(t.addCommand).then(
            () => note("Command copied."),
            () => note("Select the command and copy it (Ctrl-C)."),
          );
        },
      },
      "Copy",
    );
    replace(
      this.server,
      title,
      h("p", null, "Claude reads, searches and changes this workspace through them: a write is a review in Reviews, a command asks here first. Served at ", h("code", { "data-tools-url": "" }, t.url), "."),
      h("div", { class: "tools-row" }, h("span", { class: "meta" }, "Ask before:"), modes),
      h("p", { class: "meta" }, h("code", null, "ccbridge claude"), " hands them to Claude by itself. For a ", h("code", null, "claude"), " you start yourself, register them (the token changes with every start of ccbridge):"),
      h("div", { class: "link-row" }, command, copy),
    );
  }

  private async setMode(mode: ApprovalMode): Promise<void> {
    try {
      this.setTools(await api.setApprovalMode(mode));
    } catch (e) {
      note(`The mode did not change: ${e instanceof Error ? e.message : String(e)}`, "error");
    }
  }
}

/** The warning above an approval whose text has characters shown as markers, or null. */
export function hiddenWarning(hidden: HiddenCharacter[]): HTMLElement | null {
  if (hidden.length === 0) return null;
  const n = hidden.length;
  const kinds = [...new Set(hidden.map((c) => (c.name ? `${c.codePoint} ${c.name}` : c.codePoint)))].join(", ");
  return h(
    "p",
    { class: "approval-warning", "data-approval-warning": "", role: "alert" },
    `⚠ This contains ${n} hidden or look-alike character${n === 1 ? "" : "s"}, shown as ⟨U+…⟩ markers (${kinds}). Such characters make text look different from what runs: read it as shown here.`,
  );
}
