// The activity view: what happened, in order, as a history a person reads
// ("You accepted 2 of 3 changes in db.rs", "Claude Code ran `cargo test`:
// exit 0, 4.1 s"), and behind a toggle the protocol log it is made from
// (every tool call, connection and closed review as the server logged it).
// Also the connection status at the top of the page (which agent sessions
// are connected: Claude Code, Gemini CLI, Qwen Code).

import type { Activity, AgentOffer, Session } from "./api";
import { baseName, clock, duration, h, replace } from "./dom";
import { diskLabel } from "./changes";

/** Entries kept in the page (the server keeps the last 200). */
const KEPT = 1000;

const REASONS: Record<string, string> = {
  decided: "decided",
  claudeClosed: "closed by the agent",
  newPrompt: "a new prompt started",
  replaced: "replaced by a newer proposal",
  disconnected: "the agent disconnected",
  shutdown: "ccbridge stopped",
};

type Entry = Activity;
type Part = string | HTMLElement;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export class ActivityView {
  readonly el: HTMLElement;
  /** The history (sentences). */
  private readonly history: HTMLElement;
  /** The protocol log (every entry as logged). */
  private readonly list: HTMLElement;
  private readonly empty: HTMLElement;
  private readonly logToggle: HTMLButtonElement;
  private showLog = false;
  private entries: Activity[] = [];
  /** Session names by id, for entries that give only an id. */
  private names = new Map<number, string>();
  /** The agents connected now, by name. */
  private connected: string[] = [];

  constructor() {
    this.history = h("ol", { class: "activity-list history-list", "data-history": "", "aria-label": "History" });
    this.list = h("ol", { class: "activity-list", "data-protocol-log": "", "aria-label": "Protocol log", hidden: true });
    this.empty = h(
      "div",
      { class: "empty" },
      h("p", { class: "empty-title" }, "No activity yet"),
      h("p", null, "What the agents propose and run, what you decide, and files changed without a review appear here."),
    );
    this.logToggle = h(
      "button",
      {
        type: "button",
        class: "btn quiet small",
        "data-action": "toggle-log",
        "aria-pressed": "false",
        title: "Show every tool call and connection as ccbridge logged it",
        onclick: () => this.setShowLog(!this.showLog),
      },
      "Show protocol log",
    );
    this.el = h(
      "div",
      { class: "activity" },
      h("div", { class: "view-toolbar" }, h("h1", { class: "view-title" }, "Activity"), h("span", { class: "spacer" }), this.logToggle),
      this.empty,
      this.history,
      this.list,
    );
  }

  private setShowLog(on: boolean): void {
    this.showLog = on;
    this.logToggle.setAttribute("aria-pressed", String(on));
    this.logToggle.textContent = on ? "Show history" : "Show protocol log";
    this.history.hidden = on;
    this.list.hidden = !on;
    this.renderEmpty();
  }

  learn(sessions: Session[]): void {
    for (const s of sessions) this.names.set(s.id, s.agent.name);
    this.connected = [...new Set(sessions.map((s) => s.agent.name))];
  }

  setAll(entries: Activity[]): void {
    this.entries = entries.slice(-KEPT);
    for (const e of this.entries) if (e.kind === "connected") this.names.set(e.session.id, e.session.agent.name);
    replace(this.list, ...this.entries.map((e) => this.row(e)));
    replace(this.history, ...this.entries.map((e) => this.historyRow(e)));
    this.renderEmpty();
  }

  add(e: Activity): void {
    if (e.kind === "connected") this.names.set(e.session.id, e.session.agent.name);
    this.entries.push(e);
    this.list.append(this.row(e));
    this.appendHistory(e);
    while (this.entries.length > KEPT) {
      this.entries.shift();
      this.list.firstElementChild?.remove();
    }
    this.renderEmpty();
  }

  private appendHistory(e: Entry): void {
    const row = this.historyRow(e);
    if (row) this.history.append(row);
    while (this.history.children.length > KEPT) this.history.firstElementChild?.remove();
  }

  private renderEmpty(): void {
    const shown = this.showLog ? this.list : this.history;
    this.empty.hidden = shown.children.length > 0;
  }

  private who(id: number | null): string {
    if (id === null) return "unknown session";
    const name = this.names.get(id);
    return name ? `${name} #${id}` : `session #${id}`;
  }

  /** The agent a workspace tool call came from: the one connected, if
   * only one kind is. */
  private runner(): string {
    return this.connected.length === 1 ? this.connected[0]! : "The agent";
  }

  // ------------------------------------------------------------ history

  private historyRow(e: Entry): HTMLElement | null {
    const said = this.sentence(e);
    if (!said) return null;
    const [parts, tone, detail] = said;
    return h(
      "li",
      { class: `act hist hist-${e.kind}`, "data-history-kind": e.kind, "data-tone": tone || null },
      h("time", { class: "act-time", datetime: new Date(e.at).toISOString() }, clock(e.at)),
      h("span", { class: "act-dot", "aria-hidden": "true" }),
      h("span", { class: "act-main" }, ...parts),
      detail ? h("span", { class: "act-detail" }, detail) : null,
    );
  }

  /** The history's sentence for `e` (with a tone and a detail line), or
   * null for what only the protocol log shows (tool calls, ...). */
  private sentence(e: Entry): [Part[], string, string] | null {
    const file = (path: string) => h("span", { class: "hist-file", title: path }, baseName(path));
    const cmd = (text: string) => h("code", { class: "hist-command" }, text);
    switch (e.kind) {
      case "connected":
        return [[`${e.session.agent.name} connected`], "good", [e.session.name, e.session.version].filter(Boolean).join(" ")];
      case "disconnected":
        return [[`${this.names.get(e.session) ?? "An agent"} disconnected`], "", ""];
      case "proposed": {
        const agent = e.agent ?? "The agent";
        if (e.isNewFile) return [[`${agent} proposed a new file, `, file(e.path)], "", "waiting for your review"];
        return [[`${agent} proposed ${e.hunks === 1 ? "a change" : plural(e.hunks, "change")} to `, file(e.path)], "", "waiting for your review"];
      }
      case "closed":
        return this.closedSentence(e, file);
      case "approval":
        return [[e.allowed ? "You allowed: " : "You refused: ", e.summary], e.allowed ? "" : "error", ""];
      case "run": {
        const how = e.timedOut
          ? `timed out after ${duration(e.elapsedMs)}`
          : e.cancelled
            ? `cancelled after ${duration(e.elapsedMs)}`
            : e.exitCode === null
              ? `ended by a signal after ${duration(e.elapsedMs)}`
              : `exit ${e.exitCode}, ${duration(e.elapsedMs)}`;
        const failed = e.timedOut || e.cancelled || e.exitCode !== 0;
        return [[`${this.runner()} ran `, cmd(e.command), `: ${how}`], failed ? "error" : "good", ""];
      }
      case "unreviewed":
        return e.by
          ? [[`${e.by} changed `, file(e.path), " without a review"], "warn", "see Changes (6)"]
          : [[file(e.path), ` ${diskLabel(e.connected ?? [])}, without a review`], "warn", "see Changes (6)"];
      default:
        return null;
    }
  }

  private closedSentence(e: Extract<Activity, { kind: "closed" }>, file: (p: string) => HTMLElement): [Part[], string, string] {
    const agent = e.agent ?? "The agent";
    const total = e.proposedHunks;
    const kept = e.keptHunks;
    const edits = e.edited ? ", with your edits" : "";
    if (e.reason === "decided" && e.status === "accepted") {
      if (e.isNewFile) return [["You accepted the new file ", file(e.path), edits], "good", ""];
      if (total !== undefined && kept !== undefined && !e.edited && kept < total) {
        return [[`You accepted ${kept} of ${plural(total, "change")} in `, file(e.path)], "good", `${plural(total - kept, "change")} rejected`];
      }
      if (total !== undefined && total > 1) return [[`You accepted all ${total} changes in `, file(e.path), edits], "good", ""];
      return [["You accepted the change to ", file(e.path), edits], "good", ""];
    }
    if (e.reason === "decided" && e.status === "rejected") {
      const what = total !== undefined && total > 1 ? `all ${total} changes` : "the change";
      return [[`You rejected ${what} to `, file(e.path)], "error", "the file stays as it was"];
    }
    if (e.status === "dismissed") return [["You left ", file(e.path), ` to ${agent}'s prompt in the terminal`], "", ""];
    switch (e.reason) {
      case "claudeClosed":
        return [[`${agent} closed its proposal for `, file(e.path), " without your decision here"], "warn", "answered in its terminal, or cancelled"];
      case "newPrompt":
        return [[`${agent} dropped its proposal for `, file(e.path), " at a new prompt"], "warn", ""];
      case "replaced":
        return [[`${agent} replaced its proposal for `, file(e.path), " with a newer one"], "", ""];
      case "disconnected":
        return [["The proposal for ", file(e.path), ` ended: ${agent} disconnected`], "warn", ""];
      case "shutdown":
        return [["The proposal for ", file(e.path), " ended: ccbridge stopped"], "", ""];
      default:
        return [["The review of ", file(e.path), " closed"], "", e.note];
    }
  }

  // ------------------------------------------------------------ protocol log

  private row(e: Activity): HTMLElement {
    let kind = "";
    let main: (string | HTMLElement)[] = [];
    let detail = "";
    let tone = "";
    switch (e.kind) {
      case "toolCall":
        kind = "tool";
        main = [h("code", { class: "tool" }, e.tool)];
        detail = [this.who(e.session), e.summary, duration(e.elapsedMs)].filter(Boolean).join(" · ");
        tone = e.isError ? "error" : "";
        break;
      case "connected":
        kind = "connected";
        main = [`${e.session.agent.name} connected`];
        detail = [`#${e.session.id}`, `${e.session.name} ${e.session.version}`.trim(), e.session.pid === null ? "" : `pid ${e.session.pid}`].filter(Boolean).join(" · ");
        tone = "good";
        break;
      case "disconnected":
        kind = "disconnected";
        main = [`${this.who(e.session)} disconnected`];
        break;
      case "replaced":
        kind = "replaced";
        main = [`${this.who(e.old)} replaced by ${this.who(e.by)}`];
        break;
      case "proposed":
        kind = "proposed";
        main = [`Review of ${baseName(e.path)} opened`];
        detail = [e.agent ?? "", plural(e.hunks, "hunk"), e.isNewFile ? "new file" : ""].filter(Boolean).join(" · ");
        break;
      case "closed":
        kind = "closed";
        main = [`Review of ${baseName(e.path)} closed`];
        detail = e.note || REASONS[e.reason] || e.reason;
        break;
      case "approval":
        kind = "approval";
        main = [h("code", { class: "tool" }, e.tool), e.allowed ? " allowed" : " denied"];
        detail = e.summary;
        tone = e.allowed ? "" : "error";
        break;
      case "run":
        kind = "run";
        main = [h("code", { class: "tool" }, "execute_command"), " exited"];
        detail = [e.command, e.exitCode === null ? "no exit code" : `exit ${e.exitCode}`, e.timedOut ? "timed out" : "", e.cancelled ? "cancelled" : "", duration(e.elapsedMs)]
          .filter(Boolean)
          .join(" · ");
        tone = e.exitCode === 0 ? "" : "error";
        break;
      default: {
        const other = e as { kind?: unknown };
        kind = "other";
        main = [String(other.kind ?? "event")];
      }
    }
    return h(
      "li",
      { class: `act act-${kind}`, "data-kind": kind, "data-tone": tone || null },
      h("time", { class: "act-time", datetime: new Date(e.at).toISOString() }, clock(e.at)),
      h("span", { class: "act-dot", "aria-hidden": "true" }),
      h("span", { class: "act-main" }, ...main, e.kind === "toolCall" && e.isError ? h("span", { class: "badge error" }, "error") : null),
      detail ? h("span", { class: "act-detail" }, detail) : null,
    );
  }
}

/** The connection status ([data-connection]): the sessions, or how to
 * start one. */
/** How a user starts an agent by hand so that it uses this IDE: a claude
 * connects at once only with --ide (or its auto-connect setting); Codex CLI
 * asks the IDE for context once `/ide` is on (it never stays connected, so
 * it is never listed as a session). */
function startCommand(id: string): string {
  if (id === "claude") return "claude --ide";
  if (id === "codex") return "codex (then /ide)";
  return id;
}

export class ConnectionStatus {
  readonly el: HTMLElement;
  private sessions: Session[] = [];
  private folders: readonly string[] = [];
  private agents: readonly AgentOffer[] = [];

  constructor() {
    this.el = h("div", { class: "connection", "data-connection": "", "aria-live": "polite" });
    this.render();
  }

  set(sessions: Session[], folders: readonly string[], agents: readonly AgentOffer[]): void {
    this.sessions = sessions;
    this.folders = folders;
    this.agents = agents;
    this.render();
  }

  count(): number {
    return this.sessions.length;
  }

  private render(): void {
    this.renderContent();
    // Cut short in a narrow window: the whole text on hover.
    this.el.title = this.el.textContent ?? "";
  }

  private renderContent(): void {
    this.el.dataset["sessions"] = String(this.sessions.length);
    if (!this.sessions.length) {
      const folder = this.folders[0] ?? "your project folder";
      // Before the first snapshot names them, Claude Code is the default.
      const offered = this.agents.length ? this.agents : [{ id: "claude", name: "Claude Code", env: {} }];
      const commands: (string | HTMLElement)[] = [];
      offered.forEach((a, i) => {
        if (i > 0) commands.push(i === offered.length - 1 ? " or " : ", ");
        commands.push(h("code", { "data-agent-command": a.id, title: a.name }, startCommand(a.id)));
      });
      const claude = offered.some((a) => a.id === "claude");
      replace(
        this.el,
        h("span", { class: "conn-dot off", "aria-hidden": "true" }),
        h("span", { class: "label-short" }, "No agent connected"),
        h(
          "span",
          { class: "conn-text label-long" },
          "No agent connected — start ",
          ...commands,
          " in ",
          h("code", { class: "folder" }, folder),
          ...(claude ? [" (or run ", h("code", null, "ccbridge claude"), ", which also makes every edit wait for your review)"] : []),
        ),
      );
      return;
    }
    replace(
      this.el,
      ...this.sessions.map((s) =>
        h(
          "span",
          {
            class: "session",
            "data-session": s.id,
            "data-agent": s.agent.id,
            title: `${s.agent.name} session #${s.id}${s.pid === null ? "" : `, pid ${s.pid}`}, connected at ${clock(s.connectedAt)}`,
          },
          h("span", { class: "conn-dot on", "aria-hidden": "true" }),
          h("span", { class: "session-name" }, s.agent.name),
          h("span", { class: "session-meta" }, [s.version, s.pid === null ? null : `pid ${s.pid}`, `since ${clock(s.connectedAt)}`].filter(Boolean).join(" · ")),
        ),
      ),
    );
  }
}
