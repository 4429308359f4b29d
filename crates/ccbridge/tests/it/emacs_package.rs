//! The Emacs package (`editors/emacs/ccbridge.el`) in a real terminal
//! Emacs (`emacs -nw -Q` in tmux), driven with real keys, against the real
//! sidecar it spawns, with this test playing Claude over a real WebSocket
//! (a `claude-code` session of `IdeClient`). What Claude sees is checked at
//! Claude's end: `selection_changed`, `at_mentioned`, tool results.
//!
//! Also here, so `cargo test` runs them: the package's ERT suite, its
//! byte-compilation (no warning allowed) and package-lint.
//!
//! Needs Emacs 28+ (`emacs-nox`), and Debian's `elpa-flycheck` and
//! `elpa-package-lint` for the Flycheck and package-lint tests;
//! `scripts/test` installs them. Without them the tests fail with that
//! instruction; none is skipped.

use crate::claude_side::{
    assert_saved, connect, next_note, poll_tool, range, start_open_diff, verdict,
};
use crate::editor_scenarios::{EditorUnderTest, TWO_HUNKS};
use ccbridge_client::ws_client::IdeClient;
use ccbridge_testkit::emacs::{self, lisp_str, Emacs, EmacsOptions};
use ccbridge_testkit::poll_until;
use ccbridge_testkit::HELLO_PY as HELLO;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const STEP: Duration = Duration::from_secs(15);

/// Emacs with the package in a fresh git workspace holding hello.py.
/// Field order is drop order: Emacs (and its sidecar) first.
pub(crate) struct Rig {
    emacs: Emacs,
    ws: PathBuf,
    lock_dir: PathBuf,
    dir: tempfile::TempDir,
}

struct Setup<'a> {
    /// Lisp evaluated before `ccbridge-mode` is turned on.
    before: &'a str,
    /// Directories put first on Emacs's `PATH`.
    path: Vec<PathBuf>,
    load_path: Vec<PathBuf>,
    /// Turn the mode on and wait for the sidecar.
    start: bool,
    /// Emacs works in `ws`, a symbolic link to the folder (`real`), as a
    /// user whose project is reached through one.
    through_link: bool,
}

impl Default for Setup<'_> {
    fn default() -> Self {
        Setup {
            before: "",
            path: vec![],
            load_path: vec![],
            start: true,
            through_link: false,
        }
    }
}

fn rig(before: &str) -> Rig {
    rig_with(Setup {
        before,
        ..Setup::default()
    })
}

fn rig_with(setup: Setup) -> Rig {
    let dir = ccbridge_testkit::temp_dir("ccbridge-emacs-").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    let home = root.join("home");
    let lock_dir = root.join("ide");
    let real = if setup.through_link {
        root.join("real")
    } else {
        ws.clone()
    };
    std::fs::create_dir_all(&real).unwrap();
    if setup.through_link {
        std::os::unix::fs::symlink(&real, &ws).unwrap();
    }
    std::fs::create_dir_all(&home).unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&real)
        .status()
        .expect("git (project.el finds the project by its .git)");
    assert!(git.success());
    std::fs::write(real.join("hello.py"), HELLO).unwrap();
    let mut opts = EmacsOptions::for_package(&ws);
    opts.env.push(("HOME".into(), home.display().to_string()));
    opts.env.push(("TMPDIR".into(), home.display().to_string()));
    if !setup.path.is_empty() {
        let mut path: Vec<PathBuf> = setup.path.clone();
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        opts.env.push((
            "PATH".into(),
            std::env::join_paths(path)
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        ));
    }
    opts.load_path.extend(setup.load_path.iter().cloned());
    let emacs = Emacs::start(&opts).expect("start Emacs");
    emacs.eval(&format!(
        "(setq ccbridge-program {} ccbridge-program-args (list \"--lock-dir\" {} \
         \"--selection-debounce-ms\" \"0\") ccbridge-selection-debounce 0) {}",
        lisp_str(env!("CARGO_BIN_EXE_ccbridge")),
        lisp_str(&lock_dir.display().to_string()),
        setup.before
    ));
    let rig = Rig {
        emacs,
        ws,
        lock_dir,
        dir,
    };
    if setup.start {
        rig.visit("hello.py");
        rig.emacs.eval("(ccbridge-mode 1)");
        rig.wait_running();
    }
    rig
}

impl Rig {
    fn path(&self, rel: &str) -> String {
        self.ws.join(rel).display().to_string()
    }

    fn visit(&self, rel: &str) {
        self.emacs
            .eval(&format!("(find-file {})", lisp_str(&self.path(rel))));
    }

    /// The workspace's session, once its sidecar answered `initialize`.
    fn wait_running(&self) -> Value {
        self.emacs.wait(
            "the sidecar to answer initialize",
            &format!(
                "(let ((s (car (ccbridge-info)))) (and s (equal (plist-get s :root) {}) \
                 (equal (plist-get s :status) \"running\") s))",
                lisp_str(&self.ws.display().to_string())
            ),
            STEP,
        )
    }

    fn info(&self) -> Value {
        self.emacs.json("(car (ccbridge-info))")
    }

    fn lock(&self) -> Value {
        let path = self.info()["lockFile"].as_str().unwrap().to_owned();
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// This test as a Claude session: connected, tools listed, pid
    /// reported, and Emacs told.
    async fn claude(&self) -> IdeClient {
        let port = self.info()["port"].as_u64().unwrap() as u16;
        let token = self.lock()["authToken"].as_str().unwrap().to_owned();
        let c = connect(port, &token).await;
        self.emacs.wait(
            "Emacs to see Claude connected",
            "(> (plist-get (car (ccbridge-info)) :clients) 0)",
            STEP,
        );
        c
    }

    fn wait_message(&self, needle: &str) {
        self.emacs.wait(
            &format!("the message {needle:?}"),
            &format!(
                "(string-search {} (ccbridge-test-messages))",
                lisp_str(needle)
            ),
            STEP,
        );
    }

    fn buffer_text(&self, rel: &str) -> Value {
        self.emacs.json(&format!(
            "(ccbridge-test-file-text {})",
            lisp_str(&self.path(rel))
        ))
    }

    /// C-g, alone (Emacs discards keys typed ahead of a quit), and waits
    /// until the region is inactive.
    /// A C-g that arrives while Emacs is busy (a timer, an emacsclient
    /// call) quits that instead of running `keyboard-quit`: pressed again,
    /// as a user would, until the region is gone.
    fn quit_keys(&self) {
        let inactive = "(not (with-current-buffer (window-buffer) (region-active-p)))";
        let done = poll_until(STEP, Duration::from_millis(1), || {
            self.emacs.keys("C-g");
            poll_until(Duration::from_secs(1), Duration::from_millis(20), || {
                (self.emacs.json(inactive) == true).then_some(())
            })
        });
        assert!(
            done.is_some(),
            "C-g never deactivated the region\n{}",
            self.emacs.screen()
        );
    }

    /// M-x COMMAND RET, typed.
    fn m_x(&self, command: &str) {
        self.emacs.keys("M-x");
        self.emacs.type_text(command);
        self.emacs.keys("RET");
    }
}

/// The Emacs face of the shared scenarios (`editor_scenarios`): the
/// package's keys in its smerge review buffer.
impl EditorUnderTest for Rig {
    const IDE: &'static str = "Emacs";

    fn start() -> Rig {
        rig("")
    }

    fn start_with_path(dir: &Path) -> Rig {
        rig_with(Setup {
            path: vec![dir.to_owned()],
            before: "(setq ccbridge-terminal-backend 'term)",
            ..Setup::default()
        })
    }

    fn run_claude_command(&mut self) {
        self.m_x("ccbridge-claude");
    }

    fn wait_claude_terminal(&mut self, needle: &str) -> String {
        let text = self.emacs.wait(
            &format!("Claude's terminal to show {needle:?}"),
            &format!(
                "(let* ((b (get-buffer \"*claude: ws*\")) \
                        (text (and b (replace-regexp-in-string \"\n\" \"\" (ccbridge-test-buffer-text b))))) \
                   (and text (string-search {} text) text))",
                lisp_str(needle)
            ),
            STEP,
        );
        text.as_str().unwrap().to_owned()
    }

    fn back_to_the_file(&mut self) {
        self.emacs.eval("(select-window (next-window))");
    }

    fn in_claude_terminal(&mut self) -> bool {
        self.emacs
            .json("(equal (buffer-name (window-buffer)) \"*claude: ws*\")")
            == Value::Bool(true)
    }

    fn terminal_count(&mut self) -> usize {
        let n = self.emacs.json(
            "(cl-count-if (lambda (b) (string-prefix-p \"*claude\" (buffer-name b))) (buffer-list))",
        );
        n.as_u64().unwrap() as usize
    }

    fn workspace(&self) -> &Path {
        &self.ws
    }

    fn lock_dir(&self) -> &Path {
        &self.lock_dir
    }

    fn init(&mut self) -> Value {
        self.emacs
            .json("(ccbridge--session-init (ccbridge--session (ccbridge--buffer-root)))")
    }

    fn wait_claude_connected(&mut self) {
        self.emacs.wait(
            "Emacs to see Claude connected",
            "(> (plist-get (car (ccbridge-info)) :clients) 0)",
            STEP,
        );
    }

    fn home(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join("home")
    }

    fn visit(&mut self, rel: &str) {
        Rig::visit(self, rel);
    }

    fn indicator(&mut self) -> String {
        self.emacs
            .string("(with-current-buffer \"hello.py\" (ccbridge-mode-line-string))")
    }

    fn status(&mut self) -> String {
        self.emacs
            .string("(or (plist-get (car (ccbridge-info)) :status) \"\")")
    }

    fn status_report(&mut self) -> String {
        self.emacs
            .eval("(when (get-buffer \"*ccbridge status*\") (kill-buffer \"*ccbridge status*\"))");
        self.m_x("ccbridge-status");
        let report = self.emacs.wait(
            "the status buffer",
            "(ccbridge-test-buffer-text \"*ccbridge status*\")",
            STEP,
        );
        report.as_str().unwrap().to_owned()
    }

    fn wait_file_at(&mut self, rel: &str, line: u64) {
        self.emacs.wait(
            &format!("{rel} at line {line}"),
            &format!(
                "(and (equal (buffer-file-name (window-buffer)) {}) \
                      (= {line} (with-current-buffer (window-buffer) \
                                  (line-number-at-pos (window-point)))))",
                lisp_str(&self.path(rel))
            ),
            STEP,
        );
    }

    fn type_line_at_top(&mut self, line: &str) {
        self.emacs.keys("M-<");
        self.emacs.type_text(line);
        self.emacs.keys("RET");
    }

    fn save(&mut self) {
        self.emacs.keys("C-x C-s");
    }

    fn wait_following_disk(&mut self) {
        self.emacs.wait(
            "the directory watched",
            "(> (hash-table-count ccbridge--watches) 0)",
            STEP,
        );
    }

    fn buffer_text(&mut self, rel: &str) -> String {
        let text = Rig::buffer_text(self, rel);
        text.as_str().unwrap().trim_end_matches('\n').to_owned()
    }

    fn send_lines(&mut self, first: usize, last: usize) {
        // From the start of `first` to the start of the line after `last`.
        let down = |n: usize| vec!["C-n"; n].join(" ");
        let keys = format!("M-< {} C-SPC {}", down(first - 1), down(last - first + 1));
        self.emacs.keys(keys.trim());
        self.m_x("ccbridge-send");
    }

    fn send_file(&mut self) {
        self.quit_keys();
        self.m_x("ccbridge-send");
    }

    /// A substring: Emacs quotes it as `text-quoting-style' says.
    const BIN_OPTION: &'static str = "ccbridge-program";

    fn stop_and_set_program(&mut self, bin: &str, extra: &[&str]) {
        self.m_x("ccbridge-stop");
        self.emacs.wait(
            "the sidecar to stop",
            "(equal (plist-get (car (ccbridge-info)) :status) \"stopped\")",
            STEP,
        );
        let extra: Vec<String> = extra.iter().map(|a| lisp_str(a)).collect();
        self.emacs.eval(&format!(
            "(setq ccbridge-program {} \
                   ccbridge-program-args (append ccbridge-program-args (list {})))",
            lisp_str(bin),
            extra.join(" ")
        ));
    }

    /// Waits until the command said how the start went (it always does).
    fn start_command(&mut self) {
        let said = "(+ (ccbridge-test-count \"ccbridge: not started\" (ccbridge-test-messages)) \
                       (ccbridge-test-count \"ccbridge: running for\" (ccbridge-test-messages)))";
        // *Messages* folds a message repeated at once into one line
        // ("… [2 times]"): another goes between.
        self.emacs.eval("(message \"ccbridge-test: starting\")");
        let before = self.emacs.json(said).as_u64().unwrap();
        self.m_x("ccbridge-start");
        self.emacs.wait(
            "ccbridge-start to say how the start went",
            &format!("(> {said} {before})"),
            STEP,
        );
    }

    const PATH_MAP_FIRST: &'static str = "entry 1 of";

    fn set_remote(&mut self, prefix: Value, path_map: Value) {
        let prefix = match &prefix {
            Value::Array(words) => {
                let words: Vec<String> = words
                    .iter()
                    .map(|w| lisp_str(w.as_str().unwrap()))
                    .collect();
                format!("(list {})", words.join(" "))
            }
            other => lisp_str(other.as_str().unwrap()),
        };
        let pairs: Vec<String> = path_map
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                format!(
                    "(cons {} {})",
                    lisp_str(p[0].as_str().unwrap()),
                    lisp_str(p[1].as_str().unwrap())
                )
            })
            .collect();
        self.emacs.eval(&format!(
            "(setq ccbridge-command-prefix {prefix} ccbridge-command-quote t \
             ccbridge-path-map (list {}))",
            pairs.join(" ")
        ));
    }

    fn wait_errors(&mut self, needle: &str) -> String {
        let warnings = self.emacs.wait(
            &format!("a warning saying {needle:?}"),
            &format!(
                "(let ((w (ccbridge-test-buffer-text \"*Warnings*\"))) \
                   (and w (string-search {} w) w))",
                lisp_str(needle)
            ),
            STEP,
        );
        warnings.as_str().unwrap().to_owned()
    }

    fn wait_told(&mut self, needle: &str) -> Vec<String> {
        self.wait_message(needle);
        let messages = self.emacs.string("(ccbridge-test-messages)");
        let told = messages.lines().filter(|l| l.contains(needle));
        told.map(str::to_owned).collect()
    }

    fn append_to_proposal(&mut self, line: &str) {
        self.emacs.eval(&format!(
            "(with-current-buffer (ccbridge-test-review-buffer) \
               (save-excursion (goto-char (point-max)) (insert {} \"\\n\")))",
            lisp_str(line)
        ));
    }

    /// The approval buffer's text; Emacs shows it in logical order.
    fn wait_approval(&mut self) -> String {
        self.emacs.wait(
            "the approval buffer",
            "(eq major-mode 'ccbridge-approval-mode)",
            STEP,
        );
        assert_eq!(
            self.emacs.string("(format \"%s\" bidi-display-reordering)"),
            "nil"
        );
        self.emacs
            .string("(buffer-substring-no-properties (point-min) (point-max))")
    }

    fn answer_approval(&mut self, allow: bool) {
        self.emacs.keys(if allow { "y" } else { "n" });
        self.emacs.wait(
            "the approval answered",
            "(not (eq major-mode 'ccbridge-approval-mode))",
            STEP,
        );
    }

    fn wait_command_output(&mut self, needle: &str) -> String {
        let shown = self.emacs.wait(
            &format!("{needle:?} in the output buffer"),
            &format!(
                "(let ((b (cl-find-if (lambda (b) (string-prefix-p \"*ccbridge command\" (buffer-name b))) \
                                      (buffer-list)))) \
                   (and b (string-search {} (ccbridge-test-buffer-text b)) \
                        (ccbridge-test-buffer-text b)))",
                lisp_str(needle)
            ),
            STEP,
        );
        shown.as_str().unwrap().to_owned()
    }

    fn only_window(&mut self) {
        self.emacs.eval("(delete-other-windows)");
    }

    fn wait_review(&mut self) {
        self.emacs
            .wait("the review to open", "(ccbridge-test-review-buffer)", STEP);
    }

    fn review_file(&mut self) -> String {
        self.emacs.string(
            "(ccbridge--review-path \
               (car (ccbridge--session-reviews (car (hash-table-values ccbridge--sessions)))))",
        )
    }

    fn wait_review_closed(&mut self) {
        self.emacs.wait(
            "the review to close",
            "(and (null (car (plist-get (car (ccbridge-info)) :reviews))) \
                  (not (cl-some (lambda (b) (buffer-local-value 'ccbridge--current-review b)) \
                                (buffer-list))))",
            STEP,
        );
    }

    fn accept_review(&mut self) {
        self.emacs.keys("C-c C-c");
    }

    fn accept_review_anyway(&mut self) {
        self.emacs.keys("C-u C-c C-c");
    }

    fn close_review(&mut self) {
        self.emacs.keys("C-x k RET");
    }

    /// The review opens with point on its first hunk.
    fn to_first_hunk(&mut self) {
        self.emacs.keys("M-<");
    }

    fn decide_hunk(&mut self, accept: bool) {
        const LEFT: &str = "(let ((b (ccbridge-test-review-buffer))) \
            (if b (with-current-buffer b (how-many \"^<<<<<<< \" (point-min) (point-max))) 0))";
        let before = self.emacs.json(LEFT).as_u64().unwrap();
        self.emacs.keys(if accept { "C-c C-a" } else { "C-c C-r" });
        self.emacs
            .wait("the hunk decided", &format!("(< {LEFT} {before})"), STEP);
    }

    fn to_last_line(&mut self) {
        self.emacs.keys("M->");
    }

    fn hunk_command(&mut self, accept: bool) {
        self.emacs.keys(if accept { "C-c C-a" } else { "C-c C-r" });
    }

    /// Saving the proposal accepts what is left of it, as C-c C-c does.
    fn after_last_hunk(&mut self) {
        self.wait_message("no hunk left");
        self.emacs.keys("C-x C-s");
    }

    fn wait_review_shows(&mut self, needle: &str) -> String {
        let shown = self.emacs.wait(
            &format!("the review to show {needle:?}"),
            &format!(
                "(let ((s (ccbridge-test-review-shown))) (and (string-search {} s) s))",
                lisp_str(needle)
            ),
            STEP,
        );
        shown.as_str().unwrap_or_default().to_string()
    }

    fn second(&mut self) -> (Box<dyn std::any::Any>, PathBuf) {
        let mut opts = EmacsOptions::for_package(&self.ws);
        let home2 = self.dir.path().join("home2");
        std::fs::create_dir_all(&home2).unwrap();
        opts.env.push(("HOME".into(), home2.display().to_string()));
        let second = Emacs::start(&opts).unwrap();
        second.eval(&format!(
            "(setq ccbridge-program {} ccbridge-program-args (list \"--lock-dir\" {})) \
             (find-file {}) (ccbridge-mode 1)",
            lisp_str(env!("CARGO_BIN_EXE_ccbridge")),
            lisp_str(&self.lock_dir.display().to_string()),
            lisp_str(&self.path("hello.py"))
        ));
        let lock = second.wait(
            "the second sidecar",
            "(plist-get (car (ccbridge-info)) :lockFile)",
            STEP,
        );
        let lock = PathBuf::from(lock.as_str().unwrap());
        (Box::new(second), lock)
    }

    fn quit(self) -> (bool, tempfile::TempDir) {
        let Rig { emacs, dir, .. } = self;
        (emacs.quit(), dir)
    }
}

/// The `selection_changed` Claude receives next with `text` and `range`.
async fn selection(c: &mut IdeClient, text: &str, want: [u64; 4]) -> Value {
    let deadline = tokio::time::Instant::now() + STEP;
    let mut seen = vec![];
    while tokio::time::Instant::now() < deadline {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next_notification(left).await.unwrap() {
            Some(n) if n.method == "selection_changed" => {
                let p = n.params.map(|p| p.to_value()).unwrap_or(Value::Null);
                if p["text"] == text && range(&p) == want {
                    return p;
                }
                seen.push(p);
            }
            Some(_) => {}
            None => break,
        }
    }
    panic!("no selection_changed with text {text:?} at {want:?}; seen: {seen:#?}");
}

// ───────────────────────── the package itself ─────────────────────────

/// `emacs -Q --batch` with `args`, in a copy of the package (so no .elc
/// lands in the source tree); returns (success, stdout + stderr).
fn batch(args: &[&str], load_path: &[PathBuf]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    for f in ["ccbridge.el", "test/ccbridge-tests.el"] {
        let to = dir.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(emacs::package_source().join(f), &to).unwrap();
    }
    let mut cmd = Command::new(emacs::emacs_bin());
    cmd.args(["-Q", "--batch"]).current_dir(dir.path());
    for d in load_path {
        cmd.arg("-L").arg(d);
    }
    let out = cmd.args(args).output().expect("run emacs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The Emacs these tests drive runs the package as users install it,
/// byte-compiled (`EmacsOptions::for_package`), not its source.
#[test]
fn the_tests_run_the_package_byte_compiled() {
    let rig = rig("");
    let file = rig.emacs.string("(symbol-file 'ccbridge-mode 'defun)");
    assert!(
        file.ends_with("ccbridge.elc"),
        "ccbridge-mode came from {file}"
    );
}

#[test]
fn the_package_byte_compiles_without_a_warning() {
    let (ok, out) = batch(
        &[
            "--eval",
            "(setq byte-compile-error-on-warn t)",
            "-f",
            "batch-byte-compile",
            "ccbridge.el",
        ],
        &[],
    );
    assert!(ok, "byte-compilation failed:\n{out}");
    assert!(!out.contains("Warning"), "{out}");
}

#[test]
fn the_ert_suite_passes() {
    let (ok, out) = batch(
        &[
            "-L",
            ".",
            "-l",
            "test/ccbridge-tests.el",
            "-f",
            "ert-run-tests-batch-and-exit",
        ],
        &[],
    );
    assert!(ok, "{out}");
    let summary = out
        .lines()
        .find(|l| l.starts_with("Ran "))
        .unwrap_or_else(|| panic!("no ERT summary in\n{out}"));
    assert!(summary.contains(", 0 unexpected"), "{summary}\n{out}");
    let ran: u32 = summary
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(ran >= 20, "only {ran} ERT tests ran:\n{out}");
}

/// package-lint 0.16 (Debian's) predates Emacs 28: it calls a dependency
/// on Emacs 28 "uninstallable in all released Emacs versions". That one
/// warning is expected; anything else fails.
#[test]
fn package_lint_finds_nothing_but_its_pre_emacs_28_warning() {
    emacs::system_elpa_package("package-lint").unwrap_or_else(|e| panic!("{e}"));
    let (_, out) = batch(
        &[
            "--eval",
            "(require 'package-lint)",
            "-f",
            "package-lint-batch-and-exit",
            "ccbridge.el",
        ],
        &emacs::system_elpa_load_path(),
    );
    let problems: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("ccbridge.el:"))
        .filter(|l| {
            !l.ends_with("This makes the package uninstallable in all released Emacs versions.")
        })
        .collect();
    assert!(problems.is_empty(), "package-lint:\n{out}");
    assert!(!out.contains("Cannot open load file"), "{out}");
}

// ───────────────────────── what Claude sees ─────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn region_and_point_reach_claude_with_utf16_positions() {
    let rig = rig("");
    std::fs::write(
        rig.ws.join("multi.txt"),
        "héllo wörld 😀 end\nsecond line\nthird ünïcode line\nlast\n",
    )
    .unwrap();
    rig.visit("multi.txt");
    let mut c = rig.claude().await;
    let path = rig.path("multi.txt");

    // A word after two non-ASCII characters (one UTF-16 unit each).
    rig.emacs.keys("M-< C-f C-f C-f C-f C-f C-f C-SPC M-f");
    let s = selection(&mut c, "wörld", [0, 6, 0, 11]).await;
    assert_eq!(s["filePath"], path);
    // Backwards over an emoji: two UTF-16 units, one Emacs character.
    rig.emacs.keys("C-e C-SPC C-b C-b C-b C-b C-b");
    selection(&mut c, "😀 end", [0, 12, 0, 18]).await;
    // Whole lines: the end is the start of the line after.
    rig.quit_keys();
    rig.emacs.keys("C-n C-a C-SPC C-n C-n");
    selection(&mut c, "second line\nthird ünïcode line\n", [1, 0, 3, 0]).await;
    // No region: point alone, after the emoji.
    rig.quit_keys();
    rig.emacs.keys("M-< C-e");
    selection(&mut c, "", [0, 18, 0, 18]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_copied_and_left_at_once_stays_claudes_selection() {
    let rig = rig("(setq ccbridge-selection-hold 60)");
    let mut c = rig.claude().await;
    // M-w copies and deactivates the region in the same command.
    rig.emacs.keys("M-< C-n C-SPC C-e M-w");
    selection(&mut c, "    message = \"hello \" + name", [1, 0, 1, 29]).await;
    // Moving on within the hold sends no bare cursor.
    rig.emacs.keys("C-n");
    let next = c
        .next_notification(Duration::from_millis(500))
        .await
        .unwrap();
    assert!(
        next.filter(|n| n.method == "selection_changed").is_none(),
        "the selection was replaced within the hold"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flymake_diagnostics_reach_claude_with_utf16_columns() {
    let rig = rig("");
    std::fs::write(rig.ws.join("other.txt"), "😀 x\n").unwrap();
    rig.visit("other.txt");
    let mut c = rig.claude().await;
    let other = rig.path("other.txt");

    // Flymake → getDiagnostics, columns in UTF-16 (the emoji counts two).
    rig.emacs.eval(&format!(
        "(with-current-buffer (find-buffer-visiting {}) \
           (ccbridge-test-set-diagnostics (list (list 3 4 :error \"bad x\"))))",
        lisp_str(&other)
    ));
    let uri = format!("file://{other}");
    let diags = poll_tool(&mut c, "getDiagnostics", json!({"uri": uri}), |v| {
        v.as_array().is_some_and(|a| {
            a.iter()
                .any(|f| f["diagnostics"].as_array().is_some_and(|d| !d.is_empty()))
        })
    })
    .await;
    let d = &diags[0]["diagnostics"][0];
    assert_eq!(d["message"], "bad x");
    assert_eq!(d["severity"], "Error", "{d}");
    assert_eq!(d["range"]["start"]["character"], 3, "{d}");
    assert_eq!(d["range"]["end"]["character"], 4, "{d}");
    assert_eq!(d["source"], "ccbridge-test", "{d}");
    // Cleared in Emacs, cleared for Claude.
    rig.emacs.eval(&format!(
        "(with-current-buffer (find-buffer-visiting {}) (ccbridge-test-set-diagnostics nil))",
        lisp_str(&other)
    ));
    poll_tool(&mut c, "getDiagnostics", json!({"uri": uri}), |v| {
        v.as_array().is_some_and(|a| {
            a.iter()
                .all(|f| f["diagnostics"].as_array().is_some_and(|d| d.is_empty()))
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flycheck_errors_reach_claude() {
    emacs::system_elpa_package("flycheck").unwrap_or_else(|e| panic!("{e}"));
    let rig = rig_with(Setup {
        load_path: emacs::system_elpa_load_path(),
        ..Setup::default()
    });
    assert_eq!(rig.emacs.json("(featurep 'flycheck)"), true);
    std::fs::write(rig.ws.join("notes.txt"), "😀 x\nline two\n").unwrap();
    rig.visit("notes.txt");
    let mut c = rig.claude().await;
    let notes = rig.path("notes.txt");
    rig.emacs.eval(
        "(ccbridge-test-set-flycheck-errors (list (list 1 3 1 4 'warning \"flycheck says\")))",
    );
    let uri = format!("file://{notes}");
    let diags = poll_tool(&mut c, "getDiagnostics", json!({"uri": uri}), |v| {
        v.as_array().is_some_and(|a| {
            a.iter()
                .any(|f| f["diagnostics"].as_array().is_some_and(|d| !d.is_empty()))
        })
    })
    .await;
    let d = &diags[0]["diagnostics"][0];
    assert_eq!(d["message"], "flycheck says");
    assert_eq!(d["severity"], "Warning", "{d}");
    assert_eq!(d["range"]["start"]["line"], 0, "{d}");
    // Column 3 (1-based characters) after the emoji: UTF-16 3.
    assert_eq!(d["range"]["start"]["character"], 3, "{d}");
    assert_eq!(d["range"]["end"]["character"], 4, "{d}");
}

/// The region and the file:
/// `editor_scenarios::emacs::send_mentions_the_selected_lines_or_the_file`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_mentions_dired_marked_files() {
    let rig = rig("");
    std::fs::create_dir_all(rig.ws.join("src")).unwrap();
    std::fs::write(rig.ws.join("src/lib.rs"), "fn main() {}\n").unwrap();
    let mut c = rig.claude().await;
    let hello = rig.path("hello.py");

    // Dired: the marked files, in the listing's order.
    rig.emacs.eval(&format!(
        "(progn (dired {}) (dired-goto-file {}))",
        lisp_str(&rig.ws.display().to_string()),
        lisp_str(&hello)
    ));
    rig.emacs.keys("m");
    rig.emacs
        .eval(&format!("(dired-goto-file {})", lisp_str(&rig.path("src"))));
    rig.emacs.keys("m");
    rig.emacs
        .wait("two marks", "(= 2 (length (dired-get-marked-files)))", STEP);
    rig.m_x("ccbridge-send");
    let first = next_note(&mut c, "at_mentioned").await;
    let second = next_note(&mut c, "at_mentioned").await;
    assert_eq!(first["filePath"], hello);
    assert_eq!(second["filePath"], rig.path("src"));
}

// ───────────────────────── reviews ─────────────────────────

/// Starts Claude's `openDiff` of `hello.py` → `proposed` and waits until
/// Emacs shows the review. The call's task returns the tool's text.
async fn open_diff(
    rig: &Rig,
    c: IdeClient,
    proposed: &str,
) -> tokio::task::JoinHandle<(IdeClient, String)> {
    let path = rig.path("hello.py");
    let task = start_open_diff(c, path, proposed);
    rig.emacs
        .wait("the review to open", "(ccbridge-test-review-buffer)", STEP);
    task
}

async fn review(
    before: &str,
    proposed: &str,
) -> (Rig, tokio::task::JoinHandle<(IdeClient, String)>) {
    let rig = rig(before);
    let c = rig.claude().await;
    let task = open_diff(&rig, c, proposed).await;
    (rig, task)
}

/// The review's buffers are gone and the selected window shows hello.py.
fn assert_review_closed(rig: &Rig) {
    rig.emacs.wait(
        "the review to close",
        "(and (null (car (plist-get (car (ccbridge-info)) :reviews))) \
              (not (cl-some (lambda (b) (buffer-local-value 'ccbridge--current-review b)) \
                            (buffer-list))) \
              (equal (buffer-name (window-buffer)) \"hello.py\"))",
        STEP,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_c_c_c_in_the_edited_proposal_accepts_its_text() {
    let rig = rig("");
    let windows_before = rig.emacs.json("(length (window-list))");
    let c = rig.claude().await;
    let proposed = HELLO.replace("hello ", "hi ");
    let task = open_diff(&rig, c, &proposed).await;
    // One buffer: the change as a smerge conflict, the agent named.
    let text = rig
        .emacs
        .string("(buffer-substring-no-properties (point-min) (point-max))");
    assert!(
        text.contains("<<<<<<< original\n    message = \"hello \" + name\n=======\n    message = \"hi \" + name\n>>>>>>> Claude"),
        "{text}"
    );
    assert_eq!(rig.emacs.json("(bound-and-true-p smerge-mode)"), true);
    let header = rig.emacs.string("(format-mode-line header-line-format)");
    // "Claude Code" when the sidecar says who proposes, else "Claude".
    assert!(
        header.starts_with("Claude") && header.contains(" proposes a change to hello.py"),
        "{header}"
    );
    assert!(header.contains("C-c C-c accept"), "{header}");
    // The mode line counts the review waiting.
    assert_eq!(
        rig.emacs.json(&format!(
            "(with-current-buffer (find-buffer-visiting {}) (ccbridge-mode-line-string))",
            lisp_str(&rig.path("hello.py"))
        )),
        " Claude● ◆1"
    );
    // Edit the proposal like a user, then C-c C-c.
    rig.emacs.keys("M->");
    rig.emacs.type_text("greet(\"you\")");
    rig.emacs.keys("RET C-c C-c");
    let (_c, text) = verdict(task).await;
    assert_saved(&text, &format!("{proposed}greet(\"you\")\n"));
    assert_review_closed(&rig);
    assert_eq!(rig.emacs.json("(length (window-list))"), windows_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_c_c_k_rejects_the_proposal() {
    let (rig, task) = review("", &HELLO.replace("hello ", "hi ")).await;
    rig.emacs.keys("C-c C-k");
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("DIFF_REJECTED"), "{text}");
    assert_review_closed(&rig);
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("hello.py")).unwrap(),
        HELLO
    );
}

/// Issue 21, item 3: the conflicts are the sidecar's hunks (the page's),
/// not a diff of the package's own. The same line replaced the same way
/// three times, the first on line 1: the cursor starts on the first hunk
/// (it started on the second). Deciding them, each at its place, is the
/// shared scenario `editor_scenarios::emacs::identical_hunks_are_decided_each_at_its_place`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conflicts_are_the_sidecars_hunks_and_point_starts_on_the_first() {
    let rig = rig("");
    let original = "x = 1\nprint(x)\nx = 1\nprint(x)\nx = 1\n";
    std::fs::write(rig.ws.join("repeat.py"), original).unwrap();
    let c = rig.claude().await;
    let task = start_open_diff(
        c,
        rig.path("repeat.py"),
        &original.replace("x = 1", "x = 2"),
    );
    rig.emacs
        .wait("the review to open", "(ccbridge-test-review-buffer)", STEP);
    assert_eq!(
        rig.emacs.json(
            "(and (equal (ccbridge--review-hunks ccbridge--current-review) \
                         '((0 1 0 1) (2 1 2 1) (4 1 4 1))) \
                  (= 3 (how-many \"^<<<<<<< \" (point-min) (point-max))) \
                  (= (point) (point-min)))"
        ),
        true,
        "{}",
        rig.emacs.screen()
    );
    rig.emacs.keys("C-c C-k");
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("DIFF_REJECTED"), "{text}");
}

/// Issue 19, the session review in Emacs: a change written on disk without
/// a review (an agent in auto mode) is shown by `M-x ccbridge-changes`,
/// one line per file and its hunks. `r` on the second of two identical
/// insertions reverts that one only; the review buffer follows
/// (`changesChanged`) and the file's buffer reverts.
/// `M-x ccbridge-change-keep` in the file, on the first, keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_review_reverts_the_hunk_at_point_only() {
    let rig = rig("");
    // The baseline is taken when the sidecar starts: wait for it.
    rig.emacs.wait(
        "the session review to be ready",
        "(eq t (plist-get (ccbridge-test-changes) :ready))",
        STEP,
    );
    let edited = HELLO
        .replace("def greet(name):\n", "def greet(name):\n    log()\n")
        .replace("    print(message)\n", "    print(message)\n    log()\n");
    std::fs::write(rig.ws.join("hello.py"), &edited).unwrap();
    rig.m_x("ccbridge-changes");
    rig.emacs.wait(
        "two hunks in the review",
        "(let ((text (ccbridge-test-changes-buffer))) \
           (and text (= 2 (ccbridge-test-count \"\\n+    log()\" text)) \
                (string-prefix-p \"hello.py  modified\" text)))",
        STEP,
    );
    assert_eq!(
        rig.emacs.json("(derived-mode-p 'ccbridge-changes-mode)"),
        "ccbridge-changes-mode"
    );
    // To the second hunk's header, and revert it.
    rig.emacs.keys("n n");
    rig.emacs.wait(
        "point on the second hunk",
        "(string-match-p \"hunk 2\" (thing-at-point 'line))",
        STEP,
    );
    rig.emacs.keys("r");
    let expected = HELLO.replace("def greet(name):\n", "def greet(name):\n    log()\n");
    poll_until(STEP, Duration::from_millis(10), || {
        (std::fs::read_to_string(rig.ws.join("hello.py")).unwrap() == expected).then_some(())
    })
    .expect("only the second hunk is reverted");
    rig.emacs.wait(
        "the review buffer to follow",
        "(let ((text (ccbridge-test-changes-buffer))) \
           (and (= 1 (ccbridge-test-count \"\\n@@ \" text)) \
                (= 1 (ccbridge-test-count \"\\n+    log()\" text))))",
        STEP,
    );
    rig.emacs.wait(
        "the file's buffer to revert",
        &format!(
            "(equal (ccbridge-test-file-text {}) {})",
            lisp_str(&rig.path("hello.py")),
            lisp_str(&expected)
        ),
        STEP,
    );
    rig.wait_message("reverted the hunk in hello.py");
    // The first hunk, at point in the file's buffer: kept, nothing written.
    rig.emacs.keys("C-x o");
    rig.emacs.wait(
        "the file's window",
        "(equal (buffer-name) \"hello.py\")",
        STEP,
    );
    rig.emacs.keys("M-g g 2 RET");
    rig.m_x("ccbridge-change-keep");
    rig.emacs.wait(
        "the review to say kept",
        "(string-search \"hunk 1 (kept)\" (ccbridge-test-changes-buffer))",
        STEP,
    );
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("hello.py")).unwrap(),
        expected
    );
    // With unsaved changes the line at point may not be the file's: refused.
    rig.emacs.type_text("x");
    rig.emacs
        .wait("the buffer modified", "(buffer-modified-p)", STEP);
    rig.m_x("ccbridge-change-revert");
    rig.wait_message("hello.py has unsaved changes");
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("hello.py")).unwrap(),
        expected
    );
    rig.emacs.eval("(revert-buffer t t)");
    // Nothing changed at point: said so, nothing decided.
    rig.emacs.keys("M-<");
    rig.m_x("ccbridge-change-revert");
    rig.wait_message("no changed hunk here");
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("hello.py")).unwrap(),
        expected
    );
}

/// A file that cannot be read (not UTF-8) has no hunks: the proposal is
/// shown whole, without conflicts, and decided whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_for_an_unreadable_file_is_shown_whole() {
    let rig = rig("");
    std::fs::write(rig.ws.join("latin1.txt"), b"caf\xe9\n").unwrap();
    let c = rig.claude().await;
    let task = start_open_diff(c, rig.path("latin1.txt"), "café\n");
    rig.emacs
        .wait("the review to open", "(ccbridge-test-review-buffer)", STEP);
    assert_eq!(
        rig.emacs
            .string("(buffer-substring-no-properties (point-min) (point-max))"),
        "café\n"
    );
    let header = rig.emacs.string("(format-mode-line header-line-format)");
    assert!(header.contains("the whole file only"), "{header}");
    rig.emacs.keys("C-c C-c");
    let (_c, text) = verdict(task).await;
    assert_saved(&text, "café\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smerge_keys_decide_hunks_and_rejecting_all_is_a_rejection() {
    let (rig, task) = review("", TWO_HUNKS).await;
    // smerge-mode's own "keep upper" (the original) on both hunks.
    rig.emacs.keys("C-c ^ u C-c ^ n C-c ^ u");
    rig.emacs.wait(
        "no conflict left",
        "(= 0 (how-many \"^<<<<<<< \" (point-min) (point-max)))",
        STEP,
    );
    rig.emacs.keys("C-c C-c");
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("DIFF_REJECTED"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ediff_view_takes_a_hunk_back_with_a_and_accepts_with_c_c_c_c() {
    let (rig, task) = review("(setq ccbridge-diff-view 'ediff)", TWO_HUNKS).await;
    // The control panel is selected; the first difference, then `a`
    // copies the original's text over the proposal's.
    assert_eq!(rig.emacs.json("(eq major-mode 'ediff-mode)"), true);
    rig.emacs.keys("n a");
    rig.emacs.wait(
        "the first hunk taken back",
        "(with-current-buffer ediff-buffer-B (save-excursion (goto-char (point-min)) \
           (search-forward \"hello \" nil t)))",
        STEP,
    );
    rig.emacs.keys("C-c C-c");
    let (_c, text) = verdict(task).await;
    assert_saved(
        &text,
        &HELLO.replace("greet(\"world\")", "greet(\"everyone\")"),
    );
    assert_review_closed(&rig);
    assert_eq!(rig.emacs.json("(length (window-list))"), 1);
}

/// claude-code-ide.el #60: Claude's buffer disappeared behind the diff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_from_a_lone_claude_terminal_leaves_it_shown_and_returns_to_it() {
    let scratch = tempfile::tempdir().unwrap();
    let bin = fake_agent(scratch.path(), "claude");
    let rig = rig_with(Setup {
        path: vec![bin],
        before: "(setq ccbridge-terminal-backend 'term)",
        ..Setup::default()
    });
    let c = rig.claude().await;
    rig.m_x("ccbridge-claude");
    rig.emacs.wait(
        "Claude's terminal alone in the frame",
        "(progn (when (equal (buffer-name) \"*claude: ws*\") (delete-other-windows)) \
                (and (equal (buffer-name (window-buffer)) \"*claude: ws*\") \
                     (= 1 (length (window-list)))))",
        STEP,
    );
    let task = open_diff(&rig, c, &HELLO.replace("hello ", "hi ")).await;
    // The review has a window of its own; the terminal stays on screen.
    assert_eq!(rig.emacs.json("(length (window-list))"), 2);
    assert_eq!(
        rig.emacs
            .json("(and (get-buffer-window \"*claude: ws*\") t)"),
        true
    );
    rig.emacs.keys("C-c C-c");
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("FILE_SAVED"), "{text}");
    rig.emacs.wait(
        "back in Claude's terminal, alone again",
        "(and (equal (buffer-name (window-buffer)) \"*claude: ws*\") \
              (= 1 (length (window-list))))",
        STEP,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_the_ediff_session_rejects_and_restores_the_windows() {
    let (rig, task) = review("(setq ccbridge-diff-view 'ediff)", TWO_HUNKS).await;
    assert_eq!(rig.emacs.json("(eq major-mode 'ediff-mode)"), true);
    // ediff asks "Quit this Ediff session?".
    rig.emacs.keys("q");
    rig.emacs.wait(
        "ediff's question",
        "(and (active-minibuffer-window) t)",
        STEP,
    );
    rig.emacs.keys("y");
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("DIFF_REJECTED"), "{text}");
    assert_review_closed(&rig);
    assert_eq!(rig.emacs.json("(length (window-list))"), 1);
    // The review's buffers and ediff's control panel are gone.
    assert_eq!(
        rig.emacs.json(
            "(let ((case-fold-search nil)) \
               (mapcar #'buffer-name \
                       (cl-remove-if-not \
                        (lambda (b) (string-match-p \"proposal: \\\\|original: \\\\|Control Panel\" \
                                                    (buffer-name b))) \
                        (buffer-list))))"
        ),
        Value::Null
    );
}

// ───────────────────────── terminal ─────────────────────────

fn fake_agent(rig_dir: &Path, name: &str) -> PathBuf {
    let bin = rig_dir.join(format!("bin-{name}"));
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join(name);
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"port=$CLAUDE_CODE_SSE_PORT ide=$ENABLE_IDE_INTEGRATION np=$no_proxy args=$*\"\nexec sleep 60\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// Editor protocol 3 gives the other agents and their environments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccbridge_claude_with_a_prefix_runs_another_agent_with_its_environment() {
    let scratch = tempfile::tempdir().unwrap();
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("gemini");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"gemini port=$GEMINI_CLI_IDE_SERVER_PORT ws=$GEMINI_CLI_IDE_WORKSPACE_PATH end\"\nexec sleep 60\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let rig = rig_with(Setup {
        path: vec![bin],
        before: "(setq ccbridge-terminal-backend 'term)",
        ..Setup::default()
    });
    let gemini = rig.emacs.json(
        "(let ((init (ccbridge--session-init (ccbridge--session (ccbridge--buffer-root))))) \
           (cl-find \"gemini\" (plist-get init :agents) \
                    :key (lambda (a) (plist-get a :id)) :test #'equal))",
    );
    let port = gemini["env"]["GEMINI_CLI_IDE_SERVER_PORT"]
        .as_str()
        .unwrap_or_else(|| panic!("no gemini agent offered: {gemini}"))
        .to_owned();
    rig.emacs.keys("C-u M-x");
    rig.emacs.type_text("ccbridge-claude");
    rig.emacs.keys("RET");
    rig.emacs.wait(
        "the agent prompt",
        "(minibufferp (window-buffer (active-minibuffer-window)))",
        STEP,
    );
    rig.emacs.type_text("gemini");
    rig.emacs.keys("RET");
    let out = rig.emacs.wait(
        "the gemini terminal's output",
        "(let ((b (get-buffer \"*gemini: ws*\"))) \
           (and b (string-search \" end\" (ccbridge-test-buffer-text b)) \
                (ccbridge-test-buffer-text b)))",
        STEP,
    );
    let out = out.as_str().unwrap();
    assert!(
        out.contains(&format!("gemini port={port} ws={}", rig.ws.display())),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccbridge_claude_says_which_agents_are_offered_when_one_is_not() {
    let rig = rig("");
    rig.emacs.eval("(ccbridge-claude \"cursor\")");
    rig.wait_message("this ccbridge does not offer cursor (it offers claude");
    assert_eq!(
        rig.emacs
            .json("(cl-count-if (lambda (b) (string-prefix-p \"*cursor\" (buffer-name b))) (buffer-list))"),
        0
    );
}

// ───────────────────────── status and lifetime ─────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mode_line_shows_on_screen_and_the_status_names_the_sidecar() {
    // What every face shows alike: editor_scenarios::emacs::the_status_follows_claudes_session.
    let mut rig = rig("");
    let c = rig.claude().await;
    // On the screen, in hello.py's mode line.
    poll_until(STEP, Duration::from_millis(50), || {
        rig.emacs.screen().contains("Claude●").then_some(())
    })
    .unwrap_or_else(|| panic!("no Claude● on screen:\n{}", rig.emacs.screen()));
    let status = rig.status_report();
    for needle in [
        format!("{}: running", rig.ws.display()),
        "editor protocol 3".to_owned(),
        env!("CARGO_BIN_EXE_ccbridge").to_owned(),
    ] {
        assert!(status.contains(&needle), "no {needle:?} in\n{status}");
    }
    assert_eq!(rig.lock()["ideName"], "Emacs (ws)");
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turning_the_mode_off_stops_the_sidecar_and_removes_its_lock_file() {
    let rig = rig("");
    let lock = PathBuf::from(rig.info()["lockFile"].as_str().unwrap());
    assert!(lock.exists());
    let pid = rig.info()["pid"].as_u64().unwrap();
    rig.emacs.eval("(ccbridge-mode -1)");
    let gone = poll_until(STEP, Duration::from_millis(20), || {
        (!lock.exists() && !Path::new(&format!("/proc/{pid}")).exists()).then_some(())
    });
    assert!(
        gone.is_some(),
        "{} left behind or sidecar alive",
        lock.display()
    );
    rig.emacs
        .wait("the session forgotten", "(null (ccbridge-info))", STEP);
    // Nor any buffer of the connection.
    assert_eq!(
        rig.emacs.json(
            "(cl-remove-if-not (lambda (n) (string-match-p \"ccbridge /\" n)) \
               (mapcar #'buffer-name (buffer-list)))"
        ),
        Value::Null
    );
    assert_eq!(rig.emacs.json("(ccbridge-mode-line-string)"), "");
    // No hook left behind.
    assert_eq!(
        rig.emacs
            .json("(or (memq 'ccbridge--post-command post-command-hook) (advice-member-p 'ccbridge--mark-diagnostics 'flymake--handle-report))"),
        Value::Null
    );
}

/// An Emacs whose terminal goes away exits (it once spun at 100% CPU,
/// waiting for its sidecars in `kill-emacs-hook`), and the sidecar still
/// removes its lock file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_emacss_terminal_ends_it_and_removes_the_lock_file() {
    let Rig {
        emacs,
        lock_dir,
        dir: _dir,
        ..
    } = rig("");
    assert_eq!(ccbridge_testkit::lock_files(&lock_dir).len(), 1);
    assert!(
        emacs.hang_up(),
        "Emacs still runs after losing its terminal"
    );
    let gone = poll_until(STEP, Duration::from_millis(20), || {
        ccbridge_testkit::lock_files(&lock_dir)
            .is_empty()
            .then_some(())
    });
    assert!(gone.is_some(), "the lock file outlived Emacs");
}

/// (How a missing ccbridge is told is a shared scenario,
/// `editor_scenarios::emacs::a_missing_binary_is_reported_once_with_what_to_do`.)
/// Turned on with no ccbridge there, the mode warns once: more buffers and
/// a command that needs the sidecar say so in the echo area, not again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_ccbridge_the_mode_warns_once_and_commands_say_why() {
    let rig = rig_with(Setup {
        before: "(setq ccbridge-program \"/nonexistent/ccbridge\")",
        start: false,
        ..Setup::default()
    });
    std::fs::write(rig.ws.join("two.txt"), "2\n").unwrap();
    rig.visit("hello.py");
    rig.emacs.eval("(ccbridge-mode 1)");
    rig.emacs.wait(
        "the warning",
        "(string-search \"not found\" (or (ccbridge-test-buffer-text \"*Warnings*\") \"\"))",
        STEP,
    );
    rig.visit("two.txt");
    rig.emacs.keys("C-n C-p");
    rig.m_x("ccbridge-send");
    rig.wait_message("not sent, the sidecar is not running");
    let warnings = rig
        .emacs
        .string("(ccbridge-test-buffer-text \"*Warnings*\")");
    assert_eq!(warnings.matches("not found").count(), 1, "{warnings}");
}

// ───────────────────────── workspace tools ─────────────────────────

/// A project reached through a symbolic link, on this machine and without
/// `ccbridge-path-map`: Emacs names its files by the link, the sidecar and
/// Claude by the real path. The workspace tools, naming the file by its
/// real path, did not see Emacs's unsaved changes and asked to write over
/// them.
#[test]
fn through_a_symlinked_project_the_tools_see_unsaved_changes() {
    let mut rig = rig_with(Setup {
        through_link: true,
        ..Setup::default()
    });
    rig.type_line_at_top("# unsaved");
    crate::editor_scenarios::assert_the_tools_see_hellos_unsaved_changes(&mut rig);
}
