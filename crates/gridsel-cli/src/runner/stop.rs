//! Stopping a `compare` or `tune` while a program runs. Each run leads a
//! process group of its own ([`super::runs`]), which Ctrl-C at the terminal
//! does not reach: without this, stopping gridsel would leave the run going,
//! re-parented, holding the GPU for hours and skewing the next session's
//! timings. So SIGINT, SIGTERM and SIGHUP are taken by one thread, which
//! kills every running program's group (one per GPU under `tune --gpus`)
//! and exits with the shell's status for
//! that signal (128 + its number). Against SIGKILL, which nothing sees,
//! each program gets a parent-death signal ([`super::runs`]).

use gridsel_host::ffi::process;
use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};

/// The process groups of the runs going on (several at once where a
/// session runs one per GPU). A run registers its group while holding this
/// lock across the program's start, so that a stop either comes before the
/// start (and nothing starts) or sees the group.
static RUNNING: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// From here on, a stop signal kills the running program's process group
/// and exits `gridsel` with status 128 + the signal, after one line naming
/// `command`. Call it first, before any thread starts (the signals are
/// blocked in every thread but the one waiting for them).
pub fn on_stop_signals(command: &'static str) -> Result<(), String> {
    process::block_stop_signals().map_err(|e| format!("blocking the stop signals: {e}"))?;
    std::thread::spawn(move || {
        let signal = process::wait_stop_signal();
        // Held to the exit: no run starts after this one is killed.
        let running = running();
        let killed = running
            .iter()
            .filter(|&&group| process::kill_group(group).is_ok())
            .count();
        let killed = match killed {
            0 => "",
            1 => "; the running program was killed with its process group",
            _ => "; the running programs were killed with their process groups",
        };
        eprintln!(
            "gridsel {command}: stopped by {}{killed}",
            process::signal_name(signal)
        );
        std::process::exit(128 + signal);
    });
    Ok(())
}

/// The lock on the running groups; see [`RUNNING`].
pub fn running() -> MutexGuard<'static, BTreeSet<u32>> {
    gridsel_core::lock(&RUNNING)
}
