//! One test of a test binary run again, alone, in a process of its own.
//!
//! Each crate's integration tests are one binary (`tests/it/main.rs`, a
//! module per topic), so they share a process and run side by side on its
//! threads. A few tests need something a process has only once: its
//! environment as the code under test reads it (`TMPDIR`, `QWEN_HOME`,
//! `XDG_STATE_HOME`; and `std::env::set_var` is unsound while other threads
//! may read the environment), its umask, its resident memory, or tracing's
//! per-process cache of which log sites are enabled. Such a test begins
//! with
//!
//! ```ignore
//! if !ccbridge_testkit::alone::rerun(module_path!(), "its_name", &[("TMPDIR", dir.as_os_str())]) {
//!     return;
//! }
//! ```
//!
//! In the run the harness started (beside every other test), [`rerun`]
//! runs the same binary again, filtered to exactly this test, with the
//! given variables added to its environment; it checks that this child
//! ran the test and passed (panicking with the child's output otherwise)
//! and returns `false`. In the child, it returns `true` and the test goes
//! on, the only test of its process.

use std::ffi::OsStr;
use std::process::{Command, Stdio};

/// Set in the child to the name of the test it runs.
const CHILD: &str = "CCBRIDGE_TESTKIT_ALONE";

/// See the module doc. `module_path` is the test's `module_path!()` and
/// `test` its function's name; `env` is added to the child's environment.
/// `true`: this is the child, run the test; `false`: the child passed.
pub fn rerun(module_path: &str, test: &str, env: &[(&str, &OsStr)]) -> bool {
    // libtest names a test by its path below the binary's crate root.
    let name = match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    };
    if std::env::var_os(CHILD).is_some_and(|v| v == name.as_str()) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(&exe)
        .args([name.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, &name)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {} again: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name}, run alone in a process of its own, failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    false
}
