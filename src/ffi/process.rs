//! Signals to processes the `gridsel` command line started. Only for the
//! `gridsel` binary: the preload library never signals anything.

use std::io;

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
