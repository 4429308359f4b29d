//! Which language server serves which file, and where its program is.
//!
//! The table is fixed (the servers the issue names); a server is used when
//! its program is found in the explicit directories given first, then on
//! `PATH`. Several commands for one entry are alternatives, first found
//! wins (basedpyright before pyright). Several entries may serve one
//! extension: a Python file goes to (based)pyright for types *and* to
//! ruff for lints, each reporting its own diagnostics, which the client
//! merges per file.

use std::path::{Path, PathBuf};

/// One kind of language server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Its name in a workspace's configuration (`[servers.ruff]`, see
    /// [`crate::config`]).
    pub name: &'static str,
    /// What the user is told ("Python"); unique in [`SERVERS`], since a
    /// missing server is reported under it ("Python (Ruff)" is told apart
    /// from "Python").
    pub language: &'static str,
    /// Alternative programs, in order of preference.
    pub commands: &'static [&'static str],
    pub args: &'static [&'static str],
    /// File name extensions served, without the dot.
    pub extensions: &'static [&'static str],
}

pub const SERVERS: &[Spec] = &[
    Spec {
        name: "pyright",
        language: "Python",
        commands: &["basedpyright-langserver", "pyright-langserver"],
        args: &["--stdio"],
        extensions: &["py", "pyi"],
    },
    Spec {
        name: "ruff",
        language: "Python (Ruff)",
        commands: &["ruff"],
        args: &["server"],
        extensions: &["py", "pyi"],
    },
    Spec {
        name: "typescript",
        language: "TypeScript/JavaScript",
        commands: &["typescript-language-server"],
        args: &["--stdio"],
        extensions: &["ts", "tsx", "js", "jsx", "mts", "cts", "mjs", "cjs"],
    },
    Spec {
        name: "clangd",
        language: "C/C++",
        commands: &["clangd"],
        args: &[],
        extensions: &["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx"],
    },
    Spec {
        name: "rust-analyzer",
        language: "Rust",
        commands: &["rust-analyzer"],
        args: &[],
        extensions: &["rs"],
    },
];

/// The indexes in [`SERVERS`] of the servers for `path`, by its extension
/// (none, one, or several: each is opened in all).
pub fn specs_for(path: &Path) -> Vec<usize> {
    let Some(ext) = extension(path) else {
        return Vec::new();
    };
    SERVERS
        .iter()
        .enumerate()
        .filter(|(_, s)| s.serves(ext))
        .map(|(i, _)| i)
        .collect()
}

/// Whether any server serves `path` ([`specs_for`] not empty, without
/// listing them).
pub fn serves(path: &Path) -> bool {
    extension(path).is_some_and(|ext| SERVERS.iter().any(|s| s.serves(ext)))
}

fn extension(path: &Path) -> Option<&str> {
    path.extension().and_then(|e| e.to_str())
}

impl Spec {
    /// Whether files with extension `ext` (no dot, any case) are its.
    fn serves(&self, ext: &str) -> bool {
        self.extensions.iter().any(|e| e.eq_ignore_ascii_case(ext))
    }
}

/// The first of `spec`'s programs found in `dirs`, then (with
/// `search_path`) on `PATH`.
pub fn locate(spec: &Spec, dirs: &[PathBuf], search_path: bool) -> Option<PathBuf> {
    find(spec.commands, dirs, search_path)
}

/// The first of `commands` (names) found in `dirs`, then (with
/// `search_path`) on `PATH`.
pub fn find(commands: &[&str], dirs: &[PathBuf], search_path: bool) -> Option<PathBuf> {
    let path = search_path
        .then(|| std::env::var_os("PATH"))
        .flatten()
        .unwrap_or_default();
    let all: Vec<PathBuf> = dirs
        .iter()
        .cloned()
        .chain(std::env::split_paths(&path))
        .filter(|d| d.is_absolute())
        .collect();
    commands
        .iter()
        .find_map(|c| all.iter().map(|d| d.join(c)).find(|p| executable(p)))
}

/// Whether `p` is an executable file.
pub fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_find_their_server_by_extension() {
        let lang = |p: &str| -> Vec<&str> {
            specs_for(Path::new(p))
                .into_iter()
                .map(|i| SERVERS[i].language)
                .collect()
        };
        assert_eq!(lang("/w/a.py"), ["Python", "Python (Ruff)"]);
        assert_eq!(lang("/w/a.PY"), ["Python", "Python (Ruff)"]);
        assert_eq!(lang("/w/a.tsx"), ["TypeScript/JavaScript"]);
        assert_eq!(lang("/w/a.h"), ["C/C++"]);
        assert_eq!(lang("/w/a.rs"), ["Rust"]);
        assert!(lang("/w/Makefile").is_empty());
        assert!(lang("/w/a.md").is_empty());
        for p in [
            "/w/a.PY",
            "/w/a.tsx",
            "/w/a.h",
            "/w/a.rs",
            "/w/Makefile",
            "/w/a.md",
        ] {
            assert_eq!(serves(Path::new(p)), !lang(p).is_empty(), "{p}");
        }
        let names: std::collections::HashSet<_> = SERVERS.iter().map(|s| s.language).collect();
        assert_eq!(
            names.len(),
            SERVERS.len(),
            "missing servers are told apart by name"
        );
    }

    #[test]
    fn explicit_directories_come_before_path_and_need_an_executable() {
        let d = tempfile::tempdir().unwrap();
        let spec = &SERVERS[0];
        let p = d.path().join("pyright-langserver");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        assert_eq!(
            locate(spec, &[d.path().into()], true).filter(|f| f.starts_with(d.path())),
            None
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(locate(spec, &[d.path().into()], true), Some(p.clone()));
        // basedpyright is preferred when both are there.
        let b = d.path().join("basedpyright-langserver");
        std::fs::copy(&p, &b).unwrap();
        std::fs::set_permissions(&b, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(locate(spec, &[d.path().into()], true), Some(b));
    }
}
