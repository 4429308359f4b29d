// Builds dist/esm (ES modules) and dist/cjs (CommonJS) from src/, each with
// its .d.ts files. Two tsc runs and two one-line package.json files, which
// tell Node (and TypeScript) which module system each folder holds: no
// bundler needed.
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");

rmSync(join(root, "dist"), { recursive: true, force: true });
for (const [config, dir, type] of [
  ["tsconfig.json", "esm", "module"],
  ["tsconfig.cjs.json", "cjs", "commonjs"],
]) {
  const r = spawnSync(process.execPath, [tsc, "-p", join(root, config)], { stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`build: tsc -p ${config} failed`);
    process.exit(r.status ?? 1);
  }
  mkdirSync(join(root, "dist", dir), { recursive: true });
  writeFileSync(join(root, "dist", dir, "package.json"), JSON.stringify({ type }) + "\n");
}
console.log("build: dist/esm and dist/cjs written");
