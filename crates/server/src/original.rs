//! Reading the file a proposal changes, as it is on disk now: the left
//! side of a diff. The path comes from an agent, so the read must not be
//! a way to stall or bloat ccbridge: it never blocks on a FIFO or device
//! (`ccbridge_discovery::read_small_file`: opened `O_NONBLOCK`, refused
//! unless a regular file by `fstat` of the opened descriptor, so a swap
//! after a check changes nothing), it reads at most [`MAX_ORIGINAL`] bytes
//! whatever the file claims, and it runs off the async runtime's workers.

use ccbridge_discovery::{read_small_file, Follow, SmallFileError};
use std::path::Path;

/// Larger files are not shown as the left side of a diff.
pub const MAX_ORIGINAL: u64 = 16 << 20;

/// What the file of a proposal holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Original {
    /// Its text.
    Text(String),
    /// There is no file: the proposal creates it.
    Missing,
    /// It exists but cannot be shown as text; why.
    Unreadable(String),
}

/// Reads `path` (see the module doc), on a blocking thread.
pub async fn read(path: &str) -> Original {
    let owned = path.to_owned();
    tokio::task::spawn_blocking(move || read_blocking(&owned))
        .await
        .unwrap_or_else(|_| Original::Unreadable(format!("{path}: reading failed")))
}

/// Reads `path` on this thread (see the module doc).
pub fn read_blocking(path: &str) -> Original {
    let bytes = match read_small_file(Path::new(path), MAX_ORIGINAL, Follow::Yes) {
        Ok(bytes) => bytes,
        Err(SmallFileError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Original::Missing
        }
        Err(SmallFileError::Io(e)) => {
            return Original::Unreadable(format!("cannot read {path}: {e}"))
        }
        Err(SmallFileError::NotAFile) => {
            return Original::Unreadable(format!("{path} is not a regular file"))
        }
        Err(SmallFileError::TooLarge(_)) => {
            return Original::Unreadable(format!(
                "{path} is larger than {} MiB; it cannot be shown as a diff",
                MAX_ORIGINAL >> 20
            ))
        }
    };
    match String::from_utf8(bytes) {
        Ok(text) => Original::Text(text),
        Err(_) => Original::Unreadable(format!(
            "{path} is not UTF-8 text; it cannot be shown as a diff"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::{FileType, Mode};

    #[test]
    fn text_missing_and_what_cannot_be_shown() {
        let d = tempfile::tempdir().unwrap();
        let p = |n: &str| d.path().join(n).display().to_string();
        std::fs::write(p("a.txt"), "hi\n").unwrap();
        assert_eq!(read_blocking(&p("a.txt")), Original::Text("hi\n".into()));
        assert_eq!(read_blocking(&p("none")), Original::Missing);
        std::fs::write(p("bin"), [0xff, 0xfe]).unwrap();
        assert!(matches!(read_blocking(&p("bin")), Original::Unreadable(_)));
        assert!(matches!(
            read_blocking(&d.path().display().to_string()),
            Original::Unreadable(_)
        ));
        let big = std::fs::File::create(p("sparse")).unwrap();
        big.set_len(MAX_ORIGINAL + 1).unwrap();
        assert!(matches!(
            read_blocking(&p("sparse")),
            Original::Unreadable(_)
        ));
    }

    /// A FIFO with no writer would block an ordinary open forever.
    #[test]
    fn a_fifo_or_device_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.display().to_string();
        std::thread::spawn(move || {
            let _ = tx.send(read_blocking(&path));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading a FIFO blocked");
        assert!(matches!(got, Original::Unreadable(_)), "{got:?}");
        assert!(matches!(
            read_blocking("/dev/zero"),
            Original::Unreadable(_)
        ));
    }
}
