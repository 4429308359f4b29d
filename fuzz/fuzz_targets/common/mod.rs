//! What the HTTP fuzz targets (`mcp_http`, `companion_http`) share: a
//! folder of the process's own, the listing of a folder whose entries must
//! not change, and the paused-clock runtime their connections run on.

use std::path::{Path, PathBuf};

/// A fresh folder of this process's own under `$TMPDIR/<name>`, the
/// folders of processes that have ended removed first (libFuzzer exits
/// without running destructors).
pub fn own_folder(name: &str) -> PathBuf {
    let parent = std::env::temp_dir().join(name);
    for e in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !Path::new("/proc").join(&pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    let root = parent.join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&root);
    root
}

/// `dir`'s entries and their texts, sorted.
pub fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("a folder to list")
        .map(|e| {
            let e = e.expect("an entry");
            let text = std::fs::read(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), text)
        })
        .collect();
    out.sort();
    out
}

/// A current-thread runtime on a paused clock: it advances whenever
/// nothing is left to do, so timeouts cost no real time and every run of
/// an input is the same.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime")
}
