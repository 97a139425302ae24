//! The candidates of a search, in the order of a prior: `auto`'s grid,
//! LLVM's, `occupancy`'s, the moves learned on other kernels, then
//! `auto`'s neighbours (the module documentation of [`super`] says why).

use super::cost;
use super::search::{Candidate, Exploring, Step};
use super::store::Table;
use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc, div_ceil, saturate};
use crate::kernel::{ExecMode, KernelDesc};
use crate::policy::{self, Limits, Policy, Rule, chunked, sweep};
use crate::residency::{resident_blocks, resident_blocks_per_sm};
use std::collections::{HashMap, HashSet};

/// The most blocks a candidate moved from `auto`'s grid resolves to, a
/// learned move's too: 2^16, the most the benchmark sweep measured (its
/// space's bound, Lloyd et al.'s), so that no candidate, nor a grid learned
/// on another kernel, goes where no measurement went.
pub const MAX_CANDIDATE_BLOCKS: u32 = 1 << 16;

/// The grid `c` stands for at `launch`, cut to the launch's limits: the
/// grid the pipeline will launch for it (the pipeline cuts every proposal
/// the same way, `Limits::clamp` being idempotent), which the search must
/// know to rank what it measured.
pub fn resolve(
    c: Candidate,
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
) -> Option<Geometry> {
    let auto = || chunked::grid(device, kernel, launch).0;
    let grid = match c {
        Candidate::Auto => auto(),
        Candidate::Llvm => policy::llvm::grid(device, kernel, launch),
        Candidate::Occupancy => {
            policy::decide(&Policy::Occupancy, device, kernel, launch)?.geometry
        }
        Candidate::Move {
            threads,
            blocks_log2,
        } => {
            let base = u64::from(auto().blocks);
            let blocks = if blocks_log2 >= 0 {
                base << blocks_log2
            } else {
                div_ceil(base, 1 << blocks_log2.unsigned_abs())
            };
            let blocks = saturate(blocks.max(1)).min(most_blocks(c, device, kernel, launch));
            Geometry::new(threads, blocks)
        }
        Candidate::Grid(g) => Geometry::new(
            g.threads,
            g.blocks.min(most_blocks(c, device, kernel, launch)),
        ),
    };
    Some(Limits::of(device, kernel, launch).clamp(grid).0)
}

/// The most blocks candidate `c` launches at `launch`, its one cap: the
/// blocks that get work ([`useful_blocks`]), for a fixed grid (`grid:T,B`)
/// at least the spread grids' ([`spread_moves`], which go past them on
/// purpose), and never more than [`MAX_CANDIDATE_BLOCKS`]. A fixed grid comes from the
/// store, learned on one launch or pinned by hand: without the cap a store
/// could make a loop of 20 000 iterations launch 2^31-1 blocks.
fn most_blocks(c: Candidate, device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> u32 {
    let useful = useful_blocks(kernel, launch).max(1);
    let most = match c {
        Candidate::Grid(_) => useful.max(device.sm_count.saturating_mul(SPREAD_MOST_PER_SM)),
        _ => useful,
    };
    most.min(MAX_CANDIDATE_BLOCKS)
}

/// The most blocks per SM of the spread grids (the last: ascending).
const SPREAD_MOST_PER_SM: u32 = SPREAD_BLOCKS_PER_SM[SPREAD_BLOCKS_PER_SM.len() - 1];

/// Blocks that get work: teams beyond the number of distribute chunks idle
/// (sweep.rs). A `target teams` region without a distribute loop (trip
/// count 0) gives no bound: whatever its inner loops are, every team runs
/// the region.
fn useful_blocks(kernel: &KernelDesc, launch: &LaunchDesc) -> u32 {
    if launch.trip_count == 0 {
        return crate::device::MAX_BLOCKS;
    }
    let spmd = kernel.exec_mode.unwrap_or(ExecMode::Spmd) == ExecMode::Spmd;
    let chunk = kernel
        .distribute_chunk()
        .filter(|_| spmd)
        .unwrap_or(1)
        .max(1);
    saturate(div_ceil(launch.trip_count, u64::from(chunk)))
}

/// Log2 distance between two grids, the prior's model of "similar".
fn distance(a: Geometry, b: Geometry) -> f64 {
    let l = |x: u32| f64::from(x.max(1)).log2();
    (l(a.threads) - l(b.threads)).abs() + BLOCK_WEIGHT * (l(a.blocks) - l(b.blocks)).abs()
}

/// Times change more slowly with blocks than with threads (H100 sweep).
const BLOCK_WEIGHT: f64 = 0.25;

/// Block multiples of `auto`'s grid the moves try on a loop (2^k).
const BLOCK_STEPS: [i8; 7] = [0, -1, 1, -2, 2, 4, 6];

/// Block multiples of LLVM's grid (`auto`'s there) tried on a `target teams`
/// region without a distribute loop: x1, x2, x4 and x16 (LLVM's 3200 blocks
/// up to 51 200).
const TEAMS_REGION_BLOCK_STEPS: [i8; 4] = [0, 1, 2, 4];

/// Whole waves of SMs tried there: SMs x 2^k for k up to this (132 to 4224
/// blocks on the H100).
const TEAMS_REGION_SM_DOUBLINGS: u32 = 5;

/// Thread counts tried there besides LLVM's, in warps.
const TEAMS_REGION_WARPS: [u32; 2] = [2, 1];

/// The thread counts of the moves on a loop: `auto`'s and the kernel's cap
/// halved down to a warp.
fn loop_threads(device: &DeviceDesc, limits: &Limits, auto: Geometry) -> Vec<u32> {
    let mut threads = vec![auto.threads];
    let mut t = limits.max_threads;
    while t >= device.warp_size.min(limits.max_threads) && t > 0 {
        threads.push(t);
        t /= 2;
    }
    threads
}

/// The moves around `auto`'s grid for a loop: each of the
/// [`loop_threads`] times [`BLOCK_STEPS`].
fn loop_moves(threads: &[u32]) -> Vec<Candidate> {
    threads
        .iter()
        .flat_map(|&threads| {
            BLOCK_STEPS.iter().map(move |&blocks_log2| Candidate::Move {
                threads,
                blocks_log2,
            })
        })
        .collect()
}

/// The moves for a `target teams` region without a distribute loop, where
/// `auto`'s grid is LLVM's: nothing tells how much work its inner loops
/// have, so the block counts span the device, from one block per SM
/// ([`TEAMS_REGION_SM_DOUBLINGS`]; fixed grids, since the store keys a
/// search by device) to LLVM's times 16 ([`TEAMS_REGION_BLOCK_STEPS`]), at
/// LLVM's thread count and [`TEAMS_REGION_WARPS`], those inside the
/// launch's limits.
///
/// In the prior's order, coarse to fine: block counts a factor of 4 apart
/// (SMs and LLVM's blocks times 4^k) at LLVM's threads, then at fewer
/// threads, then the counts between; nearest LLVM's grid first within each.
/// So the first candidates a search measures (the warm plan's 12) span the
/// range both ways: on the H100 matrix-vector products wanted 528 x 128 and
/// 1-D stencils 51 200 x 64 (bench/results/h100/teams/README.md), which
/// nearest-first alone put 13th or later.
fn teams_region_moves(device: &DeviceDesc, limits: &Limits, auto: Geometry) -> Vec<Candidate> {
    let threads = std::iter::once(auto.threads)
        .chain(TEAMS_REGION_WARPS.map(|w| w.saturating_mul(device.warp_size)))
        .filter(|&t| limits.contains(Geometry::new(t, 1)));
    let grid = |threads: u32, blocks: u64| {
        Geometry::new(threads, saturate(blocks).min(MAX_CANDIDATE_BLOCKS))
    };
    // (tier, distance from LLVM's grid, move) for `g`, 2^doublings times a
    // base count of blocks.
    let ranked = |doublings: u32, g: Geometry, c: Candidate| {
        let fine = doublings % 2 == 1;
        let tier = u8::from(fine) * 2 + u8::from(g.threads != auto.threads);
        (tier, distance(g, auto), c)
    };
    let mut moves: Vec<(u8, f64, Candidate)> = threads
        .flat_map(|threads| {
            let llvm_multiples = TEAMS_REGION_BLOCK_STEPS.map(|blocks_log2| {
                let doublings = u32::from(blocks_log2.unsigned_abs());
                let g = grid(threads, u64::from(auto.blocks) << doublings);
                let c = Candidate::Move {
                    threads,
                    blocks_log2,
                };
                ranked(doublings, g, c)
            });
            let sm_waves = (0..=TEAMS_REGION_SM_DOUBLINGS).map(move |k| {
                let g = grid(threads, u64::from(device.sm_count) << k);
                ranked(k, g, Candidate::Grid(g))
            });
            llvm_multiples.into_iter().chain(sm_waves)
        })
        .collect();
    moves.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    moves.into_iter().map(|(_, _, c)| c).collect()
}

/// The candidates of one launch in the prior's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Prior {
    /// Each resolved to its grid for the launch.
    pub list: Vec<(Candidate, Geometry)>,
    /// The grids from this index on would starve the launch: fewer threads
    /// with work than `auto`'s grid while that is under one wave of
    /// resident threads (LLVM's grid excepted). `None` when none would.
    pub starving_from: Option<usize>,
    /// Each listed candidate's predicted time over `auto`'s grid
    /// ([`cost::relative_cost`]; 1.0 where the model has nothing to go on).
    pub cost: Vec<f64>,
    /// How freely the search over these candidates may explore: its plan
    /// ([`super::search::Params::for_search`]).
    pub exploring: Exploring,
    /// The step, in threads per block, of a search's refinement (the
    /// device's warp), where a tuning session searches a loop; 0 where the
    /// search is not refined. The candidates move threads in powers of
    /// two; before a session's warm search settles, its leader's and its
    /// runner-up's blocks at a warp fewer and a warp more threads are
    /// measured too ([`super::Learner`]): the H100 sweep's best grid of the
    /// PRK flat transpose has 96 threads a block, 4.2 % faster than its
    /// best of a power of two (bench/results/h100/NOTES.md §52).
    pub refine_threads: u32,
}

impl Prior {
    /// The candidates, without their grids.
    pub fn candidates(&self) -> Vec<Candidate> {
        self.list.iter().map(|&(c, _)| c).collect()
    }

    /// A prior of `list` with no prediction (every cost 1.0) and no grid
    /// that starves the launch.
    pub fn unpredicted(list: Vec<(Candidate, Geometry)>) -> Self {
        Self {
            cost: vec![1.0; list.len()],
            list,
            starving_from: None,
            exploring: Exploring::Bounded,
            refine_threads: 0,
        }
    }
}

/// A candidate predicted to take more than this many times `auto`'s time is
/// never launched ([`candidates`]). On the H100 sweep (360 cases, 2 052
/// candidates besides `auto`'s grid; bench/results/h100/NOTES.md §27) the
/// model's ratios come in powers of two; pruning above 3 (4x and up)
/// removes 403 candidates, 281 of them measured more than 1.5x slower than
/// `auto`'s grid and 35 more than 3 % faster, and loses the best of a
/// case's candidates in 13 cases (median loss 4.6 %); above 1.5 (2x and up)
/// it would lose it in 27, and the docking grids (1-2 blocks of
/// 32-64 threads for 512 iterations, predicted 4-16x) are only pruned below 4.
/// Since the model counts a cross-team reduction's teams
/// ([`super::cost::REDUCTION_COST_PER_TEAM`]), the same computation over
/// today's sweep and prior (396 cases, 3 042 candidates) prunes 194 of the
/// 932 candidates of reductions instead of 63 (70 of them measured more
/// than 1.5x slower than `auto`'s grid, none more than 3 % faster) and
/// loses no reduction's best candidate (before: one, by 28 %); other
/// kernels' predictions are unchanged.
pub const PRUNE_ABOVE: f64 = 3.0;

/// Blocks per SM of the grids that spread a short loop over the device
/// ([`spread_moves`]), ascending.
const SPREAD_BLOCKS_PER_SM: [u32; 3] = [1, 2, 4];

/// Grids that spread a loop of fewer distribute chunks than SMs over every
/// SM: `auto`'s threads (the chunk's, one iteration each) on 1, 2 and 4
/// blocks per SM. Blocks beyond the chunks get no iteration (§1 of the
/// notes), yet on the H100 sweep such grids were the fastest in many of the
/// 53 measured cases with fewer chunks than SMs: the best of the three is
/// 0.968 of `auto`'s time (geomean), up to 0.80, and more than 3 % slower
/// in 2 (bench/results/h100/NOTES.md §27). Fixed grids: the store keys a
/// search by device, and the moves, relative to `auto`'s blocks, are cut to
/// the chunks.
fn spread_moves(device: &DeviceDesc, auto: Geometry, useful: u32) -> Vec<Candidate> {
    if useful >= device.sm_count {
        return Vec::new();
    }
    SPREAD_BLOCKS_PER_SM
        .iter()
        .map(|&k| {
            Candidate::Grid(Geometry::new(
                auto.threads,
                device.sm_count.saturating_mul(k),
            ))
        })
        .collect()
}

/// Whole waves a tuning session tries at each thread count of the moves
/// below `auto`'s ([`wave_moves`]).
const SESSION_WAVES: [u32; 2] = [1, 2];

/// Grids of one and two whole waves ([`SESSION_WAVES`]) at each of
/// `threads`: the device's SMs times the blocks of that size one SM holds at
/// once, cut to the blocks that get work. On the H100 the long streaming
/// loops of time-stepping codes ran fastest on such grids of fewer threads
/// than `auto`'s and more blocks: ts_ocean's sweep (23 kernels of 2^20
/// iterations) found 32 x 4096-8448 1.5-1.8x faster than `auto`'s 128 x
/// 3200 for four of them, where of the twelve candidates a warm search
/// measured only 32 x 3200 had 32 threads (bench/results/h100/NOTES.md
/// §30). Only a tuning session ([`Exploring::Unbounded`]) tries them, at
/// fewer threads than `auto`'s, ordered among `auto`'s neighbours by
/// distance: a warm plan's sixteen reach them, while a cold plan's four
/// stay with the nearest (once per run, the replay found them no better).
/// Fixed grids: the store keys a search by device.
fn wave_moves(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    threads: &[u32],
    useful: u32,
) -> Vec<Candidate> {
    // A loop of fewer chunks than SMs has its own grids ([`spread_moves`]).
    if useful < device.sm_count {
        return Vec::new();
    }
    threads
        .iter()
        .flat_map(|&t| {
            let wave = device
                .sm_count
                .saturating_mul(resident_blocks_per_sm(device, kernel, t).max(1));
            SESSION_WAVES.iter().map(move |&w| {
                Candidate::Grid(Geometry::new(t, wave.saturating_mul(w).min(useful)))
            })
        })
        .collect()
}

/// Blocks per SM of the grids at `auto`'s threads a tuning session tries
/// below `auto`'s blocks ([`few_block_moves`]).
const SESSION_BLOCKS_PER_SM: [u32; 2] = [2, 4];

/// Grids of `auto`'s threads on 2 and 4 blocks per SM
/// ([`SESSION_BLOCKS_PER_SM`]) where those are fewer blocks than `auto`'s,
/// cut to the blocks that get work: past the fewest blocks the moves reach
/// (2^-2 of `auto`'s), where some loops run fastest. On the H100 sweep
/// (396 cases; bench/results/h100/NOTES.md §40) they raise the best of a
/// session's first sixteen candidates from 97.45 to 97.74 % of the best
/// measured, in 22 cases of 9 programs (ts_advect_diag's 128 x 3200 loops
/// 0.81-0.93 to 0.98-1.00, hydro_lagrange's force loop 0.86-0.87 to 0.96),
/// losing it in none. Only a tuning session ([`Exploring::Unbounded`])
/// tries them, last among `auto`'s neighbours: they add 150 candidates
/// measured more than 1.5x slower than `auto`'s grid, and ordered by
/// distance they entered a cold plan's four, where the replay (`tune-sim
/// --programs`) found a program's costliest run 2-10 at p90 +75 % over
/// `auto`'s grids instead of +23 %. Fixed grids: the store keys a search
/// by device.
fn few_block_moves(device: &DeviceDesc, auto: Geometry, useful: u32) -> Vec<Candidate> {
    // A loop of fewer chunks than SMs has its own grids ([`spread_moves`]).
    if useful < device.sm_count {
        return Vec::new();
    }
    SESSION_BLOCKS_PER_SM
        .iter()
        .map(|&k| device.sm_count.saturating_mul(k).min(useful))
        .filter(|&blocks| blocks < auto.blocks)
        .map(|blocks| Candidate::Grid(Geometry::new(auto.threads, blocks)))
        .collect()
}

/// The trip counts at which the chunk-aware rules for a loop change
/// ([`chunked`], `auto`'s static rule): a cross-team
/// reduction's one wave of the chunk's threads, its one wave of 32-thread
/// blocks, and the long loops' two waves of 64-thread blocks.
fn chunked_rule_thresholds() -> impl Iterator<Item = u64> {
    [
        Some(chunked::REDUCTION_ONE_WAVE_MIN_TRIP),
        chunked::REDUCTION_GRID.map(|r| r.min_trip),
        Some(chunked::LONG_LOOP_GRID.min_trip),
    ]
    .into_iter()
    .flatten()
}

/// The static answers a tuning session measures first, after `auto`'s,
/// LLVM's and `occupancy`'s grids: one whole wave of `occupancy`'s block
/// size, `forest`'s grid, then the grids the other rules of `auto`'s static
/// rule ([`chunked`]) give the kernel, and `lloyd`'s. Those rules change with
/// the trip count (a reduction's waves from 2^20 and 2^23 iterations, the
/// long loops' from 2^25), so a loop just short of a threshold gets the
/// grid the next rule would give, and one past it the previous rule's: the
/// static rule evaluated on each side of every threshold, its blocks cut
/// to those that get work at this trip count. Kernels it leaves at LLVM's
/// grid (Generic, nesting) have no other rule. So a session that settles a kernel has measured what the
/// best static policy would have launched, and never keeps a slower grid
/// than that beyond the noise. Fixed grids: the store keys a search by
/// device.
///
/// On the H100 sweep (396 cases, `tune-sim --best-of N`): the first 8 and
/// 16 candidates hold a grid as fast as the best of `auto`'s, `occupancy`'s
/// and `lloyd`'s in all but 2 cases (two `target teams` regions within the
/// noise), against 15 and 12 before; the best of the first 16 reaches
/// 97.79 % of the best measured (97.75 % before; 10 cases gain, none
/// loses), of the first 8 97.27 % (97.31 %). The first 4 hold fewer of the
/// neighbours that were there before: 94.64 % (95.61 %; 115 cases lose,
/// median 2.6 %), and in the replay of sessions of a kernel launched once
/// per run (`tune-sim`, noiseless) run 2 costs +24 % over `auto`'s grid
/// (-0.2 % before) and the kept grid ends at 92.5 % of best after 10 runs
/// (93.0 %); launched 20 times per run, 97.4 % (97.3 %).
///
/// `forest`'s grid comes second, within a cold plan's four. Its model
/// never saw the upstream mini-apps (it was trained on 153 cases of an
/// older suite); replayed over their live priors (`tune-sim --live-prior`,
/// 45 cases, 13 runs, §19's cold noise, seeds 1-3), a kernel launched once
/// per run keeps 95.4-95.5 % of best instead of 94.9-95.1 %, runs 2-13
/// cost +7 % of a run over `auto`'s grids instead of +19-21 %, and no more
/// replays end more than 3 % slower than `auto`'s (1.1-1.9 %, against
/// 0.9-2.2 %). On the suite's sweep (396 cases, partly its training data):
/// 91.8 % instead of 91.6 %, +3-4 % instead of +7 %. Launched 20 times per
/// run, unchanged: 98.6 % and 97.4 % (bench/results/h100/NOTES.md §46).
fn static_answers(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
    useful: u32,
) -> Vec<Candidate> {
    let cut = |g: Geometry| Candidate::Grid(Geometry::new(g.threads, g.blocks.min(useful)));
    let mut answers = Vec::new();
    if let Some(o) = policy::decide(&Policy::Occupancy, device, kernel, launch) {
        let wave = resident_blocks(device, kernel, o.geometry.threads);
        answers.push(cut(Geometry::new(o.geometry.threads, wave)));
    }
    answers
        .extend(policy::decide(&Policy::Forest, device, kernel, launch).map(|f| cut(f.geometry)));
    let (_, rule) = chunked::grid(device, kernel, launch);
    let rules_apply = matches!(
        rule,
        Rule::AutoOneTeamPerChunk
            | Rule::AutoResidentWaves
            | Rule::AutoReductionWave
            | Rule::AutoLongLoopWaves
    );
    if rules_apply {
        for threshold in chunked_rule_thresholds() {
            for trip_count in [threshold - 1, threshold] {
                let at = LaunchDesc {
                    trip_count,
                    ..*launch
                };
                answers.push(cut(chunked::grid(device, kernel, &at).0));
            }
        }
    }
    answers.extend(
        policy::decide(&Policy::Lloyd, device, kernel, launch).map(|l| Candidate::Grid(l.geometry)),
    );
    answers
}

/// The candidates for one launch in the prior's order (see the module
/// documentation), each resolving to a distinct grid inside the launch's
/// limits that `available` accepts (everything in the runtime; the measured
/// grids when searches are replayed on sweep results), less those predicted to take more than
/// [`PRUNE_ABOVE`] times `auto`'s time. A tuning session
/// ([`Exploring::Unbounded`]) also tries whole waves of fewer threads and,
/// last among `auto`'s neighbours, `auto`'s threads on a few blocks per SM.
/// `learned` are moves that won for other kernels on this device, most
/// frequent first; a launch without a
/// trip count ignores them and tries its own ladder of block counts after
/// LLVM's grid (`auto`'s, `occupancy`'s and LLVM's are one there).
pub fn candidates(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
    learned: &[Candidate],
    exploring: Exploring,
    available: impl Fn(Geometry) -> bool,
) -> Prior {
    let listed = listed(device, kernel, launch, learned, exploring, available);
    Prior::from_listed(
        exploring,
        refine_threads(device, launch, exploring),
        listed
            .into_iter()
            .enumerate()
            .filter(|&(i, (_, _, cost))| i == 0 || cost <= PRUNE_ABOVE)
            .map(|(_, l)| l)
            .collect(),
    )
}

/// [`candidates`] with none pruned: what the pruning threshold is judged on
/// (`gridsel-research features --candidates`).
#[cfg(any(test, feature = "research"))]
pub fn candidates_before_pruning(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
    learned: &[Candidate],
    exploring: Exploring,
    available: impl Fn(Geometry) -> bool,
) -> Prior {
    Prior::from_listed(
        exploring,
        refine_threads(device, launch, exploring),
        listed(device, kernel, launch, learned, exploring, available),
    )
}

/// [`Prior::refine_threads`]: the warp, for a loop searched by a tuning
/// session. A region without a loop has its own ladder of warps
/// ([`teams_region_moves`]); online `tune` is not refined, its allowance
/// goes to the prior's candidates (its bound measured so:
/// bench/results/h100/NOTES.md §51).
fn refine_threads(device: &DeviceDesc, launch: &LaunchDesc, exploring: Exploring) -> u32 {
    if exploring.unbounded() && launch.trip_count != 0 {
        device.warp_size
    } else {
        0
    }
}

/// A candidate, its grid for the launch, whether it starves the launch,
/// and its predicted cost over `auto`'s grid.
type Listed = ((Candidate, Geometry), bool, f64);

impl Prior {
    /// The prior of candidates listed in order, starving ones last, for a
    /// search that explores as `exploring` says.
    fn from_listed(exploring: Exploring, refine_threads: u32, listed: Vec<Listed>) -> Self {
        let starving_from = listed
            .iter()
            .skip(1)
            .position(|&(_, starves, _)| starves)
            .map(|i| i + 1);
        let (list, cost) = listed.into_iter().map(|(c, _, cost)| (c, cost)).unzip();
        Self {
            list,
            starving_from,
            cost,
            exploring,
            refine_threads,
        }
    }
}

/// Every candidate of the launch in the prior's order, before pruning.
fn listed(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
    learned: &[Candidate],
    exploring: Exploring,
    available: impl Fn(Geometry) -> bool,
) -> Vec<Listed> {
    let resolve = |c| resolve(c, device, kernel, launch);
    let Some(auto) = resolve(Candidate::Auto) else {
        return Vec::new();
    };
    let trip = launch.trip_count;
    let useful = useful_blocks(kernel, launch);
    // Threads with work: those of the blocks the trip count can use.
    let busy = |g: Geometry| u64::from(g.blocks.min(useful)) * u64::from(g.threads);
    // No thread does more than the sweep's most iterations (a region
    // without a loop, trip count 0, gives none to count).
    let sensible = |g: Geometry| div_ceil(trip, busy(g).max(1)) <= sweep::MAX_ITERATIONS_PER_THREAD;
    let limits = Limits::of(device, kernel, launch);
    // A region without a loop has no static answer but LLVM's grid.
    let statics = if exploring.unbounded() && trip != 0 {
        static_answers(device, kernel, launch, useful)
    } else {
        Vec::new()
    };
    let (moves, learned, spread) = if trip == 0 {
        // Moves learned on loops are relative to `auto`'s grid for a trip
        // count: they mean nothing for a region without one.
        (
            teams_region_moves(device, &limits, auto),
            &[][..],
            Vec::new(),
        )
    } else {
        let threads = loop_threads(device, &limits, auto);
        let mut moves = loop_moves(&threads);
        if exploring.unbounded() {
            let fewer: Vec<u32> = threads.into_iter().filter(|&t| t < auto.threads).collect();
            moves.extend(wave_moves(device, kernel, &fewer, useful));
        }
        (moves, learned, spread_moves(device, auto, useful))
    };
    let mut moves: Vec<(Candidate, Geometry)> = moves
        .into_iter()
        .filter_map(|c| Some((c, resolve(c)?)))
        .collect();
    if trip != 0 {
        // Nearest `auto`'s grid first (a region without a loop comes in its
        // own order, coarse to fine).
        moves.sort_by(|a, b| distance(a.1, auto).total_cmp(&distance(b.1, auto)));
        // Last among the neighbours, so that a cold plan's few and a small
        // session's stay with the nearest.
        if exploring.unbounded() {
            let few = few_block_moves(device, auto, useful);
            moves.extend(few.into_iter().filter_map(|c| Some((c, resolve(c)?))));
        }
    }
    let mut seen = HashSet::new();
    let list: Vec<(Candidate, Geometry)> = [Candidate::Auto, Candidate::Llvm, Candidate::Occupancy]
        .into_iter()
        .chain(statics)
        .chain(spread)
        .chain(learned.iter().copied())
        .filter_map(|c| Some((c, resolve(c)?)))
        .chain(moves)
        // `auto`'s grid is what the launch gets without a search, so it is
        // always the first candidate, however many iterations it gives a
        // thread: without it an unsettled search would launch LLVM's grid.
        .filter(|&(c, g)| {
            limits.contains(g)
                && (c == Candidate::Auto || sensible(g))
                && available(g)
                && seen.insert(g)
        })
        .collect();
    // Grids that would starve the device go last (a region without a loop
    // has no count of threads with work). On the H100 sweep such a
    // candidate was more than 1.5x slower than `auto`'s grid in 152 of 364
    // cases and 5 % faster in 31; a kernel launched once per run pays a
    // whole run for each one it explores, so a cold plan screens none
    // (search::Params::COLD). LLVM's grid keeps its place (a warm search
    // screens it to never settle slower than LLVM).
    let wave = u64::from(device.sm_count) * u64::from(device.max_threads_per_sm);
    let starves = |&(c, g): &(Candidate, Geometry)| {
        trip != 0 && c != Candidate::Llvm && busy(auto) < wave && busy(g) < busy(auto)
    };
    let mut listed: Vec<Listed> = list
        .into_iter()
        .map(|c| {
            let cost = cost::relative_cost(device, kernel, launch, c.1, auto).unwrap_or(1.0);
            (c, starves(&c), cost)
        })
        .collect();
    if let Some(rest) = listed.get_mut(1..) {
        rest.sort_by_key(|&(_, starves, _)| starves);
    }
    listed
}

/// The moves that settled searches of other kernels on `device` chose, most
/// frequent first: a kernel's best grid relative to `auto` is often another
/// kernel's.
pub fn learned_moves(table: &Table, device: &DeviceDesc) -> Vec<Candidate> {
    let mut counts: HashMap<Candidate, u32> = HashMap::new();
    for r in table.records() {
        // Searches of regions without a loop (class 0) move from LLVM's
        // default grid, not from `auto`'s grid for a trip count.
        if r.key.device != device.name || r.key.sm_arch != device.sm_arch || r.key.class == 0 {
            continue;
        }
        let kind = r.kind();
        // A record may hold no candidate at all (a store edited by hand).
        if let Step::Settled(leader) = r.search.step(kind, 0)
            && let Some(&c @ Candidate::Move { .. }) = r.search.candidates.get(leader)
        {
            *counts.entry(c).or_default() += 1;
        }
    }
    let mut moves: Vec<(Candidate, u32)> = counts.into_iter().collect();
    moves.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    moves
        .into_iter()
        .take(LEARNED_MOVES)
        .map(|(c, _)| c)
        .collect()
}

/// Learned moves put ahead of `auto`'s neighbours.
const LEARNED_MOVES: usize = 4;
