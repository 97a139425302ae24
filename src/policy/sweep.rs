//! The grid space the benchmark harness searches, one launch per point.
//!
//! Under `GRIDSEL_POLICY=sweep` the runtime gives the i-th launch of each
//! (kernel, trip count) the point `i mod len` of [`space`], so one run of a
//! program measures every point, interleaved, as many times as the program
//! repeats the kernel. The first points are the policies' own choices, so
//! every comparison with LLVM's grid is made in the same process.
//!
//! The space follows the paper (threads 1 and multiples of the warp, blocks in
//! powers of two up to 2^16) plus the grids a GPU-aware rule would pick:
//! multiples of the SM count, whole waves of resident blocks, one block per
//! distribute chunk, and ceil(trip/threads). Points that would give a
//! thread more than [`MAX_ITERATIONS_PER_THREAD`] iterations are left out:
//! they are orders of magnitude off the best and would take minutes each on
//! 10^9-iteration loops.

use super::{Decision, Policy, decide};
use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc, div_ceil, saturate};
use crate::kernel::KernelDesc;

/// Largest number of blocks in the paper's space (2^16).
pub const MAX_SWEEP_BLOCKS: u32 = 1 << 16;
/// How many multiples of the SM count are tried.
pub const SM_MULTIPLES: u32 = 8;
/// Pruning bound on the serial work of one thread.
pub const MAX_ITERATIONS_PER_THREAD: u64 = 4096;

/// One point of the sweep: where it comes from and the grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// `llvm`, `lloyd`, ... for a policy's choice, `grid` for a space point.
    pub label: String,
    pub decision: Decision,
}

/// The policies whose choices open every cycle of the sweep.
pub fn reference_policies() -> Vec<Policy> {
    vec![Policy::Llvm, Policy::Lloyd, Policy::Auto, Policy::Occupancy]
}

/// Every point of the sweep for one launch, policies first, deterministic.
pub fn space(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = reference_policies()
        .iter()
        .filter_map(|p| {
            decide(p, device, kernel, launch).map(|decision| Candidate {
                label: p.to_string(),
                decision,
            })
        })
        .collect();

    let class = super::lloyd::classify(device, kernel, launch.trip_count);
    out.extend(
        grid(device, kernel, launch)
            .into_iter()
            .map(|geometry| Candidate {
                label: "grid".to_string(),
                decision: Decision {
                    geometry,
                    class,
                    rule: super::Rule::SweepPoint,
                    clamped: false,
                },
            }),
    );
    out
}

/// The space's grid points without the policies' (what [`space`] labels
/// `grid`), in the same order; also `forest`'s candidates.
pub fn grid(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> Vec<Geometry> {
    let mut out = Vec::new();
    let cap = super::thread_cap(device, kernel);
    let trip = launch.trip_count.max(1);
    let chunk = u64::from(kernel.distribute_chunk().unwrap_or(1).max(1));
    let mut threads: Vec<u32> = std::iter::once(1)
        .chain((1..=cap / device.warp_size).map(|w| w * device.warp_size))
        .collect();
    threads.dedup();
    // Distinct thread counts and, per count, distinct block counts: every
    // unclamped point is new.
    for t in threads {
        let mut blocks: Vec<u32> = (0..=16).map(|p| 1u32 << p).collect();
        blocks.extend((1..=SM_MULTIPLES).map(|m| m.saturating_mul(device.sm_count)));
        // Whole waves of resident blocks, and one block per distribute chunk.
        let resident = crate::occupancy::resident_blocks(device, kernel, t);
        blocks.extend([1, 2, 4].map(|w| resident.saturating_mul(w).min(MAX_SWEEP_BLOCKS)));
        blocks.push(saturate(div_ceil(trip, chunk)).min(MAX_SWEEP_BLOCKS));
        blocks.push(saturate(div_ceil(trip, u64::from(t))).min(MAX_SWEEP_BLOCKS));
        blocks.sort_unstable();
        blocks.dedup();
        for b in blocks {
            // Teams beyond the number of chunks idle, and threads beyond the
            // chunk get no iteration (REFERENCE.md §3).
            let busy_teams = u64::from(b).min(div_ceil(trip, chunk));
            let busy = busy_teams * u64::from(t);
            if div_ceil(trip, busy.max(1)) > MAX_ITERATIONS_PER_THREAD {
                continue;
            }
            let (geometry, clamped) = super::clamp(Geometry::new(t, b), device, kernel);
            if !clamped {
                out.push(geometry);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ExecMode;
    use std::collections::HashSet;

    fn spmd(cap: u32) -> KernelDesc {
        KernelDesc {
            max_threads: Some(cap),
            exec_mode: Some(ExecMode::Spmd),
            ..KernelDesc::named("k")
        }
    }

    #[test]
    fn opens_with_the_policies_then_covers_the_paper_space() {
        let d = DeviceDesc::preset("h100").unwrap();
        let s = space(&d, &spmd(128), &LaunchDesc::open(1000));
        assert_eq!(s[0].label, "llvm");
        assert_eq!(s[0].decision.geometry, Geometry::new(32, 32));
        assert_eq!(s[1].label, "lloyd");
        let grids: Vec<Geometry> = s
            .iter()
            .filter(|c| c.label == "grid")
            .map(|c| c.decision.geometry)
            .collect();
        for t in [1, 32, 64, 96, 128] {
            for b in [1, 2, 1024, 65536, 132, 1056] {
                assert!(grids.contains(&Geometry::new(t, b)), "{t} x {b}");
            }
        }
        assert!(grids.contains(&Geometry::new(96, 11)), "ceil(1000/96)");
        assert!(grids.iter().all(|g| g.threads <= 128));
        let unique: HashSet<_> = grids.iter().collect();
        assert_eq!(unique.len(), grids.len());
    }

    #[test]
    fn prunes_grids_that_serialise_a_huge_loop() {
        let d = DeviceDesc::preset("h100").unwrap();
        let s = space(&d, &spmd(128), &LaunchDesc::open(1_000_000_000));
        assert!(s.iter().filter(|c| c.label == "grid").all(|c| {
            let g = c.decision.geometry;
            u64::from(g.threads) * u64::from(g.blocks) * MAX_ITERATIONS_PER_THREAD >= 1_000_000_000
        }));
        assert!(
            s.iter()
                .any(|c| c.decision.geometry == Geometry::new(128, 65536))
        );
    }

    #[test]
    fn is_deterministic() {
        let d = DeviceDesc::preset("h100").unwrap();
        let l = LaunchDesc::open(123_456);
        assert_eq!(space(&d, &spmd(1024), &l), space(&d, &spmd(1024), &l));
    }
}
