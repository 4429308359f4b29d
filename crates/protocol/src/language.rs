//! Which language a file is in, by its name, as VS Code's language
//! identifiers say it (`rust`, `c`, `cpp`, `shellscript`, `plaintext`, ...):
//! what Claude Code expects in `languageId` (it takes VS Code's), and the
//! one table every ccbridge face uses, so the page, the editor protocol and
//! what Claude is told never disagree.

/// The language of the file at `path` (only its name counts), `plaintext`
/// when none is known.
pub fn language_id(path: &str) -> &'static str {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "dockerfile" | "containerfile" => return "dockerfile",
        "makefile" | "gnumakefile" => return "makefile",
        "cargo.lock" => return "toml",
        ".bashrc" | ".bash_profile" | ".profile" | ".zshrc" => return "shellscript",
        _ => {}
    }
    let Some((_, ext)) = lower.rsplit_once('.') else {
        return "plaintext";
    };
    match ext {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "json" => "json",
        "jsonc" => "jsonc",
        "md" | "markdown" => "markdown",
        "html" | "htm" => "html",
        "css" => "css",
        "go" => "go",
        "java" => "java",
        "c" | "i" => "c",
        // VS Code opens `.h` as C++ (its `cpp` language lists it).
        "h" | "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "ino" => "cpp",
        "yaml" | "yml" => "yaml",
        "toml" => "toml",
        "sh" | "bash" | "zsh" => "shellscript",
        "el" => "elisp",
        "lua" => "lua",
        "vim" => "viml",
        _ => "plaintext",
    }
}

#[cfg(test)]
mod tests {
    use super::language_id;

    #[test]
    fn vs_code_language_ids() {
        for (path, id) in [
            ("/w/src/main.rs", "rust"),
            ("/w/a.c", "c"),
            ("/w/a.h", "cpp"),
            ("/w/a.cpp", "cpp"),
            ("/w/run.sh", "shellscript"),
            ("/w/App.tsx", "typescriptreact"),
            ("/w/App.jsx", "javascriptreact"),
            ("/w/Dockerfile", "dockerfile"),
            ("/w/Makefile", "makefile"),
            ("/w/notes", "plaintext"),
            ("/w/data.xyz", "plaintext"),
            ("C:\\w\\a.PY", "python"),
        ] {
            assert_eq!(language_id(path), id, "{path}");
        }
    }
}
