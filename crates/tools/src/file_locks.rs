//! One writer per file: `write_file` and `apply_diff` hold the file's lock
//! from reading the original until the reviewed text is written, so two
//! edits of one file never build on the same original (the second would
//! silently undo the first). Edits of different files proceed in parallel.
//! Waiting is bounded: after the timeout (60 s by default) the call fails
//! with a message saying another edit of that file is still under review.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::OwnedMutexGuard;

/// How long an edit waits for another edit of the same file.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// The locks of the files being edited.
#[derive(Default)]
pub struct FileLocks {
    locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

/// Held while one file is edited; the entry goes when nobody needs it.
pub struct FileGuard<'a> {
    locks: &'a FileLocks,
    path: PathBuf,
    guard: Option<OwnedMutexGuard<()>>,
}

/// Another edit of the file held it too long.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{path} is being edited by another call whose change is still under review; try again once it is decided (waited {waited:?})")]
pub struct Busy {
    pub path: String,
    pub waited: Duration,
}

impl FileLocks {
    /// Waits up to `wait` for `path`'s lock.
    pub async fn lock(&self, path: &Path, wait: Duration) -> Result<FileGuard<'_>, Busy> {
        let mutex = {
            let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
            locks.entry(path.to_owned()).or_default().clone()
        };
        let guard = match tokio::time::timeout(wait, mutex.lock_owned()).await {
            Ok(g) => g,
            Err(_) => {
                self.forget_if_unused(path);
                return Err(Busy {
                    path: path.display().to_string(),
                    waited: wait,
                });
            }
        };
        Ok(FileGuard {
            locks: self,
            path: path.to_owned(),
            guard: Some(guard),
        })
    }

    fn forget_if_unused(&self, path: &Path) {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        // Only the map's own reference left: nobody holds or waits for it.
        if locks.get(path).is_some_and(|m| Arc::strong_count(m) == 1) {
            locks.remove(path);
        }
    }

    /// How many files have a lock entry (held or waited for).
    pub fn len(&self) -> usize {
        self.locks.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for FileGuard<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.locks.forget_if_unused(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_edit_per_file_waits_and_the_wait_is_bounded() {
        let locks = FileLocks::default();
        let a = Path::new("/ws/a.rs");
        let held = locks.lock(a, DEFAULT_WAIT).await.unwrap();
        let e = match locks.lock(a, Duration::from_secs(60)).await {
            Err(e) => e,
            Ok(_) => panic!("two holders of one file's lock"),
        };
        assert!(
            e.to_string()
                .contains("/ws/a.rs is being edited by another call"),
            "{e}"
        );
        drop(held);
        assert!(locks.is_empty(), "entries are forgotten when unused");
        assert!(locks.lock(a, DEFAULT_WAIT).await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn different_files_do_not_wait_for_each_other() {
        let locks = FileLocks::default();
        let _a = locks
            .lock(Path::new("/ws/a.rs"), DEFAULT_WAIT)
            .await
            .unwrap();
        let b = tokio::time::timeout(
            Duration::from_millis(1),
            locks.lock(Path::new("/ws/b.rs"), DEFAULT_WAIT),
        )
        .await;
        assert!(b.is_ok_and(|g| g.is_ok()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_gets_the_file_when_the_holder_is_done() {
        let locks = Arc::new(FileLocks::default());
        let a = Path::new("/ws/a.rs");
        let held = locks.lock(a, DEFAULT_WAIT).await.unwrap();
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move {
                locks
                    .lock(Path::new("/ws/a.rs"), DEFAULT_WAIT)
                    .await
                    .is_ok()
            })
        };
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!waiter.is_finished());
        drop(held);
        assert!(waiter.await.unwrap());
    }
}
