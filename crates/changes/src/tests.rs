//! The session review against a real folder and real inotify events.

use super::*;
use std::time::Instant;

struct Rig {
    _dir: tempfile::TempDir,
    root: PathBuf,
    changes: Changes,
}

fn rig(files: &[(&str, &str)]) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (name, text) in files {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let changes = Changes::start(std::slice::from_ref(&root)).unwrap();
    let r = Rig {
        _dir: dir,
        root,
        changes,
    };
    r.wait("the review is ready", |v| v.ready);
    r
}

impl Rig {
    fn path(&self, name: &str) -> String {
        self.root.join(name).to_str().unwrap().to_owned()
    }

    /// Waits (10 s at most) until the view satisfies `cond`.
    fn wait(&self, what: &str, cond: impl Fn(&ChangesView) -> bool) -> ChangesView {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let v = self.changes.view();
            if cond(&v) {
                return v;
            }
            assert!(
                Instant::now() < end,
                "timed out waiting for: {what}; last view: {v:#?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn file(&self, name: &str) -> FileView {
        let p = self.path(name);
        self.changes
            .view()
            .files
            .into_iter()
            .find(|f| f.path == p)
            .unwrap_or_else(|| panic!("{name} is not listed"))
    }

    fn listed(&self, name: &str) -> FileView {
        let p = self.path(name);
        self.wait(&format!("{name} listed"), |v| {
            v.files.iter().any(|f| f.path == p)
        });
        self.file(name)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.join(name)).unwrap()
    }
}

const SEVEN_LOCKS: &str = "fn a() { m.lock().unwrap(); }\nx\nfn b() { m.lock().unwrap(); }\ny\nfn c() { m.lock().unwrap(); }\nz\nfn d() { m.lock().unwrap(); }\n";

#[test]
fn regression_identical_hunks_are_decided_one_by_one() {
    let r = rig(&[("db.rs", SEVEN_LOCKS)]);
    let edited = SEVEN_LOCKS.replace(".lock().unwrap()", ".lock().expect(\"poisoned\")");
    std::fs::write(r.root.join("db.rs"), &edited).unwrap();
    let f = r.wait("four hunks", |v| {
        v.files.first().is_some_and(|f| f.hunks.len() == 4)
    });
    let f = &f.files[0];
    assert_eq!(f.status, FileStatus::Modified);
    assert_eq!(f.sources, vec![Source::Disk { agents: vec![] }]);
    // The four hunks look the same; their keys do not.
    let keys: BTreeSet<_> = f.hunks.iter().map(|h| h.key.clone()).collect();
    assert_eq!(keys.len(), 4);
    // Keep the second: only the second is kept.
    let path = r.path("db.rs");
    r.changes
        .keep(&path, Some(&f.hunks[1].key), &f.version)
        .unwrap();
    let kept: Vec<bool> = r.file("db.rs").hunks.iter().map(|h| h.kept).collect();
    assert_eq!(kept, vec![false, true, false, false]);
    // Revert the third: only the third line goes back.
    r.changes
        .revert(&path, Some(&f.hunks[2].key), &f.version)
        .unwrap();
    let text = r.read("db.rs");
    assert_eq!(text.matches(".lock().unwrap()").count(), 1);
    assert!(text.contains("fn c() { m.lock().unwrap(); }"));
    let f = r.file("db.rs");
    assert_eq!(f.hunks.len(), 3);
    // The kept mark stayed with the hunk it was given to.
    let kept: Vec<bool> = f.hunks.iter().map(|h| h.kept).collect();
    assert_eq!(kept, vec![false, true, false]);
    assert!(f.hunks[1].context_before.iter().any(|l| l == "x"));
}

#[test]
fn a_created_file_is_reverted_by_removing_it_and_undo_brings_it_back() {
    let r = rig(&[("keep.txt", "k\n")]);
    std::fs::write(r.root.join("new.txt"), "made by the agent\n").unwrap();
    let f = r.listed("new.txt");
    assert_eq!(f.status, FileStatus::Created);
    r.changes.revert(&f.path, None, &f.version).unwrap();
    assert!(!r.root.join("new.txt").exists());
    r.wait("nothing listed", |v| v.files.is_empty() && v.can_undo);
    r.changes.undo().unwrap();
    assert_eq!(r.read("new.txt"), "made by the agent\n");
    assert_eq!(r.listed("new.txt").status, FileStatus::Created);
    assert!(matches!(r.changes.undo(), Err(ChangeError::NothingToUndo)));
}

#[test]
fn a_deleted_file_is_brought_back() {
    let r = rig(&[("gone.txt", "was here\n")]);
    std::fs::remove_file(r.root.join("gone.txt")).unwrap();
    let f = r.listed("gone.txt");
    assert_eq!(f.status, FileStatus::Deleted);
    assert_eq!(f.removed, 1);
    r.changes.revert(&f.path, None, &f.version).unwrap();
    assert_eq!(r.read("gone.txt"), "was here\n");
}

/// This process's umask, from `/proc` (setting it to read it would race
/// with the other tests' file creation).
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A deleted script was brought back as 0644 (0666 less the umask): no
/// longer executable. It comes back with the mode it had at the start; and
/// a created one the revert removed comes back from undo with its own.
#[test]
fn regression_a_deleted_script_comes_back_executable() {
    use std::os::unix::fs::PermissionsExt;
    let r = rig(&[("deploy.sh", "#!/bin/sh\necho deploy\n")]);
    let script = r.root.join("deploy.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    // The baseline is taken at the start: start again with the mode set.
    let r = Rig {
        changes: Changes::start(std::slice::from_ref(&r.root)).unwrap(),
        ..r
    };
    r.wait("the review is ready", |v| v.ready);
    std::fs::remove_file(&script).unwrap();
    let f = r.listed("deploy.sh");
    assert_eq!(f.status, FileStatus::Deleted);
    r.changes.revert(&f.path, None, &f.version).unwrap();
    assert_eq!(r.read("deploy.sh"), "#!/bin/sh\necho deploy\n");
    assert_eq!(mode(&script), 0o751 & !umask());

    let tool = r.root.join("tool.sh");
    std::fs::write(&tool, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o700)).unwrap();
    let f = r.wait("tool.sh listed as it is", |v| {
        v.files.iter().any(|f| f.path == r.path("tool.sh"))
    });
    let f = f
        .files
        .into_iter()
        .find(|f| f.path == r.path("tool.sh"))
        .unwrap();
    r.changes.revert(&f.path, None, &f.version).unwrap();
    assert!(!tool.exists());
    r.changes.undo().unwrap();
    assert_eq!(mode(&tool), 0o700);
}

/// git's "content" of a symbolic link is its target's name: written back
/// as a file it would be another file. Refused, nothing written.
#[test]
fn a_deleted_link_in_git_is_not_brought_back_as_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(root.join("target.txt"), "t\n").unwrap();
    std::os::unix::fs::symlink("target.txt", root.join("link")).unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "one"]);
    let r = Rig {
        changes: Changes::start(std::slice::from_ref(&root)).unwrap(),
        root,
        _dir: dir,
    };
    r.wait("the review is ready", |v| v.ready);
    std::fs::remove_file(r.root.join("link")).unwrap();
    let f = r.listed("link");
    let e = r.changes.revert(&f.path, None, &f.version).unwrap_err();
    assert!(matches!(e, ChangeError::WasALink(_)), "{e}");
    assert!(std::fs::symlink_metadata(r.root.join("link")).is_err());
}

#[test]
fn a_revert_never_overwrites_a_newer_change() {
    let r = rig(&[("a.txt", "one\ntwo\n")]);
    std::fs::write(r.root.join("a.txt"), "one\nTWO\n").unwrap();
    let f = r.wait("a.txt listed", |v| v.files.len() == 1).files[0].clone();
    // Someone writes again before the review has seen it.
    std::fs::write(r.root.join("a.txt"), "one\nTWO\nthree\n").unwrap();
    let e = r
        .changes
        .revert(&f.path, Some(&f.hunks[0].key), &f.version)
        .unwrap_err();
    let ChangeError::Conflict(c) = e else {
        panic!("{e}")
    };
    assert_eq!(c.before.as_deref(), Some("one\ntwo\n"));
    assert_eq!(c.shown.as_deref(), Some("one\nTWO\n"));
    assert_eq!(c.disk.as_deref(), Some("one\nTWO\nthree\n"));
    assert_eq!(r.read("a.txt"), "one\nTWO\nthree\n");
    // Once the review has caught up, the old version is stale.
    let f2 = r.wait("the newer text", |v| {
        v.files.first().is_some_and(|x| x.version != f.version)
    });
    assert!(matches!(
        r.changes.revert(&f.path, None, &f.version),
        Err(ChangeError::Stale(_))
    ));
    r.changes
        .revert(&f.path, None, &f2.files[0].version)
        .unwrap();
    assert_eq!(r.read("a.txt"), "one\ntwo\n");
}

#[test]
fn a_reviewed_write_is_marked_and_a_reported_one_named() {
    let r = rig(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let a = r.path("a.txt");
    r.changes.expect_reviewed(&a, b"A\n", "Claude Code");
    std::fs::write(r.root.join("a.txt"), "A\n").unwrap();
    let f = r.listed("a.txt");
    assert_eq!(
        f.sources,
        vec![Source::Reviewed {
            agent: "Claude Code".into()
        }]
    );
    assert!(f.reviewed && f.hunks.iter().all(|h| h.kept));
    std::fs::write(r.root.join("b.txt"), "B\n").unwrap();
    let b = r.listed("b.txt");
    assert!(!b.reviewed);
    r.changes.reported(&b.path, "Claude Code", "Edit");
    assert_eq!(
        r.file("b.txt").sources,
        vec![Source::Agent {
            agent: "Claude Code".into(),
            tool: "Edit".into()
        }]
    );
    let v = r.changes.view();
    assert_eq!((v.reviewed, v.files.len()), (1, 2));
    r.changes.keep_all();
    assert_eq!(r.changes.view().reviewed, 2);
}

#[test]
fn a_file_changed_back_leaves_the_review() {
    let r = rig(&[("a.txt", "a\n")]);
    std::fs::write(r.root.join("a.txt"), "b\n").unwrap();
    r.listed("a.txt");
    std::fs::write(r.root.join("a.txt"), "a\n").unwrap();
    r.wait("a.txt no longer listed", |v| v.files.is_empty());
}

#[test]
fn revert_all_restores_every_file() {
    let r = rig(&[("a.txt", "a\n"), ("d/b.txt", "b\n")]);
    std::fs::write(r.root.join("a.txt"), "A\n").unwrap();
    std::fs::write(r.root.join("d/b.txt"), "B\n").unwrap();
    std::fs::write(r.root.join("d/c.txt"), "C\n").unwrap();
    r.wait("three files", |v| v.files.len() == 3);
    assert!(r.changes.revert_all().is_empty());
    assert_eq!(r.read("a.txt"), "a\n");
    assert_eq!(r.read("d/b.txt"), "b\n");
    assert!(!r.root.join("d/c.txt").exists());
    r.wait("nothing listed", |v| v.files.is_empty());
}

/// Gemini CLI and Qwen Code in their auto-edit modes write without a word
/// to ccbridge: a change seen on disk names the agents connected when it
/// was seen, all of them over the file's changes.
#[test]
fn a_change_seen_on_disk_names_the_agents_connected_then() {
    let r = rig(&[("a.txt", "one\n")]);
    let running = Arc::new(Mutex::new(vec!["Gemini CLI".to_owned()]));
    let now = running.clone();
    r.changes
        .set_running_agents(Arc::new(move || now.lock().unwrap().clone()));
    std::fs::write(r.root.join("a.txt"), "two\n").unwrap();
    let f = r.listed("a.txt");
    assert_eq!(
        f.sources,
        vec![Source::Disk {
            agents: vec!["Gemini CLI".into()]
        }]
    );
    // Later, Qwen Code is connected instead: both are named, once.
    *running.lock().unwrap() = vec!["Qwen Code".into(), "Qwen Code".into()];
    std::fs::write(r.root.join("a.txt"), "three\n").unwrap();
    let p = r.path("a.txt");
    let v = r.wait("the second change", |v| {
        v.files.iter().any(|f| {
            f.path == p
                && f.sources
                    != vec![Source::Disk {
                        agents: vec!["Gemini CLI".into()],
                    }]
        })
    });
    let f = v.files.iter().find(|f| f.path == p).unwrap();
    assert_eq!(
        f.sources,
        vec![Source::Disk {
            agents: vec!["Gemini CLI".into(), "Qwen Code".into()]
        }]
    );
    // The history's line says so too.
    let (_, unreviewed) = r.changes.unreviewed_since(0);
    assert_eq!(
        unreviewed,
        vec![crate::Unreviewed {
            path: p.clone(),
            by: None,
            connected: vec!["Gemini CLI".into(), "Qwen Code".into()],
        }]
    );
    // An agent's own report replaces what the disk said.
    r.changes.reported(&p, "Claude Code", "Edit");
    assert_eq!(
        r.file("a.txt").sources,
        vec![Source::Agent {
            agent: "Claude Code".into(),
            tool: "Edit".into()
        }]
    );
}
