//! Advisory file locks (`flock`), for the tuning cache.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// An exclusive `flock` on an open file, released when dropped (closing the
/// file releases it).
pub struct FileLock {
    _file: File,
}

/// How long [`lock_exclusive`] waits for another process's lock: the cache
/// is written on a launch thread, which must not hang on a stopped process.
const LOCK_PATIENCE: Duration = Duration::from_secs(1);

/// Opens (creating it if needed) `path` and takes an exclusive lock on it,
/// waiting at most [`LOCK_PATIENCE`] (then `TimedOut`).
pub fn lock_exclusive(path: &Path) -> io::Result<FileLock> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    let deadline = Instant::now() + LOCK_PATIENCE;
    loop {
        // SAFETY: flock on a descriptor this function owns for the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(FileLock { _file: file });
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            io::ErrorKind::WouldBlock => return Err(io::ErrorKind::TimedOut.into()),
            _ => return Err(e),
        }
    }
}
