//! The harness on its own, without ccbridge: the real CLI in tmux, sandboxed,
//! against the mock Messages API. If these fail, the real-client scenarios
//! cannot mean anything, so they are the first thing to check.

use ccbridge_testkit::claude::{claude_bin, Claude, ClaudeOptions, Sandbox};
use ccbridge_testkit::mock_anthropic::{tool_results, MockAnthropic};
use ccbridge_testkit::mock_model::Reply;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

#[test]
fn cli_starts_at_prompt_and_renders_mock_reply() {
    let mock = MockAnthropic::with_script([Reply::text("Hello from the mock model")]).unwrap();
    let sandbox = Sandbox::new().unwrap();
    let claude = Claude::start(&sandbox, &ClaudeOptions::new(claude_bin(), mock.url())).unwrap();
    claude.wait_prompt(T).unwrap();
    claude.type_and_submit("say hello", T).unwrap();
    claude
        .tmux
        .wait_for_text("Hello from the mock model", T)
        .unwrap();
    let req = mock.wait_for_request_containing("say hello", T).unwrap();
    assert_eq!(req.path, "/v1/messages?beta=true");
    assert_eq!(req.body["stream"], true);
}

#[test]
fn cli_executes_scripted_write_approved_in_terminal() {
    let sandbox = Sandbox::new().unwrap();
    let target = sandbox.workspace().join("brand_new.py");
    let mock = MockAnthropic::with_script([
        Reply::write(target.to_str().unwrap(), "x = 1\ny = 2\n").with_text("Creating the file."),
        Reply::text("Done writing."),
    ])
    .unwrap();
    // In the default mode a user may choose (auto mode, the mode users get,
    // would write without asking).
    let claude = Claude::start(
        &sandbox,
        &ClaudeOptions::new(claude_bin(), mock.url()).permission_mode("default"),
    )
    .unwrap();
    claude.wait_prompt(T).unwrap();
    claude.type_and_submit("create a file", T).unwrap();
    claude
        .tmux
        .wait_for_text("Do you want to create brand_new.py?", T)
        .unwrap();
    claude.answer_permission("1", T).unwrap();
    claude.tmux.wait_for_text("Done writing.", T).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x = 1\ny = 2\n");
    let reqs = mock.wait_for_turn_count(2, T).unwrap();
    let results = tool_results(&reqs[1].body);
    assert_eq!(results.len(), 1, "one tool_result expected: {results:?}");
    assert_eq!(Some(results[0].0.clone()), reqs[0].call_id);
    assert!(
        results[0].1.contains("created successfully") || results[0].1.contains("File created"),
        "tool_result: {}",
        results[0].1
    );
}

/// The premise of ccbridge's review hook: started as users start it (no
/// permission mode), the pinned CLI is in auto mode and writes a new file
/// without asking anyone. If a later CLI asks again, this fails, and the
/// hook's reason should be re-read.
#[test]
fn cli_started_as_users_start_it_writes_without_asking() {
    let sandbox = Sandbox::new().unwrap();
    let target = sandbox.workspace().join("unasked.py");
    let mock = MockAnthropic::with_script([
        Reply::write(target.to_str().unwrap(), "z = 3\n").with_text("Creating the file."),
        Reply::text("Done writing."),
    ])
    .unwrap();
    let claude = Claude::start(&sandbox, &ClaudeOptions::new(claude_bin(), mock.url())).unwrap();
    claude.wait_prompt(T).unwrap();
    claude.type_and_submit("create a file", T).unwrap();
    claude.tmux.wait_for_text("Done writing.", T).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "z = 3\n");
    assert!(
        !claude.transcript().contains("Do you want to create"),
        "auto mode asked:\n{}",
        claude.transcript()
    );
}
