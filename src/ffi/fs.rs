//! Advisory file locks (`flock`), for the tuning cache.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// An exclusive `flock` on an open file, released when dropped (closing the
/// file releases it).
pub struct FileLock {
    _file: File,
}

/// Opens (creating it if needed) `path` and waits for an exclusive lock on it.
pub fn lock_exclusive(path: &Path) -> io::Result<FileLock> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    loop {
        // SAFETY: flock on a descriptor this function owns for the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(FileLock { _file: file });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
