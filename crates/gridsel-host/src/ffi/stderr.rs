//! gridsel's log lines on stderr, written without raising SIGPIPE.
//!
//! Writing to a pipe or socket whose reader is gone raises SIGPIPE, and its
//! default action ends the process. Rust programs ignore SIGPIPE, but the
//! programs gridsel is preloaded into are mostly C, which do not; and gridsel
//! may neither end them over a log line nor change their signal dispositions
//! (or call their SIGPIPE handler). So a socket is written with
//! `send(MSG_NOSIGNAL)`, and anything else with SIGPIPE blocked for the
//! calling thread only: a SIGPIPE that the write raised is taken off the
//! pending set before the thread's mask is restored, unless one was pending
//! already (then it is the program's). libpq writes its sockets the same way.

use std::ffi::c_int;
use std::io;
use std::mem::MaybeUninit;

const STDERR: c_int = libc::STDERR_FILENO;

/// File descriptor 2 as a [`io::Write`], for env_logger's `Target::Pipe`.
/// Errors (a closed pipe, a closed descriptor) are returned to env_logger,
/// which drops them: a log line is never worth failing the program over.
pub struct Stderr;

impl io::Write for Stderr {
    /// Writes all of `buf` or fails, so a log line is one call and never
    /// interleaves with another thread's.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if is_socket(STDERR) {
            write_fully(buf, |rest| {
                // SAFETY: `rest` is a live slice; send has no other preconditions.
                unsafe { libc::send(STDERR, rest.as_ptr().cast(), rest.len(), libc::MSG_NOSIGNAL) }
            })?;
        } else {
            write_with_sigpipe_blocked(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn is_socket(fd: c_int) -> bool {
    let mut stat = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a `struct stat` into valid memory; it is read
    // only after fstat succeeded.
    unsafe {
        libc::fstat(fd, stat.as_mut_ptr()) == 0
            && stat.assume_init().st_mode & libc::S_IFMT == libc::S_IFSOCK
    }
}

/// Calls `write_some` (a `write`-like call) until all of `buf` is written,
/// resuming after partial writes and interruptions.
fn write_fully(mut buf: &[u8], mut write_some: impl FnMut(&[u8]) -> isize) -> io::Result<()> {
    while !buf.is_empty() {
        match usize::try_from(write_some(buf)) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => buf = buf.get(written..).unwrap_or_default(),
            Err(_) => {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
    Ok(())
}

fn write_with_sigpipe_blocked(buf: &[u8]) -> io::Result<()> {
    let sigpipe = signal_set(Some(libc::SIGPIPE));
    let mut saved_mask = signal_set(None);
    // SAFETY: valid signal sets; SIG_BLOCK only adds SIGPIPE to this
    // thread's mask, which is restored below.
    if unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &sigpipe, &mut saved_mask) } != 0 {
        // Cannot happen with these arguments; without the block a SIGPIPE
        // would reach the program, so the line is dropped.
        return Err(io::ErrorKind::Other.into());
    }
    let pending_before = sigpipe_pending();
    let result = write_fully(buf, |rest| {
        // SAFETY: `rest` is a live slice; write has no other preconditions.
        unsafe { libc::write(STDERR, rest.as_ptr().cast(), rest.len()) }
    });
    if result
        .as_ref()
        .is_err_and(|e| e.raw_os_error() == Some(libc::EPIPE))
        && !pending_before
    {
        let no_wait = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid set and timeout; the signal's details are not wanted.
        unsafe { libc::sigtimedwait(&sigpipe, std::ptr::null_mut(), &no_wait) };
    }
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &saved_mask, std::ptr::null_mut()) };
    result
}

/// A signal set holding `signal`, or empty.
fn signal_set(signal: Option<c_int>) -> libc::sigset_t {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set; sigaddset with a valid
    // signal number only sets its bit.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        if let Some(signal) = signal {
            libc::sigaddset(set.as_mut_ptr(), signal);
        }
        set.assume_init()
    }
}

/// Whether SIGPIPE is pending for this thread or the process.
fn sigpipe_pending() -> bool {
    let mut pending = signal_set(None);
    // SAFETY: sigpending fills a valid set; sigismember reads it.
    unsafe {
        libc::sigpending(&mut pending) == 0 && libc::sigismember(&pending, libc::SIGPIPE) == 1
    }
}
