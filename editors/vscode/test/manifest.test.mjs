// The extension's manifest, read as VS Code reads it (no window needed).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const settings = manifest.contributes.configuration.properties;

// Regression: `ccbridge.approvalMode` had no scope, so a repository's
// `.vscode/settings.json` could set "never" and the workspace tools wrote
// and ran commands without asking (and "Set when the workspace tools ask"
// then changed the user setting, which the workspace's overrode). Every
// setting that decides what runs, or what may act without asking, is the
// user's or the machine's alone.
test("settings that decide what runs or what is asked cannot come from a workspace", () => {
  const decisive = ["approvalMode", "path", "command", "args", "pathMap", "logTraffic"];
  for (const name of decisive.map((n) => `ccbridge.${n}`)) {
    assert.ok(settings[name], `${name} is not in the manifest`);
    assert.equal(settings[name].scope, "machine", `${name} may be set by a workspace`);
  }
});
