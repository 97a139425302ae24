//! The grid space the benchmark harness searches, one launch per point,
//! and `forest` searches by prediction ([`columns`]).
//!
//! Under `GRIDSEL_POLICY=sweep`, a research setting of the benchmark
//! harness's library only (feature `sweep`), the runtime gives the i-th
//! launch of each (kernel, trip count) the point `i mod len` of `space`, so
//! one run of a program measures every point, interleaved, as many times as
//! the program repeats the kernel. The first points are the policies' own
//! choices, so every comparison with LLVM's grid is made in the same
//! process. `space` and `grid` serve research only (feature `research`).
//!
//! The space follows the paper (threads 1 and multiples of the warp, blocks in
//! powers of two up to 2^16) plus the grids a GPU-aware rule would pick:
//! multiples of the SM count, whole waves of resident blocks, one block per
//! distribute chunk, and ceil(trip/threads). Points that would give a
//! thread more than [`MAX_ITERATIONS_PER_THREAD`] iterations are left out:
//! they are orders of magnitude off the best and would take minutes each on
//! 10^9-iteration loops. A kernel that may nest parallel regions (or whose
//! image cannot tell) gets a tighter bound, [`MAX_NESTED_ITERATIONS_PER_THREAD`]
//! times what a thread of LLVM's grid does: each of its iterations runs a
//! whole serialized parallel region, and on the H100
//! nest_rowhist's 32 x 1 (512 rows per thread) took 15 s per launch against
//! 9 ms for LLVM's 32 x 512 (one row per thread; bench/results/h100/
//! patterns.md), so such points alone outlasted the sweep's job limit.

#[cfg(feature = "sweep")]
use super::per_launch::PerLaunch;
#[cfg(any(test, feature = "research"))]
use super::{Decision, Policy, decide};
#[cfg(feature = "sweep")]
use super::{GridPolicy, Launch, Proposal};
use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc, div_ceil, saturate};
use crate::kernel::KernelDesc;

/// Largest number of blocks in the paper's space (2^16).
pub const MAX_SWEEP_BLOCKS: u32 = 1 << 16;
/// How many multiples of the SM count are tried.
pub const SM_MULTIPLES: u32 = 8;
/// Pruning bound on the serial work of one thread.
pub const MAX_ITERATIONS_PER_THREAD: u64 = 4096;
/// The bound for kernels whose range is narrowed to LLVM's grid (they may
/// nest parallel regions, or the image cannot tell; module documentation):
/// this many times the iterations a thread of LLVM's grid does.
pub const MAX_NESTED_ITERATIONS_PER_THREAD: u64 = 16;

/// One point of the sweep: where it comes from and the grid.
#[cfg(any(test, feature = "research"))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepPoint {
    /// `llvm`, `lloyd`, ... for a policy's choice, `grid` for a space point.
    pub label: &'static str,
    pub decision: Decision,
}

/// The policies whose choices open every cycle of the sweep, with their
/// profile labels.
#[cfg(any(test, feature = "research"))]
const REFERENCE_POLICIES: [(&str, Policy); 4] = [
    ("llvm", Policy::Llvm),
    ("lloyd", Policy::Lloyd),
    ("auto", Policy::Auto),
    ("occupancy", Policy::Occupancy),
];

/// Every point of the sweep for one launch, policies first, deterministic.
#[cfg(any(test, feature = "research"))]
pub fn space(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> Vec<SweepPoint> {
    let mut out: Vec<SweepPoint> = REFERENCE_POLICIES
        .iter()
        .filter_map(|(label, p)| {
            decide(p, device, kernel, launch).map(|decision| SweepPoint { label, decision })
        })
        .collect();

    let class = super::lloyd::classify(device, kernel, launch.trip_count);
    out.extend(
        grid(device, kernel, launch)
            .into_iter()
            .map(|geometry| SweepPoint {
                label: "grid",
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

/// One thread count of the space's grid and its block counts, ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub threads: u32,
    /// [`crate::residency::resident_blocks_per_sm`] at `threads`.
    pub resident_per_sm: u32,
    pub blocks: Vec<u32>,
}

/// The space's grid points without the policies' (what `space` labels
/// `grid`), in the same order.
#[cfg(any(test, feature = "research"))]
pub fn grid(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> Vec<Geometry> {
    points(columns(device, kernel, launch, |_| true))
}

/// The grids of `columns`, column by column.
pub fn points(columns: Vec<Column>) -> Vec<Geometry> {
    columns
        .into_iter()
        .flat_map(|c| {
            c.blocks
                .into_iter()
                .map(move |b| Geometry::new(c.threads, b))
        })
        .collect()
}

/// [`grid`] by thread count, threads ascending, for the thread counts `keep`
/// accepts: the shape `forest` searches.
pub fn columns(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
    keep: impl Fn(u32) -> bool,
) -> Vec<Column> {
    let limits = super::Limits::of(device, kernel, launch);
    let trip = launch.trip_count.max(1);
    let chunk = u64::from(kernel.distribute_chunk().unwrap_or(1).max(1));
    let chunks = div_ceil(trip, chunk);
    // The block counts every thread count tries: the paper's powers of two,
    // SM multiples and one block per distribute chunk.
    let mut common: Vec<u32> = (0..=16).map(|p| 1u32 << p).collect();
    common.extend((1..=SM_MULTIPLES).map(|m| m.saturating_mul(device.sm_count)));
    common.push(saturate(chunks));
    let max_blocks = limits.max_blocks.min(MAX_SWEEP_BLOCKS);
    common.iter_mut().for_each(|b| *b = (*b).min(max_blocks));
    let max_iterations = if limits.narrowed.is_some() {
        // The narrowed range ends at LLVM's grid: bound the serial work
        // relative to what a thread of that grid does.
        let llvm_busy = u64::from(limits.max_blocks).min(chunks) * u64::from(limits.max_threads);
        MAX_NESTED_ITERATIONS_PER_THREAD * div_ceil(trip, llvm_busy.max(1))
    } else {
        MAX_ITERATIONS_PER_THREAD
    };
    common.sort_unstable();
    common.dedup();
    let threads = std::iter::once(1)
        .chain((1..=limits.max_threads / device.warp_size).map(|w| w * device.warp_size));
    let mut out: Vec<Column> = Vec::new();
    for t in threads {
        // Only grids inside the launch's limits: blocks are cut to them
        // above, thread counts here.
        if !keep(t)
            || !limits.contains(Geometry::new(t, 1))
            || out.last().is_some_and(|c| c.threads == t)
        {
            continue;
        }
        let resident_per_sm = crate::residency::resident_blocks_per_sm(device, kernel, t);
        let resident = crate::residency::on_every_sm(device, resident_per_sm);
        // Whole waves of resident blocks, and ceil(trip/threads).
        let mut blocks = common.clone();
        for b in [1, 2, 4]
            .map(|w| resident.saturating_mul(w))
            .into_iter()
            .chain([saturate(div_ceil(trip, u64::from(t)))])
        {
            let b = b.min(max_blocks);
            if let Err(at) = blocks.binary_search(&b) {
                blocks.insert(at, b);
            }
        }
        // Teams beyond the number of chunks idle, and threads beyond the
        // chunk get no iteration (docs/llvm-grid.md §3): drop the block counts
        // that leave a thread more than max_iterations iterations, a prefix
        // since the busy threads grow with the blocks.
        let fits = |b: u32| {
            let busy = u64::from(b).min(chunks) * u64::from(t);
            trip <= busy.saturating_mul(max_iterations)
        };
        blocks.drain(..blocks.partition_point(|&b| !fits(b)));
        if !blocks.is_empty() {
            out.push(Column {
                threads: t,
                resident_per_sm,
                blocks,
            });
        }
    }
    out
}

const _: () = assert!(MAX_SWEEP_BLOCKS <= crate::device::MAX_BLOCKS);

/// `sweep` as the launch pipeline runs it (benchmark harness): the i-th
/// launch of each (kernel, device, trip count) gets the i-th point of its
/// [`space`], cycling, each labelled with where it comes from; past
/// [`super::per_launch::MAX_TRIP_COUNTS`] trip counts of a kernel, LLVM's grid.
#[cfg(feature = "sweep")]
#[derive(Default)]
pub struct SweepPolicy {
    cursors: PerLaunch<(Vec<SweepPoint>, usize)>,
}

#[cfg(feature = "sweep")]
impl GridPolicy for SweepPolicy {
    fn decide(&self, l: &Launch<'_>) -> Option<Proposal> {
        let start = || (space(l.device, l.kernel, &l.desc), 0);
        self.cursors
            .with(l, start, |(space, next)| {
                let c = space.get(*next % space.len().max(1))?;
                *next += 1;
                Some(Proposal {
                    label: Some(c.label),
                    ..Proposal::new(c.decision.geometry, c.decision.rule)
                })
            })
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn opens_with_the_policies_then_covers_the_paper_space() {
        let d = DeviceDesc::preset("h100").unwrap();
        let s = space(
            &d,
            &KernelDesc::spmd_for_tests(128),
            &LaunchDesc::open(1000),
        );
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
        let s = space(
            &d,
            &KernelDesc::spmd_for_tests(128),
            &LaunchDesc::open(1_000_000_000),
        );
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
    fn nesting_kernels_keep_few_iterations_per_thread() {
        use crate::kernel::{ExecMode, KernelEnvironment};
        let d = DeviceDesc::preset("h100").unwrap();
        let nesting = KernelDesc {
            environment: Some(KernelEnvironment {
                may_use_nested_parallelism: Some(true),
                exec_mode: 2,
                max_threads: Some(128),
                ..KernelEnvironment::default()
            }),
            exec_mode: Some(ExecMode::Spmd),
            ..KernelDesc::spmd_for_tests(128)
        };
        let l = LaunchDesc::open(16_384);
        let limits = super::super::Limits::of(&d, &nesting, &l);
        assert!(limits.narrowed.is_some() && limits.max_blocks > d.sm_count);
        let g = grid(&d, &nesting, &l);
        // 128 distribute chunks (the compiled cap): LLVM's 32 x 512 keeps 128
        // teams busy, 4 iterations per thread; the space allows 16 times that.
        let chunks = 16_384 / 128;
        let busy = |g: &Geometry| u64::from(g.threads) * u64::from(g.blocks.min(chunks));
        let llvm = Geometry::new(limits.max_threads, limits.max_blocks);
        let bound = MAX_NESTED_ITERATIONS_PER_THREAD * 16_384 / busy(&llvm);
        assert_eq!(bound, 64);
        assert!(g.contains(&llvm));
        assert!(g.contains(&Geometry::new(llvm.threads, chunks / 16)));
        assert!(!g.contains(&Geometry::new(llvm.threads, chunks / 32)));
        assert!(
            g.iter()
                .all(|g| limits.contains(*g) && 16_384 <= busy(g) * bound)
        );
        // Past LLVM's 3200 blocks the bound follows LLVM's own serial work:
        // its grid stays in the space.
        let huge = LaunchDesc::open(100_000_000);
        let limits = super::super::Limits::of(&d, &nesting, &huge);
        let llvm = Geometry::new(limits.max_threads, limits.max_blocks);
        assert!(grid(&d, &nesting, &huge).contains(&llvm));
        // Without nesting the same launch keeps the paper's single block.
        let plain = grid(&d, &KernelDesc::spmd_for_tests(128), &l);
        assert!(plain.contains(&Geometry::new(32, 1)));
    }

    #[test]
    fn a_region_without_a_loop_gets_the_whole_space_after_llvms_grid() {
        let d = DeviceDesc::preset("h100").unwrap();
        let k = KernelDesc::spmd_for_tests(128);
        let s = space(&d, &k, &LaunchDesc::open(0));
        // Every policy's point is LLVM's grid: none has a trip count to
        // size a grid by.
        for c in &s[..4] {
            assert_eq!(c.decision.geometry, Geometry::new(128, 3200), "{}", c.label);
        }
        let grids: Vec<Geometry> = s
            .iter()
            .filter(|c| c.label == "grid")
            .map(|c| c.decision.geometry)
            .collect();
        // No pruning: nothing bounds a thread's iterations.
        for t in [1, 32, 64, 128] {
            for b in [1, 132, 528, 4224, MAX_SWEEP_BLOCKS] {
                assert!(grids.contains(&Geometry::new(t, b)), "{t} x {b}");
            }
        }
    }

    #[test]
    fn is_deterministic() {
        let d = DeviceDesc::preset("h100").unwrap();
        let l = LaunchDesc::open(123_456);
        assert_eq!(
            space(&d, &KernelDesc::spmd_for_tests(1024), &l),
            space(&d, &KernelDesc::spmd_for_tests(1024), &l)
        );
    }
}
