// The activity view (what the agents did, in order) and the connection
// status at the top of the page (which agent sessions are connected: Claude
// Code, Gemini CLI, Qwen Code).

import type { Activity, AgentOffer, Session } from "./api";
import { baseName, clock, duration, h, replace } from "./dom";

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

export class ActivityView {
  readonly el: HTMLElement;
  private readonly list: HTMLElement;
  private readonly empty: HTMLElement;
  private entries: Activity[] = [];
  /** Session names by id, for entries that give only an id. */
  private names = new Map<number, string>();

  constructor() {
    this.list = h("ol", { class: "activity-list" });
    this.empty = h("div", { class: "empty" }, h("p", { class: "empty-title" }, "No activity yet"), h("p", null, "Tool calls, connections, closed reviews and your answers to the workspace tools appear here."));
    this.el = h("div", { class: "activity" }, h("div", { class: "view-toolbar" }, h("h1", { class: "view-title" }, "Activity")), this.empty, this.list);
  }

  learn(sessions: Session[]): void {
    for (const s of sessions) this.names.set(s.id, s.agent.name);
  }

  setAll(entries: Activity[]): void {
    this.entries = entries.slice(-KEPT);
    for (const e of this.entries) if (e.kind === "connected") this.names.set(e.session.id, e.session.agent.name);
    replace(this.list, ...this.entries.map((e) => this.row(e)));
    this.empty.hidden = this.entries.length > 0;
  }

  add(e: Activity): void {
    if (e.kind === "connected") this.names.set(e.session.id, e.session.agent.name);
    this.entries.push(e);
    this.list.append(this.row(e));
    while (this.entries.length > KEPT) {
      this.entries.shift();
      this.list.firstElementChild?.remove();
    }
    this.empty.hidden = true;
  }

  private who(id: number | null): string {
    if (id === null) return "unknown session";
    const name = this.names.get(id);
    return name ? `${name} #${id}` : `session #${id}`;
  }

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
        h(
          "span",
          { class: "conn-text" },
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
