// Shared by the tests: the real ccbridge binary, a sandbox per test (its own
// CLAUDE_CONFIG_DIR and HOME, so nothing touches the real ~/.claude), and a
// scripted Claude Code that connects to the sidecar's WebSocket exactly as
// the CLI does (lock file token in `x-claude-code-ide-authorization`,
// subprotocol `mcp`, `initialize` as `claude-code`, `ide_connected`,
// `tools/list`).
//
// Every wait is bounded (STEP); nothing sleeps a fixed time.
import { once } from "node:events";
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { start } from "../dist/esm/index.js";

/** Bound on each single step. */
export const STEP = 15_000;

/**
 * The ccbridge binary under test, from CCBRIDGE_BIN. Missing is a failure
 * with the instruction, never a skip.
 */
export function ccbridgeBin() {
  const bin = process.env.CCBRIDGE_BIN;
  if (!bin) {
    throw new Error(
      "CCBRIDGE_BIN is not set. Build ccbridge (`cargo build -p ccbridge` in the repository root) and run " +
        "`CCBRIDGE_BIN=$PWD/target/debug/ccbridge editors/node/test.sh` (or `npm test` in editors/node).",
    );
  }
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    throw new Error(`CCBRIDGE_BIN=${bin} is not an executable file; build it with \`cargo build -p ccbridge\``);
  }
  return bin;
}

/** A fresh sandbox removed after the test: root, config dir, home, workspace. */
export function sandbox(t) {
  const root = mkdtempSync(join(tmpdir(), "ccbridge-node-"));
  const sb = {
    root,
    config: join(root, "config"),
    home: join(root, "home"),
    ws: join(root, "workspace"),
    log: join(root, "ccbridge.log"),
    env() {
      return { CLAUDE_CONFIG_DIR: sb.config, HOME: sb.home, TMPDIR: sb.home, CCBRIDGE_LOG: "debug" };
    },
    lockDir() {
      return join(sb.config, "ide");
    },
    logTail() {
      try {
        return readFileSync(sb.log, "utf8").split("\n").slice(-40).join("\n");
      } catch {
        return "(no log)";
      }
    },
  };
  for (const d of [sb.config, sb.home, sb.ws]) mkdirSync(d, { recursive: true });
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return sb;
}

/** `start()` on the sandbox with the real binary; stopped after the test. */
export async function startBridge(t, sb, options = {}) {
  const bridge = await start({
    workspaceFolders: [sb.ws],
    ideName: "NodeUnderTest",
    bin: ccbridgeBin(),
    env: sb.env(),
    logFile: sb.log,
    args: ["--selection-debounce-ms", "0"],
    ...options,
  });
  t.after(() => bridge.stop());
  return bridge;
}

/** Resolves with the args of the first `event` matching `pred`, or rejects after `ms`. */
export function waitEvent(emitter, event, pred = () => true, ms = STEP) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.off(event, on);
      reject(new Error(`no ${event} within ${ms} ms`));
    }, ms);
    function on(...args) {
      if (!pred(...args)) return;
      clearTimeout(timer);
      emitter.off(event, on);
      resolve(args);
    }
    emitter.on(event, on);
  });
}

/**
 * Polls `check` (every 20 ms) until it returns something truthy; rejects
 * with `what` after `ms`. For state with no event to wait on (a file being
 * removed, a process being gone).
 */
export async function eventually(what, check, ms = STEP) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Whether a process runs (signal 0 probes it). A zombie does not count: an
 * orphaned sidecar may wait a while for a container's init to reap it.
 */
export function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return e.code === "EPERM";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true;
  }
}

export function lockFileGone(path) {
  return eventually(`the lock file ${path} to be removed`, () => !existsSync(path));
}

/** A promise with a bound: rejects with `what` after `ms`. */
export async function within(what, promise, ms = STEP) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A scripted Claude Code CLI on the sidecar's WebSocket. `connect()` does
 * the CLI's whole opening, so the session is registered with ccbridge (and
 * `clientConnected` sent to the editor) by the time it resolves.
 */
export class FakeClaude {
  static async connect(lockFile, { name = "claude-code", pid = process.pid } = {}) {
    const lock = JSON.parse(readFileSync(lockFile, "utf8"));
    const port = Number(lockFile.match(/(\d+)\.lock$/)?.[1]);
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`, "mcp", {
      headers: { "x-claude-code-ide-authorization": lock.authToken },
      perMessageDeflate: false,
    });
    await within("the WebSocket handshake", once(ws, "open"));
    const c = new FakeClaude(ws);
    await c.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: { roots: { listChanged: true } },
      clientInfo: { name, title: "Claude Code", version: "2.1.328" },
    });
    c.notify("notifications/initialized", {});
    c.notify("ide_connected", { pid });
    c.tools = (await c.request("tools/list", {})).tools.map((t) => t.name);
    return c;
  }

  constructor(ws) {
    this.ws = ws;
    this.nextId = 0;
    this.pending = new Map();
    /** Notifications received, oldest first. */
    this.notifications = [];
    this.waiters = [];
    ws.on("message", (data) => this.onMessage(JSON.parse(String(data))));
    ws.on("close", () => {
      for (const { reject } of this.pending.values()) reject(new Error("the IDE server closed the connection"));
      this.pending.clear();
    });
  }

  onMessage(msg) {
    if (msg.method && msg.id !== undefined) {
      // The server's requests (ping, roots/list): answered as the CLI does.
      const result = msg.method === "roots/list" ? { roots: [] } : {};
      this.send({ jsonrpc: "2.0", id: msg.id, result });
    } else if (msg.method) {
      this.notifications.push(msg);
      for (const w of [...this.waiters]) w(msg);
    } else {
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (!p) return;
      if (msg.error) p.reject(Object.assign(new Error(msg.error.message), { rpc: msg.error }));
      else p.resolve(msg.result);
    }
  }

  send(msg) {
    this.ws.send(JSON.stringify(msg));
  }

  notify(method, params) {
    this.send({ jsonrpc: "2.0", method, params });
  }

  request(method, params, ms = STEP) {
    const id = this.nextId++;
    const answer = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.send({ jsonrpc: "2.0", id, method, params });
    return within(`the answer to ${method}`, answer, ms);
  }

  /** `tools/call`; resolves with the result (`content`, `isError`). */
  callTool(name, args, ms = STEP) {
    return this.request("tools/call", { name, arguments: args }, ms);
  }

  /** The texts of a tool result's content. */
  static texts(result) {
    return result.content.map((c) => c.text);
  }

  /** The first notification `method` (already received or coming) matching `pred`. */
  notification(method, pred = () => true, ms = STEP) {
    const match = (m) => m.method === method && pred(m.params);
    const seen = this.notifications.find(match);
    if (seen) return Promise.resolve(seen.params);
    return within(
      `a ${method} notification`,
      new Promise((resolve) => {
        const w = (m) => {
          if (!match(m)) return;
          this.waiters.splice(this.waiters.indexOf(w), 1);
          resolve(m.params);
        };
        this.waiters.push(w);
      }),
      ms,
    );
  }

  async close() {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    const closed = once(this.ws, "close");
    this.ws.close();
    await within("closing the WebSocket", closed).catch(() => this.ws.terminate());
  }
}

/**
 * An MCP session on the workspace tools' HTTP endpoint (`initialize` result
 * `tools`), as any MCP client would open it.
 */
export class ToolsClient {
  static async connect(tools) {
    const c = new ToolsClient(tools);
    const { headers } = await c.post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "node-test", version: "1" } },
    });
    c.session = headers.get("mcp-session-id");
    if (!c.session) throw new Error("the tools server opened no session");
    c.nextId = 2;
    return c;
  }

  constructor(tools) {
    this.tools = tools;
  }

  async post(body, ms = STEP) {
    const headers = {
      Authorization: `Bearer ${this.tools.token}`,
      Accept: "application/json, text/event-stream",
      "Content-Type": "application/json",
    };
    if (this.session) {
      headers["Mcp-Session-Id"] = this.session;
      headers["MCP-Protocol-Version"] = "2025-11-25";
    }
    const res = await fetch(this.tools.url, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(ms),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`tools server answered HTTP ${res.status}: ${text}`);
    // JSON, or one server-sent event whose data is the JSON.
    const data = text.split("\n").find((l) => l.startsWith("data:") && l.slice(5).trim().startsWith("{"));
    return { headers: res.headers, message: JSON.parse(data ? data.slice(5) : text) };
  }

  /** `tools/call`; resolves with the first text and whether it is an error. */
  async call(name, args, ms = STEP) {
    const { message } = await this.post(
      { jsonrpc: "2.0", id: this.nextId++, method: "tools/call", params: { name, arguments: args } },
      ms,
    );
    if (message.error) throw new Error(`${name}: ${JSON.stringify(message.error)}`);
    return { text: message.result.content[0]?.text ?? "", isError: message.result.isError === true };
  }
}
