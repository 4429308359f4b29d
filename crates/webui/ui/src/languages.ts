// Syntax highlighting for a language id. The ids are VS Code's, and the
// server gives them (ccbridge_protocol::language, one table for every
// face): a review's `language`, a viewed file's `language`.

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

const cache = new Map<string, Extension>();

/** The highlighting extension for a language id (empty for plain text
 * and what has none). */
export function languageExtension(id: string): Extension {
  const known = cache.get(id);
  if (known) return known;
  let ext: Extension;
  switch (id) {
    case "javascript": ext = javascript(); break;
    case "javascriptreact": ext = javascript({ jsx: true }); break;
    case "typescript": ext = javascript({ typescript: true }); break;
    case "typescriptreact": ext = javascript({ typescript: true, jsx: true }); break;
    case "python": ext = python(); break;
    case "rust": ext = rust(); break;
    case "json":
    case "jsonc": ext = json(); break;
    case "markdown": ext = markdown(); break;
    case "html": ext = html(); break;
    case "css": ext = css(); break;
    case "go": ext = go(); break;
    case "java": ext = java(); break;
    case "c":
    case "cpp": ext = cpp(); break;
    case "yaml": ext = yaml(); break;
    case "toml": ext = StreamLanguage.define(toml); break;
    case "shellscript":
    case "makefile": ext = StreamLanguage.define(shell); break;
    case "dockerfile": ext = StreamLanguage.define(dockerFile); break;
    default: ext = []; break;
  }
  cache.set(id, ext);
  return ext;
}
