//! Security issue 20, item 11: a command `execute_command` runs dies with
//! the ccbridge that started it, even one killed with `kill -9` — its whole
//! process group, background grandchildren included — and what escaped the
//! group is killed at the next start; nothing else is. Real processes: the
//! real `ccbridge serve --stdio`, a real `kill -9`, `/proc` read back.
//!
//! Other tests of this binary start processes meanwhile, and pids are
//! reused (`pid_max` may be 32768): what the tests look for in `/proc` is
//! theirs alone, a group's members by the marker of their run, a process
//! by its pid and start time.
#![cfg(target_os = "linux")]

use ccbridge_testkit::claude::Sandbox;
use ccbridge_testkit::editor::{Editor, EditorOptions};
use ccbridge_testkit::http::{mcp_post, mcp_session, url_port};
use ccbridge_testkit::poll_until;
use ccbridge_tools::command_group::{Owner, Runs, MARKER};
use rustix::process::{Pid, Signal};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

const STEP: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

/// `/proc/<pid>/stat`'s fields after the command name (field 3 on).
fn stat(pid: i32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}

fn pgid_of(pid: i32) -> Option<i32> {
    stat(pid)?.get(2)?.parse().ok()
}

/// A process, told apart from a later one with its pid by its start time
/// (field 22 of `/proc/<pid>/stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    pid: i32,
    start: u64,
}

impl Proc {
    /// The process `pid` as it runs now.
    fn of(pid: i32) -> Option<Proc> {
        let start = stat(pid)?.get(19)?.parse().ok()?;
        Some(Proc { pid, start })
    }

    /// Runs (not a later process with its pid), and is not a zombie
    /// waiting for its parent.
    fn alive(&self) -> bool {
        stat(self.pid).is_some_and(|f| f[0] != "Z" && f[19] == self.start.to_string())
    }
}

/// A command's process group: the group `pgid` whose processes carry the
/// marker of a run of `owner` (every process of a run does, inherited).
#[derive(Clone)]
struct Group {
    pgid: i32,
    owner: Owner,
}

impl Group {
    /// Its live members.
    fn members(&self) -> Vec<i32> {
        let marker = format!("{MARKER}={}/", self.owner);
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&p| {
                stat(p).is_some_and(|f| f[0] != "Z" && f[2] == self.pgid.to_string())
                    && std::fs::read(format!("/proc/{p}/environ")).is_ok_and(|env| {
                        env.split(|b| *b == 0)
                            .any(|kv| kv.starts_with(marker.as_bytes()))
                    })
            })
            .collect()
    }
}

fn kill(pid: i32) {
    if let Some(p) = Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(p, Signal::KILL);
    }
}

/// Kills, when the test ends however it ends, the sleeps it started (only
/// while they still run, and run `sleep`) and what is left of a group.
#[derive(Default)]
struct Cleanup {
    procs: Vec<Proc>,
    groups: Vec<Group>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for g in &self.groups {
            // While it has members, its id is not reused.
            if !g.members().is_empty() {
                if let Some(p) = Pid::from_raw(g.pgid) {
                    let _ = rustix::process::kill_process_group(p, Signal::KILL);
                }
            }
        }
        for p in &self.procs {
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", p.pid)).unwrap_or_default();
            if p.alive() && cmdline.starts_with(b"sleep") {
                kill(p.pid);
            }
        }
    }
}

/// The process whose pid a command wrote to `path`, once it has.
fn proc_in(path: &Path) -> Proc {
    let pid = pid_in(path);
    Proc::of(pid).unwrap_or_else(|| panic!("{pid} (from {}) does not run", path.display()))
}

/// The pid a command wrote to `path`, once it has.
fn pid_in(path: &Path) -> i32 {
    poll_until(STEP, POLL, || {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    })
    .unwrap_or_else(|| panic!("{} never got a pid", path.display()))
}

fn sidecar(sandbox: &Sandbox, log: &str) -> Editor {
    let mut opts =
        EditorOptions::for_sandbox(env!("CARGO_BIN_EXE_ccbridge"), sandbox, "LeftoverTest");
    opts.log_file = sandbox.root().join(log);
    opts.extra_env = vec![(
        "XDG_STATE_HOME".into(),
        state_home(sandbox).display().to_string(),
    )];
    Editor::spawn(&opts).expect("spawn ccbridge")
}

fn state_home(sandbox: &Sandbox) -> PathBuf {
    sandbox.root().join("state")
}

/// Where ccbridge keeps its run files in `sandbox`.
fn runs(sandbox: &Sandbox) -> Runs {
    Runs::at(state_home(sandbox).join("ccbridge").join("runs"))
}

/// Has `ed` run `command` (approved by the editor); the call's answer is
/// never waited for.
fn run_command(ed: &Editor, command: &str) {
    let init = ed
        .request(
            "initialize",
            json!({"protocolVersion": 2, "ideName": "LeftoverTest",
                   "capabilities": {"approve": true, "diff": true}}),
            STEP,
        )
        .unwrap();
    let port = url_port(init["tools"]["url"].as_str().expect("tools served"));
    let token = init["tools"]["token"].as_str().unwrap().to_owned();
    let session = mcp_session(port, &token, STEP);
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"execute_command","arguments":{"command": command}}})
    .to_string();
    std::thread::spawn(move || mcp_post(port, &token, Some(&session), &body, STEP * 6));
    let ask = ed.expect_request("approve", STEP).unwrap();
    assert_eq!(ask.params["command"], command);
    ed.respond(ask.id.as_ref().unwrap(), json!({"approved": true}))
        .unwrap();
}

/// The regression test: before the fix, the shell, its foreground child
/// and its background grandchild all kept running after `kill -9`.
#[test]
fn kill_9_of_ccbridge_left_the_running_commands_process_group_alive() {
    let sandbox = Sandbox::new().unwrap();
    let ws = sandbox.workspace().to_path_buf();
    let ed = sidecar(&sandbox, "ccbridge.log");
    run_command(
        &ed,
        "echo $$ > sh.pid; (sleep 1000 & echo $! > bg.pid); \
         sh -c 'echo $$ > fg.pid; exec sleep 1000'",
    );
    let mut cleanup = Cleanup::default();
    let sh = proc_in(&ws.join("sh.pid"));
    let bg = proc_in(&ws.join("bg.pid"));
    let fg = proc_in(&ws.join("fg.pid"));
    cleanup.procs = vec![bg, fg];
    let owner = Owner::of(ed.pid() as i32).unwrap();
    let group = Group {
        pgid: pgid_of(sh.pid).expect("the command's shell runs"),
        owner: owner.clone(),
    };
    cleanup.groups.push(group.clone());
    let pgid = group.pgid;
    assert_ne!(Some(pgid), pgid_of(ed.pid() as i32), "a group of its own");
    for p in [bg, fg] {
        assert_eq!(
            pgid_of(p.pid),
            Some(pgid),
            "{p:?} is in the command's group"
        );
    }
    let environ = std::fs::read(format!("/proc/{}/environ", bg.pid)).unwrap();
    kill(ed.pid() as i32);
    let gone = poll_until(STEP, POLL, || {
        let left: Vec<i32> = group
            .members()
            .into_iter()
            .chain([sh, bg, fg].into_iter().filter(Proc::alive).map(|p| p.pid))
            .collect();
        left.is_empty().then_some(())
    });
    assert!(
        gone.is_some(),
        "still running after kill -9 of ccbridge: group {pgid} = {:?}, sh {sh:?} fg {fg:?} bg {bg:?}",
        group.members()
    );
    // The group's processes carried the run's marker, naming this ccbridge.
    let want = format!("{MARKER}={owner}/");
    assert!(
        environ
            .split(|b| *b == 0)
            .any(|kv| kv.starts_with(want.as_bytes())),
        "no {want} in the grandchild's environment"
    );
}

/// A process that escaped the group (`setsid`) outlives a killed ccbridge;
/// the next start kills it, and a simulated leftover of a dead ccbridge
/// too, but leaves alone a process of a live one, a background process of
/// a run that had ended, and one without the marker.
#[test]
fn the_next_start_kills_what_a_killed_ccbridge_left_and_nothing_else() {
    let sandbox = Sandbox::new().unwrap();
    let ws = sandbox.workspace().to_path_buf();
    let mut cleanup = Cleanup::default();

    let ed = sidecar(&sandbox, "first.log");
    run_command(
        &ed,
        "echo $$ > sh.pid; setsid sleep 1000 & echo $! > escaped.pid; wait",
    );
    let sh = proc_in(&ws.join("sh.pid"));
    let escaped = proc_in(&ws.join("escaped.pid"));
    cleanup.procs.push(escaped);
    let group = Group {
        pgid: pgid_of(sh.pid).unwrap(),
        owner: Owner::of(ed.pid() as i32).unwrap(),
    };
    cleanup.groups.push(group.clone());
    poll_until(STEP, POLL, || {
        (pgid_of(escaped.pid) == Some(escaped.pid)).then_some(())
    })
    .expect("setsid gave the sleep a group of its own");
    kill(ed.pid() as i32);
    drop(ed);
    poll_until(STEP, POLL, || group.members().is_empty().then_some(()))
        .expect("the group dies with ccbridge");
    assert!(
        escaped.alive(),
        "the watcher cannot reach an escaped process"
    );

    // Leftovers as a killed ccbridge leaves them: a run file, and a
    // process naming the run. The dead owner is this test's pid with
    // another start time (as when the pid was reused).
    let me = Owner::of(std::process::id() as i32).unwrap();
    let dead = Owner {
        start_time: me.start_time + 1,
        ..me.clone()
    };
    let runs = runs(&sandbox);
    runs.register(&dead, 1).unwrap().keep();
    runs.register(&me, 3).unwrap().keep();
    let mut sleep = |marker: Option<String>| {
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("1000");
        if let Some(m) = marker {
            cmd.env(MARKER, m);
        }
        let child = cmd.spawn().unwrap();
        cleanup.procs.extend(Proc::of(child.id() as i32));
        child
    };
    let mut leftover = sleep(Some(dead.marker(1)));
    // Run 2 of the dead owner had ended: no run file.
    let mut ended = sleep(Some(dead.marker(2)));
    let mut live = sleep(Some(me.marker(3)));
    let mut unmarked = sleep(None);

    let ed = sidecar(&sandbox, "second.log");
    poll_until(STEP, POLL, || {
        ed.log()
            .contains("swept processes left running by the commands of an earlier ccbridge")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("no sweep logged:\n{}", ed.log()));
    assert!(ed.log().contains("killed=2"), "{}", ed.log());
    poll_until(STEP, POLL, || leftover.try_wait().unwrap())
        .expect("the dead owner's leftover was killed");
    poll_until(STEP, POLL, || (!escaped.alive()).then_some(()))
        .expect("the escaped process was killed");
    for (what, child) in [
        ("a run that had ended", &mut ended),
        ("a live owner", &mut live),
        ("no marker", &mut unmarked),
    ] {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the process of {what} was killed"
        );
    }
    // The dead owners' files are gone; the live one's are not.
    assert!(!runs.root().join(dead.to_string()).exists());
    assert!(runs.root().join(me.to_string()).join("3").exists());
}
