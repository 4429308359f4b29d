// The diagnostics view: per file, filtered by severity; a diagnostic opens
// its file at its line. When nothing reports diagnostics (ccbridge started
// with --no-language-servers and no editor reporting), or a language has no
// server installed, the view says so instead of looking empty.

import type { Diagnostic, FileDiagnostics, Severity, UnavailableServer } from "./api";
import { baseName, displayPath, h, replace } from "./dom";
import { prefs } from "./prefs";

const SEVERITIES: { key: Severity; label: string }[] = [
  { key: "Error", label: "Errors" },
  { key: "Warning", label: "Warnings" },
  { key: "Information", label: "Info" },
  { key: "Hint", label: "Hints" },
];

const ICON: Record<Severity, string> = { Error: "✕", Warning: "!", Information: "i", Hint: "·" };

export interface DiagnosticsHost {
  folders(): readonly string[];
  open(path: string, line: number): void;
}

export class DiagnosticsView {
  readonly el: HTMLElement;
  private readonly body: HTMLElement;
  private readonly filters: HTMLElement;
  private readonly filterButtons = new Map<Severity, HTMLButtonElement>();
  private shown = prefs.severities();
  private files: FileDiagnostics[] = [];
  private source = false;
  private unavailable: UnavailableServer[] = [];

  constructor(private readonly host: DiagnosticsHost) {
    const filters = h("div", { class: "segmented filters", role: "group", "aria-label": "Severities shown" });
    this.filters = filters;
    for (const s of SEVERITIES) {
      const b = h(
        "button",
        {
          type: "button",
          class: `seg sev-${s.key.toLowerCase()}`,
          "data-severity": s.key,
          "aria-pressed": String(this.shown.has(s.key)),
          onclick: () => this.toggle(s.key),
        },
        s.label,
        h("span", { class: "seg-count" }),
      );
      this.filterButtons.set(s.key, b);
      filters.append(b);
    }
    this.body = h("div", { class: "diag-body" });
    this.el = h(
      "div",
      { class: "diagnostics" },
      h("div", { class: "view-toolbar" }, h("h1", { class: "view-title" }, "Diagnostics"), h("span", { class: "spacer" }), filters),
      this.body,
    );
    this.render();
  }

  set(files: FileDiagnostics[], source: boolean, unavailable: UnavailableServer[] = []): void {
    this.files = files;
    this.source = source;
    this.unavailable = unavailable;
    this.render();
  }

  /** One line per language without diagnostics, saying why. */
  private unavailableNotes(): HTMLElement[] {
    return this.unavailable.map((u) =>
      h("p", { class: "diag-unavailable", "data-unavailable-server": u.language }, unavailableText(u)),
    );
  }

  private toggle(s: Severity): void {
    if (this.shown.has(s)) this.shown.delete(s);
    else this.shown.add(s);
    prefs.setSeverities(this.shown);
    this.render();
  }

  /** Errors and warnings, for the view's tab. */
  count(): number {
    let n = 0;
    for (const f of this.files) for (const d of f.diagnostics) if (d.severity === "Error" || d.severity === "Warning") n++;
    return n;
  }

  private render(): void {
    const counts = new Map<Severity, number>();
    for (const f of this.files) for (const d of f.diagnostics) counts.set(d.severity, (counts.get(d.severity) ?? 0) + 1);
    for (const [s, b] of this.filterButtons) {
      b.setAttribute("aria-pressed", String(this.shown.has(s)));
      const c = b.querySelector(".seg-count");
      if (c) c.textContent = counts.get(s) ? ` ${counts.get(s)}` : "";
    }
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    this.filters.hidden = total === 0;
    if (!this.source && total === 0) {
      replace(
        this.body,
        h(
          "div",
          { class: "empty" },
          h("p", { class: "empty-title" }, "No diagnostics source"),
          h(
            "p",
            null,
            "Nothing reports diagnostics: ccbridge runs no language servers (--no-language-servers) and no editor reports its own. Without that flag, the servers installed for a file's language report here.",
          ),
          ...this.unavailableNotes(),
        ),
      );
      return;
    }
    if (total === 0) {
      replace(this.body, h("div", { class: "empty" }, h("p", { class: "empty-title" }, "No problems reported"), ...this.unavailableNotes()));
      return;
    }
    const folders = this.host.folders();
    const sections: HTMLElement[] = [];
    for (const f of [...this.files].sort((a, b) => a.path.localeCompare(b.path))) {
      const items = f.diagnostics.filter((d) => this.shown.has(d.severity)).sort(byPosition);
      if (!items.length) continue;
      sections.push(
        h(
          "section",
          { class: "diag-file" },
          h(
            "h2",
            { class: "diag-path", title: f.path },
            h("span", { class: "name" }, baseName(f.path)),
            h("span", { class: "dir" }, displayPath(f.path, folders)),
            h("span", { class: "diag-count" }, String(items.length)),
          ),
          h("ul", { class: "diag-list" }, ...items.map((d) => this.item(f.path, d))),
        ),
      );
    }
    replace(
      this.body,
      ...this.unavailableNotes(),
      ...(sections.length ? sections : [h("div", { class: "empty" }, h("p", null, "Every diagnostic is filtered out."))]),
    );
  }

  private item(path: string, d: Diagnostic): HTMLElement {
    const line = d.range.start.line;
    const where = `${line + 1}:${d.range.start.character + 1}`;
    const source = [d.source, d.code === undefined ? null : String(d.code)].filter(Boolean).join(" ");
    return h(
      "li",
      null,
      h(
        "button",
        {
          type: "button",
          class: `diag sev-${d.severity.toLowerCase()}`,
          "data-severity": d.severity,
          title: `Open ${baseName(path)} at line ${line + 1}`,
          onclick: () => this.host.open(path, line),
        },
        h("span", { class: "sev-icon", "aria-label": d.severity }, ICON[d.severity] ?? "·"),
        h("span", { class: "diag-message" }, d.message),
        source ? h("span", { class: "diag-source" }, source) : null,
        h("span", { class: "diag-where" }, where),
      ),
    );
  }
}

const RANK: Record<Severity, number> = { Error: 0, Warning: 1, Information: 2, Hint: 3 };

/** Errors first, then by position. */
function byPosition(a: Diagnostic, b: Diagnostic): number {
  return (RANK[a.severity] ?? 4) - (RANK[b.severity] ?? 4) || a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character;
}

/** Why a language's files lack diagnostics. A second checker of a language
 * ("Python (Ruff)") is named as such: the files still get the first one's. */
export function unavailableText(u: UnavailableServer): string {
  const second = /^(.*) \((.*)\)$/.exec(u.language);
  return second ? `${second[1]} files get no ${second[2]} diagnostics: ${u.why}.` : `${u.language} files get no diagnostics: ${u.why}.`;
}
