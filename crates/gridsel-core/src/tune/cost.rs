//! What a candidate grid is predicted to cost against `auto`'s, from the
//! kernel facts alone: the model a search prunes and orders its candidates
//! by, and that an online search's exploring budget charges in advance.
//!
//! A `distribute parallel for` in an SPMD kernel hands teams chunks of the
//! compiled thread cap, round-robin, whatever the launch's block size
//! (bench/results/h100/NOTES.md §1). So for a grid of `B` blocks of `t`
//! threads and a loop of `n` iterations in chunks of `C`:
//! - `ceil(n / C)` chunks; blocks beyond them idle;
//! - the busiest block runs `ceil(chunks / B)` chunks one after the other,
//!   each thread `ceil(C / t)` iterations of each (fewer threads than the
//!   chunk serialise it);
//! - blocks beyond what the device holds at once (occupancy: registers,
//!   shared memory, warps) wait for a later wave.
//!
//! The product of the three is the loop's serial depth: how many
//! iterations one thread runs back to back on the longest path. Depth alone
//! would call 32-thread blocks four times slower than 128-thread ones on a
//! long loop, where they fill the device all the same; so each step costs
//! more when an SM holds more threads with work than it runs at full
//! speed ([`THREADS_AT_FULL_SPEED_PER_SM`]), which makes every grid that
//! fills the device cost about the loop's iterations over the device's
//! speed.
//!
//! A kernel with a cross-team reduction takes at least its teams times
//! what one team's partial result costs ([`REDUCTION_COST_PER_TEAM`]):
//! LLVM's runtime has each team's first thread store its partial in a
//! global buffer and take a ticket from one atomic counter, teams past the
//! buffer's slots waiting for those before them, and the last team combine
//! the buffer. The teams pass that point one after another while the
//! others still run their loop, so the launch costs the larger of the two.
//!
//! The model knows nothing of memory traffic or fixed launch costs: it
//! tells apart grids that leave the device idle, serialise few heavy
//! iterations or pass too many teams through a reduction, from those that
//! do not, which is what pruning needs.

use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc, div_ceil};
use crate::kernel::{ExecMode, KernelDesc};
use crate::residency::resident_blocks_per_sm;

/// Threads with work one SM runs at full speed; more share its issue slots
/// and memory pipes. Chosen, not fitted: a quarter of the H100's 2048
/// resident threads (16 warps, four per scheduler), so that grids that fill
/// the device with 32- or 128-thread blocks cost about the same, as the
/// sweep's long loops say (within a few percent where neither reduces).
pub const THREADS_AT_FULL_SPEED_PER_SM: u32 = 512;

/// What one team of a cross-team reduction costs, in the model's unit
/// (one iteration at full speed): the launch takes at least its blocks
/// times this. On the H100 sweep a 32 x 65 536 grid of a reduction took
/// 0.66-1.5 ms (10-23 ns a team; most 0.93-1.46 ms) at every trip count
/// from 2^8 to 2^28, whatever its loop's share. The constant is the median,
/// over the 49 measurements this bound decides (32 x 32 768 and
/// 32 x 65 536 of the reductions of 2^23 iterations and more, at least 1.5x
/// `auto`'s time), of each one's time per team over `auto`'s time per
/// unit; quartiles 0.014 and 0.031. A team's cost is fixed in time, not in
/// iterations, so the estimate rises with the trip count (0.005-0.008 at
/// 2^23, 0.013-0.034 at 2^25, 0.05-0.057 at 2^27: on shorter loops
/// `auto`'s own time holds more of what the model leaves out). From 2^23
/// iterations, measured over predicted time of 32-thread grids of 8 448 to
/// 65 536 blocks is 0.88-0.97 (1.01-1.69 without the bound); below, this
/// one constant predicts those grids 4-7x slower than measured (they took
/// about 1.7-5x `auto`'s time), which only prunes and charges them sooner.
pub const REDUCTION_COST_PER_TEAM: f64 = 0.02;

/// How much slower than predicted a candidate may turn out: the 90th
/// percentile of measured over predicted time, over the first six
/// candidates the prior lists for each of the H100 sweep's 360 cases (1 548
/// candidates; median 1.10, 75th percentile 1.30). The model knows nothing
/// of cross-team reductions then ([`REDUCTION_COST_PER_TEAM`]): 32-thread
/// grids of 32 768-65 536 blocks, predicted as fast as `auto`'s, took
/// 2-4.8x its time. An online search charges its
/// budget a candidate's predicted time times this
/// ([`super::Allowance`]).
pub const PREDICTION_MARGIN: f64 = 1.57;

/// The predicted time of `grid` at `launch`, in units of one iteration at
/// full speed; `None` where the model has nothing to go on: a region without
/// a distribute loop, or a kernel whose distribute chunk is not known
/// (Generic and Generic-SPMD kernels give a team a share of iterations whose
/// inner parallel loop the kernel facts do not describe).
pub fn launch_cost(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
    grid: Geometry,
) -> Option<f64> {
    let trip = launch.trip_count;
    if trip == 0 || kernel.exec_mode.unwrap_or(ExecMode::Spmd) != ExecMode::Spmd {
        return None;
    }
    let chunk = u64::from(kernel.distribute_chunk()?.max(1));
    let threads = u64::from(grid.threads.max(1));
    let blocks = u64::from(grid.blocks.max(1));
    let chunks = div_ceil(trip, chunk);
    let busy = blocks.min(chunks);
    let rounds = div_ceil(chunks, blocks);
    let per_chunk = div_ceil(chunk, threads);
    let sms = u64::from(device.sm_count.max(1));
    let per_sm = u64::from(resident_blocks_per_sm(device, kernel, grid.threads).max(1));
    let waves = div_ceil(busy, sms * per_sm);
    let depth = (waves * rounds * per_chunk) as f64;
    // Threads with work on the busiest SM while a wave runs.
    let on_sm = div_ceil(busy, sms).min(per_sm) * threads.min(chunk);
    let share = on_sm as f64 / f64::from(THREADS_AT_FULL_SPEED_PER_SM);
    let loop_cost = depth * share.max(1.0);
    // Every block launched passes the reduction, those without a chunk too.
    let reduction = if kernel.has_cross_team_reduction() {
        blocks as f64 * REDUCTION_COST_PER_TEAM
    } else {
        0.0
    };
    Some(loop_cost.max(reduction))
}

/// `grid`'s predicted time over `incumbent`'s at `launch` (2.0: twice as
/// long); `None` where [`launch_cost`] has no model.
pub fn relative_cost(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
    grid: Geometry,
    incumbent: Geometry,
) -> Option<f64> {
    let cost = |g| launch_cost(device, kernel, launch, g);
    Some(cost(grid)? / cost(incumbent)?.max(f64::MIN_POSITIVE))
}
