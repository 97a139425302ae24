//! Pipes to and signals for processes the `gridsel` command line starts,
//! and the command lines' own SIGPIPE. Only for the command lines: the
//! preload library starts nothing and leaves the program's signals alone.

use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

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
