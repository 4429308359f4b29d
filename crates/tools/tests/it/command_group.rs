//! A command's run as the sweep sees it (Linux): its processes carry the
//! run's marker, its run file exists while it runs and goes when it ends,
//! and what it started in the background is released, left running with
//! no watcher. (That a killed ccbridge takes the group with it, and that
//! the next start sweeps leftovers, is attacked with the real binary in
//! `crates/ccbridge/tests/it/command_leftovers.rs`.) The run files go
//! under this process's `XDG_STATE_HOME`, which the test's process shares
//! with every other test of the binary: the test runs again in a process
//! of its own with it set (`ccbridge_testkit::alone`).
#![cfg(target_os = "linux")]

use ccbridge_tools::command_group::{Owner, Runs, MARKER};
use ccbridge_tools::execute_command::{run, Run};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

fn state(pid: i32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(s[s.rfind(')')? + 1..].split_whitespace().next()?.to_owned())
}

fn alive(pid: i32) -> bool {
    state(pid).is_some_and(|s| s != "Z")
}

#[test]
fn a_runs_processes_carry_its_marker_and_its_file_lasts_as_long_as_the_run() {
    let state_home = tempfile::tempdir().unwrap();
    if !ccbridge_testkit::alone::rerun(
        module_path!(),
        "a_runs_processes_carry_its_marker_and_its_file_lasts_as_long_as_the_run",
        &[("XDG_STATE_HOME", state_home.path().as_os_str())],
    ) {
        return;
    }
    // In the process of its own: its state folder is the parent's.
    let state_home = std::env::var_os("XDG_STATE_HOME").unwrap();
    let ws = tempfile::tempdir().unwrap();
    let runs = Runs::from_env().unwrap();
    assert!(runs.root().starts_with(&state_home));
    let me = Owner::current().unwrap();
    let mine = runs.root().join(me.to_string());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let command = format!(
        "ls {}; echo \"marker=${MARKER}\"; sleep 1000 & echo \"bg=$!\"",
        mine.display()
    );
    let finished = rt
        .block_on(run(
            Run {
                command,
                cwd: OwnedFd::from(std::fs::File::open(ws.path()).unwrap()),
                timeout: Duration::from_secs(30),
                max_output: 1 << 16,
                secrets: Vec::new(),
            },
            |_| {},
        ))
        .unwrap();
    assert_eq!(finished.exit_code, Some(0), "{}", finished.output);
    let line = |key: &str| {
        finished
            .output
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in {}", finished.output))
            .to_owned()
    };
    let marker = line("marker=");
    let (owner, run_no) = marker.rsplit_once('/').expect("owner/run");
    assert_eq!(owner, me.to_string());
    assert!(
        finished.output.lines().next() == Some(run_no),
        "the run file existed while the command ran: {}",
        finished.output
    );
    assert!(
        !mine.join(run_no).exists(),
        "the run file went with the run"
    );

    // The background sleep was released: still running, carrying the
    // marker, its watcher gone (the group's id is the watcher's pid).
    let bg: i32 = line("bg=").parse().unwrap();
    assert!(alive(bg));
    let environ = std::fs::read(format!("/proc/{bg}/environ")).unwrap();
    let want = format!("{MARKER}={marker}");
    assert!(environ.split(|b| *b == 0).any(|kv| kv == want.as_bytes()));
    let stat = std::fs::read_to_string(format!("/proc/{bg}/stat")).unwrap();
    let watcher: i32 = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(watcher) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(watcher), "the watcher was stopped");
    // A sweep now finds nothing to do: the owner runs, the run ended.
    let swept = runs.sweep().unwrap();
    assert_eq!(swept.killed, 0);
    assert!(alive(bg));
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(bg).unwrap(),
        rustix::process::Signal::KILL,
    );
}
