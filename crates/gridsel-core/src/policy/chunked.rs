//! The chunk-aware rule, `auto`'s static rule: the grid LLVM 19 kernels
//! want on the device at hand, sized by the `distribute` chunk.
//!
//! The `auto` policy (`GRIDSEL_POLICY=auto`, the default) launches the grid
//! a tuning session learned where a store holds one
//! ([`crate::tune::LearnedPolicy`]) and this rule's grid everywhere else;
//! without a store (`GRIDSEL_CACHE=off`), and where `gridsel select` and the
//! C API decide `auto` from the launch alone ([`super::decide`]), it is this
//! rule alone. Its [`Rule`]s keep the policy's name (`Rule::Auto*`): they
//! are what the log says of an `auto` decision, and `gridsel-research
//! dump-decisions` and the committed results name them so.
//!
//! Each rule names the measurement behind it (bench/results/h100/NOTES.md):
//!
//! 1. **Chunk-sized blocks for SPMD kernels.** The `distribute` hands each
//!    team chunks of the compiled thread cap (128 by default), whatever the
//!    block size (OpenMPOpt folds the chunk to the cap; NOTES.md §1). A block
//!    smaller than the chunk runs it serially: LLVM's 32-thread blocks for
//!    trip counts under 409 600 run 4 iterations per thread, the paper's
//!    1-thread blocks 128. Measured: 128-thread blocks are 1.5-3.3x faster
//!    than LLVM's choice on those loops (NOTES.md §2). When a raised cap
//!    (`thread_limit`/launch bounds) makes chunks larger than LLVM's 128
//!    threads and there are at least as many chunks as SMs, 128 threads per
//!    block are faster than cap-wide blocks (probe_cap, NOTES.md §2); with
//!    fewer chunks than SMs the whole chunk width is used.
//! 2. **One block per chunk.** Blocks beyond the number of chunks idle.
//! 3. **Long loops keep hardware load balancing.** Capping the grid at one
//!    wave of resident blocks (the paper's no-queuing rule) made streaming
//!    stencils 10-24 % faster but load-imbalanced kernels (syrk, syr2k) up to
//!    30 % slower; the grid is capped at `max(waves x resident blocks, 3200)`
//!    with `waves` calibrated leave-one-out (`gridsel-research calibrate`), resident
//!    blocks counted with the hardware's allocation granularities.
//! 4. **Generic and Generic-SPMD kernels keep LLVM's grid.** Their
//!    `distribute` splits iterations evenly over the teams; no grid in the
//!    sweep beat LLVM's by more than the noise on the suite's nests (NOTES.md §2).
//! 5. **Kernels that may nest parallel regions keep LLVM's grid**, and so do
//!    kernels whose image cannot tell. Every thread of a nested region costs
//!    the device runtime heap `malloc`s; more threads per block than LLVM's
//!    can exhaust the heap (an illegal memory access, [`super::limits`]), and
//!    where the heap suffices they ran 2-20x slower on the H100 (NOTES.md §9).
//! 6. **Long cross-team reductions: 32-thread blocks, one wave.** An SPMD
//!    kernel whose environment has a cross-team reduction
//!    (ReductionDataSize > 0), at 2^23 iterations or more, gets 32 threads
//!    per block and one wave of blocks resident at that size (at most one
//!    block per chunk). Chosen leave-one-program-out from 3 thread counts x
//!    3 waves x 8 trip thresholds on the 10 programs with such kernels: the
//!    same constants in every fold, reductions 1.65x over LLVM's 128 x 3200
//!    (98.6 % of the best grid's 1.68x; udr_bbox up to 3.0x, red_energy 2.06x) and
//!    no case more than 3 % slower than LLVM; below 2^23 (cg's dot at 2^20,
//!    ts_particles' energy at 2^20-2^22) the small blocks lost
//!    (bench/results/h100/auto-patterns.md). Rules 4 and 5 come first:
//!    no Generic-SPMD reduction was measured with a trip count (h2_resid is
//!    launched with none and kept as given).
//! 7. **Mid-size cross-team reductions: one wave of the usual blocks.** Below
//!    rule 6's 2^23 iterations, from 2^20, a cross-team reduction keeps rule
//!    1's 128-thread blocks but stops at one wave of them, without rule 3's
//!    floor of LLVM's 3200 blocks: each team adds a partial result to
//!    combine, and on these loops the extra teams cost more than the
//!    balancing they buy. Chosen leave-one-program-out over 32-128 threads x
//!    1-4 waves x thresholds 2^17-2^22 with rule 6 kept (10 of 11 folds, 0
//!    held-out cases more than 3 % slower than LLVM), and measured live with
//!    `gridsel compare` against LLVM's grid: 1.12x over 31 launches of 2^18 to
//!    2^22 iterations, faster in every round on 16, slower by more than 3 % in
//!    every round on none (bench/results/h100/NOTES.md §28). Below 2^20 the
//!    folds' one slower sweep case (cg_init at 2^18) keeps LLVM's cap.
//! 8. **Long loops: two waves of 64-thread blocks.** A loop that rules 1-3
//!    decide (SPMD, does not nest, no cross-team reduction) of 2^25
//!    iterations or more, whose chunk holds 64 threads, gets 64-thread
//!    blocks, two waves of the blocks resident at that size (at most one per
//!    chunk), in place of rule 3's 3200 blocks of 128. Judged
//!    leave-one-program-out over 32-128 threads x 1, 2, 4 waves x thresholds
//!    2^17-2^26 on the 279 long-loop cases of the H100 sweep
//!    (`bench/harness/long_loop_rule.py`): 37 of 39 folds chose this member;
//!    held out the whole table went from 87.3 to 88.0 % of the best grids'
//!    geomean, with two held-out kernels more than 3 % slower than LLVM
//!    (bilateral5 at 2^26, s3_transpose at 56.6 M; NOTES.md §31). Measured
//!    live with `gridsel compare` against LLVM's grid on an H200 (the same
//!    sm_90 and 132 SMs), 3 rounds: 1.15x over 26 launches of 12 programs,
//!    faster by more than 3 % in every round on 20, slower by more than 3 % in
//!    every round on none; the two held-out losers ran 1.08x and 1.28x faster
//!    (NOTES.md §32). Why two waves of 64 and not the one wave of 128
//!    that §25 rejected: that one lost up to 1.77x on loops of these sizes
//!    (s3_copy, bilateral5, syrk), while this member, in sample, moved 35
//!    cases in 13 programs, 1.107x over rule 3, none more than 3 % slower
//!    than LLVM.
//!
//! Before all of them, a launch without a trip count (a `target teams`
//! region without a distribute loop, which `GRIDSEL_TEAMS_REGIONS=change`
//! opens) keeps LLVM's grid ([`super::llvm_without_trip_count`]): every rule
//! above sizes the grid by the trip count. `tune` starts its search there.

use super::Rule;
use super::llvm::{self, DEFAULT_BLOCKS, DEFAULT_THREADS};
use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc, div_ceil, saturate};
use crate::kernel::{ExecMode, KernelDesc};
use crate::residency::resident_blocks;

/// `threads` per block and `waves` waves of the blocks resident at that
/// size (at most one per chunk), for trip counts of at least `min_trip`:
/// the grids of rule 6 (cross-team reductions) and rule 8 (long loops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaveGrid {
    pub threads: u32,
    pub waves: u32,
    pub min_trip: u64,
}

/// Rule 6 as shipped: chosen leave-one-program-out on the H100 sweep
/// (bench/results/h100/auto-patterns.md, `bench/harness/auto_patterns.py`).
pub const REDUCTION_GRID: Option<WaveGrid> = Some(WaveGrid {
    threads: 32,
    waves: 1,
    min_trip: 1 << 23,
});

/// Rule 7: cross-team reductions of at least this many iterations (and below
/// rule 6's) get one wave of the usual blocks. Chosen leave-one-program-out
/// on the H100 sweep (10 of 11 folds; bench/results/h100/auto-patterns.md)
/// and measured live (bench/results/h100/reduction-wave).
pub const REDUCTION_ONE_WAVE_MIN_TRIP: u64 = 1 << 20;

/// Rule 8: long loops without a cross-team reduction get two waves of
/// 64-thread blocks from 2^25 iterations. Chosen leave-one-program-out on the
/// H100 sweep (37 of 39 folds; `bench/harness/long_loop_rule.py`) and
/// measured live (bench/results/h200/long-loop-wave).
pub const LONG_LOOP_GRID: WaveGrid = WaveGrid {
    threads: 64,
    waves: 2,
    min_trip: 1 << 25,
};

/// The chunk-aware grid and the rule that chose it.
pub fn grid(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> (Geometry, Rule) {
    with_reduction_grid(device, kernel, launch, REDUCTION_GRID)
}

/// [`grid`] with rule 6's constants given (`None`: no rule 6), for judging
/// other constants on sweep results (`gridsel-research evaluate --reduction-grid`).
#[cfg(feature = "research")]
pub fn grid_with(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
    reduction: Option<WaveGrid>,
) -> (Geometry, Rule) {
    with_reduction_grid(device, kernel, launch, reduction)
}

/// The chunk-aware rules with rule 6's constants `reduction`.
fn with_reduction_grid(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
    reduction: Option<WaveGrid>,
) -> (Geometry, Rule) {
    if launch.trip_count == 0 {
        return super::llvm_without_trip_count(device, kernel, launch);
    }
    if matches!(
        kernel.exec_mode,
        Some(ExecMode::Generic | ExecMode::GenericSpmd)
    ) {
        return (llvm::grid(device, kernel, launch), Rule::AutoKeepsLlvm);
    }
    if super::limits::narrowing(kernel).is_some() {
        return (
            llvm::grid(device, kernel, launch),
            Rule::AutoNestingKeepsLlvm,
        );
    }
    let cap = crate::residency::thread_cap(device, kernel);
    // Unknown cap (no cubin): clang's default, which is also the chunk.
    let chunk = kernel
        .distribute_chunk()
        .unwrap_or(DEFAULT_THREADS)
        .clamp(1, cap);
    let chunks = div_ceil(launch.trip_count, u64::from(chunk));
    let reduces = kernel.has_cross_team_reduction();
    if let Some(r) = reduction.filter(|r| reduces && launch.trip_count >= r.min_trip) {
        let threads = r.threads.clamp(1, chunk);
        return (
            waves_of_resident(device, kernel, threads, r.waves, chunks),
            Rule::AutoReductionWave,
        );
    }
    let long = LONG_LOOP_GRID;
    // The rule was judged only on kernels whose environment says they are
    // SPMD, do not nest and do not reduce across teams: a kernel without an
    // environment (LLVM 15-17 cubins, host images) tells none of that and
    // stays with rules 1-3. A chunk narrower than the rule's blocks (a
    // `thread_limit` below 64) does too, as wider blocks would idle threads.
    let judged = kernel.exec_mode == Some(ExecMode::Spmd)
        && kernel
            .environment
            .is_some_and(|e| e.may_use_nested_parallelism == Some(false));
    if judged && !reduces && launch.trip_count >= long.min_trip && long.threads <= chunk {
        return (
            waves_of_resident(device, kernel, long.threads, long.waves, chunks),
            Rule::AutoLongLoopWaves,
        );
    }
    let threads = if chunks >= u64::from(device.sm_count) {
        chunk.min(DEFAULT_THREADS)
    } else {
        chunk
    };
    let resident = u64::from(resident_blocks(device, kernel, threads));
    // Every team of a cross-team reduction writes a partial result that the
    // last team combines, so its blocks stop at one wave (rule 7); other long
    // loops keep the hardware's load balancing (rule 3).
    let (limit, capped) = if reduces && launch.trip_count >= REDUCTION_ONE_WAVE_MIN_TRIP {
        (resident, Rule::AutoReductionWave)
    } else {
        (
            (resident * u64::from(device.waves.max(1))).max(DEFAULT_BLOCKS),
            Rule::AutoResidentWaves,
        )
    };
    if chunks <= limit {
        (
            Geometry::new(threads, saturate(chunks)),
            Rule::AutoOneTeamPerChunk,
        )
    } else {
        (Geometry::new(threads, saturate(limit)), capped)
    }
}

/// `threads` per block, `waves` waves of the blocks resident at that size,
/// but no more blocks than `chunks`: blocks beyond the chunks idle.
fn waves_of_resident(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    threads: u32,
    waves: u32,
    chunks: u64,
) -> Geometry {
    let resident = u64::from(resident_blocks(device, kernel, threads));
    Geometry::new(
        threads,
        saturate(chunks.min(resident * u64::from(waves.max(1)))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> DeviceDesc {
        DeviceDesc::preset("h100").unwrap()
    }

    fn kernel(mode: ExecMode, cap: u32, regs: u32) -> KernelDesc {
        KernelDesc {
            local_mem: Some(0),
            registers: Some(regs),
            shared_mem: Some(0),
            max_threads: Some(cap),
            exec_mode: Some(mode),
            ..KernelDesc::named("k")
        }
    }

    #[test]
    fn spmd_blocks_are_one_per_chunk_of_the_cap() {
        let d = h100();
        let k = kernel(ExecMode::Spmd, 128, 32);
        // The short heavy loop of docs/llvm-grid.md §3: 132 iterations = 2 chunks.
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(132)),
            (Geometry::new(128, 2), Rule::AutoOneTeamPerChunk)
        );
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(1000)).0,
            Geometry::new(128, 8)
        );
        assert_eq!(grid(&d, &k, &LaunchDesc::open(1)).0, Geometry::new(128, 1));
        // LLVM's 32 x 3125 for 100 000 iterations becomes 128 x 782.
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(100_000)).0,
            Geometry::new(128, 782)
        );
    }

    #[test]
    fn raised_caps_use_the_chunk_width_only_when_chunks_are_scarce() {
        let d = h100();
        let wide = kernel(ExecMode::Spmd, 512, 32);
        // 8 chunks of 512 < 132 SMs: whole chunks.
        assert_eq!(
            grid(&d, &wide, &LaunchDesc::open(4096)).0,
            Geometry::new(512, 8)
        );
        // 2048 chunks: LLVM's 128 threads loop over each chunk.
        assert_eq!(
            grid(&d, &wide, &LaunchDesc::open(1 << 20)).0,
            Geometry::new(128, 2048)
        );
    }

    #[test]
    fn long_loops_are_capped_at_waves_of_resident_blocks_or_llvms_cap() {
        let mut d = h100();
        let k = kernel(ExecMode::Spmd, 128, 32);
        // 32 regs: 16 blocks of 128 per SM -> 2112 resident, below LLVM's 3200.
        // (From 2^25 iterations rule 8 decides instead.)
        let long = LaunchDesc::open((1 << 25) - 1);
        d.waves = 1;
        assert_eq!(
            grid(&d, &k, &long),
            (Geometry::new(128, 3200), Rule::AutoResidentWaves)
        );
        d.waves = 4;
        assert_eq!(grid(&d, &k, &long).0, Geometry::new(128, 8448));
        // Exactly at the limit is still one team per chunk.
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(8448 * 128)).1,
            Rule::AutoOneTeamPerChunk
        );
    }

    #[test]
    fn long_loops_from_2_pow_25_get_two_waves_of_64_thread_blocks() {
        let d = h100();
        // 32 registers: the H100's 32 blocks of 64 threads per SM, 4224 in all.
        let k = long_loop(128, 32);
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(1 << 25)),
            (Geometry::new(64, 8448), Rule::AutoLongLoopWaves)
        );
        // One iteration short: rule 3's 3200 blocks of 128.
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open((1 << 25) - 1)),
            (Geometry::new(128, 3200), Rule::AutoResidentWaves)
        );
        // 80 registers: 12 blocks of 64 per SM, two waves of 1584.
        assert_eq!(
            grid(&d, &long_loop(128, 80), &LaunchDesc::open(1 << 26)).0,
            Geometry::new(64, 3168)
        );
        // A chunk of 64 (thread_limit(64)) holds the rule's blocks; one of 32
        // does not, and keeps rules 1-3.
        assert_eq!(
            grid(&d, &long_loop(64, 32), &LaunchDesc::open(1 << 25)).1,
            Rule::AutoLongLoopWaves
        );
        assert_eq!(
            grid(&d, &long_loop(32, 32), &LaunchDesc::open(1 << 25)),
            (Geometry::new(32, 4224), Rule::AutoResidentWaves)
        );
    }

    #[test]
    fn the_long_loop_rule_leaves_reductions_nests_and_generic_kernels_alone() {
        let d = h100();
        let l = LaunchDesc::open(1 << 26);
        // A cross-team reduction: rule 6's 32-thread blocks.
        assert_eq!(
            grid(&d, &reducing(ExecMode::Spmd, 32), &l),
            (Geometry::new(32, 4224), Rule::AutoReductionWave)
        );
        // A kernel that may nest, or whose image cannot tell: LLVM's grid.
        let mut nests = kernel(ExecMode::Spmd, 128, 32);
        nests.environment = Some(crate::kernel::KernelEnvironment {
            may_use_nested_parallelism: Some(true),
            exec_mode: 2,
            max_threads: Some(128),
            ..Default::default()
        });
        let mut unknown = kernel(ExecMode::Spmd, 128, 32);
        unknown.local_mem = None;
        unknown.unbounded_stack = true;
        for k in [nests, unknown] {
            assert_eq!(
                grid(&d, &k, &l),
                (llvm::grid(&d, &k, &l), Rule::AutoNestingKeepsLlvm)
            );
        }
        let generic = KernelDesc {
            exec_mode: Some(ExecMode::GenericSpmd),
            ..kernel(ExecMode::Spmd, 128, 32)
        };
        assert_eq!(grid(&d, &generic, &l).1, Rule::AutoKeepsLlvm);
        // No kernel environment (an LLVM 15-17 cubin): nothing says the loop
        // does not nest or reduce across teams, so rules 1-3 decide.
        assert_eq!(
            grid(&d, &kernel(ExecMode::Spmd, 128, 32), &l),
            (Geometry::new(128, 3200), Rule::AutoResidentWaves)
        );
    }

    #[test]
    fn the_long_loop_rules_grids_lie_in_the_launchs_safe_range() {
        let d = h100();
        let mut moved = 0;
        for cap in [32, 64, 128, 256, 1024] {
            for regs in [16, 64, 128, 255] {
                for trip in [(1 << 25) - 1, 1 << 25, 1 << 40] {
                    let (k, l) = (long_loop(cap, regs), LaunchDesc::open(trip));
                    let decision = crate::policy::decide(&crate::policy::Policy::Auto, &d, &k, &l)
                        .expect("the chunk-aware rule decides every launch");
                    let at = format!("cap {cap}, {regs} registers, {trip} iterations");
                    assert!(!decision.clamped, "{at}: {decision:?}");
                    assert!(
                        crate::policy::Limits::of(&d, &k, &l).contains(decision.geometry),
                        "{at}"
                    );
                    if decision.rule == Rule::AutoLongLoopWaves {
                        assert!(trip >= 1 << 25 && cap >= 64, "{at}");
                        assert_eq!(decision.geometry.threads, 64, "{at}");
                        moved += 1;
                    }
                }
            }
        }
        // Every cap of at least 64 at both long trip counts.
        assert_eq!(moved, 4 * 4 * 2);
    }

    /// An SPMD loop whose environment says it does not nest and does not
    /// reduce across teams: the kernels rule 8 was judged on.
    fn long_loop(cap: u32, regs: u32) -> KernelDesc {
        KernelDesc {
            environment: Some(crate::kernel::KernelEnvironment {
                may_use_nested_parallelism: Some(false),
                exec_mode: 2,
                max_threads: Some(cap),
                ..Default::default()
            }),
            ..kernel(ExecMode::Spmd, cap, regs)
        }
    }

    fn reducing(mode: ExecMode, regs: u32) -> KernelDesc {
        KernelDesc {
            environment: Some(crate::kernel::KernelEnvironment {
                may_use_nested_parallelism: Some(false),
                exec_mode: 2,
                max_threads: Some(128),
                reduction_data_size: Some(24),
                reduction_buffer_length: Some(1024),
                ..Default::default()
            }),
            ..kernel(mode, 128, regs)
        }
    }

    #[test]
    fn long_cross_team_reductions_get_one_wave_of_warp_sized_blocks() {
        let d = h100();
        // red_energy (114 registers: 16 resident 32-thread blocks per SM) at
        // 2^26 iterations: LLVM's 128 x 3200 took 1.65 ms, 32 x 2112 0.86 ms.
        let k = reducing(ExecMode::Spmd, 114);
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(1 << 26)),
            (Geometry::new(32, 2112), Rule::AutoReductionWave)
        );
        // 32 registers: the 32 blocks per SM the H100 allows.
        assert_eq!(
            grid(
                &d,
                &reducing(ExecMode::Spmd, 32),
                &LaunchDesc::open(1 << 23)
            )
            .0,
            Geometry::new(32, 4224)
        );
        // Below 2^23 iterations (cg's dot at 2^20 lost with small blocks):
        // the chunk-wide blocks, one wave of them (rule 7).
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open((1 << 23) - 1)),
            (Geometry::new(128, 528), Rule::AutoReductionWave)
        );
        // The same kernel without a cross-team reduction: rule 8's long loop.
        let mut plain = k.clone();
        plain.environment.as_mut().unwrap().reduction_data_size = None;
        assert_eq!(
            grid(&d, &plain, &LaunchDesc::open(1 << 26)).1,
            Rule::AutoLongLoopWaves
        );
        // Without rule 6, as `gridsel-research evaluate --reduction-grid off`
        // judges: rule 7's one wave of 128-thread blocks.
        assert_eq!(
            with_reduction_grid(&d, &k, &LaunchDesc::open(1 << 26), None).0,
            Geometry::new(128, 528)
        );
    }

    #[test]
    fn mid_size_cross_team_reductions_get_one_wave_of_chunk_wide_blocks() {
        let d = h100();
        // udr_phasor at 2^20 iterations (74 registers: 6 resident 128-thread
        // blocks per SM): LLVM's 128 x 3200 took 0.221 ms, 128 x 792 0.182 ms
        // (gridsel compare, 5 rounds, faster in each).
        let k = reducing(ExecMode::Spmd, 74);
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(1 << 20)),
            (Geometry::new(128, 792), Rule::AutoReductionWave)
        );
        // 47 registers: 10 blocks per SM.
        assert_eq!(
            grid(
                &d,
                &reducing(ExecMode::Spmd, 47),
                &LaunchDesc::open((1 << 23) - 1)
            )
            .0,
            Geometry::new(128, 1320)
        );
        // Fewer chunks than one wave: one block per chunk, as without a reduction.
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(1 << 16)),
            (Geometry::new(128, 512), Rule::AutoOneTeamPerChunk)
        );
        // Below 2^20 iterations the sweep's folds kept LLVM's cap.
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open((1 << 20) - 1)),
            (Geometry::new(128, 3200), Rule::AutoResidentWaves)
        );
        // Without rule 6 (`--reduction-grid off`) the one wave stays, from 2^20 on.
        assert_eq!(
            with_reduction_grid(&d, &k, &LaunchDesc::open(1 << 26), None).0,
            Geometry::new(128, 792)
        );
    }

    #[test]
    fn reductions_never_get_more_blocks_than_chunks() {
        let d = h100();
        let k = reducing(ExecMode::Spmd, 32);
        let rule = Some(WaveGrid {
            threads: 32,
            waves: 4,
            min_trip: 0,
        });
        // 1000 iterations are 8 chunks of 128: 8 blocks of 32 threads.
        assert_eq!(
            with_reduction_grid(&d, &k, &LaunchDesc::open(1000), rule),
            (Geometry::new(32, 8), Rule::AutoReductionWave)
        );
    }

    #[test]
    fn generic_and_nesting_reductions_keep_llvms_grid() {
        let d = h100();
        let l = LaunchDesc::open(1 << 26);
        for mode in [ExecMode::GenericSpmd, ExecMode::Generic] {
            let k = reducing(mode, 64);
            assert_eq!(
                grid(&d, &k, &l),
                (llvm::grid(&d, &k, &l), Rule::AutoKeepsLlvm)
            );
        }
        let mut k = reducing(ExecMode::Spmd, 64);
        k.environment.as_mut().unwrap().may_use_nested_parallelism = Some(true);
        assert_eq!(
            grid(&d, &k, &l),
            (llvm::grid(&d, &k, &l), Rule::AutoNestingKeepsLlvm)
        );
    }

    #[test]
    fn generic_kernels_keep_llvms_grid() {
        let d = h100();
        for mode in [ExecMode::GenericSpmd, ExecMode::Generic] {
            let k = kernel(mode, 128, 50);
            let l = LaunchDesc::open(500);
            assert_eq!(
                grid(&d, &k, &l),
                (llvm::grid(&d, &k, &l), Rule::AutoKeepsLlvm)
            );
        }
    }

    #[test]
    fn launches_without_a_trip_count_keep_llvms_grid() {
        let d = h100();
        for mode in [ExecMode::Spmd, ExecMode::GenericSpmd, ExecMode::Generic] {
            let k = kernel(mode, 128, 32);
            let l = LaunchDesc::open(0);
            // LLVM's default, 3200 blocks of the cap (not one block for the
            // one "chunk" of a trip count taken as 1).
            assert_eq!(
                grid(&d, &k, &l),
                (Geometry::new(128, 3200), Rule::NoTripCount),
                "{mode:?}"
            );
        }
        // Clauses opened too (GRIDSEL_OVERRIDE_CLAUSES=1): LLVM honours them.
        let l = LaunchDesc {
            num_teams: 8,
            thread_limit: 64,
            ..LaunchDesc::open(0)
        };
        assert_eq!(
            grid(&d, &kernel(ExecMode::Spmd, 128, 32), &l),
            (Geometry::new(64, 8), Rule::NoTripCount)
        );
    }

    #[test]
    fn never_exceeds_the_cap_and_always_launches_something() {
        let d = h100();
        for mode in [ExecMode::Spmd, ExecMode::GenericSpmd, ExecMode::Generic] {
            for cap in [32, 128, 256, 1024] {
                for regs in [16, 64, 255] {
                    for trip in [0, 1, 131, 132, 133, 10_000, 1 << 40] {
                        let (g, _) = grid(&d, &kernel(mode, cap, regs), &LaunchDesc::open(trip));
                        assert!(
                            g.threads >= 1 && g.threads <= cap && g.blocks >= 1,
                            "{mode:?} {cap} {regs} {trip}"
                        );
                    }
                }
            }
        }
        // No cubin: nothing says whether the kernel nests, so LLVM's grid.
        assert_eq!(
            grid(&d, &KernelDesc::named("k"), &LaunchDesc::open(1000)),
            (Geometry::new(32, 32), Rule::AutoNestingKeepsLlvm)
        );
    }

    #[test]
    fn kernels_that_nest_keep_llvms_grid() {
        let d = h100();
        let mut k = kernel(ExecMode::Spmd, 128, 100);
        k.local_mem = None;
        k.unbounded_stack = true;
        k.environment = Some(crate::kernel::KernelEnvironment {
            may_use_nested_parallelism: Some(true),
            exec_mode: 2,
            max_threads: Some(128),
            ..Default::default()
        });
        // probe_nested_simd at 24 576 samples: LLVM's 768 x 32 ran, auto's
        // old 192 x 128 crashed (NOTES.md §9).
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(24_576)),
            (Geometry::new(32, 768), Rule::AutoNestingKeepsLlvm)
        );
        // The same module's kernels that do not nest say so, and are free.
        k.environment.as_mut().unwrap().may_use_nested_parallelism = Some(false);
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(24_576)),
            (Geometry::new(128, 192), Rule::AutoOneTeamPerChunk)
        );
    }
}
