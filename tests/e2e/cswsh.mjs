// Cross-site WebSocket hijacking attempt from a real browser (security
// checklist item 8). Loads the attack page in headless Debian Chromium with
// evil.example mapped to 127.0.0.1 and prints what the page observed as JSON.
//
// usage: node cswsh.mjs <page-url>   (env CCBRIDGE_E2E_MODULES = node_modules dir)
import { createRequire } from 'node:module';
import path from 'node:path';

const modules = process.env.CCBRIDGE_E2E_MODULES;
if (!modules) throw new Error('CCBRIDGE_E2E_MODULES is not set');
const require = createRequire(path.join(modules, 'noop.js'));
const { chromium } = require('playwright-core');

const url = process.argv[2];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--host-resolver-rules=MAP evil.example 127.0.0.1',
  ],
  headless: true,
});
try {
  const page = await browser.newPage();
  await page.goto(url, { timeout: 20000 });
  const done = await page.waitForSelector('#done', { state: 'attached', timeout: 30000 });
  process.stdout.write(await done.textContent());
} finally {
  await browser.close();
}
