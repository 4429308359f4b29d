// The files view: a lazily loaded tree of the workspace, tabs, and a
// read-only viewer whose selection reaches Claude.
//
// The tree is a virtual list: only the rows in sight are in the DOM, so a
// folder of 10,000 entries costs no more than one of 10. Folders load when
// first opened. The viewer reports its selection (0-based lines, UTF-16
// characters, as CodeMirror counts them) and the open tabs to the server,
// which passes them on to Claude.

import { EditorSelection, EditorState } from "@codemirror/state";
import { EditorView, type ViewUpdate } from "@codemirror/view";
import { api, ApiError, type FileContent, type Position, type Tabs, type TreeEntry } from "./api";
import { baseEditor } from "./editor";
import { lineSeparatorOf } from "./hunks";
import { languageExtension } from "./languages";
import { trackScheme } from "./theme";
import { baseName, displayPath, flag, h, replace } from "./dom";
import { note } from "./notes";

const ROW_HEIGHT = 26;
/** Rows drawn above and below the visible ones. */
const OVERSCAN = 12;
/** Selections are posted at most this often (the server debounces too). */
const SELECTION_THROTTLE_MS = 120;

interface TreeNode {
  entry: TreeEntry;
  depth: number;
  parent: TreeNode | null;
  expanded: boolean;
  loading: boolean;
  children: TreeNode[] | null;
  truncated: boolean;
  error: string | null;
}

/** A row of the flattened tree: a node, or a note under a folder. */
type Row = { node: TreeNode } | { info: string; depth: number; parent: TreeNode };

interface OpenFile {
  path: string;
  content: FileContent | null;
  state: EditorState | null;
  scrollTop: number;
  error: string | null;
}

export interface FilesHost {
  folders(): readonly string[];
  /** Show the files view (an `open` event, a diagnostic). */
  show(): void;
}

export class FilesView {
  readonly el: HTMLElement;
  // Tree.
  private roots: TreeNode[] = [];
  private rows: Row[] = [];
  private active = 0;
  private readonly treeEl: HTMLElement;
  private readonly treeInner: HTMLElement;
  private rendered = new Map<number, HTMLElement>();
  private rowSeq = 0;
  // Tabs and viewer.
  private readonly tabsEl: HTMLElement;
  private readonly viewerEl: HTMLElement;
  private readonly messageEl: HTMLElement;
  private readonly pathEl: HTMLElement;
  private readonly selectionInfo: HTMLElement;
  private readonly sendButton: HTMLButtonElement;
  private view: EditorView | null = null;
  private files: OpenFile[] = [];
  private current: OpenFile | null = null;
  private selTimer = 0;
  private selLast = 0;
  private postedTabs = "";
  private treeLoaded = false;

  constructor(private readonly host: FilesHost) {
    this.treeInner = h("div", { class: "tree-inner" });
    this.treeEl = h(
      "div",
      {
        class: "tree",
        role: "tree",
        tabindex: 0,
        "aria-label": "Workspace files",
        onkeydown: (e: Event) => this.treeKey(e as KeyboardEvent),
        onscroll: () => this.renderRows(),
        onfocus: () => this.renderRows(),
      },
      this.treeInner,
    );
    this.tabsEl = h("div", { class: "file-tabs", role: "tablist", "aria-label": "Open files" });
    this.pathEl = h("span", { class: "viewer-path" });
    this.selectionInfo = h("span", { class: "selection-info", "aria-live": "polite" });
    this.sendButton = h(
      "button",
      {
        type: "button",
        class: "btn primary",
        "data-action": "send-to-claude",
        title: "Mention the selected lines (or the whole file) to Claude (s)",
        disabled: true,
        onclick: () => void this.sendToClaude(),
      },
      "Send to Claude",
    );
    this.messageEl = h("div", { class: "viewer-message", hidden: true });
    this.viewerEl = h("div", { class: "viewer", "data-viewer": "" });
    this.el = h(
      "div",
      { class: "files" },
      h("div", { class: "tree-pane" }, h("div", { class: "pane-title" }, "Workspace"), this.treeEl),
      h(
        "div",
        { class: "viewer-pane" },
        this.tabsEl,
        h("div", { class: "viewer-toolbar" }, this.pathEl, this.selectionInfo, h("span", { class: "spacer" }), this.sendButton),
        this.messageEl,
        this.viewerEl,
      ),
    );
    new ResizeObserver(() => this.renderRows()).observe(this.treeEl);
    this.renderViewer();
  }

  // ------------------------------------------------------------ tree

  /** Loads the workspace folders (once; again after `reset`). */
  async loadTree(): Promise<void> {
    if (this.treeLoaded) return;
    this.treeLoaded = true;
    try {
      const top = await api.tree(null);
      this.roots = top.entries.map((entry) => this.node(entry, 0, null));
      this.flatten();
      // One folder: open it at once.
      const only = this.roots.length === 1 ? this.roots[0] : undefined;
      if (only) await this.expand(only);
    } catch (e) {
      this.treeLoaded = false;
      note(`Cannot list the workspace: ${e instanceof Error ? e.message : String(e)}`, "error");
    }
  }

  private node(entry: TreeEntry, depth: number, parent: TreeNode | null): TreeNode {
    return { entry, depth, parent, expanded: false, loading: false, children: null, truncated: false, error: null };
  }

  private async expand(n: TreeNode): Promise<void> {
    if (n.entry.kind !== "dir") return;
    n.expanded = true;
    if (!n.children && !n.loading) {
      n.loading = true;
      this.flatten();
      try {
        const listing = await api.tree(n.entry.path);
        n.children = listing.entries.map((e) => this.node(e, n.depth + 1, n));
        n.truncated = !!listing.truncated;
        n.error = null;
      } catch (e) {
        n.error = e instanceof ApiError ? e.message : String(e);
        n.children = [];
      }
      n.loading = false;
    }
    this.flatten();
  }

  private collapse(n: TreeNode): void {
    n.expanded = false;
    this.flatten();
  }

  private flatten(): void {
    const activeRow = this.rows[this.active];
    const activeNode = activeRow && "node" in activeRow ? activeRow.node : null;
    const rows: Row[] = [];
    const walk = (nodes: TreeNode[]) => {
      for (const n of nodes) {
        rows.push({ node: n });
        if (n.expanded) {
          if (n.loading) rows.push({ info: "Loading…", depth: n.depth + 1, parent: n });
          else if (n.error) rows.push({ info: `Cannot list: ${n.error}`, depth: n.depth + 1, parent: n });
          else if (n.children) {
            walk(n.children);
            if (n.children.length === 0) rows.push({ info: "Empty", depth: n.depth + 1, parent: n });
            if (n.truncated) rows.push({ info: "More entries not listed (ccbridge lists at most a few thousand)", depth: n.depth + 1, parent: n });
          }
        }
      }
    };
    walk(this.roots);
    this.rows = rows;
    if (activeNode) {
      const i = rows.findIndex((r) => "node" in r && r.node === activeNode);
      this.active = i >= 0 ? i : Math.min(this.active, rows.length - 1);
    }
    this.active = Math.max(0, Math.min(this.active, rows.length - 1));
    this.treeInner.style.height = `${rows.length * ROW_HEIGHT}px`;
    for (const el of this.rendered.values()) el.remove();
    this.rendered.clear();
    this.rowSeq++;
    this.renderRows();
  }

  /** Draws the rows in sight (and a few around them). */
  private renderRows(): void {
    const top = this.treeEl.scrollTop;
    const height = this.treeEl.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.rows.length - 1, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    for (const [i, el] of this.rendered) {
      if (i < first || i > last) {
        el.remove();
        this.rendered.delete(i);
      }
    }
    for (let i = first; i <= last; i++) {
      let el = this.rendered.get(i);
      if (!el) {
        el = this.rowElement(i);
        this.rendered.set(i, el);
        this.treeInner.appendChild(el);
      }
      el.classList.toggle("is-active", i === this.active);
      el.setAttribute("aria-selected", String(i === this.active));
    }
    const activeEl = this.rendered.get(this.active);
    if (activeEl) this.treeEl.setAttribute("aria-activedescendant", activeEl.id);
    else this.treeEl.removeAttribute("aria-activedescendant");
  }

  private rowElement(i: number): HTMLElement {
    const row = this.rows[i]!;
    const depth = "node" in row ? row.node.depth : row.depth;
    let el: HTMLElement;
    if ("node" in row) {
      const n = row.node;
      const isDir = n.entry.kind === "dir";
      el = h(
        "div",
        {
          class: `tree-row kind-${n.entry.kind}`,
          role: "treeitem",
          id: `tree-${this.rowSeq}-${i}`,
          "data-tree-path": n.entry.path,
          "aria-level": depth + 1,
          "aria-expanded": isDir ? String(n.expanded) : null,
          title: n.entry.path,
          onclick: () => void this.activate(i, true),
        },
        h("span", { class: "twisty", "aria-hidden": "true" }, isDir ? (n.expanded ? "▾" : "▸") : ""),
        h("span", { class: "tree-name" }, n.entry.name),
        n.entry.kind === "symlink" ? h("span", { class: "tree-kind" }, "link") : null,
      );
      flag(el, "data-open", !isDir && this.files.some((f) => f.path === n.entry.path));
    } else {
      el = h("div", { class: "tree-row info", role: "treeitem", id: `tree-${this.rowSeq}-${i}`, "aria-level": depth + 1, "aria-disabled": "true" }, row.info);
    }
    el.style.transform = `translateY(${i * ROW_HEIGHT}px)`;
    el.style.paddingLeft = `${8 + depth * 16}px`;
    return el;
  }

  private setActive(i: number): void {
    this.active = Math.max(0, Math.min(i, this.rows.length - 1));
    const top = this.active * ROW_HEIGHT;
    const view = this.treeEl.clientHeight;
    if (top < this.treeEl.scrollTop) this.treeEl.scrollTop = top;
    else if (top + ROW_HEIGHT > this.treeEl.scrollTop + view) this.treeEl.scrollTop = top + ROW_HEIGHT - view;
    this.renderRows();
  }

  /** Click or Enter on row `i`: open a folder or a file. */
  private async activate(i: number, toggle: boolean): Promise<void> {
    this.setActive(i);
    const row = this.rows[i];
    if (!row || !("node" in row)) return;
    const n = row.node;
    if (n.entry.kind === "dir") {
      if (n.expanded && toggle) this.collapse(n);
      else await this.expand(n);
    } else {
      await this.open(n.entry.path, null);
    }
  }

  private treeKey(e: KeyboardEvent): void {
    const row = this.rows[this.active];
    const n = row && "node" in row ? row.node : null;
    switch (e.key) {
      case "ArrowDown":
        this.setActive(this.active + 1);
        break;
      case "ArrowUp":
        this.setActive(this.active - 1);
        break;
      case "PageDown":
        this.setActive(this.active + Math.max(1, Math.floor(this.treeEl.clientHeight / ROW_HEIGHT) - 1));
        break;
      case "PageUp":
        this.setActive(this.active - Math.max(1, Math.floor(this.treeEl.clientHeight / ROW_HEIGHT) - 1));
        break;
      case "Home":
        this.setActive(0);
        break;
      case "End":
        this.setActive(this.rows.length - 1);
        break;
      case "ArrowRight":
        if (n?.entry.kind === "dir") {
          if (!n.expanded) void this.expand(n);
          else this.setActive(this.active + 1);
        }
        break;
      case "ArrowLeft": {
        const parent = n ? (n.expanded && n.entry.kind === "dir" ? null : n.parent) : row && "parent" in row ? row.parent : null;
        if (n && n.expanded && n.entry.kind === "dir") this.collapse(n);
        else if (parent) {
          const i = this.rows.findIndex((r) => "node" in r && r.node === parent);
          if (i >= 0) this.setActive(i);
        }
        break;
      }
      case "Enter":
      case " ":
        void this.activate(this.active, true);
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopPropagation();
  }

  // ------------------------------------------------------------ tabs

  /** The tabs the server had (first snapshot): listed, the active one loaded. */
  restoreTabs(tabs: Tabs): void {
    if (this.files.length) {
      // A reconnect: ours are newer; tell the server again.
      this.postedTabs = "";
      this.postTabs();
      return;
    }
    this.files = tabs.open.map((path) => ({ path, content: null, state: null, scrollTop: 0, error: null }));
    this.postedTabs = JSON.stringify(tabs);
    const active = tabs.active && this.files.find((f) => f.path === tabs.active);
    if (active) void this.show(active, null, false);
    else this.renderTabs();
  }

  private tabsNow(): Tabs {
    return { open: this.files.map((f) => f.path), active: this.current?.path ?? null };
  }

  private postTabs(): void {
    const t = this.tabsNow();
    const key = JSON.stringify(t);
    if (key === this.postedTabs) return;
    this.postedTabs = key;
    api.tabs(t).catch((e: unknown) => {
      this.postedTabs = "";
      if (e instanceof ApiError && e.status !== 0) note(`Could not tell Claude about the open files: ${e.message}`, "warn");
    });
  }

  private renderTabs(): void {
    const folders = this.host.folders();
    replace(
      this.tabsEl,
      ...this.files.map((f) => {
        const isActive = f === this.current;
        const tab = h(
          "div",
          { class: "file-tab", "data-active": isActive },
          h(
            "button",
            {
              type: "button",
              role: "tab",
              class: "file-tab-name",
              "aria-selected": String(isActive),
              "data-tab-path": f.path,
              title: displayPath(f.path, folders),
              onclick: () => void this.show(f, null, true),
              onauxclick: (e: Event) => {
                if ((e as MouseEvent).button === 1) this.close(f);
              },
            },
            baseName(f.path),
          ),
          h(
            "button",
            { type: "button", class: "file-tab-close", "aria-label": `Close ${baseName(f.path)}`, title: "Close", onclick: () => this.close(f) },
            "×",
          ),
        );
        return tab;
      }),
    );
    // Mark open files in the tree.
    for (const el of this.rendered.values()) {
      const p = el.getAttribute("data-tree-path");
      if (p !== null) flag(el, "data-open", this.files.some((f) => f.path === p));
    }
  }

  private close(f: OpenFile): void {
    const i = this.files.indexOf(f);
    if (i < 0) return;
    this.files.splice(i, 1);
    if (this.current === f) {
      const next = this.files[i] ?? this.files[i - 1] ?? null;
      this.current = null;
      if (next) {
        void this.show(next, null, true);
        return;
      }
      void api.selection(null).catch(() => undefined);
      this.renderViewer();
    }
    this.renderTabs();
    this.postTabs();
  }

  // ------------------------------------------------------------ viewer

  /** Opens `path` in a tab (or its tab) and moves to `line` (0-based). */
  async open(path: string, line: number | null): Promise<void> {
    let f = this.files.find((x) => x.path === path);
    if (!f) {
      f = { path, content: null, state: null, scrollTop: 0, error: null };
      const at = this.current ? this.files.indexOf(this.current) + 1 : this.files.length;
      this.files.splice(at, 0, f);
    }
    await this.show(f, line, true);
  }

  private async show(f: OpenFile, line: number | null, focus: boolean): Promise<void> {
    this.saveScroll();
    this.current = f;
    this.renderTabs();
    this.postTabs();
    if (!f.content && !f.error) {
      this.pathEl.textContent = displayPath(f.path, this.host.folders());
      this.messageEl.hidden = false;
      this.messageEl.textContent = "Loading…";
      try {
        f.content = await api.file(f.path);
        if (f.content.kind === "text") {
          const sep = lineSeparatorOf(f.content.text);
          f.state = EditorState.create({
            doc: f.content.text,
            extensions: [
              baseEditor({ lineSeparator: sep, editable: false, onEscape: () => this.treeEl.focus(), label: `${baseName(f.path)} (read-only; s sends the selection to Claude)` }),
              languageExtension(f.content.language),
              EditorView.updateListener.of((u) => this.onViewerUpdate(u)),
            ],
          });
        }
      } catch (e) {
        f.error = e instanceof Error ? e.message : String(e);
      }
      if (this.current !== f) return;
    }
    this.renderViewer();
    const view = this.view;
    if (view && f.state) {
      if (line !== null) {
        const l = view.state.doc.line(Math.min(Math.max(1, line + 1), view.state.doc.lines));
        view.dispatch({ selection: EditorSelection.cursor(l.from), effects: EditorView.scrollIntoView(l.from, { y: "center" }) });
      } else {
        view.scrollDOM.scrollTop = f.scrollTop;
      }
      if (focus) view.focus();
      // Opening a file tells Claude where the cursor is (not a tab merely
      // restored after a reload).
      if (focus || line !== null) this.postSelection(true);
    } else if (f.content?.kind === "binary" || f.error) {
      void api.selection(null).catch(() => undefined);
    }
  }

  private saveScroll(): void {
    const f = this.current;
    if (f && this.view && f.state) {
      f.state = this.view.state;
      f.scrollTop = this.view.scrollDOM.scrollTop;
    }
  }

  private renderViewer(): void {
    const f = this.current;
    const folders = this.host.folders();
    this.pathEl.textContent = f ? displayPath(f.path, folders) : "";
    this.sendButton.disabled = !f || !f.state;
    this.selectionInfo.textContent = "";
    let message: string | null = null;
    if (!f) message = "Pick a file in the tree to view it. Selecting lines tells Claude what you are looking at.";
    else if (f.error) message = `Cannot open ${baseName(f.path)}: ${f.error}`;
    else if (f.content?.kind === "binary") message = `Cannot display ${baseName(f.path)}: a binary file (${formatSize(f.content.size)}).`;
    this.messageEl.hidden = message === null;
    this.messageEl.textContent = message ?? "";
    if (!f || !f.state) {
      this.viewerEl.hidden = true;
      return;
    }
    this.viewerEl.hidden = false;
    if (!this.view) {
      this.view = new EditorView({
        state: f.state,
        parent: this.viewerEl,
        // A new selection goes to Claude before the viewer redraws: the
        // redraw is milliseconds of layout on a busy machine, and the
        // server needs only the new state.
        dispatchTransactions: (trs, view) => {
          if (trs.some((tr) => tr.selection)) this.postSelection(false, trs[trs.length - 1]!.state);
          view.update(trs);
        },
      });
      trackScheme(this.view);
    } else if (this.view.state !== f.state) {
      this.view.setState(f.state);
    }
    this.updateSelectionInfo();
  }

  private onViewerUpdate(u: ViewUpdate): void {
    if (u.selectionSet) this.updateSelectionInfo();
  }

  private updateSelectionInfo(): void {
    const view = this.view;
    if (!view) return;
    const lines = this.selectedLines();
    const doc = view.state.doc;
    if (lines) {
      this.selectionInfo.textContent = lines[0] === lines[1] ? `Line ${lines[0] + 1} selected` : `Lines ${lines[0] + 1}–${lines[1] + 1} selected`;
    } else {
      const l = doc.lineAt(view.state.selection.main.head);
      this.selectionInfo.textContent = `Line ${l.number} of ${doc.lines}`;
    }
  }

  /** The selected lines (0-based, inclusive), or null for a bare cursor. A
   * selection ending at the start of a line does not include that line. */
  private selectedLines(): [number, number] | null {
    const view = this.view;
    if (!view) return null;
    const sel = view.state.selection.main;
    if (sel.empty) return null;
    const doc = view.state.doc;
    const a = doc.lineAt(sel.from);
    let b = doc.lineAt(sel.to);
    if (sel.to === b.from && b.number > a.number) b = doc.line(b.number - 1);
    return [a.number - 1, b.number - 1];
  }

  /** Tells the server the selection: at once if the last post is older than
   * the throttle (or `now`, for a file just opened), else when it is. A
   * deferred post sends the viewer's state as it is by then. */
  private postSelection(now: boolean, state?: EditorState): void {
    window.clearTimeout(this.selTimer);
    const send = (given: EditorState | undefined) => {
      this.selLast = Date.now();
      const f = this.current;
      if (!this.view || !f || !f.state) return;
      const state = given ?? this.view.state;
      const sel = state.selection.main;
      const at = (pos: number): Position => {
        const l = state.doc.lineAt(pos);
        return { line: l.number - 1, character: pos - l.from };
      };
      api.selection(f.path, state.sliceDoc(sel.from, sel.to), at(sel.from), at(sel.to)).catch(() => undefined);
    };
    const wait = SELECTION_THROTTLE_MS - (Date.now() - this.selLast);
    if (now || wait <= 0) send(state);
    else this.selTimer = window.setTimeout(() => send(undefined), wait);
  }

  async sendToClaude(): Promise<void> {
    const f = this.current;
    if (!f || !f.state || !this.view) return;
    const lines = this.selectedLines();
    try {
      if (lines) await api.mention(f.path, lines[0], lines[1]);
      else await api.mention(f.path);
      const what = lines ? (lines[0] === lines[1] ? `line ${lines[0] + 1} of ` : `lines ${lines[0] + 1}–${lines[1] + 1} of `) : "";
      note(`Sent ${what}${baseName(f.path)} to Claude.`);
    } catch (e) {
      note(`Could not send to Claude: ${e instanceof Error ? e.message : String(e)}`, "error");
    }
  }

  /** An `open` event: Claude asked to show a file. */
  openFromClaude(path: string, line: number | null): void {
    void this.open(path, line);
  }

  focusTree(): void {
    this.treeEl.focus();
  }

  hasFile(): boolean {
    return !!this.current?.state;
  }
}

function formatSize(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
