use super::prior::PRUNE_ABOVE;
use super::prior::candidates_before_pruning;
use super::search::{self, Candidate, Exploring, Kind};
use super::store::{self, Key, Table};
use super::{
    Allowance, Bound, Learner, MAX_CANDIDATE_BLOCKS, Prior, SAMPLE_EVERY, candidates, cost, resolve,
};
use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc};
use crate::kernel::{ExecMode, KernelDesc, KernelEnvironment};
use crate::policy::{Limits, llvm, sweep::MAX_SWEEP_BLOCKS};

/// A kernel compiled with clang's default 128-thread cap whose
/// environment says whether it may nest parallel regions.
fn kernel(mode: ExecMode, nested: bool) -> KernelDesc {
    KernelDesc {
        local_mem: Some(0),
        registers: Some(32),
        shared_mem: Some(0),
        max_threads: Some(128),
        exec_mode: Some(mode),
        environment: Some(KernelEnvironment {
            may_use_nested_parallelism: Some(nested),
            exec_mode: mode.raw(),
            max_threads: Some(128),
            ..KernelEnvironment::default()
        }),
        ..KernelDesc::named("k")
    }
}

/// gspmd_matvec's mv_rows: a `target teams` region with team-level code
/// around a `distribute parallel for`, launched with trip count 0.
#[test]
fn a_region_without_a_loop_starts_from_llvms_grid_then_spans_the_device() {
    let d = DeviceDesc::preset("h100").unwrap();
    let k = kernel(ExecMode::GenericSpmd, false);
    let l = LaunchDesc::open(0);
    let learned = [Candidate::Move {
        threads: 96,
        blocks_log2: -2,
    }];
    let list = candidates(&d, &k, &l, &learned, Exploring::Bounded, |_| true).list;
    let llvm = llvm::grid(&d, &k, &l);
    assert_eq!(llvm, Geometry::new(128, 3200));
    // The incumbent is LLVM's grid: auto's there (occupancy's and
    // LLVM's own are the same grid, so dropped).
    assert_eq!(list[0], (Candidate::Auto, llvm));
    let grids: Vec<Geometry> = list.iter().map(|&(_, g)| g).collect();
    // The ladder: SMs x 2^k, LLVM's blocks x 1, 2, 4, 16, at LLVM's 128
    // threads, 64 and 32; nothing else (no learned move: 96 x 800).
    let mut ladder = Vec::new();
    for t in [128, 64, 32] {
        for b in [132, 264, 528, 1056, 2112, 4224, 3200, 6400, 12_800, 51_200] {
            ladder.push(Geometry::new(t, b));
        }
    }
    let mut sorted = grids.clone();
    sorted.sort();
    ladder.sort();
    assert_eq!(sorted, ladder);
    // Within the limits; no grid clipped to the one block of a trip
    // count taken as 1.
    let limits = Limits::of(&d, &k, &l);
    assert!(grids.iter().all(|&g| limits.contains(g)));
    assert!(grids.iter().all(|g| g.blocks >= d.sm_count));
    // Coarse to fine: block counts 4x apart at LLVM's threads, nearest
    // first, then at 64 and 32 threads; the counts between come last.
    // The warm plan's first 12 reach both ends of the range.
    let coarse = [132, 528, 2112, 3200, 12_800, 51_200];
    assert_eq!(
        grids[1..6],
        [2112, 12_800, 528, 51_200, 132].map(|b| Geometry::new(128, b))
    );
    assert!(grids[6..18].iter().all(|g| coarse.contains(&g.blocks)));
    assert!(grids[18..].iter().all(|g| !coarse.contains(&g.blocks)));
    for g in [Geometry::new(128, 528), Geometry::new(64, 51_200)] {
        assert!(grids[..12].contains(&g), "{g} not in {:?}", &grids[..12]);
    }
    // Moves are relative to auto's blocks, LLVM's here, capped at the
    // sweep's largest count.
    let resolved = |blocks_log2| {
        resolve(
            Candidate::Move {
                threads: 64,
                blocks_log2,
            },
            &d,
            &k,
            &l,
        )
    };
    assert_eq!(resolved(4), Some(Geometry::new(64, 51_200)));
    assert_eq!(resolved(6), Some(Geometry::new(64, MAX_CANDIDATE_BLOCKS)));
    // No further than the sweep measured.
    assert_eq!(MAX_CANDIDATE_BLOCKS, MAX_SWEEP_BLOCKS);
    assert_eq!(resolved(-1), Some(Geometry::new(64, 1600)));
}

#[test]
fn a_region_without_a_loop_that_may_nest_stays_within_llvms_grid() {
    let d = DeviceDesc::preset("h100").unwrap();
    let k = kernel(ExecMode::GenericSpmd, true);
    let l = LaunchDesc::open(0);
    let llvm = llvm::grid(&d, &k, &l);
    let list = candidates(&d, &k, &l, &[], Exploring::Bounded, |_| true).list;
    assert_eq!(list[0].1, llvm);
    for &(c, g) in &list {
        assert!(
            g.threads <= llvm.threads && g.blocks <= llvm.blocks,
            "{c}: {g} leaves LLVM's {llvm}"
        );
    }
    // LLVM's thread count at every SM multiple below LLVM's blocks.
    for b in [132, 264, 528, 1056, 2112] {
        assert!(list.iter().any(|&(_, g)| g == Geometry::new(128, b)), "{b}");
    }
    assert!(list.len() > 10, "{list:?}");
}

#[test]
fn a_generic_region_without_a_loop_keeps_a_worker_above_the_main_warp() {
    let d = DeviceDesc::preset("h100").unwrap();
    let k = kernel(ExecMode::Generic, false);
    let l = LaunchDesc::open(0);
    let list = candidates(&d, &k, &l, &[], Exploring::Bounded, |_| true).list;
    // One warp is the main thread alone: the 32-thread grids are left
    // out, not cut to 33 threads.
    let threads: std::collections::BTreeSet<u32> = list.iter().map(|&(_, g)| g.threads).collect();
    assert_eq!(threads, [64, 128].into());
}

const AUTO_GRID: Geometry = Geometry::new(128, 8);
const LLVM_GRID: Geometry = Geometry::new(32, 32);

fn two_grids() -> (Key, Prior) {
    let key = Key {
        kernel: "k".into(),
        device: "d".into(),
        sm_arch: 90,
        class: 1,
        build: String::new(),
    };
    let list = vec![(Candidate::Auto, AUTO_GRID), (Candidate::Llvm, LLVM_GRID)];
    let prior = Prior::unpredicted(list);
    (key, prior)
}

fn grid(c: Candidate) -> Option<Geometry> {
    Some(if c == Candidate::Auto {
        AUTO_GRID
    } else {
        LLVM_GRID
    })
}

/// 2000 launches of one process over auto and LLVM, `ns(grid, launch
/// number)` timing the observed ones. Returns the grids launched.
fn one_process(learner: &mut Learner, ns: impl Fn(Geometry, usize) -> u64) -> Vec<Geometry> {
    let mut ran = Vec::new();
    for n in 0..2000 {
        let choice = learner.next(1, 0, |_| true, grid).unwrap();
        ran.push(choice.grid);
        if choice.observe.timed() {
            learner.observe(choice.grid, 1, ns(choice.grid, n));
        }
    }
    ran
}

/// Settles a warm search over auto and LLVM (auto 1000 ns, LLVM 1100)
/// in one process, then times LLVM's re-checks at 900 ns (faster beyond
/// the noise, not far): the process keeps auto, and the next process
/// starts from LLVM.
#[test]
fn a_process_keeps_its_settled_grid_and_the_next_run_moves() {
    let (key, list) = two_grids();
    let mut learner = Learner::resume(key.clone(), &list, None);
    let ran = one_process(&mut learner, |g, n| match (g == AUTO_GRID, n > 200) {
        (true, _) => 1000,
        (false, false) => 1100,
        (false, true) => 900,
    });
    // Settled on auto early; later re-checks of LLVM come out faster,
    // yet only re-checks run LLVM's grid in this process.
    assert!(ran[100..].iter().filter(|&&g| g != AUTO_GRID).count() <= 2000 / 256 + 1);
    assert_eq!(
        learner.search().candidates[learner.search().leader(Kind::Warm)],
        Candidate::Llvm
    );
    let mut table = Table::default();
    table.apply(&learner.take_update(1).unwrap());
    let mut next = Learner::resume(key.clone(), &list, table.get(&key));
    next.next(1, 0, |_| true, grid).unwrap();
    assert_eq!(next.next(1, 0, |_| true, grid).unwrap().grid, LLVM_GRID);
}

/// The settled line names the grid and compares medians in time taken,
/// with words for the sign: auto at 1000 ns leads LLVM at 1100; LLVM
/// re-checked at 800 ns takes the lead by 20 %.
#[test]
fn the_settled_line_compares_grids_in_time_taken() {
    let (key, list) = two_grids();
    let mut learner = Learner::resume(key.clone(), &list, None);
    one_process(
        &mut learner,
        |g, _| if g == AUTO_GRID { 1000 } else { 1100 },
    );
    let line = learner.describe(grid);
    assert!(
        line.starts_with(
            "8 blocks x 128 threads, auto's grid; the next fastest took 10.0 % more time; 2 grids measured over 1 runs, "
        ) && line.contains("; medians of repeated launches ("),
        "{line}"
    );
    let mut learner = Learner::resume(key, &list, None);
    one_process(&mut learner, |g, n| match (g == AUTO_GRID, n > 200) {
        (true, _) => 1000,
        (false, false) => 1100,
        (false, true) => 800,
    });
    let line = learner.describe(grid);
    assert!(
        line.starts_with(
            "32 blocks x 32 threads, which took 20.0 % less time than auto's grid; the next fastest took 25.0 % more time; "
        ),
        "{line}"
    );
}

/// The kept grid (auto) degrades to three times LLVM's time after 300
/// launches: once its own samples put it past the drop factor, the
/// process leaves it for the leader.
#[test]
fn a_kept_grid_that_degrades_far_is_left_within_the_process() {
    let (key, list) = two_grids();
    let mut learner = Learner::resume(key, &list, None);
    let ran = one_process(&mut learner, |g, n| match (g == AUTO_GRID, n > 300) {
        (true, false) => 1000,
        (true, true) => 3300,
        (false, _) => 1100,
    });
    assert!(ran[..300].iter().filter(|&&g| g == AUTO_GRID).count() > 250);
    // Four of auto's eight kept samples must be slow before its median
    // (the mean of the middle two) is far behind: at most five sampled
    // launches, one in 16.
    let left_by = 300 + 5 * SAMPLE_EVERY as usize + 16;
    assert!(
        ran[left_by..].iter().all(|&g| g == LLVM_GRID),
        "{:?}",
        &ran[left_by..left_by + 20]
    );
}

#[test]
fn exploring_runs_while_its_excess_is_within_the_share() {
    let a = Allowance::new(0.05, Bound::Run);
    assert!(a.admits(0.0), "nothing spent yet");
    a.charge(1000, None);
    a.charge(1000, Some(100));
    // 100 over, allowed 5 % of 2000.
    assert!(a.admits(0.0));
    a.charge(1100, Some(100));
    assert!(!a.admits(0.0), "200 over 5 % of 3100");
    // A faster candidate gives allowance back; a failed launch adds no
    // time.
    a.charge(900, Some(-100));
    assert!(a.admits(0.0));
    a.charge(u64::MAX, None);
    assert!(a.admits(0.0));
    let unbounded = Allowance::new(f64::INFINITY, Bound::Run);
    unbounded.charge(1, Some(1_000_000));
    assert!(unbounded.admits(0.0));
    let none = Allowance::new(0.0, Bound::Run);
    none.charge(1000, Some(1));
    assert!(!none.admits(0.0));
    // Sums saturate instead of wrapping round to an open allowance.
    let huge = Allowance::new(0.05, Bound::Run);
    huge.charge(u64::MAX - 1, Some(i64::MAX));
    huge.charge(u64::MAX - 1, Some(1));
    assert!(!huge.admits(0.0));
}

/// heavy_dock's `dk_score` as compiled (cap 128, 48 registers, 6 KiB of
/// stack per thread): few, very heavy iterations.
fn docking() -> KernelDesc {
    KernelDesc {
        registers: Some(48),
        local_mem: Some(6144),
        ..kernel(ExecMode::Spmd, false)
    }
}

/// A kernel of clang's default cap whose every team writes a partial
/// result of a cross-team reduction (8 bytes: a `reduction(max:)` over a
/// double), as long_stream_minmax's are.
fn reducing() -> KernelDesc {
    let mut k = kernel(ExecMode::Spmd, false);
    k.environment.as_mut().unwrap().reduction_data_size = Some(8);
    k
}

/// The H100 sweep's reductions of 2^24 iterations ran 32 x 65 536 at
/// 3.5-4.8x `auto`'s time: every team passes the reduction one after
/// another. The model now predicts such a grid far slower than `auto`'s and
/// prunes it; without a reduction the same grid fills the device as
/// `auto`'s does and stays a candidate, and on a loop long enough to hide
/// the teams a reduction costs what the loop does.
#[test]
fn a_reduction_over_many_teams_is_predicted_slow_and_pruned() {
    let d = DeviceDesc::preset("h100").unwrap();
    let many = Geometry::new(32, 65_536);
    let (reduces, plain) = (reducing(), kernel(ExecMode::Spmd, false));
    let stream = LaunchDesc::open(1 << 24);
    let grids = |k: &KernelDesc, pruned: bool| -> Vec<Geometry> {
        let all = |_: Geometry| true;
        let prior = if pruned {
            candidates(&d, k, &stream, &[], Exploring::Bounded, all)
        } else {
            candidates_before_pruning(&d, k, &stream, &[], Exploring::Bounded, all)
        };
        prior.list.iter().map(|&(_, g)| g).collect()
    };
    let ratio = |k: &KernelDesc| {
        let auto = grids(k, true)[0];
        cost::relative_cost(&d, k, &stream, many, auto).unwrap()
    };
    assert!(ratio(&reduces) > PRUNE_ABOVE, "{}", ratio(&reduces));
    assert!(grids(&reduces, false).contains(&many));
    assert!(!grids(&reduces, true).contains(&many));
    assert!(ratio(&plain) < 1.1, "{}", ratio(&plain));
    assert!(grids(&plain, true).contains(&many));
    let long = LaunchDesc::open(1 << 28);
    let cost = |k: &KernelDesc| cost::launch_cost(&d, k, &long, many).unwrap();
    assert_eq!(cost(&reduces), cost(&plain));
}

/// 512 poses in chunks of 128: four chunks, so `auto`'s 4 x 128 runs each
/// pose on a thread of its own; LLVM's 16 x 32 and the 1-2 blocks of
/// 32-64 threads serialise them 4-16 deep; more blocks than chunks idle;
/// on a long loop that fills the device, 32-thread blocks cost what
/// 128-thread ones do, within 10 %.
#[test]
fn the_launch_model_counts_chunks_waves_and_serial_iterations() {
    let d = DeviceDesc::preset("h100").unwrap();
    let k = docking();
    let poses = LaunchDesc::open(512);
    let auto = Geometry::new(128, 4);
    let ratio = |t, b| cost::relative_cost(&d, &k, &poses, Geometry::new(t, b), auto).unwrap();
    assert_eq!(ratio(128, 4), 1.0);
    assert_eq!(ratio(32, 16), 4.0, "LLVM's grid");
    assert_eq!(ratio(64, 2), 4.0);
    assert_eq!(ratio(64, 1), 8.0);
    assert_eq!(ratio(32, 1), 16.0);
    assert_eq!(ratio(128, 2), 2.0);
    assert_eq!(ratio(128, 264), 1.0, "blocks beyond the chunks idle");
    let long = LaunchDesc::open(1 << 24);
    let filled = |t, b| cost::launch_cost(&d, &k, &long, Geometry::new(t, b)).unwrap();
    let (wide, narrow) = (filled(128, 8192), filled(32, 32_768));
    assert!((wide / narrow - 1.0).abs() < 0.1, "{wide} {narrow}");
    // Nothing to go on: a region without a loop, a Generic-SPMD kernel.
    assert_eq!(cost::launch_cost(&d, &k, &LaunchDesc::open(0), auto), None);
    let generic = kernel(ExecMode::GenericSpmd, false);
    assert_eq!(cost::launch_cost(&d, &generic, &poses, auto), None);
}

/// The docking case: the warm plan tried grids with fewer blocks
/// than `auto`'s 4 x 128 (1-2 blocks of 32-64 threads), 2-8x slower. None
/// predicted more than `PRUNE_ABOVE` times `auto`'s time is a candidate,
/// LLVM's 16 x 32 (3.8x slower on the H100 sweep) included; each listed
/// candidate carries its prediction.
#[test]
fn the_docking_case_never_launches_a_grid_predicted_far_slower() {
    let d = DeviceDesc::preset("h100").unwrap();
    let k = docking();
    let poses = LaunchDesc::open(512);
    let prior = candidates(&d, &k, &poses, &[], Exploring::Bounded, |_| true);
    let auto = prior.list[0].1;
    assert_eq!(auto, Geometry::new(128, 4));
    assert_eq!(prior.cost.len(), prior.list.len());
    for (&(c, g), &predicted) in prior.list.iter().zip(&prior.cost) {
        let ratio = cost::relative_cost(&d, &k, &poses, g, auto).unwrap();
        assert_eq!(predicted, ratio, "{c}");
        assert!(ratio <= PRUNE_ABOVE, "{c}: {g} predicted {ratio}x");
    }
    let grids: Vec<Geometry> = prior.list.iter().map(|&(_, g)| g).collect();
    for slow in [(32, 16), (32, 1), (32, 2), (64, 1), (64, 2), (32, 4)] {
        assert!(!grids.contains(&Geometry::new(slow.0, slow.1)), "{slow:?}");
    }
    // Before pruning they were there.
    let all = candidates_before_pruning(&d, &k, &poses, &[], Exploring::Bounded, |_| true);
    assert!(all.list.len() > prior.list.len());
    assert!(all.list.iter().any(|&(c, _)| c == Candidate::Llvm));
}

/// 512 iterations are 4 chunks on a device of 132 SMs: the candidates right
/// after `auto`'s (the cold plan's three) spread them over every SM at
/// the chunk's 128 threads, 1, 2 and 4 blocks per SM; a loop of more
/// chunks than SMs gets none.
#[test]
fn a_loop_of_fewer_chunks_than_sms_is_spread_over_every_sm() {
    let d = DeviceDesc::preset("h100").unwrap();
    let k = docking();
    let prior = candidates(
        &d,
        &k,
        &LaunchDesc::open(512),
        &[],
        Exploring::Bounded,
        |_| true,
    );
    let spread: Vec<Geometry> = [132, 264, 528].map(|b| Geometry::new(128, b)).into();
    let next: Vec<Geometry> = prior.list[1..4].iter().map(|&(_, g)| g).collect();
    assert_eq!(next, spread);
    assert!(prior.cost[1..4].iter().all(|&c| c == 1.0));
    let long = candidates(
        &d,
        &k,
        &LaunchDesc::open(1 << 20),
        &[],
        Exploring::Bounded,
        |_| true,
    );
    assert!(
        long.list
            .iter()
            .all(|&(c, _)| !matches!(c, Candidate::Grid(_))),
        "{:?}",
        long.list
    );
}

/// A search resumed from a store whose leader, `auto`'s grid, takes 1 ms a
/// launch, once per run: the process expects 1 ms of kernel time, so 5 % is
/// 50 us. A candidate the model puts at `auto`'s time is charged its margin
/// (57 % of 1 ms) and does not run, although it would be the search's first
/// exploring launch of the process; one the model puts at 0.6 of it
/// (0.94 with the margin) runs, and so does the first unbounded (a tuning
/// session).
#[test]
fn a_searchs_first_exploring_launch_runs_only_when_it_fits_the_allowance() {
    let (key, _) = two_grids();
    let mut table = Table::default();
    let mut update = store::Update::new(key.clone());
    update.samples = vec![(Candidate::Auto, Kind::Cold, 1_000_000)];
    update.tally.launches_per_run = 1;
    update.tally.runs = 1;
    table.apply(&update);
    let first_launch = |predicted: f64, overhead: f64| {
        let prior = Prior {
            cost: vec![1.0, predicted],
            ..Prior::unpredicted(vec![
                (Candidate::Auto, AUTO_GRID),
                (
                    Candidate::Move {
                        threads: 32,
                        blocks_log2: 2,
                    },
                    LLVM_GRID,
                ),
            ])
        };
        let allowance = Allowance::new(overhead, Bound::Run);
        let mut learner = Learner::resume(key.clone(), &prior, table.get(&key));
        assert_eq!(learner.expected_ns(1), 1_000_000);
        allowance.begin(&learner, 1);
        let choice = learner.next(1, 0, |e| allowance.admits(e), grid).unwrap();
        (choice.grid, choice.rule)
    };
    use crate::policy::Rule;
    assert_eq!(
        first_launch(1.0, 0.05),
        (AUTO_GRID, Rule::TuneOnlyMeasured),
        "held back, with no other grid measured"
    );
    assert_eq!(first_launch(0.6, 0.05), (LLVM_GRID, Rule::TuneTrial));
    assert_eq!(
        first_launch(1.0, f64::INFINITY),
        (LLVM_GRID, Rule::TuneTrial)
    );
}

/// The budget is charged before the launch: what the process has spent
/// plus the candidate's predicted excess must fit, over the larger of the
/// time it has timed and the time the store expects of its searches.
#[test]
fn an_exploring_launch_runs_only_when_its_predicted_excess_fits() {
    let a = Allowance::new(0.05, Bound::Run);
    assert!(a.admits(0.0));
    assert!(!a.admits(1.0), "nothing timed nor expected: no budget");
    a.expect(10_000);
    assert!(a.admits(500.0));
    assert!(!a.admits(501.0));
    a.charge(1000, Some(300));
    assert!(a.admits(200.0));
    assert!(!a.admits(201.0));
    // Timed time past the expectation is the basis from then on.
    a.charge(19_000, None);
    assert!(a.admits(700.0));
    assert!(!a.admits(701.0));
    // Predicted faster: runs while nothing is overdrawn.
    assert!(a.admits(-5000.0));
    a.charge(1000, Some(5000));
    assert!(!a.admits(-5000.0));
    assert!(Allowance::new(f64::INFINITY, Bound::Run).admits(f64::MAX));
}

/// Where exploring is bounded, a warm search explores only once its leader
/// has three warm samples (`YARDSTICK_SAMPLES`): the leader's first warm
/// launch in a process can run far slower than its kernel's steady time,
/// and alone it would make every trial look cheaper than it is. Unbounded
/// (a tuning session), LLVM's grid is explored right after `auto`'s first
/// warm sample; bounded, after its third, whatever the allowance has left.
#[test]
fn a_bounded_search_explores_once_its_leader_has_three_warm_samples() {
    let (key, prior) = two_grids();
    let autos_before_llvm = |fits: &dyn Fn(f64) -> bool| {
        let mut learner = Learner::resume(key.clone(), &prior, None);
        let mut autos = 0;
        loop {
            let choice = learner.next(1, 0, fits, grid).unwrap();
            if choice.grid == LLVM_GRID {
                return autos;
            }
            autos += 1;
            if choice.observe.timed() {
                learner.observe(choice.grid, 1, 1000);
            }
        }
    };
    assert_eq!(autos_before_llvm(&|_| true), 2, "a cold launch, a warm one");
    assert_eq!(
        autos_before_llvm(&|e: f64| e.is_finite()),
        1 + super::learner::YARDSTICK_SAMPLES
    );
}

/// A search the allowance holds back runs its leader, every launch timed
/// for the process's kernel time: until the leader has its yardstick each
/// is a sample; from then on one in `SAMPLE_EVERY`, so that the launches
/// between samples neither change the search nor rank it again.
#[test]
fn a_held_back_search_samples_its_leader_one_launch_in_sixteen() {
    use super::learner::{SAMPLE_EVERY, YARDSTICK_SAMPLES};
    let (key, prior) = two_grids();
    let mut learner = Learner::resume(key, &prior, None);
    let launches: u32 = 2000;
    for _ in 0..launches {
        let choice = learner.next(1, 0, |_| false, grid).unwrap();
        assert_eq!(choice.grid, AUTO_GRID, "held back: the leader runs");
        assert!(choice.observe.timed(), "every launch is timed");
        learner.observe(choice.grid, 1, 1000);
    }
    // The cold launch, then the first warm one, which measures `auto`'s
    // grid (free); every later launch is held back: the first two sampled,
    // which give the leader its yardstick of three, then the 16th, the
    // 32nd, ... of the held-back launches (never a process's first).
    let held = 3..=launches - 2;
    let yardstick = YARDSTICK_SAMPLES as u32;
    let expected = yardstick + held.filter(|n| n % SAMPLE_EVERY == 0).count() as u32;
    let update = learner.take_update(0).unwrap();
    let warm = update.samples.iter().filter(|s| s.1 == Kind::Warm).count() as u32;
    assert_eq!(warm, expected);
    assert!(warm < launches / 10, "{warm}");
}

/// On the GPU clock a launch observed `Later` gets its time with the
/// clock's next batch, up to `MAX_LATE_LAUNCHES` launches late, and a trial's
/// at once, after every time queued before it: each time still reaches its
/// own launch, and the search keeps the very samples it keeps when every
/// time comes at once.
#[test]
fn times_handed_over_in_batches_reach_their_own_launches() {
    use crate::policy::{MAX_LATE_LAUNCHES, Observe};
    let (key, prior) = two_grids();
    for admits in [false, true] {
        let run = |batched: bool| {
            let mut learner = Learner::resume(key.clone(), &prior, None);
            let (mut queue, mut observed) = (Vec::new(), Vec::new());
            for n in 0..2000u64 {
                let choice = learner.next(1, 0, |_| admits, grid).unwrap();
                observed.push(choice.observe);
                if !choice.observe.timed() {
                    continue;
                }
                // Each launch its own time, so that a time handed to
                // another launch shows.
                queue.push((choice.grid, 1000 + n % 97));
                if !batched || choice.observe == Observe::Now || queue.len() == MAX_LATE_LAUNCHES {
                    for (g, ns) in queue.drain(..) {
                        learner.observe(g, 1, ns);
                    }
                }
            }
            for (g, ns) in queue {
                learner.observe(g, 1, ns);
            }
            (learner.take_update(0).unwrap().samples, observed)
        };
        let (at_once, observed) = run(false);
        let (batched, _) = run(true);
        assert_eq!(batched, at_once, "admits {admits}");
        let later = observed.iter().filter(|&&o| o == Observe::Later).count();
        let now = observed.iter().filter(|&&o| o == Observe::Now).count();
        if admits {
            // The search explores (its trials at once) and settles: its
            // grid sampled one launch in 16, later.
            assert!((1..40).contains(&now), "{now}");
            assert!((100..200).contains(&later), "{later}");
        } else {
            // Held back: the leader runs; its first samples, the yardstick
            // a trial's cost is reckoned by, timed at once (with the cold
            // launch and the first warm one, `auto`'s grid explored), every
            // later launch timed later.
            assert_eq!(now, 4, "{observed:?}");
            assert!(observed[4..].iter().all(|&o| o == Observe::Later));
        }
    }
}

/// A process's first held-back launch is mostly its first warm one, which
/// some programs run slow: once the leader has its yardstick, that launch
/// is never a sample, nor a settled search's first.
#[test]
fn a_processs_first_warm_launch_is_no_sample_once_the_leader_has_its_yardstick() {
    let (key, prior) = two_grids();
    // Held back by an allowance that admits nothing, or settled.
    for admits in [false, true] {
        let mut table = Table::default();
        for slow_first in [false, true] {
            let mut learner = Learner::resume(key.clone(), &prior, table.get(&key));
            for n in 0..40 {
                let choice = learner.next(1, 0, |_| admits, grid).unwrap();
                let ns = if slow_first && n == 1 { 1500 } else { 1000 };
                if choice.observe.timed() {
                    learner.observe(choice.grid, 1, ns);
                }
            }
            let update = learner.take_update(0).unwrap();
            if slow_first {
                assert!(
                    update.samples.iter().all(|s| s.2 != 1500),
                    "admits {admits}: {:?}",
                    update.samples
                );
                assert_eq!(learner.search().settled(Kind::Warm), admits);
            }
            table.apply(&update);
        }
    }
}

/// What a process leaves of its allowance is shared among its searches
/// that still explore, for their later runs: the bank it began with, plus
/// its share of the kernel time it timed or expected, less what it spent,
/// at most one run's kernel time (or what was banked, where more); a debt
/// where it spent more. Banked credit adds to what a launch may spend.
#[test]
fn what_a_process_leaves_of_its_allowance_is_banked_for_later_runs() {
    let a = Allowance::new(0.05, Bound::Average);
    a.expect(10_000);
    assert_eq!(a.banked_share(2), Some(250));
    assert_eq!(a.banked_share(0), Some(0), "nothing explores");
    a.charge(10_000, Some(700));
    assert_eq!(a.banked_share(1), Some(-200), "overspent: a debt");
    assert_eq!(
        Allowance::new(f64::INFINITY, Bound::Average).banked_share(1),
        None
    );
    // A search's bank adds to the budget, and to what is left.
    let learner = once_per_run_with_credit(600_000);
    assert_eq!(learner.credit(), 600_000);
    let a = Allowance::new(0.05, Bound::Average);
    a.begin(&learner, 1);
    assert!(a.admits(650_000.0) && !a.admits(650_001.0));
    a.charge(1_000_000, Some(100_000));
    assert_eq!(a.banked_share(1), Some(550_000));
    // At most one run's kernel time is banked, unless more was.
    let a = Allowance::new(0.5, Bound::Average);
    a.begin(&learner, 1);
    assert_eq!(a.banked_share(1), Some(1_000_000), "not 1 100 000");
    let a = Allowance::new(0.0, Bound::Average);
    a.begin(&learner, 1);
    a.begin(&learner, 1);
    assert_eq!(
        a.banked_share(1),
        Some(1_200_000),
        "two searches' banks, under their runs' kernel time"
    );
}

/// A search of a kernel launched once per run, `auto`'s grid measured at
/// 1 ms, resumed from a record whose runs banked `credit` ns.
fn once_per_run_with_credit(credit: i64) -> Learner {
    let key = Key::for_trip("k", "H100", 90, 1, "");
    let mut table = Table::default();
    let mut update = store::Update::new(key.clone());
    update.samples = vec![(Candidate::Auto, Kind::Cold, 1_000_000)];
    update.tally.launches_per_run = 1;
    update.credit = credit;
    table.apply(&update);
    let prior = Prior::unpredicted(vec![(Candidate::Auto, AUTO_GRID)]);
    Learner::resume(key.clone(), &prior, table.get(&key))
}

/// Under the default bound every process keeps within its own share: a
/// search's banked credit adds nothing to what a launch may spend, and the
/// process banks nothing (the store's credit is left as it is); under
/// `average` the same credit is spent.
#[test]
fn by_default_a_process_never_spends_beyond_its_own_share() {
    assert_eq!(Bound::default(), Bound::Run);
    let learner = once_per_run_with_credit(600_000);
    let own = Allowance::new(0.05, Bound::default());
    own.begin(&learner, 1);
    assert!(own.admits(50_000.0) && !own.admits(50_001.0));
    own.charge(1_000_000, Some(30_000));
    assert!(own.admits(20_000.0) && !own.admits(20_001.0));
    assert_eq!(own.banked_share(1), None, "nothing banked");
    let mut l = learner.clone();
    l.bank(own.banked_share(1));
    assert!(l.take_update(0).is_none(), "the store's credit is left");
    let pooled = Allowance::new(0.05, Bound::Average);
    pooled.begin(&learner, 1);
    assert!(pooled.admits(650_000.0));
}

/// A tuning session tries one and two whole waves of fewer threads than
/// `auto`'s on a long loop (ts_ocean's 2^20 iterations: 64 x 4224, 64 x 8192
/// cut to the loop's 8192 chunks, 32 x 4224), among the sixteen candidates
/// its warm plan measures at 48 warm launches, after the static answers; online `tune`'s
/// candidates are unchanged, and a loop of fewer chunks than SMs gets none
/// (it is spread instead).
#[test]
fn a_session_tries_whole_waves_of_fewer_threads_on_a_long_loop() {
    let d = DeviceDesc::preset("h100").unwrap();
    let k = kernel(ExecMode::Spmd, false);
    let long = LaunchDesc::open(1 << 20);
    let online = candidates(&d, &k, &long, &[], Exploring::Bounded, |_| true);
    let session = candidates(&d, &k, &long, &[], Exploring::UNBOUNDED, |_| true);
    assert_eq!(session.exploring, Exploring::UNBOUNDED);
    let head = through_occupancy(&online);
    assert_eq!(session.list[..head], online.list[..head]);
    let plan = search::Params::session_warm(57).candidates;
    assert_eq!(plan, 17);
    let first: Vec<Geometry> = session.list[..plan].iter().map(|&(_, g)| g).collect();
    let limits = Limits::of(&d, &k, &long);
    for (threads, blocks) in [(32, 4224), (64, 4224), (64, 8192)] {
        let wave = Geometry::new(threads, blocks);
        assert!(first.contains(&wave), "{wave} not in {first:?}");
        assert!(limits.contains(wave));
    }
    // Online, a whole wave of 32 or 64 threads is no candidate, and the
    // warm plan's twelve hold one 32-thread grid at most.
    for wave in [Geometry::new(32, 4224), Geometry::new(64, 4224)] {
        assert!(!online.list.iter().any(|&(_, g)| g == wave), "{wave}");
    }
    let online_first = &online.list[..search::Params::WARM.candidates];
    assert!(
        online_first
            .iter()
            .filter(|&&(_, g)| g.threads == 32)
            .count()
            <= 1
    );
    // Every grid online lists, the session lists too, pruned alike.
    for &(_, g) in &online.list {
        assert!(session.list.iter().any(|&(_, s)| s == g), "{g}");
    }
    assert!(session.cost.iter().all(|&c| c <= PRUNE_ABOVE));
    // A short loop's session adds static answers to online's list, no
    // wave (all of a wave's blocks would idle).
    let short = LaunchDesc::open(512);
    let online = candidates(&d, &k, &short, &[], Exploring::Bounded, |_| true).list;
    let session = candidates(&d, &k, &short, &[], Exploring::UNBOUNDED, |_| true).list;
    for (_, g) in &online {
        assert!(session.iter().any(|&(_, s)| s == *g), "{g}");
    }
    assert!(static_grids(&d, &k, &short).iter().all(|g| g.blocks <= 8));
}

/// How many candidates of `prior` come before the static answers:
/// `auto`'s, and LLVM's and `occupancy`'s where they differ from it.
fn through_occupancy(prior: &Prior) -> usize {
    let head = [Candidate::Auto, Candidate::Llvm, Candidate::Occupancy];
    prior
        .list
        .iter()
        .take_while(|(c, _)| head.contains(c))
        .count()
}

/// The grids a session's prior lists at `launch` that online `tune`'s does
/// not, in its order.
fn static_grids(d: &DeviceDesc, k: &KernelDesc, launch: &LaunchDesc) -> Vec<Geometry> {
    let online = candidates(d, k, launch, &[], Exploring::Bounded, |_| true).list;
    candidates(d, k, launch, &[], Exploring::UNBOUNDED, |_| true)
        .list
        .into_iter()
        .map(|(_, g)| g)
        .filter(|g| !online.iter().any(|&(_, o)| o == *g))
        .collect()
}

/// A tuning session measures the static answers first, right after
/// `auto`'s, LLVM's and `occupancy`'s grids: `forest`'s, the grids `auto`'s
/// other rules give the kernel (on a loop of 2^24 iterations, the long
/// loops' two waves of 64-thread blocks from 2^25; on a reduction of 2^21,
/// one wave of 32-thread blocks from 2^23) and `lloyd`'s. A Generic kernel,
/// which every rule of `auto` leaves at LLVM's grid, gets `forest`'s and
/// `lloyd`'s first, and online `tune` lists none of them among its first
/// four.
#[test]
fn a_session_measures_the_static_answers_first() {
    let d = DeviceDesc::preset("h100").unwrap();
    let first_after_occupancy = |k: &KernelDesc, trip: u64, want: &[Geometry]| {
        let launch = LaunchDesc::open(trip);
        let session = candidates(&d, k, &launch, &[], Exploring::UNBOUNDED, |_| true);
        let online = candidates(&d, k, &launch, &[], Exploring::Bounded, |_| true);
        let head = through_occupancy(&online);
        assert_eq!(session.list[..head], online.list[..head]);
        let next: Vec<Geometry> = session.list[head..].iter().map(|&(_, g)| g).collect();
        for g in want {
            let at = next.iter().position(|n| n == g);
            assert!(at.is_some_and(|i| i < 4), "{g} in {next:?}");
            let online_at = online.list.iter().position(|&(_, o)| o == *g);
            assert!(
                online_at.is_none_or(|i| i > 3),
                "{g} online at {online_at:?}"
            );
        }
    };
    let device = &d;
    let decided = |policy: crate::policy::Policy| {
        move |k: &KernelDesc, trip: u64| {
            crate::policy::decide(&policy, device, k, &LaunchDesc::open(trip))
                .unwrap()
                .geometry
        }
    };
    let (lloyd, forest) = (
        decided(crate::policy::Policy::Lloyd),
        decided(crate::policy::Policy::Forest),
    );
    let k = kernel(ExecMode::Spmd, false);
    let trip = 1 << 24;
    assert_eq!(
        resolve(Candidate::Auto, &d, &k, &LaunchDesc::open(trip)),
        Some(Geometry::new(128, 3200))
    );
    let statics = [Geometry::new(64, 8448), forest(&k, trip), lloyd(&k, trip)];
    first_after_occupancy(&k, trip, &statics);
    let r = reducing();
    let trip = 1 << 21;
    let statics = [Geometry::new(32, 4224), forest(&r, trip), lloyd(&r, trip)];
    first_after_occupancy(&r, trip, &statics);
    let generic = kernel(ExecMode::Generic, false);
    let generic_statics = static_grids(&d, &generic, &LaunchDesc::open(trip));
    assert_eq!(
        generic_statics[..2],
        [forest(&generic, trip), lloyd(&generic, trip)]
    );
}

/// A tuning session also tries `auto`'s threads on 2 and 4 blocks per SM
/// where those are fewer than `auto`'s blocks: ts_advect_diag's searches
/// (auto 128 x 3200) settled on the fewest blocks the moves reach, 2^-2 of
/// `auto`'s, where 3 blocks per SM was faster still. They come among the
/// seventeen candidates of its warm plan at 57 warm launches, after the
/// four of a cold plan;
/// online `tune` lists neither, and a loop whose `auto` has fewer blocks
/// gets only those below them.
#[test]
fn a_session_tries_autos_threads_on_a_few_blocks_per_sm() {
    let d = DeviceDesc::preset("h100").unwrap();
    let k = kernel(ExecMode::Spmd, false);
    let long = LaunchDesc::open(524_176);
    let auto = resolve(Candidate::Auto, &d, &k, &long).unwrap();
    assert_eq!(auto, Geometry::new(128, 3200));
    let few = [Geometry::new(128, 264), Geometry::new(128, 528)];
    let session = candidates(&d, &k, &long, &[], Exploring::UNBOUNDED, |_| true);
    let plan = search::Params::session_warm(57).candidates;
    assert_eq!(plan, 17);
    let first: Vec<Geometry> = session.list.iter().take(plan).map(|&(_, g)| g).collect();
    for g in few {
        assert!(first.contains(&g), "{g} not in {first:?}");
        assert!(!first[..search::Params::COLD.candidates].contains(&g));
    }
    let online = candidates(&d, &k, &long, &[], Exploring::Bounded, |_| true);
    for g in few {
        assert!(!online.list.iter().any(|&(_, o)| o == g), "{g}");
    }
    // 2^18 iterations: `auto`'s 2048 blocks leave 4 per SM (528) below them.
    let shorter = LaunchDesc::open(1 << 18);
    assert_eq!(
        resolve(Candidate::Auto, &d, &k, &shorter).unwrap(),
        Geometry::new(128, 2048)
    );
    let listed = candidates(&d, &k, &shorter, &[], Exploring::UNBOUNDED, |_| true).list;
    for g in few {
        assert!(listed.iter().any(|&(_, l)| l == g), "{g}");
    }
    // 2^15 iterations: `auto`'s 256 blocks are fewer than 264.
    let short = LaunchDesc::open(1 << 15);
    assert_eq!(
        resolve(Candidate::Auto, &d, &k, &short).unwrap(),
        Geometry::new(128, 256)
    );
    let listed = candidates(&d, &k, &short, &[], Exploring::UNBOUNDED, |_| true).list;
    for g in few {
        assert!(!listed.iter().any(|&(_, l)| l == g), "{g}");
    }
}

/// A long cross-team reduction gets one wave of 32-thread blocks from
/// `auto` (rule 6): at 2^30 iterations that gives a thread 7 943 of them,
/// more than any other candidate may. `auto`'s grid stays the first
/// candidate all the same, since it is what the launch gets without a
/// search; without it an unsettled search would launch LLVM's grid.
#[test]
fn autos_grid_is_the_first_candidate_however_long_the_loop() {
    let d = DeviceDesc::preset("h100").unwrap();
    let mut k = kernel(ExecMode::Spmd, false);
    k.environment.as_mut().unwrap().reduction_data_size = Some(8);
    for trip in [1u64 << 20, 1 << 25, 1 << 30, 1 << 31] {
        let launch = LaunchDesc::open(trip);
        let auto = resolve(Candidate::Auto, &d, &k, &launch).unwrap();
        for exploring in [Exploring::Bounded, Exploring::UNBOUNDED] {
            let list = candidates(&d, &k, &launch, &[], exploring, |_| true).list;
            assert_eq!(list[0], (Candidate::Auto, auto), "{trip}: {list:?}");
        }
    }
}

/// A fixed grid from the store (learned or pinned, `grid:T,B`) is cut as
/// moves are: to the blocks that get work, or the spread grids' 4 per SM
/// on a short loop, and at most a sweep's blocks; a store cannot make a
/// loop of 20 000 iterations launch 2^31-1 blocks.
#[test]
fn a_stored_grid_is_cut_to_the_blocks_that_get_work() {
    let d = DeviceDesc::preset("h100").unwrap();
    let k = kernel(ExecMode::Spmd, false);
    let huge = Candidate::Grid(Geometry::new(1024, crate::device::MAX_BLOCKS));
    let at = |trip| resolve(huge, &d, &k, &LaunchDesc::open(trip)).unwrap();
    // 128 threads a chunk: 157 chunks, fewer than the spread grids' 528.
    assert_eq!(at(20_000), Geometry::new(128, 4 * d.sm_count));
    assert_eq!(at(1_000_000), Geometry::new(128, 7813));
    assert_eq!(at(0), Geometry::new(128, MAX_SWEEP_BLOCKS));
    // Every grid a session's search of a short loop tries resolves as it
    // was.
    let l = LaunchDesc::open(2_000);
    let unbounded = Exploring::Unbounded {
        warm_launches: None,
    };
    for (c, g) in candidates(&d, &k, &l, &[], unbounded, |_| true).list {
        if let Candidate::Grid(asked) = c {
            assert_eq!(g, asked, "{c}");
        }
    }
    let small = Candidate::Grid(Geometry::new(32, 4));
    assert_eq!(resolve(small, &d, &k, &l), Some(Geometry::new(32, 4)));
}

/// A session's warm search measures its finalists' blocks at a warp fewer
/// and a warp more threads before it settles, and keeps such a grid where
/// it is the fastest, in one process or over several that each leave the
/// refinement unfinished; a grid clamped back onto a finalist (past the
/// launch's 128 threads) is not measured; online `tune` resuming such a
/// search launches no grid its prior does not list, and still settles;
/// a region without a loop gets no refinement.
#[test]
fn a_sessions_search_refines_its_finalists_by_a_warp() {
    let d = DeviceDesc::preset("h100").unwrap();
    let k = kernel(ExecMode::Spmd, false);
    let refine =
        |exploring, trip| candidates(&d, &k, &LaunchDesc::open(trip), &[], exploring, |_| true);
    assert_eq!(refine(Exploring::UNBOUNDED, 1 << 20).refine_threads, 32);
    assert_eq!(refine(Exploring::Bounded, 1 << 20).refine_threads, 0);
    assert_eq!(refine(Exploring::UNBOUNDED, 0).refine_threads, 0);

    let key = two_grids().0;
    let auto = Geometry::new(64, 100);
    let (fast, close) = (Geometry::new(128, 400), Geometry::new(128, 300));
    let list = vec![
        (Candidate::Auto, auto),
        (Candidate::Grid(fast), fast),
        (Candidate::Grid(close), close),
    ];
    // As the runtime's: a grid is clamped into the launch's limits (at
    // most 128 threads a block, the kernel's cap).
    let resolve = |c| match c {
        Candidate::Auto => Some(auto),
        Candidate::Grid(g) => Some(Geometry::new(g.threads.min(128), g.blocks)),
        _ => None,
    };
    // The best grid is the runner-up's neighbour; the leader's is slower.
    let ns = |g: Geometry| match (g.threads, g.blocks) {
        (96, 300) => 800,
        (128, 400) => 1000,
        (128, 300) => 1004,
        (96, 400) => 1100,
        _ => 1300,
    };
    let prior = |exploring, refine_threads| Prior {
        exploring,
        refine_threads,
        ..Prior::unpredicted(list.clone())
    };
    // Processes of `launches` launches each over one store, until the
    // search settles (at most 40); returns the grid kept and every grid
    // launched.
    let processes = |prior: &Prior, table: &mut Table, launches: u32| {
        let mut ran = Vec::new();
        for run in 0..40 {
            let mut learner = Learner::resume(key.clone(), prior, table.get(&key));
            for _ in 0..launches {
                let choice = learner.next(1, run, |_| true, resolve).unwrap();
                ran.push(choice.grid);
                if choice.observe.timed() {
                    learner.observe(choice.grid, 1, ns(choice.grid));
                }
            }
            if let Some(u) = learner.take_update(run) {
                table.apply(&u);
            }
            if !learner.explores() {
                let search = learner.search();
                let kept = resolve(search.candidates[search.leader(Kind::Warm)]).unwrap();
                return (Some(kept), ran);
            }
        }
        (None, ran)
    };
    let session = prior(Exploring::UNBOUNDED, 32);
    let (kept, ran) = processes(&session, &mut Table::default(), 200);
    assert_eq!(kept, Some(Geometry::new(96, 300)));
    // The leader's and the runner-up's neighbours, then those of the new
    // leader, 96 x 300 (its runner-up's, 96 x 400, measured already); 160
    // threads are clamped back onto the finalists.
    let mut measured: Vec<Geometry> = ran.clone();
    measured.sort();
    measured.dedup();
    let grids = |list: &[(u32, u32)]| list.iter().map(|&(t, b)| Geometry::new(t, b)).collect();
    let expected: Vec<Geometry> = grids(&[
        (64, 100),
        (64, 300),
        (96, 300),
        (96, 400),
        (128, 300),
        (128, 400),
    ]);
    assert_eq!(measured, expected);
    for launches in [3, 5, 7] {
        let (kept, _) = processes(&session, &mut Table::default(), launches);
        assert_eq!(kept, Some(Geometry::new(96, 300)), "{launches} a process");
    }
    let (kept, ran) = processes(&prior(Exploring::UNBOUNDED, 0), &mut Table::default(), 200);
    assert_eq!(kept, Some(fast));
    assert!(ran.iter().all(|g| g.threads != 96));

    // A session stopped once the refinement measured one neighbour: online
    // `tune` resumes it, launches neither that grid nor another unlisted
    // one, and settles on a grid of its own prior's.
    let mut table = Table::default();
    let mut learner = Learner::resume(key.clone(), &session, None);
    let mut launched = 0;
    while launched < 200 {
        let choice = learner.next(1, 0, |_| true, resolve).unwrap();
        learner.observe(choice.grid, 1, ns(choice.grid));
        launched += 1;
        if choice.grid.threads == 96 {
            break;
        }
    }
    table.apply(&learner.take_update(0).unwrap());
    let online = prior(Exploring::Bounded, 0);
    let (kept, ran) = processes(&online, &mut table, 200);
    assert!(ran.iter().all(|g| g.threads != 96), "{ran:?}");
    assert!(kept.is_some_and(|g| g == fast || g == close), "{kept:?}");
}
