// The VS Code extension's tests run in a real VS Code: code-server (the
// workbench, its extension host, the built-in TypeScript server) on
// 127.0.0.1 with its own user-data and extensions folders and a private
// HOME, the built .vsix installed, driven by Debian's Chromium through
// playwright-core. Claude's side is the Node client's scripted Claude Code
// on the sidecar's WebSocket (lock file token, subprotocol `mcp`,
// `ide_connected`), and the workspace tools are called over their MCP HTTP
// endpoint.
//
// Every wait is bounded; none is a fixed sleep. A missing program is a
// failure that says what to install, never a skip.
//
// env: CCBRIDGE_BIN (the sidecar), CCBRIDGE_CODE_SERVER (code-server's
// launcher), CCBRIDGE_VSIX (the extension), CCBRIDGE_E2E_MODULES
// (node_modules with playwright-core), CHROMIUM (default /usr/bin/chromium),
// CCBRIDGE_VSCODE_ARTIFACTS (screenshots and logs; default a temporary folder).
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { accessSync, constants, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClaude, ToolsClient } from "../../node/test/helpers.mjs";

/** Bound on one step that involves the workbench. */
export const STEP = 30_000;

function required(name, what) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: ${what} (scripts/vscode-test sets it)`);
  try {
    accessSync(v, constants.R_OK);
  } catch {
    throw new Error(`${name}=${v} does not exist: ${what} (scripts/vscode-test installs and builds it)`);
  }
  return v;
}

export const env = {
  bin: () => required("CCBRIDGE_BIN", "the ccbridge binary (cargo build -p ccbridge)"),
  codeServer: () => required("CCBRIDGE_CODE_SERVER", "code-server's launcher (tests/vscode/package.json)"),
  vsix: () => required("CCBRIDGE_VSIX", "the extension's .vsix (editors/vscode: npm run package)"),
  modules: () => required("CCBRIDGE_E2E_MODULES", "node_modules holding playwright-core (tests/e2e/package.json)"),
  chromium: () => {
    const p = process.env.CHROMIUM || "/usr/bin/chromium";
    if (!existsSync(p)) throw new Error(`Chromium is missing at ${p}: apt-get install chromium (scripts/test does)`);
    return p;
  },
};

/** Where screenshots and logs go; kept after the run. */
export const artifacts = (() => {
  const dir = process.env.CCBRIDGE_VSCODE_ARTIFACTS || mkdtempSync(join(tmpdir(), "ccbridge-vscode-artifacts-"));
  mkdirSync(dir, { recursive: true });
  return dir;
})();

/** Polls `check` every 50 ms until it returns something truthy; fails with `what` after `ms`. */
export async function eventually(what, check, ms = STEP) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${last.message})` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A promise with a bound. */
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

async function freePort() {
  const srv = createServer();
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const { port } = srv.address();
  srv.close();
  await once(srv, "close");
  return port;
}

/**
 * A sandbox (HOME, user data, extensions, a workspace folder with `files`)
 * and code-server serving it, the extension installed.
 */
export class CodeServer {
  /**
   * `folder(cs)`, when given, makes the folder the window opens (default:
   * the workspace), after the files are written; `settings` may be a
   * function of the sandbox too.
   */
  static async start({ files = {}, settings = {}, programs = {}, folder } = {}) {
    const root = mkdtempSync(join(tmpdir(), "ccbridge-vscode-"));
    const cs = new CodeServer(root);
    for (const d of [cs.home, cs.userData, cs.extensions, cs.ws, cs.bin, join(cs.userData, "User")]) mkdirSync(d, { recursive: true });
    // Programs in ~/bin, which the private HOME's shell profile puts on PATH
    // as a user's does: VS Code takes the extension host's and the
    // terminals' environment from a login shell, not from its own process.
    for (const [name, script] of Object.entries(programs)) writeFileSync(join(cs.bin, name), script, { mode: 0o755 });
    for (const profile of [".profile", ".bashrc"]) writeFileSync(join(cs.home, profile), 'PATH="$HOME/bin:$PATH"\n');
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(join(cs.ws, name, ".."), { recursive: true });
      writeFileSync(join(cs.ws, name), text);
    }
    cs.opened = folder ? folder(cs) : cs.ws;
    const settingsJson = JSON.stringify(
        {
          "ccbridge.path": env.bin(),
          "ccbridge.logLevel": "debug",
          "ccbridge.logTraffic": cs.trafficLog,
          "ccbridge.diagnosticDelay": 100,
          "workbench.startupEditor": "none",
          "workbench.tips.enabled": false,
          "workbench.enableExperiments": false,
          "security.workspace.trust.enabled": false,
          "telemetry.telemetryLevel": "off",
          "extensions.autoUpdate": false,
          "extensions.autoCheckUpdates": false,
          "update.mode": "none",
          "editor.codeLens": true,
          "diffEditor.renderSideBySide": true,
          "diffEditor.hideUnchangedRegions.enabled": false,
          "files.autoSave": "off",
          "git.enabled": false,
          // Terminal text in the page's DOM, where the test reads it.
          "terminal.integrated.gpuAcceleration": "off",
          "chat.disableAIFeatures": true,
          "workbench.secondarySideBar.defaultVisibility": "hidden",
          // A function of the sandbox, for settings that name its folders.
          ...(typeof settings === "function" ? settings(cs) : settings),
        },
        null,
        2,
      );
    // User settings, and the machine's (where a remote window, as
    // code-server's, reads machine-scoped settings such as ccbridge.path).
    for (const dir of ["User", "Machine"]) {
      mkdirSync(join(cs.userData, dir), { recursive: true });
      writeFileSync(join(cs.userData, dir, "settings.json"), settingsJson);
    }
    const base = cs.baseEnv();
    const install = spawnSync(
      env.codeServer(),
      ["--user-data-dir", cs.userData, "--extensions-dir", cs.extensions, "--install-extension", env.vsix()],
      { env: base, encoding: "utf8", timeout: 120_000 },
    );
    if (install.status !== 0) {
      throw new Error(`code-server --install-extension failed (${install.status}):\n${install.stdout}\n${install.stderr}`);
    }
    cs.port = await freePort();
    cs.child = spawn(
      env.codeServer(),
      [
        "--bind-addr",
        `127.0.0.1:${cs.port}`,
        "--auth",
        "none",
        "--user-data-dir",
        cs.userData,
        "--extensions-dir",
        cs.extensions,
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--disable-getting-started-override",
        cs.opened,
      ],
      { env: base, stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    cs.log = "";
    for (const s of [cs.child.stdout, cs.child.stderr]) s.on("data", (d) => (cs.log += d));
    cs.exited = once(cs.child, "exit");
    await eventually(
      "code-server to listen",
      async () => {
        const r = await fetch(`http://127.0.0.1:${cs.port}/healthz`).catch(() => undefined);
        return r?.ok;
      },
      60_000,
    ).catch((e) => {
      throw new Error(`${e.message}\ncode-server's output:\n${cs.log}`);
    });
    return cs;
  }

  constructor(root) {
    this.root = root;
    this.home = join(root, "home");
    this.userData = join(root, "user-data");
    this.extensions = join(root, "extensions");
    this.ws = join(root, "workspace");
    this.trafficLog = join(root, "traffic.jsonl");
    this.bin = join(this.home, "bin");
    this.lockDir = join(this.home, ".claude", "ide");
  }

  baseEnv() {
    const e = { ...process.env, HOME: this.home, XDG_CONFIG_HOME: join(this.home, ".config"), XDG_DATA_HOME: join(this.home, ".local/share") };
    // The lock file goes to the test's private ~/.claude/ide.
    delete e.CLAUDE_CONFIG_DIR;
    delete e.CLAUDE_CODE_SSE_PORT;
    delete e.VSCODE_IPC_HOOK_CLI;
    // The binary comes from the ccbridge.path setting, as a user gives it.
    delete e.CCBRIDGE_BIN;
    return e;
  }

  url() {
    return `http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(this.opened ?? this.ws)}`;
  }

  lockFiles() {
    try {
      return readdirSync(this.lockDir).filter((f) => f.endsWith(".lock")).map((f) => join(this.lockDir, f));
    } catch {
      return [];
    }
  }

  /** The editor → ccbridge messages of `method` in the traffic log. */
  editorMessages(method) {
    let text = "";
    try {
      text = readFileSync(this.trafficLog, "utf8");
    } catch {
      return [];
    }
    return text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((m) => m.peer === "editor" && m.dir === "in" && m.msg?.method === method)
      .map((m) => m.msg);
  }

  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      try {
        process.kill(-this.child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await within("code-server to exit", this.exited, 15_000).catch(() => {
        try {
          process.kill(-this.child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      });
    }
  }

  cleanup() {
    try {
      copyFileSync(this.trafficLog, join(artifacts, "traffic.jsonl"));
    } catch {
      // no traffic logged
    }
    if (process.env.CCBRIDGE_KEEP_ARTIFACTS) return;
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Chromium on the workbench page. */
export async function openWorkbench(cs) {
  const require = createRequire(join(env.modules(), "noop.js"));
  const { chromium } = require("playwright-core");
  const browser = await chromium.launch({
    executablePath: env.chromium(),
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1500, height: 950 } });
  const page = await context.newPage();
  page.setDefaultTimeout(STEP);
  await page.goto(cs.url(), { timeout: 60_000 });
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  return { browser, page };
}

/** Saves a screenshot of the page into the artifacts folder. */
/**
 * A test file's teardown: the last screenshot (`<prefix>zz-last`), the
 * browser, code-server (its output shown when a test failed) and the
 * sandbox. Either may be missing when `before` failed.
 */
export async function tearDown(wb, cs, prefix = "") {
  if (wb) {
    await screenshot(wb.page, `${prefix}zz-last`);
    await wb.browser.close().catch(() => undefined);
  }
  if (cs) {
    await cs.stop();
    if (process.exitCode) console.log(`code-server's output:\n${cs.log.slice(-4000)}`);
    cs.cleanup();
  }
  console.log(`screenshots: ${artifacts}`);
}

export async function screenshot(page, name) {
  const file = join(artifacts, `${name}.png`);
  await page.screenshot({ path: file }).catch(() => undefined);
  return file;
}

/**
 * Claude's side is the Node client's scripted Claude Code and tools client
 * (editors/node/test/helpers.mjs: the CLI's opening on the WebSocket, MCP over
 * HTTP for the workspace tools); these are the calls the tests make.
 */
export { FakeClaude, ToolsClient };

/** A tool call; resolves with the texts of its result. */
export async function call(claude, name, args, ms = STEP) {
  return FakeClaude.texts(await claude.callTool(name, args, ms));
}

/** `openDiff` as Claude sends it; settles when the person decides (bounded at 10 minutes). */
export function openDiff(claude, file, proposal, tabName) {
  return claude
    .callTool(
      "openDiff",
      { old_file_path: file, new_file_path: file, new_file_contents: proposal, tab_name: tabName },
      600_000,
    )
    .then(FakeClaude.texts);
}
