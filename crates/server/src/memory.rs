//! Giving memory back after a burst of large messages.
//!
//! A 15 MiB message is parsed into buffers of about its size, and freed
//! when it has been handled. glibc's allocator keeps freed memory in its
//! arenas rather than returning it to the OS, so a burst of large messages
//! (16 connections at once) would leave ccbridge hundreds of MiB larger for
//! good. Two things undo that:
//!
//! - [`tune_allocator`] (the binary calls it first thing) fixes glibc's
//!   thresholds: buffers of [`LARGE_MESSAGE`] or more get their own
//!   mappings, unmapped the moment they are freed, and arenas are trimmed
//!   beyond a few MiB of free top. By default glibc *raises* both limits
//!   after each large free (up to 32 and 64 MiB), which is what kept a
//!   burst's memory.
//! - Handlers of a message of [`LARGE_MESSAGE`] bytes or more call
//!   [`large_message_done`]; once none has been handled for [`QUIET`],
//!   `malloc_trim(0)` returns the free pages left inside the arenas, once
//!   per burst.
//!
//! Elsewhere than glibc both do nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::sync::Notify;

/// Messages this large or larger are worth trimming after.
pub const LARGE_MESSAGE: usize = 1 << 20;
/// Quiet time after the last large message before memory is trimmed.
pub const QUIET: Duration = Duration::from_millis(250);

struct Trimmer {
    pending: AtomicBool,
    wake: Notify,
}

static TRIMMER: OnceLock<Trimmer> = OnceLock::new();

/// Notes that a large message was handled; must be called within a tokio
/// runtime (the first call starts the trimming task there).
pub fn large_message_done() {
    let mut started = false;
    let t = TRIMMER.get_or_init(|| {
        started = true;
        Trimmer {
            pending: AtomicBool::new(false),
            wake: Notify::new(),
        }
    });
    if started {
        tokio::spawn(trim_loop(t));
    }
    t.pending.store(true, Ordering::Release);
    t.wake.notify_one();
}

async fn trim_loop(t: &'static Trimmer) {
    loop {
        t.wake.notified().await;
        // Wait until the burst is over: no large message for QUIET.
        while t.pending.swap(false, Ordering::AcqRel) {
            tokio::time::sleep(QUIET).await;
        }
        let _ = tokio::task::spawn_blocking(trim).await;
    }
}

/// Sets glibc's mmap and trim thresholds (see the module docs). Call once,
/// early, before threads allocate much; safe to call again.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn tune_allocator() {
    extern "C" {
        fn mallopt(param: std::os::raw::c_int, value: std::os::raw::c_int) -> std::os::raw::c_int;
    }
    // <malloc.h>
    const M_TRIM_THRESHOLD: std::os::raw::c_int = -1;
    const M_MMAP_THRESHOLD: std::os::raw::c_int = -3;
    // SAFETY: mallopt only changes allocator parameters; these values are
    // in the documented ranges.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, LARGE_MESSAGE as std::os::raw::c_int);
        mallopt(M_TRIM_THRESHOLD, (4 * LARGE_MESSAGE) as std::os::raw::c_int);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune_allocator() {}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::os::raw::c_int;
    }
    // SAFETY: malloc_trim only walks glibc's own heap under its locks; it
    // takes no pointers from us and is safe to call at any time.
    let released = unsafe { malloc_trim(0) };
    tracing::trace!(released, "returned free memory to the OS");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
