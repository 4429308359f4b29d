//! `floor-server`: the floor stub ([`ccbridge_bench::floor`]) as a process,
//! started the way an editor starts `ccbridge serve --stdio`, so the two
//! can be compared for start-up time and resident memory.
//!
//! Same runtime as ccbridge (multi-thread, 2 workers). It binds
//! `127.0.0.1:0`, writes `$CLAUDE_CONFIG_DIR/ide/<port>.lock` with a plain
//! write (no temp file, no fsync, no sweep: this is the floor), serves until
//! stdin reaches end of file, then removes the lock file. Arguments are
//! accepted and ignored.

use anyhow::Context;
use ccbridge_bench::fixture::WORKSPACE;
use ccbridge_bench::floor::{random_token, Floor};
use ccbridge_protocol::lockfile::LockFile;
use std::path::PathBuf;
use tokio::io::AsyncReadExt;

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .context("CLAUDE_CONFIG_DIR is not set")?
        .join("ide");
    let floor = Floor::bind(&random_token()?).await?;
    std::fs::create_dir_all(&dir)?;
    let lock = dir.join(format!("{}.lock", floor.port()));
    let contents = LockFile::new(
        std::process::id(),
        vec![WORKSPACE.into()],
        "floor".into(),
        floor.token().to_owned(),
    );
    std::fs::write(&lock, contents.to_json())?;
    let server = tokio::spawn(floor.run());
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 4096];
    while stdin.read(&mut buf).await.map(|n| n > 0).unwrap_or(false) {}
    server.abort();
    let _ = std::fs::remove_file(&lock);
    Ok(())
}
