// Builds the page into crates/webui/dist (or the folder given with
// --outdir): src/main.ts bundled and minified into one ES module, app.css
// and index.html copied as they are. Deterministic: the same inputs give
// byte-identical outputs (no timestamps, no absolute paths, no source map).
// scripts/build-ui runs this after `npm ci` and `tsc --noEmit`, then writes
// dist/BUILD-INPUTS.sha256.
import { build } from "esbuild";
import { copyFile, mkdir, readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf("--outdir");
const outdir = resolve(at >= 0 && args[at + 1] ? args[at + 1] : join(here, "..", "dist"));

// A notice naming every package the bundle may include, from the lockfile
// (sorted, so the banner does not depend on install order).
const lock = JSON.parse(await readFile(join(here, "package-lock.json"), "utf8"));
const bundled = Object.entries(lock.packages ?? {})
  .filter(([path, p]) => path.startsWith("node_modules/") && !p.dev)
  .map(([path, p]) => `${path.slice("node_modules/".length)}@${p.version}` + (p.license === "MIT" ? "" : ` (${p.license ?? "see its package"})`))
  .sort();
const banner = [
  "/*! ccbridge browser UI, built from crates/webui/ui by scripts/build-ui.",
  " * Includes " + bundled.join(", ") + ".",
  " * CodeMirror, Lezer and their helpers: Copyright (C) 2016-2024 by Marijn Haverbeke",
  " * <marijn@haverbeke.berlin> and others. MIT licence: Permission is hereby granted, free of",
  " * charge, to any person obtaining a copy of this software and associated documentation files",
  " * (the \"Software\"), to deal in the Software without restriction, including without limitation",
  " * the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of",
  " * the Software, and to permit persons to whom the Software is furnished to do so, subject to the",
  " * following conditions: The above copyright notice and this permission notice shall be included",
  " * in all copies or substantial portions of the Software. THE SOFTWARE IS PROVIDED \"AS IS\",",
  " * WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED. */",
].join("\n");

await mkdir(outdir, { recursive: true });
await build({
  absWorkingDir: here,
  entryPoints: ["src/main.ts"],
  outfile: join(outdir, "app.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  sourcemap: false,
  legalComments: "none",
  charset: "utf8",
  banner: { js: banner },
  logLevel: "warning",
});
await copyFile(join(here, "static", "app.css"), join(outdir, "app.css"));
await copyFile(join(here, "static", "index.html"), join(outdir, "index.html"));
