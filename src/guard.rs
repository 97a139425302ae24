//! The panic boundary every C entry point and every step of the launch
//! pipeline runs behind.
//!
//! gridsel lives inside other people's programs: a panic of its own must
//! never unwind into them. What runs inside [`boundary`] is gridsel's code
//! only; calls into the program's runtime stay outside it, since catching a
//! foreign exception aborts the process.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

/// Runs `body`, turning a panic into `None` (reported once per process):
/// the caller then does what it would do without gridsel.
pub fn boundary<R>(body: impl FnOnce() -> R) -> Option<R> {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    catch_unwind(AssertUnwindSafe(body)).ok().or_else(|| {
        if !REPORTED.swap(true, Ordering::Relaxed) {
            log::error!("internal error (panic) caught; this call is forwarded unchanged");
        }
        None
    })
}
