//! `GRIDSEL_PROFILE`: one CSV row per launch, for the benchmark harness.
//!
//! Columns: `kernel,trip_count,policy,blocks,threads,ns` where `ns` is the wall
//! time of the forwarded `__tgt_target_kernel` call (launch and wait, since a
//! launch without `nowait` returns when the kernel is done) and `policy` names
//! what chose the grid (under `sweep`, the candidate's label; under `tune`,
//! `tune-trial` for an exploring launch, `tune-recheck` for a planned re-check
//! of the runner-up), quoted when it
//! holds a comma (`"fixed:64,8"`). Rows from many threads go through one lock;
//! the buffer is flushed at least once a second, when an image is
//! unregistered, and at exit, so a program killed by a harness's timeout
//! keeps all but its last second of rows.

use crate::ffi::fs;
use gridsel_core::geometry::Geometry;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longest time a row waits in the buffer.
const FLUSH_INTERVAL: Duration = Duration::from_secs(1);

pub const HEADER: &str = "kernel,trip_count,policy,blocks,threads,ns";

/// An append-only CSV sink.
pub struct Profile {
    out: Mutex<(BufWriter<File>, Instant)>,
}

impl Profile {
    /// Opens `path` for appending; writes the header when the file is new.
    /// Only a regular file is appended to ([`fs::open_append_regular`]): a
    /// link, a device or a FIFO (`/dev/stdout`, `/dev/null`) is refused.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = fs::open_append_regular(path)?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        if out.get_ref().metadata()?.len() == 0 {
            writeln!(out, "{HEADER}")?;
        }
        Ok(Self {
            out: Mutex::new((out, Instant::now())),
        })
    }

    /// Appends one launch.
    pub fn record(&self, kernel: &str, trip_count: u64, policy: &str, grid: Geometry, ns: u64) {
        let mut guard = gridsel_core::lock(&self.out);
        let (out, last_flush) = &mut *guard;
        let quote = if policy.contains(',') { "\"" } else { "" };
        // A full disk must not take the program down; the row is dropped.
        let _ = writeln!(
            out,
            "{kernel},{trip_count},{quote}{policy}{quote},{},{},{ns}",
            grid.blocks, grid.threads
        );
        if last_flush.elapsed() >= FLUSH_INTERVAL {
            let _ = out.flush();
            *last_flush = Instant::now();
        }
    }

    pub fn flush(&self) {
        let _ = gridsel_core::lock(&self.out).0.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_header_once_and_appends_rows() {
        let path =
            std::env::temp_dir().join(format!("gridsel-profile-test-{}.csv", std::process::id()));
        let _ = std::fs::remove_file(&path);
        for _ in 0..2 {
            let p = Profile::open(&path).unwrap();
            p.record("k", 10, "lloyd", Geometry::new(96, 2), 1234);
            p.flush();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!("{HEADER}\nk,10,lloyd,2,96,1234\nk,10,lloyd,2,96,1234\n")
        );
        std::fs::remove_file(&path).unwrap();
    }
}
