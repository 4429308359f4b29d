// The page: signs in with the link's one-time token, follows the event
// stream, and routes what arrives to the four views.

import { api, ApiError, type DiagnosticsState, type ServerEvent, type ServerInfo, type Snapshot } from "./api";
import { ActivityView, ConnectionStatus } from "./activity";
import { ChangesView, diskLabel } from "./changes";
import { DiagnosticsView } from "./diagnostics";
import { baseName, h, replace } from "./dom";
import { EventStream, type StreamState } from "./events";
import { FilesView } from "./files";
import { installKeys, keysDialog, showKeys } from "./keys";
import { note, notesElement } from "./notes";
import { approvalArrived, notifyButton, reviewArrived, setBaseTitle } from "./notify";
import { prefs } from "./prefs";
import { ReviewList } from "./reviews";
import { ToolsView } from "./tools";

type ViewName = "reviews" | "files" | "diagnostics" | "activity" | "tools" | "changes";
const VIEWS: { name: ViewName; label: string; short?: string }[] = [
  { name: "reviews", label: "Reviews" },
  { name: "files", label: "Files" },
  { name: "diagnostics", label: "Diagnostics", short: "Diag." },
  { name: "activity", label: "Activity" },
  { name: "tools", label: "Tools" },
  { name: "changes", label: "Changes" },
];

let server: ServerInfo | null = null;
const folders = (): readonly string[] => server?.workspaceFolders ?? [];
let currentView: ViewName = "reviews";
let firstSnapshot = true;
let tokenRefused = false;

// ---------------------------------------------------------------- the views

const connection = new ConnectionStatus();
const activity = new ActivityView();
const badges = new Map<ViewName, HTMLElement>();
const tabs = new Map<ViewName, HTMLButtonElement>();
const panels = new Map<ViewName, HTMLElement>();

const reviews = new ReviewList({
  folders,
  counted: (n) => setBadge("reviews", n),
  arrived: (r) => {
    reviewArrived(baseName(r.path));
    if (currentView !== "reviews") note(`Claude proposes an edit to ${baseName(r.path)}: see Reviews (1).`);
  },
});
const tools = new ToolsView({
  counted: (n) => setBadge("tools", n),
  arrived: (a) => {
    approvalArrived(a.summary);
    if (currentView !== "tools") note(`Claude asks: ${a.summary}. Answer in Tools (5).`, "warn");
  },
});
const files = new FilesView({ folders, show: () => showView("files") });
const changes = new ChangesView({
  folders,
  counted: (n) => setBadge("changes", n),
});
const diagnostics = new DiagnosticsView({
  folders,
  open: (path, line) => {
    showView("files");
    void files.open(path, line);
  },
});

function setBadge(v: ViewName, n: number): void {
  const b = badges.get(v);
  if (!b) return;
  b.textContent = n ? String(n) : "";
  b.hidden = n === 0;
}

/** Where each view was scrolled, restored when it is shown again. */
const scrolls = new Map<ViewName, number>();

function showView(v: ViewName, focus = false): void {
  if (v !== currentView) scrolls.set(currentView, window.scrollY);
  const changed = v !== currentView;
  currentView = v;
  prefs.setView(v);
  for (const [name, tab] of tabs) {
    tab.setAttribute("aria-selected", String(name === v));
    tab.tabIndex = name === v ? 0 : -1;
  }
  for (const [name, panel] of panels) panel.hidden = name !== v;
  if (changed) window.scrollTo(0, scrolls.get(v) ?? 0);
  if (v === "files") void files.loadTree();
  if (focus) tabs.get(v)?.focus();
}

// ---------------------------------------------------------------- the shell

const streamBanner = h("div", { class: "banner", "data-stream": "", role: "status", hidden: true });
const linkDialog = h("dialog", { class: "link-dialog", "aria-labelledby": "link-title" });
const confirmDialog = h("dialog", { class: "link-dialog", "aria-labelledby": "confirm-title", "data-confirm": "" });
const app = h("div", { class: "app" });

function buildShell(): void {
  const nav = h("nav", { class: "tabs", role: "tablist", "aria-label": "Views" });
  VIEWS.forEach(({ name, label, short }, i) => {
    const badge = h("span", { class: "tab-badge", hidden: true });
    badges.set(name, badge);
    const tab = h(
      "button",
      {
        type: "button",
        class: "tab",
        role: "tab",
        id: `tab-${name}`,
        "data-tab": name,
        "aria-controls": `view-${name}`,
        "aria-selected": "false",
        title: `${label} (${i + 1})`,
        onclick: () => showView(name),
        onkeydown: (e: Event) => {
          const k = (e as KeyboardEvent).key;
          if (k !== "ArrowRight" && k !== "ArrowLeft") return;
          const next = VIEWS[(i + (k === "ArrowRight" ? 1 : VIEWS.length - 1)) % VIEWS.length];
          if (next) showView(next.name, true);
          e.preventDefault();
        },
      },
      short ? h("span", { class: "label-long" }, label) : label,
      short ? h("span", { class: "label-short" }, short) : null,
      badge,
    );
    tabs.set(name, tab);
    nav.append(tab);
  });
  const contents: Record<ViewName, HTMLElement> = {
    reviews: reviews.el,
    files: files.el,
    diagnostics: diagnostics.el,
    activity: activity.el,
    tools: tools.el,
    changes: changes.el,
  };
  const main = h("main", { class: "main" });
  for (const { name } of VIEWS) {
    const panel = h(
      "section",
      { class: `view view-${name}`, id: `view-${name}`, "data-view": name, role: "tabpanel", "aria-labelledby": `tab-${name}`, hidden: true },
      contents[name],
    );
    panels.set(name, panel);
    main.append(panel);
  }
  // The connection status is part of the header: its own row in a wide
  // window, the rest of the one row (cut short, in full as its title) in a
  // narrow or short one (200% zoom), where the header must stay small.
  const statusbar = h("div", { class: "statusbar" }, connection.el);
  const header = h(
    "header",
    { class: "topbar" },
    h("div", { class: "brand", title: "ccbridge" }, h("span", { class: "logo", "aria-hidden": "true" }, "◆"), h("span", { class: "brand-name" }, "ccbridge")),
    nav,
    h("span", { class: "spacer" }),
    statusbar,
    h(
      "div",
      { class: "top-actions" },
      notifyButton(),
      h(
        "button",
        {
          type: "button",
          class: "btn quiet small",
          "data-action": "new-link",
          "aria-label": "Link for another browser",
          title: "A one-time link to open this page in another browser",
          onclick: () => void showLink(),
        },
        h("span", { class: "label-long" }, "Link for another browser"),
        h("span", { class: "label-short", "aria-hidden": "true" }, "Link"),
      ),
      h("button", { type: "button", class: "btn quiet small icon", "data-action": "keys", "aria-label": "Keyboard shortcuts", title: "Keyboard shortcuts (?)", onclick: () => showKeys() }, "?"),
    ),
  );
  replace(app, header, streamBanner, main);
  replace(document.body, app, notesElement(), keysDialog(), linkDialog, confirmDialog, changes.dialog);
  const saved = prefs.view();
  showView(VIEWS.some((v) => v.name === saved) ? (saved as ViewName) : "reviews");
}

async function showLink(): Promise<void> {
  let url: string;
  try {
    url = await api.link();
  } catch (e) {
    note(`No link: ${e instanceof Error ? e.message : String(e)}`, "error");
    return;
  }
  const input = h("input", { class: "link-input", type: "text", readonly: true, value: url, "aria-label": "One-time link", "data-link": "" });
  const copy = h(
    "button",
    {
      type: "button",
      class: "btn primary",
      onclick: () => {
        input.select();
        navigator.clipboard?.writeText(url).then(
          () => note("Link copied."),
          () => note("Select the link and copy it (Ctrl-C)."),
        );
      },
    },
    "Copy",
  );
  replace(
    linkDialog,
    h("h2", { id: "link-title" }, "Open this page in another browser"),
    h("p", null, "This link signs in one browser, once. Anyone who has it can use it until then, so open it yourself."),
    h("div", { class: "link-row" }, input, copy),
    h("div", { class: "dialog-actions" }, h("button", { type: "button", class: "btn", onclick: () => linkDialog.close() }, "Close")),
  );
  linkDialog.showModal();
  input.select();
}

/** A whole-file decision made by key (`A`/`R`) is confirmed first: one
 * stray key must not decide every hunk of a file. Enter confirms, Escape
 * cancels. */
function confirmFileByKey(kind: "accept" | "reject"): void {
  const card = reviews.focused();
  if (!card) return;
  const name = baseName(card.review.path);
  const undecided = card.review.hunks.filter((x) => !x.accepted).length;
  const verb = kind === "accept" ? "Accept" : "Reject";
  const yes = h(
    "button",
    {
      type: "button",
      class: kind === "accept" ? "btn primary" : "btn reject",
      "data-action": "confirm",
      onclick: () => {
        confirmDialog.close();
        void card.fileAction(kind);
      },
    },
    `${verb} the whole file`,
  );
  replace(
    confirmDialog,
    h("h2", { id: "confirm-title" }, `${verb} all of ${name}?`),
    h(
      "p",
      null,
      kind === "accept"
        ? `Every change on the right is accepted, ${undecided} undecided hunk${undecided === 1 ? "" : "s"} included.`
        : "Every change to this file is rejected; the file stays as it is.",
    ),
    h(
      "div",
      { class: "dialog-actions" },
      h("button", { type: "button", class: "btn", "data-action": "cancel", onclick: () => confirmDialog.close() }, "Cancel"),
      yes,
    ),
  );
  confirmDialog.showModal();
  yes.focus();
}

/** The page cannot use the API: say why and how to get in. */
function showSignedOut(): void {
  const title = tokenRefused ? "This link was already used" : "This page is not signed in";
  replace(
    app,
    h(
      "div",
      { class: "signed-out", role: "alert" },
      h("h1", null, title),
      h(
        "p",
        null,
        "The link ccbridge prints works once: the browser that opens it first is signed in, and the link stops working. A session also ends when ccbridge restarts.",
      ),
      h("p", null, "To open the page here:"),
      h(
        "ul",
        null,
        h("li", null, "in a browser tab that is already signed in, use ", h("strong", null, "Link for another browser"), " and open that link here; or"),
        h("li", null, "restart ", h("code", null, "ccbridge serve"), " and open the new link it prints."),
      ),
    ),
  );
}

// ---------------------------------------------------------------- events

function onDiagnostics(d: DiagnosticsState): void {
  diagnostics.set(d.diagnostics, d.diagnosticsSource, d.unavailableServers ?? []);
  setBadge("diagnostics", diagnostics.count());
  reviews.setDiagnostics(d.diagnostics, d.proposedDiagnostics ?? []);
}

function onSnapshot(s: Snapshot): void {
  server = s.server ?? server;
  const folder = server?.workspaceFolders[0];
  setBaseTitle(folder ? `ccbridge — ${baseName(folder)}` : "ccbridge");
  activity.learn(s.sessions);
  connection.set(s.sessions, folders(), server?.agents ?? []);
  reviews.setAll(s.reviews, s.closedReviews);
  activity.setAll(s.activity);
  onDiagnostics(s);
  files.restoreTabs(s.tabs);
  tools.setTools(s.tools);
  tools.setAll(s.approvals, s.runs);
  changes.setEnabled(s.changes);
  if (firstSnapshot && tokenRefused) note("That link was already used; this browser is still signed in.");
  firstSnapshot = false;
}

function onEvent(e: ServerEvent): void {
  switch (e.type) {
    case "snapshot":
      onSnapshot(e);
      break;
    case "review":
      reviews.update(e.review);
      break;
    case "hunk":
      reviews.hunk(e);
      break;
    case "forgotten":
      reviews.forgotten(e.id);
      break;
    case "closed":
      reviews.closed(e.id, e.reason, e.note);
      break;
    case "sessions":
      activity.learn(e.sessions);
      connection.set(e.sessions, folders(), server?.agents ?? []);
      break;
    case "activity":
      activity.add(e.entry);
      if (e.entry.kind === "unreviewed") {
        // The server logs a file changed without a review (the session review saw it).
        const { path, by, connected } = e.entry;
        const what = by ? `${by} changed ${baseName(path)}` : `${baseName(path)} ${diskLabel(connected ?? [])},`;
        if (currentView !== "changes") note(`${what} without a review: see Changes (6).`, "warn");
      }
      break;
    case "open":
      void files.open(e.path, e.line);
      if (currentView === "reviews" && reviews.pendingCount() > 0) {
        note(`Claude opened ${baseName(e.path)} in Files (2).`);
      } else {
        showView("files");
      }
      break;
    case "diagnostics":
      onDiagnostics(e);
      break;
    case "tools":
      tools.setTools(e.tools);
      break;
    case "approval":
      tools.approvalAsked(e.approval);
      break;
    case "approvalClosed":
      tools.approvalClosed(e.id, e.allowed);
      break;
    case "run":
      tools.runStarted(e.run);
      break;
    case "runOutput":
      tools.runOutput(e.id, e.data);
      break;
    case "runExited":
      tools.runExited(e.id, e.exit);
      break;
    case "changes":
      void changes.refresh();
      break;
  }
}

let bannerTimer = 0;
function onStreamState(s: StreamState, retryInMs?: number): void {
  window.clearTimeout(bannerTimer);
  if (s === "open") {
    streamBanner.hidden = true;
    app.classList.remove("is-offline");
    return;
  }
  if (s === "unauthorized") {
    showSignedOut();
    return;
  }
  if (s === "stopped") {
    app.classList.add("is-offline");
    replace(
      streamBanner,
      h("span", null, "ccbridge has stopped: it has not answered for two minutes."),
      " Start it again (its new link signs this page in), or ",
      h("button", { type: "button", class: "btn small quiet", onclick: () => stream.start() }, "try again"),
    );
    streamBanner.hidden = false;
    return;
  }
  if (s === "connecting") {
    // Only say so if it takes a while.
    bannerTimer = window.setTimeout(() => {
      replace(streamBanner, "Connecting to ccbridge…");
      streamBanner.hidden = false;
    }, 1500);
    return;
  }
  app.classList.add("is-offline");
  const secs = retryInMs ? Math.max(1, Math.round(retryInMs / 1000)) : 0;
  replace(
    streamBanner,
    h("span", null, "Disconnected from ccbridge", secs ? ` — trying again in ${secs} s.` : " — reconnecting…"),
    " Your reviews and edits are kept by ccbridge. ",
    secs ? h("button", { type: "button", class: "btn small quiet", onclick: () => stream.retryNow() }, "Retry now") : null,
  );
  streamBanner.hidden = false;
}

const stream = new EventStream({ event: onEvent, state: onStreamState });

// ---------------------------------------------------------------- start

async function boot(): Promise<void> {
  buildShell();
  installKeys({
    view: (n) => {
      const v = VIEWS[n - 1];
      if (v) showView(v.name);
    },
    nextHunk: () => reviews.focused()?.moveHunk(1),
    prevHunk: () => reviews.focused()?.moveHunk(-1),
    acceptHunk: () => {
      const c = reviews.focused();
      if (c) void c.decideHunk(c.current, "accept");
    },
    rejectHunk: () => {
      const c = reviews.focused();
      if (c) void c.decideHunk(c.current, "reject");
    },
    acceptFile: () => confirmFileByKey("accept"),
    rejectFile: () => confirmFileByKey("reject"),
    nextReview: () => reviews.moveReview(1),
    prevReview: () => reviews.moveReview(-1),
    toggleLayout: () => reviews.toggleGlobalLayout(),
    toggleCollapse: () => reviews.focused()?.toggleShowAll(),
    editProposed: () => reviews.focused()?.focusEditor(),
    sendToClaude: () => void files.sendToClaude(),
    focusTree: () => files.focusTree(),
    currentView: () => currentView,
  });
  window.addEventListener("pagehide", () => reviews.flushAll(true));
  window.addEventListener("beforeunload", (e) => {
    if (reviews.hasUnsaved() && !reviews.flushAll(true)) e.preventDefault();
  });
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) reviews.flushAll(false);
    else stream.retryNow();
  });
  window.addEventListener("online", () => stream.retryNow());

  // The printed link: trade its token for a session, then drop it from
  // the address bar (and so from history and bookmarks).
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (m) {
    history.replaceState(null, "", location.pathname + location.search);
    try {
      await api.session(decodeURIComponent(m[1] ?? ""));
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) tokenRefused = true;
      else note(`Signing in failed: ${e instanceof Error ? e.message : String(e)}`, "error");
    }
  }
  stream.start();
}

void boot();
