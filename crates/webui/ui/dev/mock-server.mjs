#!/usr/bin/env node
// DEV TOOL ONLY — not part of ccbridge and never shipped or used by the
// product. A stand-in for ccbridge's UI server (crates/webui/src) that
// implements the HTTP/SSE API of docs/web-ui.md with fake data, serves the
// built page from crates/webui/dist, and lets you develop, drive and
// screenshot the page without Claude Code or a Rust build.
//
//   node crates/webui/ui/dev/mock-server.mjs [--port 5217] [--no-diagnostics] [--token HEX]
//
// It prints the one-time link (http://127.0.0.1:<port>/#token=...). It
// mimics the real server's checks (Host, Origin, JSON-only POSTs, the
// session header, the CSP with a style nonce) so the page is exercised
// under the same rules. Hunks are computed here with a simple line diff
// (unique-line anchors, then LCS on small stretches), which is not
// ccbridge's (`similar`'s histogram) but has the same shape.
//
// Dev-only helpers, without the session (loopback only):
//   GET  /dev/requests          the API POSTs the page made (and POST /dev/requests/clear)
//   POST /dev/review {"kind"}   a new review: small | big | new | unreadable | crlf
//   POST /dev/open {"path","line"}           Claude asks to open a file
//   POST /dev/sessions {"connected": bool}   connect or disconnect the fake session
//   POST /dev/edit {"id","text"}             another tab edits a review
//   POST /dev/close {"id"}                   Claude closes a review
//   POST /dev/drop              ends every event stream (the page reconnects)
//   POST /dev/revoke            forgets every session (the page shows 401)

import { createServer } from "node:http";
import { createHash, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : def;
};
const PORT = Number(opt("--port", "5217"));
const DIST = opt("--dist", join(here, "..", "..", "dist"));
const DIAGNOSTICS = !args.includes("--no-diagnostics");
const ROOT = "/home/dev/shop";

// ---------------------------------------------------------------- line diff

/** Lines with their terminators, as Rust's split_inclusive('\n'). */
function lines(text) {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** The hunks turning `a` into `b`: {oldStart, oldLines, newStart, newLines}. */
function hunks(aText, bText) {
  const a = lines(aText);
  const b = lines(bText);
  const out = [];
  const push = (as, ae, bs, be) => {
    if (as === ae && bs === be) return;
    const last = out[out.length - 1];
    if (last && last.oldStart + last.oldLines === as && last.newStart + last.newLines === bs) {
      last.oldLines += ae - as;
      last.newLines += be - bs;
    } else out.push({ oldStart: as, oldLines: ae - as, newStart: bs, newLines: be - bs });
  };
  const lcs = (as, ae, bs, be) => {
    const n = ae - as;
    const m = be - bs;
    const t = new Uint32Array((n + 1) * (m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        t[i * (m + 1) + j] = a[as + i] === b[bs + j] ? t[(i + 1) * (m + 1) + j + 1] + 1 : Math.max(t[(i + 1) * (m + 1) + j], t[i * (m + 1) + j + 1]);
    let i = 0;
    let j = 0;
    let ci = 0;
    let cj = 0;
    while (i < n && j < m) {
      if (a[as + i] === b[bs + j]) {
        push(as + ci, as + i, bs + cj, bs + j);
        i++;
        j++;
        ci = i;
        cj = j;
      } else if (t[(i + 1) * (m + 1) + j] >= t[i * (m + 1) + j + 1]) i++;
      else j++;
    }
    push(as + ci, ae, bs + cj, be);
  };
  const rec = (as, ae, bs, be) => {
    while (as < ae && bs < be && a[as] === b[bs]) as++, bs++;
    let tailA = ae;
    let tailB = be;
    while (tailA > as && tailB > bs && a[tailA - 1] === b[tailB - 1]) tailA--, tailB--;
    if (as === tailA || bs === tailB) return push(as, tailA, bs, tailB);
    // Lines unique on both sides anchor the diff (patience style).
    const count = new Map();
    for (let i = as; i < tailA; i++) {
      const c = count.get(a[i]) ?? { a: 0, b: 0, ai: i, bi: -1 };
      c.a++;
      c.ai = i;
      count.set(a[i], c);
    }
    for (let j = bs; j < tailB; j++) {
      const c = count.get(b[j]);
      if (c) {
        c.b++;
        c.bi = j;
      }
    }
    const pairs = [];
    for (const c of count.values()) if (c.a === 1 && c.b === 1) pairs.push([c.ai, c.bi]);
    pairs.sort((x, y) => x[0] - y[0]);
    // Longest increasing run of b indices.
    const tails = [];
    const prev = new Array(pairs.length).fill(-1);
    const tailIdx = [];
    pairs.forEach(([, bi], k) => {
      let lo = 0;
      let hi = tails.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (tails[mid] < bi) lo = mid + 1;
        else hi = mid;
      }
      tails[lo] = bi;
      tailIdx[lo] = k;
      prev[k] = lo > 0 ? tailIdx[lo - 1] : -1;
    });
    const anchors = [];
    for (let k = tailIdx[tails.length - 1] ?? -1; k >= 0; k = prev[k]) anchors.push(pairs[k]);
    anchors.reverse();
    if (!anchors.length) {
      if ((tailA - as) * (tailB - bs) <= 4_000_000) lcs(as, tailA, bs, tailB);
      else push(as, tailA, bs, tailB);
      return;
    }
    let pa = as;
    let pb = bs;
    for (const [ai, bi] of anchors) {
      rec(pa, ai, pb, bi);
      pa = ai + 1;
      pb = bi + 1;
    }
    rec(pa, tailA, pb, tailB);
  };
  rec(0, a.length, 0, b.length);
  return out;
}

/** `original` with the kept hunks taken from `working` (as the server's hunks::apply). */
function apply(original, working, hs, keep) {
  const old = lines(original);
  const neu = lines(working);
  let out = "";
  let at = 0;
  hs.forEach((h, i) => {
    out += old.slice(at, h.oldStart).join("");
    out += keep[i] ? neu.slice(h.newStart, h.newStart + h.newLines).join("") : old.slice(h.oldStart, h.oldStart + h.oldLines).join("");
    at = h.oldStart + h.oldLines;
  });
  return out + old.slice(at).join("");
}

function fingerprint(original, working, h) {
  const o = lines(original).slice(h.oldStart, h.oldStart + h.oldLines).join("");
  const n = lines(working).slice(h.newStart, h.newStart + h.newLines).join("");
  return createHash("sha1").update(o).update("\u0000\u00ff").update(n).digest("hex");
}

// ---------------------------------------------------------------- fake data

function rng(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SERVER_PY = `"""A small HTTP service for the shop's catalogue."""

import json
import logging
from http.server import BaseHTTPRequestHandler, HTTPServer

from .models import Catalogue, Item

log = logging.getLogger(__name__)

CATALOGUE = Catalogue.load("catalogue.json")


class Handler(BaseHTTPRequestHandler):
    """Answers GET /items and GET /items/<id>."""

    def do_GET(self):
        if self.path == "/items":
            self.reply(200, [item.to_dict() for item in CATALOGUE.items])
        elif self.path.startswith("/items/"):
            item_id = self.path[len("/items/"):]
            item = CATALOGUE.find(item_id)
            if item is None:
                self.reply(404, {"error": "no such item"})
            else:
                self.reply(200, item.to_dict())
        else:
            self.reply(404, {"error": "not found"})

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        log.info(fmt, *args)


def main(port=8080):
    logging.basicConfig(level=logging.INFO)
    server = HTTPServer(("127.0.0.1", port), Handler)
    log.info("listening on %d", port)
    server.serve_forever()


if __name__ == "__main__":
    main()`;

const SERVER_PY_NEW = `"""A small HTTP service for the shop's catalogue."""

import json
import logging
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .models import Catalogue, Item

log = logging.getLogger(__name__)

CATALOGUE = Catalogue.load("catalogue.json")


class Handler(BaseHTTPRequestHandler):
    """Answers GET /items and GET /items/<id>."""

    def do_GET(self):
        if self.path == "/items":
            self.reply(HTTPStatus.OK, [item.to_dict() for item in CATALOGUE.items])
        elif self.path.startswith("/items/"):
            item_id = self.path[len("/items/"):]
            item = CATALOGUE.find(item_id)
            if item is None:
                self.reply(HTTPStatus.NOT_FOUND, {"error": f"no item {item_id!r}"})
            else:
                self.reply(HTTPStatus.OK, item.to_dict())
        else:
            self.reply(HTTPStatus.NOT_FOUND, {"error": "not found"})

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        log.info(fmt, *args)


def main(port=8080):
    logging.basicConfig(level=logging.INFO)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    log.info("listening on http://127.0.0.1:%d", port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        log.info("stopped")


if __name__ == "__main__":
    main(port=int(__import__("os").environ.get("PORT", "8080")))
`;

/** A 20,000-line Rust file and a proposal changing about 2,000 of its lines in ~200 hunks. */
function bigRust() {
  const r = rng(42);
  const out = [];
  const neu = [];
  out.push("//! Price tables, generated from catalogue.json. Do not edit by hand.\n", "\n", "use std::collections::HashMap;\n", "\n");
  neu.push(...out);
  let block = 0;
  while (out.length < 20_000) {
    const name = `table_${String(block).padStart(4, "0")}`;
    const head = [`/// Prices for group ${block}.\n`, `pub fn ${name}() -> HashMap<&'static str, u32> {\n`, `    let mut m = HashMap::new();\n`];
    out.push(...head);
    neu.push(...head);
    const body = 88;
    const changeAt = 10 + Math.floor(r() * 60);
    const changeLen = 8 + Math.floor(r() * 5);
    const kind = block % 7;
    for (let i = 0; i < body; i++) {
      const key = `item_${block}_${i}`;
      const price = Math.floor(r() * 100000);
      const line = `    m.insert("${key}", ${price}); // ${key.length + price % 97}\n`;
      out.push(line);
      if (i >= changeAt && i < changeAt + changeLen) {
        if (kind === 3 && i === changeAt) continue; // a deletion
        neu.push(`    m.insert("${key}", ${Math.round(price * 1.07)}); // repriced +7%\n`);
        if (kind === 5 && i === changeAt) neu.push(`    m.insert("${key}_bundle", ${price * 2}); // new bundle\n`);
      } else neu.push(line);
    }
    const tail = ["    m\n", "}\n", "\n"];
    out.push(...tail);
    neu.push(...tail);
    block++;
  }
  const a = out.slice(0, 20_000);
  const b = neu.slice(0, neu.length - (out.length - 20_000));
  return [a.join(""), b.join("")];
}

const GUIDE_MD = `# Contributor guide

Welcome! This guide explains how the shop is laid out and how to work on it.

## Layout

- \`src/app/\`: the Python HTTP service (\`server.py\`, \`models.py\`)
- \`src/engine/\`: the Rust pricing engine and its generated tables
- \`web/\`: the storefront (TypeScript, no framework)

## Running it

\`\`\`sh
make dev        # builds the engine, starts the service on :8080
make test       # every test, Python and Rust
\`\`\`

## Style

Small commits with honest messages. Tests with every change.
`;

const FILES = new Map();
const addFile = (rel, content) => FILES.set(`${ROOT}/${rel}`, content);
const [BIG_OLD, BIG_NEW] = bigRust();
addFile("README.md", "# Shop\n\nA small shop: a Python service, a Rust pricing engine, a TypeScript storefront.\n\nSee docs/ for more.\n");
addFile("Makefile", "dev:\n\tcargo build --release\n\tpython -m src.app.server\n\ntest:\n\tcargo test\n\tpytest\n");
addFile("Cargo.toml", '[package]\nname = "shop-engine"\nversion = "0.3.1"\nedition = "2021"\n\n[dependencies]\nserde = { version = "1", features = ["derive"] }\n');
addFile("src/app/__init__.py", "");
addFile("src/app/server.py", SERVER_PY);
addFile(
  "src/app/models.py",
  'from dataclasses import dataclass, asdict\nimport json\n\n\n@dataclass\nclass Item:\n    id: str\n    name: str\n    price_cents: int\n\n    def to_dict(self):\n        return asdict(self)\n\n\nclass Catalogue:\n    def __init__(self, items):\n        self.items = items\n\n    @classmethod\n    def load(cls, path):\n        with open(path) as f:\n            return cls([Item(**x) for x in json.load(f)])\n\n    def find(self, item_id):\n        return next((i for i in self.items if i.id == item_id), None)\n',
);
addFile("src/engine/lib.rs", "//! The pricing engine.\n\nmod tables;\n\n/// The price of `item` in cents, if it is listed.\npub fn price(item: &str) -> Option<u32> {\n    tables::all().get(item).copied()\n}\n");
addFile("src/engine/tables.rs", BIG_OLD);
addFile("src/legacy/names_latin1.txt", { binary: 2048 });
addFile("web/app.ts", 'const list = document.querySelector<HTMLUListElement>("#items")!;\n\nasync function load(): Promise<void> {\n  const items: { id: string; name: string }[] = await (await fetch("/items")).json();\n  for (const it of items) {\n    const li = document.createElement("li");\n    li.textContent = `${it.name} (${it.id})`;\n    list.append(li);\n  }\n}\n\nvoid load();\n');
addFile("web/index.html", '<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Shop</title><link rel="stylesheet" href="style.css"></head>\n<body>\n  <h1>Shop</h1>\n  <ul id="items"></ul>\n  <script type="module" src="app.js"></script>\n</body>\n</html>\n');
addFile("web/style.css", "body {\n  font-family: system-ui, sans-serif;\n  margin: 2rem auto;\n  max-width: 40rem;\n}\n\n#items li {\n  padding: 0.25rem 0;\n}\n");
addFile("web/logo.png", { binary: 18_431 });
addFile("scripts/build.bat", "@echo off\r\nrem Builds the engine on Windows.\r\ncargo build --release\r\nif errorlevel 1 exit /b 1\r\necho done\r\n");
addFile(".github/workflows/ci.yml", "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: make test\n");
addFile("docs/architecture.md", "# Architecture\n\nThe service asks the engine for prices through a small FFI layer.\n");
for (let i = 0; i < 10_000; i++) {
  addFile(`generated/fixture_${String(i).padStart(5, "0")}.json`, `{"id": ${i}, "name": "fixture ${i}"}\n`);
}

function listDir(dir) {
  const names = new Map();
  const prefix = dir.endsWith("/") ? dir : dir + "/";
  for (const p of FILES.keys()) {
    if (!p.startsWith(prefix)) continue;
    const rest = p.slice(prefix.length);
    const slash = rest.indexOf("/");
    if (slash >= 0) names.set(rest.slice(0, slash), "dir");
    else names.set(rest, "file");
  }
  if (!names.size && !FILES.has(dir)) return null;
  return [...names]
    .map(([name, kind]) => ({ name, kind, path: prefix + name }))
    .sort((x, y) => (x.kind === y.kind ? x.name.localeCompare(y.name) : x.kind === "dir" ? -1 : 1));
}

function languageOf(path) {
  const ext = (path.split("/").pop() ?? "").split(".").pop()?.toLowerCase() ?? "";
  const map = { rs: "rust", py: "python", ts: "typescript", js: "javascript", json: "json", md: "markdown", html: "html", css: "css", go: "go", java: "java", yaml: "yaml", yml: "yaml", toml: "toml", sh: "shell" };
  return map[ext] ?? "text";
}

// ---------------------------------------------------------------- state

const streams = new Set();
const SESSION = { id: 1, name: "claude-code", version: "2.1.42", pid: 48213, connectedAt: Date.now() - 7 * 60_000 };
let sessions = [SESSION];
const activity = [];
const reviews = new Map();
let nextReviewId = 1;
let tabs = { open: [], active: null };
const requests = [];

function logActivity(entry) {
  const e = { at: Date.now(), ...entry };
  activity.push(e);
  while (activity.length > 200) activity.shift();
  publish({ type: "activity", entry: e });
}

class Review {
  constructor(path, original, proposed, isNewFile, createdAt) {
    this.id = nextReviewId++;
    this.path = path;
    this.tabName = `✻ [Claude Code] ${path.split("/").pop()} (${randomBytes(3).toString("hex")}) ⧉`;
    this.isNewFile = isNewFile;
    this.original = original;
    this.originalUnreadable = original === null && !isNewFile;
    this.proposed = proposed;
    this.working = proposed;
    this.version = 1;
    this.accepted = new Set();
    this.session = { id: SESSION.id, name: SESSION.name };
    this.createdAt = createdAt;
    this.status = "pending";
    this.rehunk();
  }
  base() {
    return this.original ?? "";
  }
  rehunk() {
    if (this.originalUnreadable) {
      this.hunks = [];
      return;
    }
    const found = hunks(this.base(), this.working);
    const prints = found.map((h) => fingerprint(this.base(), this.working, h));
    this.accepted = new Set([...this.accepted].filter((p) => prints.includes(p)));
    this.hunks = found.map((h, i) => ({ ...h, accepted: this.accepted.has(prints[i]) }));
  }
  check(version) {
    if (this.status !== "pending") return [400, `this review is already ${this.status}`];
    if (version !== this.version) return [409, `the review changed since version ${version} (it is at ${this.version}); reload it`];
    return null;
  }
  finishIfDecided() {
    if (this.hunks.some((h) => !h.accepted)) return;
    this.status = this.hunks.length === 0 && !this.isNewFile ? "rejected" : "accepted";
  }
  toJSON() {
    const { accepted, ...rest } = this;
    return rest;
  }
}

function addReview(kind) {
  const now = Date.now();
  let r;
  switch (kind) {
    case "big":
      r = new Review(`${ROOT}/src/engine/tables.rs`, BIG_OLD, BIG_NEW, false, now);
      break;
    case "new":
      r = new Review(`${ROOT}/docs/GUIDE.md`, null, GUIDE_MD, true, now);
      break;
    case "unreadable":
      r = new Review(`${ROOT}/src/legacy/names_latin1.txt`, null, "Ana\nJosé\nZoë\nBjörk\n", false, now);
      break;
    case "crlf":
      r = new Review(`${ROOT}/scripts/build.bat`, FILES.get(`${ROOT}/scripts/build.bat`), "@echo off\r\nrem Builds the engine on Windows.\r\ncargo build --release --locked\r\nif errorlevel 1 exit /b 1\r\necho built\r\n", false, now);
      break;
    default:
      r = new Review(`${ROOT}/src/app/server.py`, SERVER_PY, SERVER_PY_NEW, false, now);
  }
  reviews.set(r.id, r);
  publish({ type: "review", review: r });
  return r;
}

/** Claude closes a decided review a moment later, as Claude Code does. */
function closeLater(r) {
  if (r.status === "pending") return;
  setTimeout(() => {
    if (!reviews.has(r.id)) return;
    const reason = r.status === "dismissed" ? "claudeClosed" : "decided";
    const what = { accepted: "accepted and saved", rejected: "rejected", dismissed: "left to the terminal prompt" }[r.status];
    closeReview(r, reason, `${r.path}: ${what}`);
    logActivity({ kind: "toolCall", session: SESSION.id, tool: "openDiff", isError: false, summary: r.status === "accepted" ? "FILE_SAVED" : r.status === "rejected" ? "DIFF_REJECTED" : "TAB_CLOSED", elapsedMs: Date.now() - r.createdAt });
  }, 1500);
}

function closeReview(r, reason, note) {
  reviews.delete(r.id);
  publish({ type: "closed", id: r.id, reason, note });
  logActivity({ kind: "closed", review: r.id, path: r.path, reason, note });
}

const DIAGS = [
  {
    path: `${ROOT}/src/app/server.py`,
    diagnostics: [
      { message: '"Item" is imported but never used', severity: "Warning", range: { start: { line: 6, character: 32 }, end: { line: 6, character: 36 } }, source: "ruff", code: "F401" },
      { message: "Function is missing a return type annotation", severity: "Hint", range: { start: { line: 44, character: 4 }, end: { line: 44, character: 8 } }, source: "pyright" },
    ],
  },
  {
    path: `${ROOT}/src/engine/lib.rs`,
    diagnostics: [
      { message: "cannot find function `all` in module `tables`", severity: "Error", range: { start: { line: 6, character: 12 }, end: { line: 6, character: 15 } }, source: "rustc", code: "E0425" },
      { message: "unused import: `HashMap`", severity: "Information", range: { start: { line: 2, character: 4 }, end: { line: 2, character: 11 } }, source: "rust-analyzer" },
    ],
  },
  {
    path: `${ROOT}/web/app.ts`,
    diagnostics: [{ message: "Forbidden non-null assertion.", severity: "Warning", range: { start: { line: 0, character: 13 }, end: { line: 0, character: 62 } }, source: "eslint" }],
  },
];

function snapshot() {
  return {
    type: "snapshot",
    server: { version: "0.1.0-mock", ideName: "ccbridge", workspaceFolders: [ROOT], idePort: 53117 },
    sessions,
    reviews: [...reviews.values()].sort((a, b) => b.id - a.id),
    activity,
    tabs,
    diagnostics: DIAGNOSTICS ? DIAGS : [],
    diagnosticsSource: DIAGNOSTICS,
  };
}

// Start: a session, some history, four reviews (oldest first).
logActivity({ kind: "connected", session: SESSION });
logActivity({ kind: "toolCall", session: 1, tool: "getWorkspaceFolders", isError: false, summary: "1 folder", elapsedMs: 2 });
logActivity({ kind: "toolCall", session: 1, tool: "getDiagnostics", isError: false, summary: "3 files", elapsedMs: 5 });
logActivity({ kind: "toolCall", session: 1, tool: "openFile", isError: true, summary: "no such file: src/app/views.py", elapsedMs: 1 });
for (const kind of ["unreadable", "big", "new", "small"]) addReview(kind);
for (const r of reviews.values()) r.createdAt -= (5 - r.id) * 60_000;

// ---------------------------------------------------------------- auth

let token = opt("--token", randomBytes(32).toString("hex"));
const sessions = new Set();
function authorized(req) {
  const m = /^bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "");
  return m !== null && sessions.has(m[1]);
}

// ---------------------------------------------------------------- HTTP

function publish(event) {
  const text = `data: ${JSON.stringify(event)}\n\n`;
  for (const res of streams) res.write(text);
}

function send(res, status, body, headers = {}) {
  const data = body === null ? "" : typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  res.writeHead(status, {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    ...(typeof body === "object" && body !== null && !Buffer.isBuffer(body) ? { "Content-Type": "application/json" } : {}),
    ...headers,
  });
  res.end(data);
}
const error = (res, status, msg, extra = {}) => send(res, status, { error: msg, ...extra });

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : {};
}

function reviewAnswer(res, r, status, msg) {
  if (status) return error(res, status, msg, { review: r });
  publish({ type: "review", review: r });
  closeLater(r);
  return send(res, 200, r);
}

async function api(req, res, url) {
  const path = url.pathname;
  const body = req.method === "POST" ? await readJson(req) : null;
  if (req.method === "POST") {
    requests.push({ at: Date.now(), path, body: path.endsWith("/text") ? { ...body, text: `<${body.text?.length ?? 0} chars>`, textHead: body.text?.slice(0, 200) } : body });
  }
  if (path === "/api/session" && req.method === "POST") {
    if (body.token && body.token === token) {
      token = randomBytes(32).toString("hex"); // one use only
      const v = randomBytes(32).toString("hex");
      sessions.add(v);
      return send(res, 200, { session: v });
    }
    await new Promise((r) => setTimeout(r, 300));
    return error(res, 401, "this link is not valid (it works once): open the newest link ccbridge printed");
  }
  if (!authorized(req)) return error(res, 401, "this page is not signed in: open the link ccbridge printed (it works once)");
  if (path === "/api/link" && req.method === "POST") {
    token = randomBytes(32).toString("hex");
    return send(res, 200, { url: `http://127.0.0.1:${PORT}/#token=${token}` });
  }
  if (path === "/api/state") return send(res, 200, snapshot());
  if (path === "/api/events") {
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" });
    res.write(`data: ${JSON.stringify(snapshot())}\n\n`);
    streams.add(res);
    const keep = setInterval(() => res.write(": keep-alive\n\n"), 15_000);
    req.on("close", () => {
      clearInterval(keep);
      streams.delete(res);
    });
    return;
  }
  let m;
  if ((m = /^\/api\/reviews\/(\d+)\/(text|accept|reject|dismiss|hunks\/(\d+))$/.exec(path)) && req.method === "POST") {
    const r = reviews.get(Number(m[1]));
    if (!r) return error(res, 404, `there is no review ${m[1]}`);
    // A little latency, as over a real server with a real diff.
    await new Promise((ok) => setTimeout(ok, 40));
    const action = m[2];
    if (action === "text") {
      const bad = r.check(body.version);
      if (bad) return reviewAnswer(res, r, ...bad);
      r.working = String(body.text);
      r.version++;
      r.rehunk();
      return reviewAnswer(res, r);
    }
    if (action === "accept") {
      const bad = r.check(body.version);
      if (bad) return reviewAnswer(res, r, ...bad);
      if (typeof body.text === "string") {
        r.working = body.text;
        r.rehunk();
      }
      r.status = "accepted";
      r.version++;
      return reviewAnswer(res, r);
    }
    if (action === "reject" || action === "dismiss") {
      if (r.status !== "pending") return reviewAnswer(res, r, 400, `this review is already ${r.status}`);
      r.status = action === "reject" ? "rejected" : "dismissed";
      r.version++;
      return reviewAnswer(res, r);
    }
    const index = Number(m[3]);
    const bad = r.check(body.version);
    if (bad) return reviewAnswer(res, r, ...bad);
    if (r.originalUnreadable) return reviewAnswer(res, r, 400, "the original cannot be displayed, so only the whole file can be accepted or rejected");
    const h = r.hunks[index];
    if (!h) return reviewAnswer(res, r, 400, `there is no hunk ${index}`);
    if (body.decision === "accept") r.accepted.add(fingerprint(r.base(), r.working, h));
    else r.working = apply(r.base(), r.working, r.hunks, r.hunks.map((_, i) => i !== index));
    r.version++;
    r.rehunk();
    r.finishIfDecided();
    return reviewAnswer(res, r);
  }
  if (path === "/api/tree") {
    const p = url.searchParams.get("path");
    if (p === null) return send(res, 200, { path: null, entries: [{ name: "shop", kind: "dir", path: ROOT }], truncated: false });
    const entries = listDir(p);
    if (!entries) return error(res, 404, `${p}: not found`);
    return send(res, 200, { path: p, entries, truncated: false });
  }
  if (path === "/api/file") {
    const p = url.searchParams.get("path") ?? "";
    const f = FILES.get(p);
    if (f === undefined) return error(res, 404, `${p}: not found`);
    if (typeof f === "object") return send(res, 200, { path: p, kind: "binary", size: f.binary });
    return send(res, 200, { path: p, kind: "text", text: f, language: languageOf(p) });
  }
  if (path === "/api/selection" || path === "/api/mention") return send(res, 204, null);
  if (path === "/api/tabs") {
    tabs = { open: body.open ?? [], active: body.active ?? null };
    return send(res, 204, null);
  }
  if (path === "/api/diagnostics") return send(res, 200, { diagnostics: DIAGNOSTICS ? DIAGS : [], diagnosticsSource: DIAGNOSTICS });
  return error(res, 404, "no such API");
}

async function dev(req, res, url) {
  const body = req.method === "POST" ? await readJson(req) : {};
  switch (url.pathname) {
    case "/dev/requests":
      return send(res, 200, requests);
    case "/dev/requests/clear":
      requests.length = 0;
      return send(res, 204, null);
    case "/dev/review":
      return send(res, 200, addReview(body.kind ?? "small"));
    case "/dev/open":
      publish({ type: "open", path: body.path, line: body.line ?? null });
      return send(res, 204, null);
    case "/dev/sessions":
      if (body.connected) {
        sessions = [SESSION];
        logActivity({ kind: "connected", session: SESSION });
      } else {
        sessions = [];
        logActivity({ kind: "disconnected", session: SESSION.id });
      }
      publish({ type: "sessions", sessions });
      return send(res, 204, null);
    case "/dev/edit": {
      const r = reviews.get(Number(body.id));
      if (!r) return error(res, 404, "no such review");
      r.working = String(body.text);
      r.version++;
      r.rehunk();
      publish({ type: "review", review: r });
      return send(res, 200, r);
    }
    case "/dev/close": {
      const r = reviews.get(Number(body.id));
      if (!r) return error(res, 404, "no such review");
      closeReview(r, "newPrompt", `${r.path}: closed because a new prompt started`);
      return send(res, 204, null);
    }
    case "/dev/drop":
      for (const s of streams) s.destroy();
      streams.clear();
      return send(res, 204, null);
    case "/dev/revoke":
      sessions.clear();
      for (const s of streams) s.destroy();
      streams.clear();
      return send(res, 204, null);
  }
  return error(res, 404, "no such dev route");
}

const server = createServer(async (req, res) => {
  try {
    const host = req.headers.host ?? "";
    if (![`127.0.0.1:${PORT}`, `localhost:${PORT}`, `[::1]:${PORT}`].includes(host)) return error(res, 421, "this server answers only to its loopback address");
    const origin = req.headers.origin;
    if (origin && origin !== `http://${host}`) return error(res, 403, "cross-origin requests are refused");
    if (req.method !== "GET" && req.method !== "POST") return error(res, 405, "only GET and POST");
    const url = new URL(req.url ?? "/", `http://${host}`);
    if (req.method === "POST" && !/^application\/json\b/.test(req.headers["content-type"] ?? "")) return error(res, 415, "requests must be application/json");
    if (url.pathname.startsWith("/dev/")) return await dev(req, res, url);
    if (url.pathname.startsWith("/api/")) return await api(req, res, url);
    if (url.pathname === "/") {
      const nonce = randomBytes(16).toString("hex");
      const html = (await readFile(join(DIST, "index.html"), "utf8")).replaceAll("{{NONCE}}", nonce);
      return send(res, 200, html, {
        "Content-Type": "text/html; charset=utf-8",
        "Content-Security-Policy": `default-src 'none'; script-src 'self'; style-src 'self' 'nonce-${nonce}'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      });
    }
    if (url.pathname === "/assets/app.js") return send(res, 200, await readFile(join(DIST, "app.js")), { "Content-Type": "text/javascript; charset=utf-8" });
    if (url.pathname === "/assets/app.css") return send(res, 200, await readFile(join(DIST, "app.css")), { "Content-Type": "text/css; charset=utf-8" });
    return error(res, 404, "not found");
  } catch (e) {
    if (!res.headersSent) error(res, 500, String(e));
  }
});

server.listen(PORT, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${PORT}/#token=${token}`);
  console.error(`mock ccbridge UI server (dev tool) on 127.0.0.1:${PORT}, serving ${DIST}`);
});
