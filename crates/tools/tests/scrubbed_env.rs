//! A command's environment loses ccbridge's variables and every variable
//! holding a secret. Its own test binary: it changes this process's
//! environment, which no other thread may read meanwhile.

use ccbridge_tools::execute_command::scrubbed_env;

#[test]
fn ccbridge_variables_and_secrets_leave_the_environment() {
    // SAFETY: the only test of this binary, single-threaded at this point.
    unsafe {
        std::env::set_var("CCBRIDGE_TEST_SCRUB", "1");
        std::env::set_var("CLAUDE_CODE_SSE_PORT", "12345");
        std::env::set_var("SCRUB_TEST_HOLDER", "Bearer s3cret-token");
        std::env::set_var("SCRUB_TEST_PLAIN", "kept");
    }
    let env = scrubbed_env(&["s3cret-token".into()]);
    let has = |k: &str| env.iter().any(|(n, _)| n == k);
    assert!(!has("CCBRIDGE_TEST_SCRUB"));
    assert!(!has("CLAUDE_CODE_SSE_PORT"));
    assert!(!has("SCRUB_TEST_HOLDER"));
    assert!(has("SCRUB_TEST_PLAIN"));
}
