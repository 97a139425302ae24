//! Launch grids and the launch requests they answer.

use crate::libomptarget::LlvmRelease;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A one-dimensional launch grid: threads per block and blocks (teams).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Geometry {
    pub threads: u32,
    pub blocks: u32,
}

impl Geometry {
    pub const fn new(threads: u32, blocks: u32) -> Self {
        Self { threads, blocks }
    }
}

impl fmt::Display for Geometry {
    /// `blocks x threads`, the order libomptarget's INFO line uses, in
    /// words a user reads ("1 block x 32 threads").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: u32| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} block{} x {} thread{}",
            self.blocks,
            plural(self.blocks),
            self.threads,
            plural(self.threads)
        )
    }
}

/// What the program asked for at one `__tgt_target_kernel` call, and the
/// libomptarget it asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchDesc {
    /// Trip count of the `distribute` loop; 0 when the region has none.
    pub trip_count: u64,
    /// `num_teams` as passed: 0 open, -1 plain `target`, 1 `target parallel`, else a clause.
    pub num_teams: i32,
    /// `thread_limit` as passed: 0 open, else a clause (1 for simd forms).
    pub thread_limit: i32,
    /// The libomptarget that launches it: its release, which decides
    /// LLVM's own grid (`crate::policy::llvm::grid`).
    pub llvm_release: LlvmRelease,
}

impl LaunchDesc {
    /// A launch whose grid the program left entirely to the runtime, a
    /// libomptarget of no known release ([`LlvmRelease::UNKNOWN`]: LLVM
    /// 19's rule stands in).
    pub fn open(trip_count: u64) -> Self {
        Self {
            trip_count,
            num_teams: 0,
            thread_limit: 0,
            llvm_release: LlvmRelease::UNKNOWN,
        }
    }
}

/// A launch's trip count as the log says it: `1000 iterations`, or `no
/// distribute loop` for 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Iterations(pub u64);

impl fmt::Display for Iterations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("no distribute loop"),
            1 => f.write_str("1 iteration"),
            n => write!(f, "{n} iterations"),
        }
    }
}

/// The paper's loop classes (Lloyd et al. 2018, §IV).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopClass {
    /// Trip count at most the SM count.
    Short,
    /// Fits on the device without queuing blocks.
    Ideal,
    /// More blocks than the device holds at once.
    Long,
    /// No trip count (no `distribute` loop).
    None,
}

impl fmt::Display for LoopClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Short => "short",
            Self::Ideal => "ideal",
            Self::Long => "long",
            Self::None => "none",
        })
    }
}

/// `ceil(a / b)` for `b > 0`.
pub const fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// Saturates a `u64` count into the `u32` a launch takes.
pub fn saturate(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
