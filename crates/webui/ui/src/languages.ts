// Syntax highlighting by file name: the same language ids the server's
// `language_of` gives (crates/webui/src/server.rs), plus JSX/TSX flags.

import type { Extension } from "@codemirror/state";
import { StreamLanguage } from "@codemirror/language";
import { javascript } from "@codemirror/lang-javascript";
import { python } from "@codemirror/lang-python";
import { rust } from "@codemirror/lang-rust";
import { json } from "@codemirror/lang-json";
import { markdown } from "@codemirror/lang-markdown";
import { html } from "@codemirror/lang-html";
import { css } from "@codemirror/lang-css";
import { go } from "@codemirror/lang-go";
import { java } from "@codemirror/lang-java";
import { cpp } from "@codemirror/lang-cpp";
import { yaml } from "@codemirror/lang-yaml";
import { toml } from "@codemirror/legacy-modes/mode/toml";
import { shell } from "@codemirror/legacy-modes/mode/shell";
import { dockerFile } from "@codemirror/legacy-modes/mode/dockerfile";

const EXT: Record<string, string> = {
  rs: "rust",
  py: "python",
  pyi: "python",
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  jsx: "jsx",
  ts: "typescript",
  mts: "typescript",
  cts: "typescript",
  tsx: "tsx",
  json: "json",
  jsonc: "json",
  md: "markdown",
  markdown: "markdown",
  html: "html",
  htm: "html",
  css: "css",
  go: "go",
  java: "java",
  c: "cpp",
  h: "cpp",
  cc: "cpp",
  cpp: "cpp",
  cxx: "cpp",
  hpp: "cpp",
  hh: "cpp",
  yaml: "yaml",
  yml: "yaml",
  toml: "toml",
  sh: "shell",
  bash: "shell",
  zsh: "shell",
};

const NAMES: Record<string, string> = {
  dockerfile: "dockerfile",
  makefile: "shell",
  "cargo.lock": "toml",
  ".bashrc": "shell",
  ".profile": "shell",
};

/** The language id for a path ("text" when none is known). */
export function languageOf(path: string): string {
  const name = (path.split("/").pop() ?? path).toLowerCase();
  const byName = NAMES[name];
  if (byName) return byName;
  const dot = name.lastIndexOf(".");
  if (dot < 0) return "text";
  return EXT[name.slice(dot + 1)] ?? "text";
}

const cache = new Map<string, Extension>();

/** The highlighting extension for a language id (empty for plain text). */
export function languageExtension(id: string): Extension {
  const known = cache.get(id);
  if (known) return known;
  let ext: Extension;
  switch (id) {
    case "javascript": ext = javascript(); break;
    case "jsx": ext = javascript({ jsx: true }); break;
    case "typescript": ext = javascript({ typescript: true }); break;
    case "tsx": ext = javascript({ typescript: true, jsx: true }); break;
    case "python": ext = python(); break;
    case "rust": ext = rust(); break;
    case "json": ext = json(); break;
    case "markdown": ext = markdown(); break;
    case "html": ext = html(); break;
    case "css": ext = css(); break;
    case "go": ext = go(); break;
    case "java": ext = java(); break;
    case "cpp": ext = cpp(); break;
    case "yaml": ext = yaml(); break;
    case "toml": ext = StreamLanguage.define(toml); break;
    case "shell": ext = StreamLanguage.define(shell); break;
    case "dockerfile": ext = StreamLanguage.define(dockerFile); break;
    default: ext = []; break;
  }
  cache.set(id, ext);
  return ext;
}

/** The highlighting extension for a path. */
export function languageForPath(path: string): Extension {
  return languageExtension(languageOf(path));
}
