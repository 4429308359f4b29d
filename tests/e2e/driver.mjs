// A real browser for the Rust tests: headless Debian Chromium driven by
// playwright-core, one JSON command per line on stdin, one JSON answer per
// line on stdout. The Rust side (ccbridge_testkit::browser) keeps the
// scenario; this file only translates commands.
//
//   → {"id": 1, "op": "goto", "page": "main", "url": "http://..."}
//   ← {"id": 1, "ok": true, "value": null}       or {"id": 1, "ok": false, "error": "..."}
//
// Pages are named; "newPage" opens one (with a colour scheme and viewport).
// env: CCBRIDGE_E2E_MODULES (node_modules holding playwright-core),
//      CHROMIUM (the browser, default /usr/bin/chromium).
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const modules = process.env.CCBRIDGE_E2E_MODULES;
if (!modules) throw new Error('CCBRIDGE_E2E_MODULES is not set');
const require = createRequire(path.join(modules, 'noop.js'));
const { chromium } = require('playwright-core');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    // An attacker's site on the loopback interface, as a real browser sees it.
    '--host-resolver-rules=MAP evil.example 127.0.0.1',
  ],
  headless: true,
});
// One context: pages share cookies, as tabs of one browser do.
// The clipboard may be read and written, so tests can check what "Copy"
// put there.
const context = await browser.newContext({
  viewport: { width: 1400, height: 900 },
  permissions: ['clipboard-read', 'clipboard-write'],
});
const pages = new Map();
const consoleErrors = [];

function page(name) {
  const p = pages.get(name);
  if (!p) throw new Error(`no page named ${name}`);
  return p;
}

const ops = {
  async newPage({ page: name, colorScheme = 'light', width = 1400, height = 900 }) {
    const p = await context.newPage();
    await p.emulateMedia({ colorScheme });
    await p.setViewportSize({ width, height });
    p.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`${name}: ${m.text()}`); });
    p.on('pageerror', (e) => consoleErrors.push(`${name}: ${e.message}`));
    pages.set(name, p);
    return null;
  },
  // Answers the navigation's HTTP status.
  async goto({ page: name, url }) {
    const r = await page(name).goto(url, { timeout: 20000 });
    return r ? r.status() : null;
  },
  // Runs `source` in the page before its own scripts, on every navigation
  // (benchmarks use it to time a page load from its start).
  async initScript({ page: name, source }) { await page(name).addInitScript(source); return null; },
  async colorScheme({ page: name, colorScheme }) { await page(name).emulateMedia({ colorScheme }); return null; },
  async waitFor({ page: name, selector, state = 'visible', timeout = 15000 }) {
    await page(name).waitForSelector(selector, { state, timeout });
    return null;
  },
  async click({ page: name, selector, timeout = 15000 }) { await page(name).click(selector, { timeout }); return null; },
  async focus({ page: name, selector }) { await page(name).focus(selector); return null; },
  async press({ page: name, key }) { await page(name).keyboard.press(key); return null; },
  async type({ page: name, text }) { await page(name).keyboard.type(text); return null; },
  async text({ page: name, selector }) { return await page(name).textContent(selector, { timeout: 15000 }); },
  async count({ page: name, selector }) { return await page(name).locator(selector).count(); },
  async attribute({ page: name, selector, attribute }) {
    return await page(name).getAttribute(selector, attribute, { timeout: 15000 });
  },
  // `fn` is the source of a function; it is called in the page with `arg`.
  // Evaluated as an expression over the DevTools protocol, which the page's
  // CSP does not govern (no `eval` in the page, no bypassCSP context).
  async eval({ page: name, fn, arg = null }) {
    return await page(name).evaluate(call(fn, arg));
  },
  // Polls `fn` (as for eval) until it returns something truthy.
  async waitForFunction({ page: name, fn, arg = null, timeout = 15000 }) {
    const end = Date.now() + timeout;
    for (;;) {
      const v = await page(name).evaluate(call(fn, arg));
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${fn}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  },
  // Requests of `page` to URLs matching `pattern` (a glob) fail as if the
  // server could not be reached, until `passRequests` lifts it.
  async failRequests({ page: name, pattern }) {
    await page(name).route(pattern, (route) => route.abort('connectionrefused'));
    return null;
  },
  // The same, each refusal `ms` after the request was made: a request
  // still in flight while the page goes on.
  async failRequestsLate({ page: name, pattern, ms }) {
    await page(name).route(pattern, async (route) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      await route.abort('connectionrefused');
    });
    return null;
  },
  // Answers every request matching `pattern` itself, as a server would.
  async answerRequests({ page: name, pattern, status, body, contentType = 'text/plain' }) {
    await page(name).route(pattern, (route) => route.fulfill({ status, body, contentType }));
    return null;
  },
  async passRequests({ page: name, pattern }) { await page(name).unroute(pattern); return null; },
  async url({ page: name }) { return page(name).url(); },
  async screenshot({ page: name, path: file, fullPage = false }) {
    await page(name).screenshot({ path: file, fullPage });
    return null;
  },
  async close({ page: name }) { await page(name).close(); pages.delete(name); return null; },
  async consoleErrors() { return consoleErrors.splice(0); },
  // A Chromium performance trace of `page` into `path` (what DevTools'
  // Performance panel records, with JavaScript samples), for benchmarks.
  async traceStart({ page: name, path: file }) {
    await browser.startTracing(page(name), {
      path: file,
      categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute',
        'blink.user_timing', 'disabled-by-default-v8.cpu_profiler', 'latencyInfo'],
    });
    return null;
  },
  async traceStop() { await browser.stopTracing(); return null; },
};

function call(fn, arg) {
  return `(${fn})(${JSON.stringify(arg)})`;
}

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  let cmd;
  try { cmd = JSON.parse(line); } catch (e) { out({ id: null, ok: false, error: `bad command: ${e}` }); continue; }
  try {
    const f = ops[cmd.op];
    if (!f) throw new Error(`unknown op ${cmd.op}`);
    out({ id: cmd.id, ok: true, value: (await f(cmd)) ?? null });
  } catch (e) {
    out({ id: cmd.id, ok: false, error: String(e && e.message || e) });
  }
}
await browser.close();
