// Bundles the extension into dist/extension.js (CommonJS, for VS Code's
// extension host), @ccbridge/client and vscode-jsonrpc included: the .vsix
// carries one file and no node_modules. `vscode` is the host's.
//
// @ccbridge/client is ../node (a file: dependency), bundled from its built
// dist/: this script builds it first when its dist/ is missing or older
// than its sources.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const client = join(root, "..", "node");

function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`build: ${cmd} ${args.join(" ")} failed in ${cwd}`);
    process.exit(r.status ?? 1);
  }
}

const clientDist = join(client, "dist", "cjs", "index.js");
if (!existsSync(join(client, "node_modules", "vscode-jsonrpc"))) {
  const cache = process.env.CCBRIDGE_CACHE ? ["--cache", join(process.env.CCBRIDGE_CACHE, "npm")] : [];
  run("npm", ["ci", "--no-audit", "--no-fund", ...cache], client);
}
if (!existsSync(clientDist) || statSync(clientDist).mtimeMs < newest(join(client, "src"))) {
  run("npm", ["run", "build"], client);
}

await esbuild.build({
  entryPoints: [join(root, "src", "extension.ts")],
  bundle: true,
  outfile: join(root, "dist", "extension.js"),
  platform: "node",
  format: "cjs",
  target: "node20",
  external: ["vscode"],
  sourcemap: "linked",
  logLevel: "warning",
});
console.log("build: dist/extension.js written");
