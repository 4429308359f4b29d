//! The tools that change things, over a real socket with a scripted
//! editor: writes are reviewed before they land (and land atomically, as
//! accepted), commands run only once allowed, and the approval mode decides
//! who is asked.

use crate::support::{fields, next_id, outcome, settings, start, start_with, until};
use ccbridge_mcp::{ApprovalMode, Settings};
use ccbridge_server::{CommandEvent, FrontendError, Verdict};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn write_file_accepted_with_the_users_edit_lands_as_edited() {
    let mut rig = start().await;
    rig.open_session().await;
    let call = rig.call_later(
        "write_file",
        json!({"path": "src/new.py", "content": "x = 1\ny = 2\n"}),
    );
    let (p, answer) = rig.next_review().await;
    assert_eq!(p.path, rig.path("src/new.py").display().to_string());
    assert_eq!(p.original, None, "a new file");
    assert_eq!(p.proposed, "x = 1\ny = 2\n");
    assert!(
        !rig.path("src").exists(),
        "nothing on disk before the verdict"
    );
    answer
        .send(Ok(Verdict::Accepted {
            contents: "x = 1\ny = 3\n".into(),
        }))
        .unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(!is_error, "{text}");
    let r = fields(&text);
    assert_eq!(r["status"], "accepted");
    assert_eq!(r["operation"], "created");
    let edits = r["user_edits"].as_str().unwrap();
    assert!(edits.contains("-y = 2\n+y = 3\n"), "{edits}");
    assert_eq!(
        std::fs::read_to_string(rig.path("src/new.py")).unwrap(),
        "x = 1\ny = 3\n"
    );
    rig.stop().await;
}

#[tokio::test]
async fn write_file_rejected_leaves_no_file_and_no_folder() {
    let mut rig = start().await;
    rig.open_session().await;
    let call = rig.call_later(
        "write_file",
        json!({"path": "deep/er/new.py", "content": "x = 1\n"}),
    );
    let (_, answer) = rig.next_review().await;
    answer.send(Ok(Verdict::Rejected)).unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(!is_error, "{text}");
    assert_eq!(fields(&text)["status"], "rejected");
    assert!(!rig.path("deep").exists());
    rig.stop().await;
}

#[tokio::test]
async fn the_files_bom_crlf_and_mode_survive_a_reviewed_write() {
    use std::os::unix::fs::PermissionsExt;
    let mut rig = start().await;
    rig.open_session().await;
    let f = rig.path("win.txt");
    std::fs::write(&f, "\u{FEFF}one\r\ntwo\r\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o751)).unwrap();
    let call = rig.call_later(
        "apply_diff",
        json!({"path": "win.txt", "diff": "<<<<<<< SEARCH\ntwo\n=======\nTWO\nthree\n>>>>>>> REPLACE\n"}),
    );
    let (p, answer) = rig.next_review().await;
    assert_eq!(p.original.as_deref(), Some("one\ntwo\n"), "shown as edited");
    assert_eq!(p.proposed, "one\nTWO\nthree\n");
    answer
        .send(Ok(Verdict::Accepted {
            contents: p.proposed.clone(),
        }))
        .unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(!is_error, "{text}");
    let r = fields(&text);
    assert_eq!(r["operation"], "modified");
    assert!(r.get("user_edits").is_none(), "{r}");
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "\u{FEFF}one\r\nTWO\r\nthree\r\n"
    );
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o751);
    rig.stop().await;
}

/// A file whose lines end both ways (part of it edited on Windows): the
/// whole file was converted to the endings most of its lines had, so every
/// line the change never touched could show as changed in version control.
/// Lines the change left alone keep their own ending; new ones take the
/// file's most common one.
#[tokio::test]
async fn regression_mixed_line_ends_are_kept_on_the_lines_the_change_left_alone() {
    let mut rig = start().await;
    rig.open_session().await;
    let f = rig.path("mixed.txt");
    std::fs::write(&f, "one\r\ntwo\nthree\r\nfour\r\nfive\n").unwrap();
    let call = rig.call_later(
        "apply_diff",
        json!({"path": "mixed.txt", "diff": "<<<<<<< SEARCH\nthree\n=======\nTHREE\n3b\n>>>>>>> REPLACE\n"}),
    );
    let (p, answer) = rig.next_review().await;
    assert_eq!(p.original.as_deref(), Some("one\ntwo\nthree\nfour\nfive\n"));
    answer
        .send(Ok(Verdict::Accepted {
            contents: p.proposed.clone(),
        }))
        .unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "one\r\ntwo\nTHREE\r\n3b\r\nfour\r\nfive\n"
    );
    rig.stop().await;
}

/// A read-only file was replaced after the review (renaming over it needs
/// only the folder's permission): refused before anyone is asked.
#[tokio::test]
async fn regression_a_read_only_file_is_refused_before_the_review() {
    use std::os::unix::fs::PermissionsExt;
    let mut rig = start().await;
    rig.open_session().await;
    let f = rig.path("locked.txt");
    std::fs::write(&f, "keep\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o444)).unwrap();
    let call = rig.call_later(
        "write_file",
        json!({"path": "locked.txt", "content": "changed\n"}),
    );
    // Answered without a review: nobody answers one here.
    let answer = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("answered without asking for a review");
    let (text, is_error) = outcome(answer.unwrap());
    assert!(is_error, "{text}");
    assert!(text.contains("locked.txt is read-only"), "{text}");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "keep\n");
    rig.stop().await;
}

/// The user took the final line break out in the review: it was put back
/// (the file's convention), while `user_edits` told the model it was gone.
#[tokio::test]
async fn regression_a_final_line_break_the_user_removed_stays_removed() {
    let mut rig = start().await;
    rig.open_session().await;
    let f = rig.path("notes.txt");
    std::fs::write(&f, "a\r\nb\r\n").unwrap();
    let call = rig.call_later(
        "write_file",
        json!({"path": "notes.txt", "content": "a\nB\n"}),
    );
    let (_, answer) = rig.next_review().await;
    answer
        .send(Ok(Verdict::Accepted {
            contents: "a\nB".into(),
        }))
        .unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(!is_error, "{text}");
    assert!(
        fields(&text)["user_edits"]
            .as_str()
            .unwrap()
            .contains("No newline at end of file"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a\r\nB");
    rig.stop().await;
}

/// A new `.bat` file the model wrote with CRLF line breaks was written with
/// LF (the review shows LF): a new file keeps the conventions of the text
/// as sent, as a replaced one keeps the original's.
#[tokio::test]
async fn regression_a_new_crlf_file_is_written_with_crlf() {
    let mut rig = start().await;
    rig.open_session().await;
    let call = rig.call_later(
        "write_file",
        json!({"path": "run.bat", "content": "\u{FEFF}@echo off\r\necho hi\r\n"}),
    );
    let (p, answer) = rig.next_review().await;
    assert_eq!(p.proposed, "@echo off\necho hi\n", "shown as edited");
    answer
        .send(Ok(Verdict::Accepted {
            contents: "@echo off\necho hello\n".into(),
        }))
        .unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::read_to_string(rig.path("run.bat")).unwrap(),
        "\u{FEFF}@echo off\r\necho hello\r\n"
    );
    rig.stop().await;
}

#[tokio::test]
async fn apply_diff_partial_success_names_the_failed_blocks() {
    let mut rig = start().await;
    rig.open_session().await;
    let diff = "<<<<<<< SEARCH\nprint('hi')\n=======\nprint('hello')\n>>>>>>> REPLACE\n\
                <<<<<<< SEARCH\nprint('nowhere')\n=======\nx\n>>>>>>> REPLACE\n";
    let call = rig.call_later("apply_diff", json!({"path": "hello.py", "diff": diff}));
    let (p, answer) = rig.next_review().await;
    assert_eq!(p.proposed, "print('hello')\nprint('bye')\n");
    answer
        .send(Ok(Verdict::Accepted {
            contents: p.proposed,
        }))
        .unwrap();
    let r = fields(&outcome(call.await.unwrap()).0);
    assert_eq!(r["partial"], true);
    assert_eq!(r["failed_blocks"], json!([2]));
    assert!(
        r["failures"][0]
            .as_str()
            .unwrap()
            .contains("print('nowhere')"),
        "{r}"
    );
    assert_eq!(
        std::fs::read_to_string(rig.path("hello.py")).unwrap(),
        "print('hello')\nprint('bye')\n"
    );
    rig.stop().await;
}

#[tokio::test]
async fn apply_diff_that_matches_nothing_or_twice_asks_nobody() {
    let mut rig = start().await;
    rig.open_session().await;
    std::fs::write(rig.path("twice.py"), "a = 1\na = 1\n").unwrap();
    let (text, is_error) = rig
        .call(
            "apply_diff",
            json!({"path": "twice.py", "diff": "<<<<<<< SEARCH\na = 1\n=======\na = 2\n>>>>>>> REPLACE\n"}),
        )
        .await;
    assert!(is_error);
    assert!(text.contains("ambiguous (2 matches found"), "{text}");
    let (text, is_error) = rig
        .call(
            "apply_diff",
            json!({"path": "hello.py", "diff": "<<<<<<< SEARCH\nnope\n=======\nx\n>>>>>>> REPLACE\n"}),
        )
        .await;
    assert!(is_error);
    assert!(text.contains("search block not found"), "{text}");
    assert_eq!(fields(&text)["failed_blocks"], json!([1]));
    let (text, is_error) = rig
        .call(
            "apply_diff",
            json!({"path": "missing.py", "diff": "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"}),
        )
        .await;
    assert!(is_error && text.contains("use write_file"), "{text}");
    assert!(rig.nothing_asked());
    rig.stop().await;
}

#[tokio::test]
async fn edits_of_one_file_wait_for_each_other_and_other_files_do_not() {
    let mut rig = start_with(Settings {
        lock_wait: Duration::from_millis(300),
        ..settings()
    })
    .await;
    rig.open_session().await;
    let first = rig.call_later("write_file", json!({"path": "hello.py", "content": "1\n"}));
    let (_, answer_first) = rig.next_review().await;
    // Another file is reviewed meanwhile.
    let other = rig.call_later("write_file", json!({"path": "other.py", "content": "2\n"}));
    let (p, answer_other) = rig.next_review().await;
    assert!(p.path.ends_with("other.py"));
    // The same file waits, then gives up with a clear error.
    let (text, is_error) = rig
        .call("write_file", json!({"path": "hello.py", "content": "3\n"}))
        .await;
    assert!(is_error);
    assert!(text.contains("still under review"), "{text}");
    answer_other.send(Ok(Verdict::Rejected)).unwrap();
    answer_first
        .send(Ok(Verdict::Accepted {
            contents: "1\n".into(),
        }))
        .unwrap();
    assert_eq!(
        fields(&outcome(other.await.unwrap()).0)["status"],
        "rejected"
    );
    assert_eq!(
        fields(&outcome(first.await.unwrap()).0)["status"],
        "accepted"
    );
    assert_eq!(
        std::fs::read_to_string(rig.path("hello.py")).unwrap(),
        "1\n"
    );
    rig.stop().await;
}

#[tokio::test]
async fn a_file_with_unsaved_changes_in_the_editor_is_not_written() {
    let mut rig = start().await;
    rig.open_session().await;
    rig.editor
        .dirty
        .lock()
        .unwrap()
        .push(rig.path("hello.py").display().to_string());
    let (text, is_error) = rig
        .call("write_file", json!({"path": "hello.py", "content": "x\n"}))
        .await;
    assert!(is_error && text.contains("unsaved changes"), "{text}");
    assert!(rig.nothing_asked());
    rig.stop().await;
}

#[tokio::test]
async fn an_editor_that_cannot_review_gets_nothing_written() {
    let mut rig = start().await;
    rig.open_session().await;
    let call = rig.call_later("write_file", json!({"path": "hello.py", "content": "x\n"}));
    let (_, answer) = rig.next_review().await;
    answer
        .send(Err(FrontendError::Unsupported("reviewing diffs")))
        .unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(is_error && text.contains("nothing was written"), "{text}");
    assert_eq!(
        std::fs::read_to_string(rig.path("hello.py")).unwrap(),
        "print('hi')\nprint('bye')\n"
    );
    rig.stop().await;
}

#[tokio::test]
async fn new_diagnostics_reported_after_the_write_come_back() {
    let mut rig = start_with(Settings {
        diagnostics_delay: Duration::from_secs(20),
        ..settings()
    })
    .await;
    rig.open_session().await;
    let uri = format!("file://{}", rig.path("hello.py").display());
    let diag = |line: u32, msg: &str| {
        json!({"message": msg, "severity": "Error",
               "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 1}}})
    };
    rig.editor
        .report(json!([{"uri": uri, "diagnostics": [diag(0, "old problem")]}]));
    let call = rig.call_later("write_file", json!({"path": "hello.py", "content": "x(\n"}));
    let (p, answer) = rig.next_review().await;
    answer
        .send(Ok(Verdict::Accepted {
            contents: p.proposed,
        }))
        .unwrap();
    // The editor reloads the file and reports on it.
    let editor = rig.editor.clone();
    let path = rig.path("hello.py");
    assert!(
        until(Duration::from_secs(10), || {
            std::fs::read_to_string(&path).ok().as_deref() == Some("x(\n")
        })
        .await
    );
    editor.report(
        json!([{"uri": uri, "diagnostics": [diag(0, "old problem"), diag(0, "unclosed (")]}]),
    );
    let r = fields(&outcome(call.await.unwrap()).0);
    assert_eq!(
        r["new_diagnostics"], "[error] hello.py:1 — unclosed (\n",
        "{r}"
    );
    rig.stop().await;
}

#[tokio::test]
async fn approval_mode_never_writes_without_asking_and_always_asks_for_reads() {
    let mut rig = start_with(Settings {
        approval: ApprovalMode::Never,
        ..settings()
    })
    .await;
    rig.open_session().await;
    let (text, _) = rig
        .call(
            "write_file",
            json!({"path": "hello.py", "content": "quiet\n"}),
        )
        .await;
    assert_eq!(fields(&text)["status"], "written", "{text}");
    assert_eq!(
        std::fs::read_to_string(rig.path("hello.py")).unwrap(),
        "quiet\n"
    );
    assert!(rig.nothing_asked());

    rig.ctx.set_approval(ApprovalMode::Always);
    let call = rig.call_later("read_file", json!({"path": "hello.py"}));
    let (a, answer) = rig.next_approval().await;
    assert_eq!(a.tool, "read_file");
    assert_eq!(a.summary, "Read hello.py");
    answer.send(Ok(false)).unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(is_error && text.contains("did not allow"), "{text}");
    assert!(!text.contains("quiet"), "{text}");

    rig.ctx.set_approval(ApprovalMode::WriteOnly);
    let (text, is_error) = rig.call("read_file", json!({"path": "hello.py"})).await;
    assert!(!is_error && text.contains("quiet"), "{text}");
    assert!(rig.nothing_asked());
    rig.stop().await;
}

#[tokio::test]
async fn an_allowed_command_runs_in_its_folder_with_its_output_shown_and_returned() {
    let mut rig = start().await;
    rig.open_session().await;
    std::fs::create_dir(rig.path("sub")).unwrap();
    let call = rig.call_later(
        "execute_command",
        json!({"command": "pwd; printf '\\033[31mred\\033[0m\\n'; echo oops >&2; exit 3", "cwd": "sub"}),
    );
    let (a, answer) = rig.next_approval().await;
    let sub = rig
        .path("sub")
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    assert_eq!(a.tool, "execute_command");
    assert_eq!(a.cwd.as_deref(), Some(sub.as_str()));
    assert!(a.command.as_deref().unwrap().starts_with("pwd;"));
    answer.send(Ok(true)).unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(!is_error, "{text}");
    let r = fields(&text);
    assert_eq!(r["exit_code"], 3);
    assert_eq!(r["cwd"], sub.as_str());
    let out = r["output"].as_str().unwrap();
    assert!(out.contains(&format!("{sub}\n")), "{out}");
    assert!(out.contains("red\n") && !out.contains('\u{1b}'), "{out}");
    assert!(out.contains("oops"), "{out}");
    let events = rig.editor.events();
    assert!(matches!(&events[0], CommandEvent::Started { cwd, .. } if *cwd == sub));
    let shown: String = events
        .iter()
        .filter_map(|e| match e {
            CommandEvent::Output { data, .. } => Some(data.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        shown.contains("\u{1b}[31mred"),
        "the editor gets the raw output: {shown:?}"
    );
    assert!(matches!(
        events.last().unwrap(),
        CommandEvent::Exited {
            exit_code: Some(3),
            timed_out: false,
            cancelled: false,
            ..
        }
    ));
    rig.stop().await;
}

#[tokio::test]
async fn a_denied_command_never_runs() {
    let mut rig = start().await;
    rig.open_session().await;
    let call = rig.call_later("execute_command", json!({"command": "touch ran"}));
    let (_, answer) = rig.next_approval().await;
    answer.send(Ok(false)).unwrap();
    let r = fields(&outcome(call.await.unwrap()).0);
    assert_eq!(r["status"], "rejected");
    assert!(!rig.path("ran").exists());
    assert!(rig.editor.events().is_empty());
    // An editor that cannot ask runs nothing either.
    let call = rig.call_later("execute_command", json!({"command": "touch ran"}));
    let (_, answer) = rig.next_approval().await;
    answer
        .send(Err(FrontendError::Unsupported("approving tool calls")))
        .unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(is_error && text.contains("it was not run"), "{text}");
    assert!(!rig.path("ran").exists());
    rig.stop().await;
}

#[tokio::test]
async fn a_command_outside_the_workspace_is_refused_before_asking() {
    let mut rig = start().await;
    rig.open_session().await;
    for cwd in ["..", "/tmp", "../../etc"] {
        let (text, is_error) = rig
            .call(
                "execute_command",
                json!({"command": "touch ran", "cwd": cwd}),
            )
            .await;
        assert!(is_error, "{cwd}: {text}");
    }
    assert!(rig.nothing_asked());
    rig.stop().await;
}

#[tokio::test]
async fn a_command_past_its_time_limit_is_stopped_with_its_whole_process_group() {
    let mut rig = start().await;
    rig.open_session().await;
    let call = rig.call_later(
        "execute_command",
        json!({"command": "sleep 300 & echo $! > bg.pid; wait", "timeout_secs": 1}),
    );
    let (_, answer) = rig.next_approval().await;
    answer.send(Ok(true)).unwrap();
    let r = fields(&outcome(call.await.unwrap()).0);
    assert_eq!(r["timed_out"], true, "{r}");
    assert_eq!(r["exit_code"], serde_json::Value::Null);
    let pid: i32 = std::fs::read_to_string(rig.path("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let dead = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true)
    };
    assert!(
        until(Duration::from_secs(10), dead).await,
        "the background sleep was killed too"
    );
    assert!(matches!(
        rig.editor.events().last().unwrap(),
        CommandEvent::Exited {
            timed_out: true,
            ..
        }
    ));
    rig.stop().await;
}

#[tokio::test]
async fn a_cancelled_command_is_stopped_with_its_whole_process_group() {
    let mut rig = start().await;
    rig.open_session().await;
    let id = next_id();
    let call = rig.call_later_with_id(
        id,
        "execute_command",
        json!({"command": "sleep 300 & echo $! > bg.pid; wait"}),
    );
    let (_, answer) = rig.next_approval().await;
    answer.send(Ok(true)).unwrap();
    let pid_file = rig.path("bg.pid");
    assert!(
        until(Duration::from_secs(10), || std::fs::read_to_string(
            &pid_file
        )
        .is_ok_and(|s| s.ends_with('\n')))
        .await
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let a = rig
        .notify(json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                       "params":{"requestId": id, "reason": "the user pressed Esc"}}))
        .await;
    assert_eq!(a.status, 202, "{}", a.head);
    let dead = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true)
    };
    assert!(
        until(Duration::from_secs(10), dead).await,
        "the command's process group outlived the cancelled call"
    );
    let editor = rig.editor.clone();
    assert!(
        until(Duration::from_secs(10), || editor.events().iter().any(
            |e| matches!(
                e,
                CommandEvent::Exited {
                    cancelled: true,
                    ..
                }
            )
        ))
        .await,
        "{:?}",
        rig.editor.events()
    );
    call.abort();
    rig.stop().await;
}

#[tokio::test]
async fn commands_beyond_the_cap_are_refused_at_once_until_one_finishes() {
    let mut rig = start_with(Settings {
        max_commands: 1,
        ..settings()
    })
    .await;
    rig.open_session().await;
    let first = rig.call_later("execute_command", json!({"command": "echo first"}));
    let (_, answer) = rig.next_approval().await;
    // The first waits for the user: a second is refused without asking.
    let (text, is_error) = rig
        .call("execute_command", json!({"command": "touch second"}))
        .await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("1 commands are already waiting or running"),
        "{text}"
    );
    assert!(rig.nothing_asked());
    assert!(!rig.path("second").exists());
    answer.send(Ok(true)).unwrap();
    let r = fields(&outcome(first.await.unwrap()).0);
    assert_eq!(r["exit_code"], 0, "{r}");
    // Finished: the slot is free again.
    let third = rig.call_later("execute_command", json!({"command": "echo third"}));
    let (_, answer) = rig.next_approval().await;
    answer.send(Ok(true)).unwrap();
    let r = fields(&outcome(third.await.unwrap()).0);
    assert_eq!(r["output"], "third\n", "{r}");
    rig.stop().await;
}

/// Issue 20, item 5: `apply_diff`, then the file changed on disk while the
/// review was open, then Accept: the newer line was lost and the tool said
/// it succeeded. Now nothing is written, the newer text stays, and the
/// agent is told to read the file again; a file that appeared while a new
/// one was under review is not replaced either.
#[tokio::test]
async fn accepting_a_review_never_overwrites_a_newer_change_on_disk() {
    let mut rig = start().await;
    rig.open_session().await;
    std::fs::write(rig.path("db.rs"), "fn open() {}\n").unwrap();
    let call = rig.call_later(
        "apply_diff",
        json!({"path": "db.rs", "diff": "<<<<<<< SEARCH\nfn open() {}\n=======\nfn open() -> Db {}\n>>>>>>> REPLACE\n"}),
    );
    let (_, answer) = rig.next_review().await;
    // The user (or another tool) saves a newer text meanwhile.
    std::fs::write(rig.path("db.rs"), "fn open() {}\nfn close() {}\n").unwrap();
    answer
        .send(Ok(Verdict::Accepted {
            contents: "fn open() -> Db {}\n".into(),
        }))
        .unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(is_error, "{text}");
    assert!(text.contains("changed on disk"), "{text}");
    assert_eq!(
        std::fs::read_to_string(rig.path("db.rs")).unwrap(),
        "fn open() {}\nfn close() {}\n",
        "the newer text was overwritten"
    );
    // A new file that someone else created during the review.
    let call = rig.call_later("write_file", json!({"path": "new.rs", "content": "mine\n"}));
    let (_, answer) = rig.next_review().await;
    std::fs::write(rig.path("new.rs"), "theirs\n").unwrap();
    answer
        .send(Ok(Verdict::Accepted {
            contents: "mine\n".into(),
        }))
        .unwrap();
    let (text, is_error) = outcome(call.await.unwrap());
    assert!(is_error && text.contains("changed on disk"), "{text}");
    assert_eq!(
        std::fs::read_to_string(rig.path("new.rs")).unwrap(),
        "theirs\n"
    );
    rig.stop().await;
}
