//! The Vim and Emacs flow both remote suites run (`remote_ssh.rs`: the
//! sidecar on a second host reached with `ssh -T`; `remote_container.rs`:
//! in a container reached with `podman exec -i`): the editor here starts
//! the sidecar there through a command prefix and maps the workspace's two
//! names; a selection reaches Claude (there) with the far path; Claude's
//! `openDiff` of the far file opens a review of the local file whose
//! original is the far text; the editor's accept writes it; quitting the
//! editor ends the far side. What differs between the two is the
//! transport, described by [`Attach`] and [`Far`].

use crate::claude_side::{assert_saved, selection_with, start_open_diff, verdict};
use ccbridge_client::ws_client::IdeClient;
use ccbridge_testkit::emacs::{lisp_str, Emacs, EmacsOptions};
use ccbridge_testkit::poll_until;
use ccbridge_testkit::vim::{let_options, Vim, VimOptions};
use std::path::PathBuf;
use std::time::Duration;
use tokio::runtime::Runtime;

const STEP: Duration = Duration::from_secs(15);

/// How the editor here reaches the sidecar there.
pub struct Attach {
    /// ccbridge's program where it runs, and the words before it that
    /// reach there.
    pub bin: String,
    pub prefix: Vec<String>,
    /// The workspace here (holding `hello.py`) and its name there.
    pub local: PathBuf,
    pub far: String,
    /// More arguments for ccbridge, and the IDE name, when the suite sets
    /// them.
    pub args: Vec<String>,
    pub ide_name: Option<&'static str>,
    /// The editor's `HOME`.
    pub home: PathBuf,
    /// `hello.py`'s text there: the review's original.
    pub far_text: &'static str,
    /// A word on the second line of the local `hello.py`, selected.
    pub word: &'static str,
    /// "over ssh", "through podman exec": for failure messages.
    pub how: &'static str,
}

/// Where the sidecar runs, as the test reaches it.
pub trait Far {
    /// A runtime whose tasks run where Claude runs.
    fn runtime(&self) -> Runtime;
    /// Checks the lock file at `lock_file` (as the sidecar reported it)
    /// and connects a scripted Claude to it from there.
    fn claude(&self, rt: &Runtime, lock_file: &str, editor_pid: u32) -> IdeClient;
    /// More to say when the sidecar does not answer (a server's log).
    fn diagnose(&self) -> String {
        String::new()
    }
    /// Waits until nothing of the sidecar is left there.
    fn assert_ended(&self, what: &str);
}

impl Attach {
    fn local_file(&self) -> String {
        self.local.join("hello.py").display().to_string()
    }

    fn far_file(&self) -> String {
        format!("{}/hello.py", self.far)
    }
}

/// The flow with Vim: `g:ccbridge.cmd` the prefix, `path_map` the two
/// names, `:w` in the review accepts, `:qa!` ends the far side.
pub fn vim_flow(a: &Attach, far: &impl Far) {
    let mut opts = VimOptions::for_plugin(&a.local);
    opts.env.push(("HOME".into(), a.home.display().to_string()));
    let mut vim = Vim::start(&opts).expect("start vim");
    let mut args = vec!["--selection-debounce-ms".to_owned(), "0".into()];
    args.extend(a.args.iter().cloned());
    let mut options = serde_json::json!({
        "bin": a.bin,
        "cmd": a.prefix,
        "path_map": [[a.local, a.far]],
        "args": args,
        "selection": {"debounce_ms": 0},
    });
    if let Some(name) = a.ide_name {
        options["ide_name"] = name.into();
    }
    vim.ex(&let_options(&options));
    vim.ex("CCBridgeStart");
    let running = poll_until(STEP, Duration::from_millis(20), || {
        (vim.eval("ccbridge#Status()") == "running").then_some(())
    });
    if running.is_none() {
        let stderr = vim.eval("ccbridge#StderrTail()");
        panic!(
            "the sidecar did not answer {}; stderr: {stderr}\n{}",
            a.how,
            far.diagnose()
        );
    }
    let rt = far.runtime();
    let lock_file = vim.eval("ccbridge#Init().lockFile");
    let mut claude = far.claude(&rt, lock_file.as_str().unwrap(), vim.pid());
    vim.wait(
        "CCBridgeConnected",
        "len(TestEvents('CCBridgeConnected')) > 0",
        STEP,
    );

    // A selection in the local buffer reaches Claude with the far path.
    vim.ex(&format!("edit {}", a.local_file()));
    vim.keys(&format!("gg/{}<CR>ve", a.word));
    let sel = rt.block_on(selection_with(&mut claude, a.word));
    assert_eq!(sel["filePath"], a.far_file().as_str(), "{sel}");

    // Claude's openDiff of the far file: a review of the local path whose
    // original is the far text.
    let proposed = a.far_text.replace("hello ", "hi ");
    let task = {
        let _in_runtime = rt.enter();
        start_open_diff(claude, a.far_file(), &proposed)
    };
    vim.wait(
        "the review to open",
        "len(TestEvents('CCBridgeDiffOpened')) > 0 && get(b:, 'ccbridge_review', 0)",
        STEP,
    );
    let review = vim.eval("ccbridge#review#Pending()[0]");
    assert_eq!(review["path"], a.local_file().as_str(), "{review}");
    assert_eq!(
        review["original"], a.far_text,
        "the original is the far file's"
    );
    vim.keys("<Esc>:w<CR>");
    let (_claude, text) = rt.block_on(verdict(task));
    assert_saved(&text, &proposed);

    // Quitting Vim ends the far sidecar.
    assert!(vim.quit().is_some(), "Vim did not exit");
    drop(vim);
    far.assert_ended("after :qa! in Vim");
}

/// The flow with Emacs: `ccbridge-command-prefix` the prefix,
/// `ccbridge-path-map` the two names, `C-c C-c` in the review accepts,
/// quitting Emacs ends the far side.
pub fn emacs_flow(a: &Attach, far: &impl Far) {
    let mut opts = EmacsOptions::for_package(&a.local);
    opts.env.push(("HOME".into(), a.home.display().to_string()));
    let emacs = Emacs::start(&opts).expect("start Emacs");
    let local = a.local.display().to_string();
    let words = |w: &[String]| w.iter().map(|w| lisp_str(w)).collect::<Vec<_>>().join(" ");
    let mut setq = format!(
        "ccbridge-program {} ccbridge-command-prefix (list {}) \
         ccbridge-path-map (list (cons {} {})) \
         ccbridge-program-args (list \"--selection-debounce-ms\" \"0\" {}) \
         ccbridge-selection-debounce 0",
        lisp_str(&a.bin),
        words(&a.prefix),
        lisp_str(&local),
        lisp_str(&a.far),
        words(&a.args),
    );
    if let Some(name) = a.ide_name {
        setq.push_str(&format!(" ccbridge-ide-name {}", lisp_str(name)));
    }
    // The local folder is the project (it is no Git checkout here).
    emacs.eval(&format!(
        "(setq {setq} ccbridge-project-function (lambda (_) {}))",
        lisp_str(&local)
    ));
    emacs.eval(&format!("(find-file {})", lisp_str(&a.local_file())));
    emacs.eval("(ccbridge-mode 1)");
    let running = poll_until(STEP, Duration::from_millis(20), || {
        (emacs.json("(plist-get (car (ccbridge-info)) :status)") == "running").then_some(())
    });
    if running.is_none() {
        panic!(
            "the sidecar did not answer {}; {}\n{}",
            a.how,
            emacs.string("(ccbridge-status-string)"),
            far.diagnose()
        );
    }
    let rt = far.runtime();
    let lock_file = emacs.json("(plist-get (car (ccbridge-info)) :lockFile)");
    let mut claude = far.claude(&rt, lock_file.as_str().unwrap(), emacs.pid());
    emacs.wait(
        "Emacs to see Claude connected",
        "(> (plist-get (car (ccbridge-info)) :clients) 0)",
        STEP,
    );

    // A region in the local buffer reaches Claude with the far path: the
    // word on the second line, reached with C-f from its indentation.
    let local_text = std::fs::read_to_string(a.local_file()).unwrap();
    let line = local_text.lines().nth(1).expect("a second line");
    let column = line.find(a.word).expect("the word on the second line");
    let indent = line.len() - line.trim_start().len();
    let forward = vec!["C-f"; column - indent].join(" ");
    emacs.keys(&format!("M-< C-n M-m {forward} C-SPC M-f"));
    let sel = rt.block_on(selection_with(&mut claude, a.word));
    assert_eq!(sel["filePath"], a.far_file().as_str(), "{sel}");

    // Claude's openDiff of the far file: a review of the local path whose
    // original is the far text.
    let proposed = a.far_text.replace("hello ", "hi ");
    let task = {
        let _in_runtime = rt.enter();
        start_open_diff(claude, a.far_file(), &proposed)
    };
    let review = emacs.wait(
        "the review to open",
        "(let ((r (car (ccbridge--session-reviews (car (hash-table-values ccbridge--sessions)))))) \
         (and r (buffer-live-p (ccbridge--review-buffer r)) \
              (eq (window-buffer) (ccbridge--review-buffer r)) \
              (vector (ccbridge--review-path r) (ccbridge--review-original r))))",
        STEP,
    );
    assert_eq!(review[0], a.local_file().as_str(), "{review}");
    assert_eq!(review[1], a.far_text, "the original is the far file's");
    emacs.keys("C-c C-c");
    let (_claude, text) = rt.block_on(verdict(task));
    assert_saved(&text, &proposed);

    // Quitting Emacs ends the far sidecar.
    assert!(emacs.quit(), "Emacs did not exit");
    far.assert_ended("after Emacs quit");
}
