//! `changes-bench`: the session review's watcher (`ccbridge-changes`) on a
//! large git work tree, beside `inotifywait -r` (inotify-tools: the
//! recursive inotify watcher editors run on Linux, e.g. Neovim's LSP file
//! watcher) and `git status`, side by side in one run, as a Markdown
//! table. Progress goes to stderr.
//!
//! ```text
//! apt-get install inotify-tools      # the baseline
//! cargo run --release -p ccbridge-bench --bin changes-bench -- --tree /tmp/ccbridge-changes-tree
//! ```
//!
//! - **Ready**: from start until every folder is watched: for ccbridge
//!   also the baseline (the `HEAD` commit, dirty and untracked files
//!   copied), for `inotifywait` until it prints "Watches established.";
//!   `git status --porcelain` (what a git-aware editor runs to know what
//!   changed) beside them. Median of `--runs`, interleaved.
//! - **A write, listed**: a tracked file deep in the tree is rewritten;
//!   the time until ccbridge lists it (its revision moved and
//!   `changed_since` names it), and until `inotifywait` prints its event.
//!   ccbridge waits for a burst to settle (100 ms without events) before
//!   it diffs, by design; the raw event is the floor.
//! - **Memory**: ccbridge's resident memory growth for the watch and the
//!   baseline (in this process), `inotifywait`'s whole resident size.
//!
//! The tree (`--files` files of about 200 bytes in 10 per directory, and
//! an ignored `target/` of 10,000 more) is made once and reused.

use anyhow::{bail, Context};
use ccbridge_bench::stats::summarize;
use ccbridge_changes::Changes;
use clap::Parser;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "changes-bench",
    about = "Benchmarks the session review's watcher beside inotifywait and git status"
)]
struct Args {
    /// Where the generated git work tree lives (made once, reused).
    #[arg(long, value_name = "DIR")]
    tree: PathBuf,
    /// Tracked files in the tree.
    #[arg(long, default_value_t = 100_000)]
    files: usize,
    /// Start-ups measured per watcher.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Writes timed per watcher.
    #[arg(long, default_value_t = 40)]
    writes: usize,
}

const PER_DIR: usize = 10;
const TIMEOUT: Duration = Duration::from_secs(120);

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; run with --release for figures that mean anything");
    }
    Command::new("inotifywait")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("inotifywait not found: apt-get install inotify-tools")?;
    make_tree(&args.tree, args.files)?;
    let tree = args.tree.canonicalize()?;
    // The writes of an earlier run undone, so every run starts clean.
    git(&tree, &["checkout", "-q", "--", "."])?;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos();
    let dirs = args.files.div_ceil(PER_DIR);

    let (mut ours, mut theirs, mut git) = (Vec::new(), Vec::new(), Vec::new());
    let (mut walk, mut of_git) = (Vec::new(), Vec::new());
    let mut rss = 0;
    let mut watched = 0;
    for run in 0..args.runs {
        eprintln!("start-up {}/{}", run + 1, args.runs);
        let before = resident_bytes(std::process::id())?;
        let t = Instant::now();
        let changes = Changes::start(std::slice::from_ref(&tree))?;
        wait(|| changes.ready(), "ccbridge's review to be ready")?;
        ours.push(t.elapsed());
        rss = resident_bytes(std::process::id())?.saturating_sub(before);
        watched = changes.view().watched_folders;
        drop(changes);

        let t = Instant::now();
        let mut w = Inotifywait::start(&tree)?;
        theirs.push(t.elapsed());
        w.stop();

        // The two halves of ccbridge's start, which run side by side.
        let t = Instant::now();
        drop(ccbridge_changes::watch::Watcher::start(
            std::slice::from_ref(&tree),
        )?);
        walk.push(t.elapsed());
        let t = Instant::now();
        drop(ccbridge_changes::baseline::Baseline::of_git(
            std::slice::from_ref(&tree),
        ));
        of_git.push(t.elapsed());

        let t = Instant::now();
        let out = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(&tree)
            .output()?;
        if !out.status.success() {
            bail!(
                "git status failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        git.push(t.elapsed());
    }

    eprintln!("writes");
    let target = |i: usize| tree.join(file_path(dirs - 1 - (i % dirs), i % PER_DIR));
    let changes = Changes::start(std::slice::from_ref(&tree))?;
    wait(|| changes.ready(), "ccbridge's review to be ready")?;
    let mut revisions = changes.subscribe();
    let mut seen = changes.changed_since(0).0;
    let mut ours_w = Vec::new();
    for i in 0..args.writes {
        let path = target(i);
        let want = path.to_str().context("a UTF-8 tree path")?.to_owned();
        revisions.borrow_and_update();
        let t = Instant::now();
        std::fs::write(&path, format!("changed {i} {nonce}\n"))?;
        let listed = wait(
            || {
                if !revisions.has_changed().unwrap_or(false) {
                    return false;
                }
                revisions.borrow_and_update();
                let (rev, paths) = changes.changed_since(seen);
                seen = rev;
                paths.contains(&want)
            },
            "ccbridge to list the write",
        );
        listed?;
        ours_w.push(t.elapsed());
    }
    let inotify_rss;
    let mut theirs_w = Vec::new();
    {
        let mut w = Inotifywait::start(&tree)?;
        inotify_rss = resident_bytes(w.child.id())?;
        for i in 0..args.writes {
            let path = target(i + args.writes);
            let t = Instant::now();
            std::fs::write(&path, format!("changed again {i} {nonce}\n"))?;
            w.wait_for(path.to_str().context("a UTF-8 tree path")?)?;
            theirs_w.push(t.elapsed());
        }
        w.stop();
    }
    drop(changes);

    let ms = |us: f64| format!("{:.1} ms", us / 1e3);
    let p50 = |xs: &[Duration]| ms(summarize(xs).p50_us);
    let p99 = |xs: &[Duration]| ms(summarize(xs).p99_us);
    println!(
        "Tree: {} tracked files in {} directories (+ 10,000 ignored in target/), git work tree; {} runs, {} writes each.\n",
        args.files, watched, args.runs, args.writes
    );
    println!("| measure | ccbridge | baseline | baseline is |");
    println!("|---|---|---|---|");
    println!(
        "| ready (median) | {} | {} | `inotifywait -r` until \"Watches established.\" |",
        p50(&ours),
        p50(&theirs)
    );
    println!(
        "| ready (median) | {} | {} | `git status --porcelain` |",
        p50(&ours),
        p50(&git)
    );
    println!(
        "| of which: the watcher's walk / git's baseline, alone | {} / {} | | |",
        p50(&walk),
        p50(&of_git)
    );
    println!(
        "| a write → listed, p50 | {} | {} | `inotifywait` event line |",
        p50(&ours_w),
        p50(&theirs_w)
    );
    println!(
        "| a write → listed, p99 | {} | {} | `inotifywait` event line |",
        p99(&ours_w),
        p99(&theirs_w)
    );
    println!(
        "| memory | +{:.1} MB resident | {:.1} MB resident | `inotifywait` process |",
        rss as f64 / 1e6,
        inotify_rss as f64 / 1e6
    );
    Ok(())
}

/// Polls `f` every millisecond until it holds, at most [`TIMEOUT`].
fn wait(mut f: impl FnMut() -> bool, what: &str) -> anyhow::Result<()> {
    let end = Instant::now() + TIMEOUT;
    while !f() {
        if Instant::now() > end {
            bail!("waited {TIMEOUT:?} for {what}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

fn file_path(dir: usize, file: usize) -> PathBuf {
    PathBuf::from(format!(
        "src/m{:02}/p{:03}/f{file}.txt",
        dir / 1000,
        dir % 1000
    ))
}

/// Makes the tree and commits it, unless a finished one is there.
fn make_tree(root: &Path, files: usize) -> anyhow::Result<()> {
    let done = root.join(".git/ccbridge-bench-done");
    if std::fs::read_to_string(&done).ok().as_deref() == Some(&files.to_string()) {
        return Ok(());
    }
    eprintln!("making {files} files in {} (once)", root.display());
    if root.exists() {
        std::fs::remove_dir_all(root)?;
    }
    std::fs::create_dir_all(root)?;
    for i in 0..files {
        let path = root.join(file_path(i / PER_DIR, i % PER_DIR));
        if i % PER_DIR == 0 {
            std::fs::create_dir_all(path.parent().unwrap())?;
        }
        std::fs::write(&path, format!("{i}\n{}\n", "x".repeat(190)))?;
    }
    for i in 0..10_000 {
        let dir = root.join(format!("target/debug/d{}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        std::fs::write(dir.join(format!("o{i}.o")), "object\n")?;
    }
    std::fs::write(root.join(".gitignore"), "target/\n")?;
    git(root, &["init", "-q"])?;
    git(root, &["add", "-A"])?;
    git(root, &["commit", "-q", "-m", "tree"])?;
    std::fs::write(&done, files.to_string())?;
    Ok(())
}

fn git(root: &Path, args: &[&str]) -> anyhow::Result<()> {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
        ])
        .args(args)
        .current_dir(root)
        .stdout(Stdio::null())
        .status()?
        .success();
    if !ok {
        bail!("git {args:?} failed");
    }
    Ok(())
}

/// `inotifywait -m -r` on the tree with `.git` and `target` left out, as
/// ccbridge leaves them out.
struct Inotifywait {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Inotifywait {
    /// Starts it and waits until its watches are set up.
    fn start(tree: &Path) -> anyhow::Result<Inotifywait> {
        let mut child = Command::new("inotifywait")
            .args(["-m", "-r", "-e", "close_write,moved_to,create,delete"])
            .args(["--exclude", r"(^|/)(\.git|target)(/|$)"])
            .args(["--format", "%w%f"])
            .arg(tree)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("inotifywait")?;
        let (tx, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
        }
        let mut w = Inotifywait { child, lines };
        w.wait_for("Watches established.")?;
        Ok(w)
    }

    /// Waits for a line that is `line`.
    fn wait_for(&mut self, line: &str) -> anyhow::Result<()> {
        let end = Instant::now() + TIMEOUT;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l == line => return Ok(()),
                Ok(_) => {}
                Err(_) => bail!("inotifywait did not print {line:?} within {TIMEOUT:?}"),
            }
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Inotifywait {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Resident memory of process `pid`, in bytes.
fn resident_bytes(pid: u32) -> anyhow::Result<u64> {
    Ok(ccbridge_bench::process::rss_kib(pid)? * 1024)
}
