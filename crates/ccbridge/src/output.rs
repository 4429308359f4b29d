//! Standard output without panics.
//!
//! `println!` panics when standard output cannot be written: `ccbridge list
//! --json | head -1` once `head` has gone (a broken pipe; Rust ignores
//! SIGPIPE), or a full disk. [`outln!`] returns the error instead: `main`
//! ends quietly with success on a broken pipe, as `cat` or ripgrep does (the
//! reader has what it wanted), and says "cannot write to standard output"
//! for any other error. Standard output is line-buffered, so each line's
//! error comes back from the line that met it.

use std::fmt;
use std::io::{self, Write};

/// A line that could not be written to standard output.
#[derive(Debug)]
pub struct WriteError(io::Error);

impl WriteError {
    /// The reader closed its end: nothing to report.
    pub fn is_broken_pipe(&self) -> bool {
        self.0.kind() == io::ErrorKind::BrokenPipe
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cannot write to standard output")
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Writes `args` and a line break to standard output.
pub fn line(args: fmt::Arguments<'_>) -> Result<(), WriteError> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(WriteError)
}

/// `println!` that returns a [`WriteError`] instead of panicking.
macro_rules! outln {
    () => {
        $crate::output::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;
