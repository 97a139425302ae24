//! Pipes to and signals for processes the `gridsel` command line starts,
//! and the command lines' own SIGPIPE. Only for the command lines: the
//! preload library starts nothing and leaves the program's signals alone.

use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// A pipe, both ends close-on-exec: (the reading end, the writing end).
/// One writing end given to a child as both stdout and stderr keeps their
/// lines in the order the child wrote them, as a shared file would.
pub fn pipe() -> io::Result<(File, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into a valid array of two.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nothing else.
    unsafe { Ok((File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))) }
}

/// Sends SIGKILL to every process of the process group `group` (the
/// process id of a child started as the leader of its own group), so that
/// a run's helpers and background processes end with it.
pub fn kill_group(group: u32) -> io::Result<()> {
    let group = libc::pid_t::try_from(group)
        .ok()
        .filter(|&g| g > 1)
        .ok_or(io::ErrorKind::InvalidInput)?;
    // SAFETY: kill has no memory preconditions; a negative pid names the
    // process group, and `group > 1` keeps it from meaning every process.
    if unsafe { libc::kill(-group, libc::SIGKILL) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Lets a command line die quietly on a closed pipe (`gridsel inspect PROGRAM
/// | head`), as Unix tools do, instead of panicking in `println!`. Only for
/// the command lines: the preload library never touches the host program's
/// signals.
pub fn default_sigpipe() {
    // SAFETY: installing the default disposition has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The signals that stop a command line running programs: Ctrl-C
/// (SIGINT), `kill`'s default (SIGTERM) and a closed terminal (SIGHUP).
pub const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// [`STOP_SIGNALS`] as a signal set.
fn stop_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before sigaddset reads it;
    // both only write the set they are given, and the signals are valid.
    unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        for signal in STOP_SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Blocks [`STOP_SIGNALS`] in the calling thread and so in every thread it
/// starts afterwards: call it before starting any, so that only
/// [`wait_stop_signal`] takes them and no thread dies of one while the
/// command stops its programs first. The programs it starts do not inherit
/// the mask: `std::process::Command` gives a child an empty signal mask.
pub fn block_stop_signals() -> io::Result<()> {
    let set = stop_set();
    // SAFETY: the set is initialised; the old mask is not asked for.
    match unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Waits until one of [`STOP_SIGNALS`], blocked by
/// [`block_stop_signals`], arrives, and returns its number.
pub fn wait_stop_signal() -> i32 {
    let set = stop_set();
    loop {
        let mut signal = 0;
        // SAFETY: the set is initialised and `signal` a valid place for
        // the number; sigwait only fails for an invalid set.
        if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
            return signal;
        }
    }
}

/// Has the program `command` starts killed (SIGKILL) when the thread that
/// starts it ends, as when this process is killed with SIGKILL, which no
/// handler sees: without it the program would run on, re-parented, for
/// hours. Linux's parent-death signal fires on the death of the *thread*
/// that forked the child, not of the process, so the caller must start the
/// program from a thread that outlives it (`runner::runs` waits on that
/// thread for the program and its group to end). It is kept across the program's
/// `exec`, but not given to the processes the program starts.
pub fn kill_with_parent(command: &mut Command) {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec, and
    // calls only prctl and getppid, which are async-signal-safe system
    // calls that allocate nothing and take no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent died before the signal was asked for: it will
            // never come, so the program does not start.
            if libc::getppid() != parent {
                return Err(io::ErrorKind::Interrupted.into());
            }
            Ok(())
        });
    }
}

/// The name of signal `signal` (`SIGTERM`), or its number.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        other => format!("signal {other}"),
    }
}
