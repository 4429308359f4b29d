//! What the HTTP fuzz targets (`mcp_http`, `companion_http`) share: a
//! folder of the process's own, the listing of a folder whose entries must
//! not change, the paused-clock runtime their connections run on, and one
//! connection served in memory.

use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

/// What `app` answers to `input` on a connection of its own, served as the
/// real servers serve each (`ccbridge_http::serve_stream`), until the
/// server closes it or `connection` passes on the paused clock; with
/// `head_only`, up to the end of the first answer's head. The client's side
/// stays open meanwhile, as real clients keep it (hyper drops a connection
/// whose reading side ends before it answered).
pub async fn exchange(
    app: axum::Router,
    signed_in: ccbridge_http::SignedIn,
    input: &[u8],
    head_only: bool,
    connection: Duration,
) -> Vec<u8> {
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let conn = tokio::spawn(ccbridge_http::serve_stream(
        server,
        app,
        ccbridge_http::Limits::default(),
        signed_in,
    ));
    let mut out = Vec::new();
    let talk = async {
        // The server may stop reading (a refused head): what it answered
        // is still read.
        let _ = client.write_all(input).await;
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = client.read(&mut buf).await {
            out.extend_from_slice(&buf[..n]);
            if head_only && out.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(connection, talk).await;
    conn.abort();
    let _ = conn.await;
    out
}
