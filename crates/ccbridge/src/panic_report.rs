//! What ccbridge prints when it panics.
//!
//! A panic is a bug, and its report goes where the user reads: the terminal,
//! or, for `serve --stdio`, the editor, which shows the sidecar's last stderr
//! lines when it exits. Rust's default report is several lines naming the
//! thread, with the message as the code formatted it. Here it is one line
//! that says it is a bug, where, and what, with control characters escaped
//! (the message may quote a request's bytes) and every run of 32 or more hex
//! digits replaced by `<redacted>`: every token ccbridge makes (the IDE
//! port's, the tools server's, the companions', the page's links and
//! sessions) is 64 of them (`ccbridge_server::token`), and an `unwrap` on a
//! value that quoted a request's `Authorization` header would otherwise print
//! it. `RUST_BACKTRACE=1` adds the backtrace, redacted the same way.
//!
//! A panic in a connection's task ends that task alone (tokio catches it);
//! the locks it held are taken back by the next user (`unwrap_or_else(into_inner)`
//! throughout), so the server goes on serving.

use crate::display;
use std::any::Any;
use std::backtrace::Backtrace;
use std::io::Write;
use std::panic::PanicHookInfo;

/// Runs of hex digits at least this long are taken for tokens.
const TOKEN_DIGITS: usize = 32;

/// Installs the hook; the first thing `main` does.
pub fn install() {
    let backtrace = std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0");
    std::panic::set_hook(Box::new(move |info| {
        let mut out = report(info);
        if backtrace {
            out.push('\n');
            out.push_str(&redact(&Backtrace::force_capture().to_string()));
        }
        // Not `eprintln!`, which panics (in the hook: aborts) when stderr
        // is closed.
        let _ = writeln!(std::io::stderr().lock(), "{out}");
    }));
}

/// The one line a panic prints.
pub fn report(info: &PanicHookInfo<'_>) -> String {
    let at = info
        .location()
        .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
        .unwrap_or_default();
    let what = message(info.payload());
    let line =
        format!("ccbridge: internal error (a bug: please report it with this line){at}: {what}");
    redact(&display::line(&line))
}

fn message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

/// `text` with every run of [`TOKEN_DIGITS`] or more hex digits replaced.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= TOKEN_DIGITS {
            out.push_str("<redacted>");
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbridge_server::token::AuthToken;
    use std::sync::{Arc, Mutex};

    #[test]
    fn short_hex_and_other_text_are_kept() {
        let s = "port 0x1f40, id 7a3b, deadbeef: café";
        assert_eq!(redact(s), s);
        assert_eq!(redact(&"a".repeat(31)), "a".repeat(31));
        assert_eq!(redact(&format!("x{}y", "F".repeat(32))), "x<redacted>y");
    }

    /// security.md item 42, panic messages: a panic whose message quotes a
    /// token (an `unwrap` on a value holding a request's header) reports
    /// one line, where and what, without the token.
    #[test]
    fn item_42_a_panic_quoting_a_token_reports_one_line_without_it() {
        const THREAD: &str = "item-42-panic";
        let token = AuthToken::generate().unwrap();
        let secret = token.expose().to_owned();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let previous = std::panic::take_hook();
        let sink = seen.clone();
        // Only this test's thread: the hook is the whole test binary's.
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some(THREAD) {
                sink.lock().unwrap().push(report(info));
            }
        }));
        let quoted = secret.clone();
        let joined = std::thread::Builder::new()
            .name(THREAD.into())
            .spawn(move || {
                // As an `expect` on a parsed header would.
                let header: Result<(), String> =
                    std::hint::black_box(Err(format!("Bearer {quoted}\n\u{1b}[2J")));
                header.expect("the Authorization header");
            })
            .unwrap()
            .join();
        std::panic::set_hook(previous);
        assert!(joined.is_err(), "the thread did not panic");
        let seen = seen.lock().unwrap();
        let [line] = seen.as_slice() else {
            panic!("one report expected, got {seen:?}");
        };
        assert!(!line.contains(&secret), "{line}");
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
        assert!(line.contains("<redacted>"), "{line}");
        assert!(line.contains("the Authorization header"), "{line}");
        assert!(line.contains("panic_report.rs:"), "{line}");
        assert!(line.starts_with("ccbridge: internal error"), "{line}");
    }
}
