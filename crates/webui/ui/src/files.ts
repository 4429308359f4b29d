// The files view: the workspace tree (`file-tree`), tabs, and a read-only
// viewer whose selection reaches Claude. The viewer reports its selection
// (0-based lines, UTF-16 characters, as CodeMirror counts them) and the
// open tabs to the server, which passes them on to Claude.

import { EditorSelection, EditorState } from "@codemirror/state";
import { EditorView, type ViewUpdate } from "@codemirror/view";
import { api, ApiError, type FileContent, type Position, type Tabs } from "./api";
import { baseEditor } from "./editor";
import { lineSeparatorOf } from "./hunks";
import { languageExtension } from "./languages";
import { trackScheme } from "./theme";
import { baseName, displayPath, h, replace } from "./dom";
import { note } from "./notes";
import { FileTree } from "./file-tree";

/** Selections are posted at most this often (the server debounces too). */
const SELECTION_THROTTLE_MS = 120;

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
  private readonly tree: FileTree;
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

  constructor(private readonly host: FilesHost) {
    this.tree = new FileTree({
      open: (path) => this.open(path, null),
      isOpen: (path) => this.files.some((f) => f.path === path),
    });
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
      h("div", { class: "tree-pane" }, h("div", { class: "pane-title" }, "Workspace"), this.tree.el),
      h(
        "div",
        { class: "viewer-pane" },
        this.tabsEl,
        h("div", { class: "viewer-toolbar" }, this.pathEl, this.selectionInfo, h("span", { class: "spacer" }), this.sendButton),
        this.messageEl,
        this.viewerEl,
      ),
    );
    this.renderViewer();
  }

  /** Loads the workspace tree (once; again after a failure). */
  loadTree(): Promise<void> {
    return this.tree.load();
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
    this.tree.markOpen();
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
              baseEditor({ lineSeparator: sep, editable: false, onEscape: () => this.tree.focus(), label: `${baseName(f.path)} (read-only; s sends the selection to Claude)` }),
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
    this.tree.focus();
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
