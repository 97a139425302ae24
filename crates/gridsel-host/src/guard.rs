//! The panic boundary every C entry point and every step of the launch
//! pipeline runs behind, and the panic hook that reports what it catches.
//!
//! gridsel lives inside other people's programs: a panic of its own must
//! never unwind into them. What runs inside [`boundary`] is gridsel's code
//! only; calls into the program's runtime stay outside it, since catching a
//! foreign exception aborts the process.
//!
//! A panic is reported by the panic hook, which runs before the unwinding
//! reaches [`boundary`]. std's default hook writes to stderr with a plain
//! `write`, which raises SIGPIPE when stderr is a pipe nobody reads, and
//! that ends a C program; so gridsel installs a hook, the first time a
//! boundary runs, that reports its own panics in one line through
//! [`crate::logging::error_line`] (written without SIGPIPE) and hands every
//! other panic to the hook that was there before (a Rust program's own).

use gridsel_core::Reported;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, PanicHookInfo, catch_unwind};
use std::sync::Once;

thread_local! {
    /// How this thread is running gridsel's code: inside how many
    /// boundaries, and inside how many [`quiet`] calls.
    static INSIDE: Cell<(u32, u32)> = const { Cell::new((0, 0)) };
}

/// Runs `body`, turning a panic into `None` (reported once per process,
/// by the hook): the caller then does what it would do without gridsel.
pub fn boundary<R>(body: impl FnOnce() -> R) -> Option<R> {
    install_hook();
    inside(
        |(b, q)| (b + 1, q),
        || catch_unwind(AssertUnwindSafe(body)).ok(),
    )
}

/// Runs `body`, whose panic is expected and reported by the caller (a
/// library that panics for an error, as cudarc does for a missing symbol):
/// the hook says nothing of it.
pub fn quiet<R>(body: impl FnOnce() -> R) -> std::thread::Result<R> {
    install_hook();
    inside(|(b, q)| (b, q + 1), || catch_unwind(AssertUnwindSafe(body)))
}

/// Runs `body` with this thread's [`INSIDE`] changed by `enter`, restored
/// after (`body` cannot unwind: it catches).
fn inside<R>(enter: impl Fn((u32, u32)) -> (u32, u32), body: impl FnOnce() -> R) -> R {
    let before = INSIDE.with(|i| i.replace(enter(i.get())));
    let result = body();
    INSIDE.with(|i| i.set(before));
    result
}

/// Installs gridsel's panic hook over whatever hook the process has.
fn install_hook() {
    static INSTALL: Once = Once::new();
    // std refuses to change the hook while this thread panics (a drop
    // during unwinding that calls gridsel): the next boundary installs it.
    if INSTALL.is_completed() || std::thread::panicking() {
        return;
    }
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // A thread being torn down has no INSIDE any more: not gridsel's.
            match INSIDE.try_with(Cell::get).unwrap_or_default() {
                (_, 1..) => {}
                (1.., 0) => report(info),
                (0, 0) => previous(info),
            }
        }));
    });
}

/// One line for the process's first panic inside a boundary.
fn report(info: &PanicHookInfo) {
    static REPORTED: Reported<()> = Reported::new();
    if !REPORTED.first(()) {
        return;
    }
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message");
    let at = info
        .location()
        .map_or_else(String::new, |l| format!(" at {}:{}", l.file(), l.line()));
    crate::logging::error_line(format_args!(
        "internal error (panic{at}: {message}); the call is forwarded unchanged, as are later ones that fail"
    ));
}
