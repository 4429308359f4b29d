//! The Gemini CLI and Qwen Code harness on its own, without ccbridge: each
//! real CLI in tmux, sandboxed, against its mock model API. If these fail,
//! the companion server's real-client scenarios cannot mean anything, so
//! they are the first thing to check.

use ccbridge_testkit::agents::{Agent, AgentCli, AgentOptions, Sandbox};
use ccbridge_testkit::mock_model::{Api, MockModel, Reply};
use ccbridge_testkit::{mock_gemini::MockGemini, mock_openai::MockOpenAi};
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

/// Starts `agent` against `mock`, submits a prompt with a unique marker
/// that the mock answers with another, and checks both ends: the reply on
/// screen, the prompt in the model's request.
fn prompt_reaches_the_mock_and_the_reply_the_screen<A: Api>(agent: Agent, mock: &MockModel<A>) {
    let id = format!("{:x}", std::process::id());
    let ask = format!("PROMPT-MARK-{id}");
    let answer = format!("REPLY-MARK-{id}");
    mock.on(
        ask.as_str(),
        [Reply::text(format!("Hello from the mock, {answer}"))],
    );
    let opts = AgentOptions::new(agent, mock.url());
    let sandbox = Sandbox::new(agent).unwrap();
    let cli = AgentCli::start(&sandbox, &opts).unwrap();
    ok(&cli, cli.submit(&format!("say hello {ask}"), T));
    ok(&cli, cli.wait_for_text(&answer, T));

    let turn = ok(&cli, mock.wait_for_request_containing(&ask, T));
    assert!(
        turn.last_user_text.contains(&format!("say hello {ask}")),
        "last user text: {:?}",
        turn.last_user_text
    );
    assert_eq!(
        turn.reply,
        Some(Reply::text(format!("Hello from the mock, {answer}")))
    );
    assert_eq!(mock.remaining(), 0);
}

/// Unwraps, or fails with the CLI's screen and stderr.
fn ok<T, E: std::fmt::Debug>(cli: &AgentCli, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{e:?}\n{}", cli.context()))
}

#[test]
fn gemini_cli_starts_at_prompt_and_renders_mock_reply() {
    let mock = MockGemini::start().unwrap();
    prompt_reaches_the_mock_and_the_reply_the_screen(Agent::Gemini, &mock);
    let turn = &mock.turns()[0];
    assert!(
        turn.path.ends_with(":streamGenerateContent?alt=sse"),
        "{}",
        turn.path
    );
    assert_eq!(turn.header("x-goog-api-key"), Some("test-key"));
}

#[test]
fn qwen_code_starts_at_prompt_and_renders_mock_reply() {
    let mock = MockOpenAi::start().unwrap();
    prompt_reaches_the_mock_and_the_reply_the_screen(Agent::Qwen, &mock);
    let turn = &mock.turns()[0];
    assert_eq!(turn.path, "/v1/chat/completions");
    assert_eq!(turn.body["stream"], true);
    assert_eq!(turn.header("authorization"), Some("Bearer test-key"));
}
