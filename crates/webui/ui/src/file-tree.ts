// The workspace tree of the files view: a virtual list (only the rows in
// sight are in the DOM, so a folder of 10,000 entries costs no more than one
// of 10), folders loaded when first opened, moved through with the keys of
// a WAI-ARIA tree.

import { api, ApiError, type TreeEntry } from "./api";
import { flag, h } from "./dom";
import { note } from "./notes";

const ROW_HEIGHT = 26;
/** Rows drawn above and below the visible ones. */
const OVERSCAN = 12;

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

export interface FileTreeHost {
  /** Open this file in the viewer. */
  open(path: string): Promise<void>;
  /** Whether this file has a tab. */
  isOpen(path: string): boolean;
}

export class FileTree {
  readonly el: HTMLElement;
  private readonly inner: HTMLElement;
  private roots: TreeNode[] = [];
  private rows: Row[] = [];
  private active = 0;
  private rendered = new Map<number, HTMLElement>();
  private rowSeq = 0;
  private loaded = false;

  constructor(private readonly host: FileTreeHost) {
    this.inner = h("div", { class: "tree-inner" });
    this.el = h(
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
      this.inner,
    );
    new ResizeObserver(() => this.renderRows()).observe(this.el);
  }


  /** Loads the workspace folders (once; again after a failure). */
  async load(): Promise<void> {
    if (this.loaded) return;
    this.loaded = true;
    try {
      const top = await api.tree(null);
      this.roots = top.entries.map((entry) => this.node(entry, 0, null));
      this.flatten();
      // One folder: open it at once.
      const only = this.roots.length === 1 ? this.roots[0] : undefined;
      if (only) await this.expand(only);
    } catch (e) {
      this.loaded = false;
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
    this.inner.style.height = `${rows.length * ROW_HEIGHT}px`;
    for (const el of this.rendered.values()) el.remove();
    this.rendered.clear();
    this.rowSeq++;
    this.renderRows();
  }

  /** Draws the rows in sight (and a few around them). */
  private renderRows(): void {
    const top = this.el.scrollTop;
    const height = this.el.clientHeight || 600;
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
        this.inner.appendChild(el);
      }
      el.classList.toggle("is-active", i === this.active);
      el.setAttribute("aria-selected", String(i === this.active));
    }
    const activeEl = this.rendered.get(this.active);
    if (activeEl) this.el.setAttribute("aria-activedescendant", activeEl.id);
    else this.el.removeAttribute("aria-activedescendant");
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
      flag(el, "data-open", !isDir && this.host.isOpen(n.entry.path));
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
    const view = this.el.clientHeight;
    if (top < this.el.scrollTop) this.el.scrollTop = top;
    else if (top + ROW_HEIGHT > this.el.scrollTop + view) this.el.scrollTop = top + ROW_HEIGHT - view;
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
      await this.host.open(n.entry.path);
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
        this.setActive(this.active + Math.max(1, Math.floor(this.el.clientHeight / ROW_HEIGHT) - 1));
        break;
      case "PageUp":
        this.setActive(this.active - Math.max(1, Math.floor(this.el.clientHeight / ROW_HEIGHT) - 1));
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

  /** Marks the rows of the files that have a tab (after the tabs changed). */
  markOpen(): void {
    for (const el of this.rendered.values()) {
      const p = el.getAttribute("data-tree-path");
      if (p !== null) flag(el, "data-open", this.host.isOpen(p));
    }
  }

  focus(): void {
    this.el.focus();
  }
}
