// The package as consumers load it: `require("@ccbridge/client")` gets the
// CommonJS build, `import` the ES module build, both through the
// package.json "exports" map, with their .d.ts files beside them.
const assert = require("node:assert/strict");
const { existsSync, mkdtempSync, mkdirSync, rmSync } = require("node:fs");
const { tmpdir } = require("node:os");
const { join } = require("node:path");
const { test } = require("node:test");

test("require() loads the CommonJS build, which runs the real sidecar", async (t) => {
  const cjs = require("@ccbridge/client");
  assert.equal(require.resolve("@ccbridge/client"), join(__dirname, "..", "dist", "cjs", "index.js"));
  assert.ok(existsSync(join(__dirname, "..", "dist", "cjs", "index.d.ts")));
  assert.equal(cjs.PROTOCOL_VERSION, 3);

  const root = mkdtempSync(join(tmpdir(), "ccbridge-node-cjs-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const ws = join(root, "ws");
  mkdirSync(ws);
  const bin = process.env.CCBRIDGE_BIN;
  assert.ok(bin, "CCBRIDGE_BIN is not set: build ccbridge (cargo build -p ccbridge) and point CCBRIDGE_BIN at it");
  const bridge = await cjs.start({
    workspaceFolders: [ws],
    ideName: "CommonJS",
    bin,
    env: { CLAUDE_CONFIG_DIR: join(root, "config"), HOME: root },
  });
  assert.ok(existsSync(bridge.lockFile));
  await bridge.stop();
  assert.equal(existsSync(bridge.lockFile), false);

  const err = await cjs.start({ workspaceFolders: [ws], ideName: "x", bin: join(root, "missing") }).catch((e) => e);
  assert.ok(err instanceof cjs.SpawnError && err instanceof cjs.BridgeError);
});

test("import() loads the ES module build", async () => {
  const esm = await import("@ccbridge/client");
  assert.equal(typeof esm.start, "function");
  assert.equal(esm.PROTOCOL_VERSION, 3);
  assert.ok(existsSync(join(__dirname, "..", "dist", "esm", "index.d.ts")));
});
