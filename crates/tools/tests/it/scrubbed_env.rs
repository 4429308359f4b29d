//! A command's environment loses ccbridge's variables and every variable
//! holding a secret. The variables are this process's environment, which
//! the test's process shares with every other test of the binary: the
//! test runs again in a process of its own with them set
//! (`ccbridge_testkit::alone`).

use ccbridge_tools::execute_command::scrubbed_env;
use std::ffi::OsStr;

#[test]
fn ccbridge_variables_and_secrets_leave_the_environment() {
    let set = [
        ("CCBRIDGE_TEST_SCRUB", "1"),
        ("CLAUDE_CODE_SSE_PORT", "12345"),
        ("SCRUB_TEST_HOLDER", "Bearer s3cret-token"),
        ("SCRUB_TEST_PLAIN", "kept"),
    ]
    .map(|(k, v)| (k, OsStr::new(v)));
    if !ccbridge_testkit::alone::rerun(
        module_path!(),
        "ccbridge_variables_and_secrets_leave_the_environment",
        &set,
    ) {
        return;
    }
    let env = scrubbed_env(&["s3cret-token".into()]);
    let has = |k: &str| env.iter().any(|(n, _)| n == k);
    assert!(!has("CCBRIDGE_TEST_SCRUB"));
    assert!(!has("CLAUDE_CODE_SSE_PORT"));
    assert!(!has("SCRUB_TEST_HOLDER"));
    assert!(has("SCRUB_TEST_PLAIN"));
}
