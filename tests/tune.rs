//! `tune`: searches that go on across runs through a real store file, run
//! after run, with stand-in timers; and the store file itself.

mod log_capture;

use gridsel::Geometry;
use gridsel::device::DeviceDesc;
use gridsel::files;
use gridsel::geometry::LaunchDesc;
use gridsel::kernel::{ExecMode, KernelDesc};
use gridsel::libomptarget::LlvmRelease;
use gridsel::policy::{GridPolicy, Launch, Limits, Proposal, Rule};
use gridsel::tune::search::{Candidate, Exploring, Kind, Params};
use gridsel::tune::store::{
    Contents, JOURNAL_COMPACT_BYTES, Key, MAX_JOURNAL_BYTES, StoreError, Table, Update,
};
use gridsel::tune::{
    Bound, Clock, Prior, RECHECK_LABEL, RECHECK_RUNS, ReplaySetup, ReplayedKernel, Saver, Store,
    TRIAL_LABEL, TunePolicy, candidates, replay, replay_program, resolve,
};
use gridsel::writer::{EXIT_PATIENCE, SAVE_INTERVAL, StoreWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the tests' stores wait for each other's lock.
const PATIENCE: Duration = Duration::from_secs(10);

fn h100() -> DeviceDesc {
    DeviceDesc::preset("h100").unwrap()
}

/// An SPMD kernel compiled with the default 128-thread cap.
fn spmd() -> KernelDesc {
    KernelDesc {
        local_mem: Some(0),
        max_threads: Some(128),
        exec_mode: Some(ExecMode::Spmd),
        registers: Some(32),
        shared_mem: Some(0),
        ..KernelDesc::named("k_l7")
    }
}

/// A convex bowl in log2 space around `best`, in ns (>= 100 000).
fn bowl(best: Geometry) -> impl Fn(Geometry) -> f64 {
    move |g: Geometry| {
        let l = |x: u32| f64::from(x).log2();
        let dt = l(g.threads) - l(best.threads);
        let db = l(g.blocks) - l(best.blocks);
        100_000.0 * (1.0 + 0.15 * (dt * dt + db * db))
    }
}

/// A timed launch of `kernel` on `device` at `trip`.
fn timed_launch<'a>(kernel: &'a KernelDesc, device: &'a DeviceDesc, trip: u64) -> Launch<'a> {
    Launch {
        kernel_serial: 0,
        kernel_name: &kernel.name,
        kernel,
        device_id: 0,
        device,
        desc: LaunchDesc::open(trip),
        timed: true,
    }
}

/// One process of a program: a fresh `TunePolicy` exploring unbounded on
/// the store at `path`, `launches` launches of `kernel` at `trip`, timed by
/// `time`, then the exit's flush. Returns the grids launched.
fn process(
    path: &Path,
    kernel: &KernelDesc,
    trip: u64,
    launches: u32,
    time: &dyn Fn(Geometry) -> f64,
) -> Vec<Geometry> {
    session_process(path, None, kernel, trip, launches, time)
}

/// [`process`] as one of the tuning runs of a `gridsel tune` session of
/// `session_runs` runs (`None`: exploring unbounded outside a session).
fn session_process(
    path: &Path,
    session_runs: Option<u32>,
    kernel: &KernelDesc,
    trip: u64,
    launches: u32,
    time: &dyn Fn(Geometry) -> f64,
) -> Vec<Geometry> {
    let store = Box::new(files::StoreFile::new(path.to_path_buf(), false));
    let tune = unbounded(store).with_session_runs(session_runs);
    let proposals = process_on(tune, kernel, trip, launches, time, || {});
    proposals.iter().map(|p| p.grid).collect()
}

/// A tuner exploring unbounded on `store`.
fn unbounded(store: Box<dyn Store>) -> TunePolicy {
    TunePolicy::new(Some(Box::new(StoreWriter::new(store))), f64::INFINITY)
}

/// [`process`] with any tuner, returning the proposals; `before_exit` runs
/// after the launches, before the exit's flush.
fn process_on(
    tune: TunePolicy,
    kernel: &KernelDesc,
    trip: u64,
    launches: u32,
    time: &dyn Fn(Geometry) -> f64,
    before_exit: impl FnOnce(),
) -> Vec<Proposal> {
    let device = h100();
    let launch = timed_launch(kernel, &device, trip);
    let limits = Limits::of(&device, kernel, &launch.desc);
    let mut proposals = Vec::new();
    for n in 0..launches {
        let p = tune.decide(&launch).unwrap();
        assert!(limits.contains(p.grid), "{} outside {limits}", p.grid);
        let cold = if n == 0 { 3.0 } else { 1.0 };
        if p.observe.timed() {
            tune.observe(&launch, p.grid, (time(p.grid) * cold) as u64);
        }
        proposals.push(p);
    }
    before_exit();
    tune.flush();
    proposals
}

/// A store file that counts its reads and writes.
struct CountingFile {
    file: files::StoreFile,
    reads: Arc<AtomicUsize>,
    writes: Arc<AtomicUsize>,
}

/// The store file at `path`, counting its writes, and the count.
fn counting_file(path: &Path) -> (Box<dyn Store>, Arc<AtomicUsize>) {
    let (store, _, writes) = counting_file_reads(path);
    (store, writes)
}

/// The store file at `path` and its counts of reads and writes.
fn counting_file_reads(path: &Path) -> (Box<dyn Store>, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let (reads, writes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let file = files::StoreFile::new(path.to_path_buf(), false);
    let store = Box::new(CountingFile {
        file,
        reads: reads.clone(),
        writes: writes.clone(),
    });
    (store, reads, writes)
}

impl Store for CountingFile {
    fn location(&self) -> String {
        self.file.location()
    }
    fn load(&self) -> Result<Contents, StoreError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.file.load()
    }
    fn store(&self, updates: &[Update], patience: Duration) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.file.store(updates, patience)
    }
}

/// Waits (at most 10 s) until `done` holds, then checks it.
fn eventually(what: &str, done: impl Fn() -> bool) {
    within(Duration::from_secs(10), what, done);
}

/// Waits at most `limit` until `done` holds, then checks it.
fn within(limit: Duration, what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(done(), "{what}");
}

/// The batches written to a store: the name of the thread that wrote each,
/// and its number of updates.
type Writes = Arc<Mutex<Vec<(String, usize)>>>;

/// A store file whose writes take `delay` more, recording them.
struct SlowFile {
    file: files::StoreFile,
    delay: Duration,
    writes: Writes,
}

/// The store file at `path`, each write taking `delay` more, and its writes.
fn slow_file(path: &Path, delay: Duration) -> (Box<dyn Store>, Writes) {
    let writes = Arc::new(Mutex::default());
    let store = Box::new(SlowFile {
        file: files::StoreFile::new(path.to_path_buf(), false),
        delay,
        writes: writes.clone(),
    });
    (store, writes)
}

impl Store for SlowFile {
    fn location(&self) -> String {
        self.file.location()
    }
    fn load(&self) -> Result<Contents, StoreError> {
        self.file.load()
    }
    fn store(&self, updates: &[Update], patience: Duration) -> Result<(), StoreError> {
        let thread = std::thread::current().name().unwrap_or("").to_string();
        std::thread::sleep(self.delay);
        self.file.store(updates, patience)?;
        self.writes.lock().unwrap().push((thread, updates.len()));
        Ok(())
    }
}

/// The record of `kernel` at `trip` in the store at `path`.
fn record(path: &Path, kernel: &KernelDesc, trip: u64) -> gridsel::tune::store::Record {
    let key = Key::for_trip(
        kernel.name.as_str(),
        h100().name,
        90,
        trip,
        kernel.build.as_str(),
    );
    files::load_store(path)
        .unwrap()
        .table
        .get(&key)
        .unwrap()
        .clone()
}

/// The candidates of an online search (bounded exploring, no learned
/// moves, nothing pruned by the caller) for `kernel` at `trip`.
fn online_prior(device: &DeviceDesc, kernel: &KernelDesc, trip: u64) -> Prior {
    candidates(
        device,
        kernel,
        &LaunchDesc::open(trip),
        &[],
        Exploring::Bounded,
        |_| true,
    )
}

/// The candidates of a search exploring unbounded (a tuning session's, as
/// [`unbounded`] tuners search) for `kernel` at `trip`, with no learned
/// moves.
fn session_prior(kernel: &KernelDesc, trip: u64) -> Prior {
    candidates(
        &h100(),
        kernel,
        &LaunchDesc::open(trip),
        &[],
        Exploring::UNBOUNDED,
        |_| true,
    )
}

/// The candidates a warm search exploring unbounded measures, where the
/// session's runs are not known ([`Params::SESSION_WARM`]).
const SESSION_WARM: usize = Params::SESSION_WARM.candidates;

/// The best grid of the first `n` candidates of `prior` under `time`.
fn best_of(n: usize, prior: &Prior, time: &dyn Fn(Geometry) -> f64) -> Geometry {
    prior
        .list
        .iter()
        .take(n)
        .map(|&(_, g)| g)
        .min_by(|a, b| time(*a).total_cmp(&time(*b)))
        .unwrap()
}

#[test]
fn a_kernel_launched_once_per_run_settles_across_runs() {
    let path = temp("once_per_run");
    let k = spmd();
    let trip = 1 << 22;
    let time = bowl(Geometry::new(64, 1 << 14));
    let want = best_of(4, &session_prior(&k, trip), &time);
    let runs: Vec<Geometry> = (0..10)
        .map(|_| process(&path, &k, trip, 1, &time)[0])
        .collect();
    // Four candidates screened, the leader confirmed: from run 7 on,
    // every run launches the best of them.
    let r = record(&path, &k, trip);
    assert!(runs[6..].iter().all(|g| *g == want), "{runs:?}");
    assert_eq!((r.tally.runs, r.tally.launches_per_run), (10, 1));
    assert_eq!(r.kind(), Kind::Cold);
    assert!(r.search.explored(Kind::Cold) <= 6);
    // The search started from auto's grid, then measured the next three of
    // the prior in the next three runs. LLVM's grid is auto's for this
    // launch (a cold search would skip it otherwise; search::Params::COLD).
    let list = session_prior(&k, trip).list;
    assert_eq!(runs[0], list[0].1);
    let mut screened = runs[1..4].to_vec();
    screened.sort();
    let mut want: Vec<Geometry> = list[1..4].iter().map(|&(_, g)| g).collect();
    want.sort();
    assert_eq!(screened, want);
    let llvm = resolve(Candidate::Llvm, &h100(), &k, &LaunchDesc::open(trip)).unwrap();
    assert!(
        list[..2].iter().any(|&(_, g)| g == llvm),
        "LLVM's grid early: {list:?}"
    );
}

#[test]
fn every_sixteenth_run_rechecks_the_runner_up_under_its_own_label() {
    let path = temp("recheck");
    let k = spmd();
    let trip = 1 << 22;
    let time = bowl(Geometry::new(64, 1 << 14));
    let runs: Vec<Proposal> = (0..17)
        .map(|_| {
            let store = Box::new(files::StoreFile::new(path.clone(), false));
            process_on(unbounded(store), &k, trip, 1, &time, || {})[0]
        })
        .collect();
    let kept = best_of(4, &session_prior(&k, trip), &time);
    let r = record(&path, &k, trip);
    let runner_up = r
        .search
        .runner_up(Kind::Cold)
        .map(|i| r.search.candidates[i]);
    let runner_up = runner_up.and_then(|c| resolve(c, &h100(), &k, &LaunchDesc::open(trip)));
    for (run, p) in (1..).zip(&runs) {
        if run == RECHECK_RUNS {
            assert_eq!(Some(p.grid), runner_up, "run {run}");
            assert_eq!((p.rule, p.label), (Rule::TuneRecheck, Some(RECHECK_LABEL)));
        } else if run >= 7 {
            assert_eq!(p.grid, kept, "run {run}");
            assert_eq!((p.rule, p.label), (Rule::TuneWinner, None), "run {run}");
        } else {
            // Exploring launches are labelled for the profile.
            let label = (p.rule == Rule::TuneTrial).then_some(TRIAL_LABEL);
            assert_eq!(p.label, label, "run {run}");
        }
    }
    assert!(
        runs.iter().any(|p| p.label == Some(TRIAL_LABEL)),
        "{runs:?}"
    );
}

/// A kernel launched five times per run in a `gridsel tune` session of
/// three runs gets four warm launches a run, twelve in all: its search
/// measures as many grids as those settle (four, `Params::session_warm`)
/// and settles within the session on the best of them, written settled to
/// the store (sixteen, the plan for 64 launches, were still exploring).
#[test]
fn a_kernel_launched_five_times_per_run_settles_within_a_three_run_session() {
    let path = temp("five_per_run_session");
    let k = spmd();
    let trip = 1 << 22;
    let time = bowl(Geometry::new(64, 1 << 14));
    let mut last = Vec::new();
    for _ in 0..3 {
        last = session_process(&path, Some(3), &k, trip, 5, &time);
    }
    let r = record(&path, &k, trip);
    assert_eq!((r.tally.runs, r.tally.launches_per_run), (3, 5));
    assert!(r.search.settled(Kind::Warm), "{:?}", r.search);
    let grid = |c| resolve(c, &h100(), &k, &LaunchDesc::open(trip)).unwrap();
    let measured: Vec<Geometry> = (r.search.ranked(Kind::Warm).iter())
        .map(|&(i, _)| grid(r.search.candidates[i]))
        .collect();
    assert!(measured.len() >= 4, "{measured:?}");
    let fastest = measured
        .iter()
        .copied()
        .min_by(|a, b| time(*a).total_cmp(&time(*b)));
    let kept = grid(r.search.candidates[r.search.leader(Kind::Warm)]);
    assert_eq!(Some(kept), fastest, "{measured:?}");
    assert_eq!(last.last(), Some(&kept), "{last:?}");
}

/// Twenty launches a run: the plan measures in two runs; early in the
/// third, `auto`'s grid, which lost the lead on one sample, is brought to
/// the four a close call gets, and the finalists' blocks are measured at a
/// warp fewer and a warp more threads (where those fall depends on the
/// process's pick among a round's candidates); the bowl makes those
/// slower, and from then on every launch runs the best grid.
#[test]
fn a_kernel_launched_twenty_times_per_run_settles_early_in_its_third_run() {
    let path = temp("twenty_per_run");
    let k = spmd();
    let trip = 1 << 22;
    let time = bowl(Geometry::new(64, 1 << 14));
    let want = best_of(SESSION_WARM, &session_prior(&k, trip), &time);
    process(&path, &k, trip, 20, &time);
    let second = process(&path, &k, trip, 20, &time);
    let third = process(&path, &k, trip, 20, &time);
    let fourth = process(&path, &k, trip, 20, &time);
    assert!(second.contains(&want), "{second:?}");
    let refined = second.iter().chain(&third).any(|g| g.threads == 96);
    assert!(refined, "{second:?} {third:?}");
    assert!(third[10..].iter().all(|g| *g == want), "{third:?}");
    assert!(fourth.iter().all(|g| *g == want), "{fourth:?}");
    let r = record(&path, &k, trip);
    assert_eq!(
        (r.tally.runs, r.tally.launches_per_run, r.kind()),
        (4, 20, Kind::Warm)
    );
    assert!(r.search.explored(Kind::Warm) <= 40);
}

#[test]
fn a_settled_search_reads_the_store_at_start_and_writes_it_at_exit_not_at_its_first_launch() {
    let path = temp("settled_first_launch");
    let k = spmd();
    let trip = 1 << 22;
    let time = bowl(Geometry::new(64, 1 << 14));
    for _ in 0..10 {
        process(&path, &k, trip, 1, &time);
    }
    assert!(record(&path, &k, trip).search.settled(Kind::Cold));
    // The next run has nothing to save before it has timed its launch: the
    // store is written at its exit, with the launch's sample.
    let (store, writes) = counting_file(&path);
    process_on(unbounded(store), &k, trip, 1, &time, || {
        assert_eq!(writes.load(Ordering::Relaxed), 0, "written before the exit");
    });
    assert_eq!(writes.load(Ordering::Relaxed), 1);
    assert_eq!(record(&path, &k, trip).tally.runs, 11);

    // Nor is it read at the first launch: a binary's registration reads it.
    let (store, reads, _) = counting_file_reads(&path);
    let tune = TunePolicy::new(Some(Box::new(StoreWriter::new(store))), f64::INFINITY);
    tune.prepare(&[], LlvmRelease::UNKNOWN);
    assert_eq!(reads.load(Ordering::Relaxed), 1);
    let device = h100();
    let launch = timed_launch(&k, &device, trip);
    let p = tune.decide(&launch).unwrap();
    assert_eq!(p.grid, best_of(4, &session_prior(&k, trip), &time));
    assert_eq!(reads.load(Ordering::Relaxed), 1, "read again at the launch");

    // A search that settles after measuring in the process is saved at
    // once, by the store's writer thread (what it learned survives a kill),
    // then the rest at the exit.
    let path = temp("settles_in_process");
    let (store, writes) = counting_file(&path);
    let launched = process_on(unbounded(store), &k, trip, 60, &time, || {
        eventually("saved when it settled", || {
            writes.load(Ordering::Relaxed) == 1
        });
    });
    let settled = record(&path, &k, trip);
    assert!(settled.search.settled(Kind::Warm));
    assert_eq!(
        launched[59].grid,
        best_of(SESSION_WARM, &session_prior(&k, trip), &time)
    );
    assert_eq!(writes.load(Ordering::Relaxed), 2);
}

/// Writing the store re-reads, re-parses and rewrites the whole file: at
/// its 4 MiB cap that took 120 ms on a 2-core VM. The launch where a search
/// settles hands its update to the store's writer thread and goes on, here
/// while each write takes a second more.
#[test]
fn a_settling_launch_never_waits_for_the_store_to_be_written() {
    let path = temp("slow_store");
    let k = spmd();
    let trip = 1 << 22;
    let time = bowl(Geometry::new(64, 1 << 14));
    let (store, writes) = slow_file(&path, Duration::from_secs(1));
    let tune = TunePolicy::new(Some(Box::new(StoreWriter::new(store))), f64::INFINITY);
    let device = h100();
    let launch = timed_launch(&k, &device, trip);
    let mut longest = Duration::ZERO;
    for _ in 0..60 {
        let start = Instant::now();
        let p = tune.decide(&launch).unwrap();
        longest = longest.max(start.elapsed());
        if p.observe.timed() {
            tune.observe(&launch, p.grid, time(p.grid) as u64);
        }
    }
    tune.flush();
    assert!(
        longest < Duration::from_millis(250),
        "a launch took {longest:?}"
    );
    // Saved when the search settled and at the exit, both by the writer
    // (in one write when the exit came before the writer thread ran).
    let r = record(&path, &k, trip);
    assert!(r.search.settled(Kind::Warm));
    assert_eq!(r.tally.runs, 1);
    let writes = writes.lock().unwrap();
    let updates: usize = writes.iter().map(|w| w.1).sum();
    assert_eq!(updates, 2, "{writes:?}");
    assert!(
        writes.iter().all(|(thread, _)| thread == "gridsel-store"),
        "{writes:?}"
    );
}

#[test]
fn the_writer_writes_at_once_then_at_most_once_per_interval_and_the_rest_at_exit() {
    let path = temp("interval");
    let (store, writes) = slow_file(&path, Duration::ZERO);
    let count = || writes.lock().unwrap().len();
    let writer = StoreWriter::with_interval(store, Duration::from_secs(3600));
    // The first update is written at once; the next, within the interval,
    // wait for the exit.
    writer.save(entry("a", 1000, 32));
    eventually("the first update written", || count() == 1);
    writer.save(entry("b", 1000, 32));
    writer.save(entry("c", 1000, 32));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(count(), 1);
    writer.flush(vec![entry("d", 1000, 32)]);
    let sizes: Vec<usize> = writes.lock().unwrap().iter().map(|w| w.1).collect();
    assert_eq!(sizes, [1, 3]);
    assert_eq!(files::load_store(&path).unwrap().table.len(), 4);

    // With no interval every update is written soon; a store another
    // process holds is waited for by the writer, not by whoever saved.
    let path = temp("no_interval");
    let (store, writes) = slow_file(&path, Duration::ZERO);
    let count = || writes.lock().unwrap().len();
    let writer = StoreWriter::with_interval(store, Duration::ZERO);
    writer.save(entry("a", 1000, 32));
    eventually("a written", || count() == 1);
    writer.save(entry("b", 1000, 32));
    eventually("b written", || count() == 2);
    let held = gridsel_host::ffi::fs::lock(&store_lock(&path), Duration::ZERO).unwrap();
    writer.save(entry("c", 1000, 32));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(count(), 2);
    drop(held);
    eventually("c written once the store is free", || count() == 3);
    writer.flush(Vec::new());
    assert_eq!(count(), 3);
    assert_eq!(files::load_store(&path).unwrap().table.len(), 3);
}

/// A write that hangs (a store on a stuck network file system) holds the
/// exit for at most its patience, then the process goes.
#[test]
fn the_exit_waits_for_a_hung_write_at_most_its_patience() {
    let capture = log_capture::install();
    let path = temp("hung");
    let (store, writes) = slow_file(&path, Duration::from_secs(60));
    let writer = StoreWriter::new(store);
    writer.save(entry("a", 1000, 32));
    std::thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    writer.flush(vec![entry("b", 1000, 32)]);
    let waited = start.elapsed();
    assert!(
        waited >= EXIT_PATIENCE - Duration::from_millis(100),
        "{waited:?}"
    );
    assert!(
        waited < EXIT_PATIENCE + Duration::from_secs(2),
        "{waited:?}"
    );
    assert!(writes.lock().unwrap().is_empty());
    // The measurements the exit could not save are one warning, not lost
    // in silence.
    let lost = capture.lines(log::Level::Warn, &path.display().to_string());
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert!(
        lost[0].contains("still being written when the program ended"),
        "{}",
        lost[0]
    );
}

#[test]
fn a_solvers_shrinking_loop_shares_one_search_per_class() {
    let path = temp("shrinking");
    let k = spmd();
    // Trip counts 1024 down to 725: one class, one search, one process.
    let time = |g: Geometry| 1000.0 + 100.0 * f64::from(g.threads.abs_diff(64));
    let store = Box::new(files::StoreFile::new(path.clone(), false));
    let tune = TunePolicy::new(Some(Box::new(StoreWriter::new(store))), f64::INFINITY);
    let device = h100();
    let mut last = None;
    for trip in (725..1024u64).rev() {
        let launch = timed_launch(&k, &device, trip);
        let p = tune.decide(&launch).unwrap();
        if p.observe.timed() {
            tune.observe(&launch, p.grid, time(p.grid) as u64);
        }
        last = Some((p.grid, p.rule));
    }
    tune.flush();
    let (grid, rule) = last.unwrap();
    assert_eq!((grid.threads, rule), (64, Rule::TuneWinner));
    let table = files::load_store(&path).unwrap().table;
    assert_eq!(table.len(), 1);
    assert_eq!(record(&path, &k, 1000).tally.trips, (725, 1023));
}

#[test]
fn concurrent_processes_split_a_round_and_lose_no_sample() {
    let path = temp("concurrent_processes");
    let k = spmd();
    let trip = 1 << 22;
    let time = bowl(Geometry::new(64, 1 << 14));
    // Each process launches the kernel twice: a cold launch, then a warm
    // one that explores. One process measures auto's grid first (the grid
    // every process would get anyway); then eight ranks start at once and
    // split the next candidates of the round between them.
    let wave = |n: usize| -> Vec<Geometry> {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|_| s.spawn(|| process(&path, &k, trip, 2, &time)[1]))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    };
    let auto = resolve(Candidate::Auto, &h100(), &k, &LaunchDesc::open(trip)).unwrap();
    assert_eq!(wave(1), [auto]);
    let second = wave(8);
    let distinct: std::collections::HashSet<_> = second.iter().collect();
    assert!(distinct.len() >= 2, "all eight tried {second:?}");
    assert!(!distinct.contains(&auto));
    let r = record(&path, &k, trip);
    assert_eq!(r.tally.runs, 9);
    // Nothing lost beyond the cap: the nine cold first launches ran the
    // warm leader, auto's grid unless a rank started after another had
    // saved, and a grid keeps its latest 8 (KEEP); the nine warm ones are
    // all in.
    let cold: usize = r.search.samples.iter().map(|s| s.cold.len()).sum();
    let warm: usize = r.search.samples.iter().map(|s| s.warm.len()).sum();
    assert!((8..=9).contains(&cold), "{cold}");
    assert_eq!(warm, 9);
    // auto's launches are not exploring: only the wave's warm ones count.
    assert_eq!(r.search.explored(Kind::Warm), 8);
}

#[test]
fn a_failed_launch_ranks_last() {
    let path = temp("failed");
    let k = spmd();
    let trip = 1 << 22;
    let auto = resolve(Candidate::Auto, &h100(), &k, &LaunchDesc::open(trip)).unwrap();
    // auto's grid would be the fastest, but its launch fails.
    let time = |g: Geometry| {
        if g == auto {
            f64::MAX
        } else {
            1000.0 + f64::from(g.threads)
        }
    };
    let grids: Vec<Geometry> = (0..8)
        .map(|_| process(&path, &k, trip, 1, &time)[0])
        .collect();
    assert!(grids[6..].iter().all(|g| *g != auto), "{grids:?}");
}

#[test]
fn a_kernel_that_may_nest_is_searched_only_within_llvms_grid() {
    let mut k = spmd();
    k.environment = None;
    k.local_mem = None; // no bounded stack, no environment: it may nest
    let launch = LaunchDesc::open(98_304);
    let limits = Limits::of(&h100(), &k, &launch);
    assert!(limits.narrowed.is_some());
    let list = candidates(&h100(), &k, &launch, &[], Exploring::Bounded, |_| true).list;
    assert!(!list.is_empty());
    assert!(list.iter().all(|&(_, g)| limits.contains(g)), "{list:?}");
}

#[test]
fn grids_that_starve_a_small_launch_come_last_but_llvms() {
    let d = h100();
    let wave = u64::from(d.sm_count * d.max_threads_per_sm);
    let busy = |g: Geometry, useful: u64| u64::from(g.threads) * u64::from(g.blocks).min(useful);
    let mut both = 0;
    for mode in [ExecMode::Spmd, ExecMode::GenericSpmd] {
        for cap in [128, 1024] {
            for trip in (8..=22).map(|k| 1u64 << k) {
                let mut k = spmd();
                (k.exec_mode, k.max_threads) = (Some(mode), Some(cap));
                let prior = online_prior(&d, &k, trip);
                let list = &prior.list;
                let auto = busy(list[0].1, trip);
                let starves = |&(c, g): &(Candidate, Geometry)| {
                    c != Candidate::Llvm && auto < wave && busy(g, trip) < auto
                };
                let first = list.iter().position(starves).unwrap_or(list.len());
                assert!(list[first..].iter().all(starves), "{list:?}");
                assert_eq!(prior.starving_from, (first < list.len()).then_some(first));
                // Lists with both kinds, for the order to be tested on.
                let keeps_busy = list[1..first].iter().any(|&(c, _)| c != Candidate::Llvm);
                if first < list.len() && keeps_busy {
                    both += 1;
                }
            }
        }
    }
    assert!(both > 0);
}

/// A row per thread (bicg's and atax's matrix-vector products): `auto`'s
/// grid gives each of 16 000 rows a thread, under one wave, and fewer
/// threads would starve the launch. Even where a starving grid is the
/// fastest, a kernel launched once per run never pays a run to try one; a
/// kernel launched 20 times per run screens it and keeps it.
#[test]
fn only_a_kernel_launched_many_times_per_run_tries_grids_that_starve_it() {
    let k = spmd();
    let trip = 16_000;
    let prior = online_prior(&h100(), &k, trip);
    let from = prior.starving_from.expect("grids with fewer busy threads");
    let starving: Vec<Geometry> = prior.list[from..].iter().map(|&(_, g)| g).collect();
    assert!(from > 1 && starving.len() > 1, "{prior:?}");
    let fastest = starving[0];
    let time = |g: Geometry| if g == fastest { 50_000.0 } else { 100_000.0 };
    let once = temp("starving_once");
    let runs: Vec<Geometry> = (0..10)
        .map(|_| process(&once, &k, trip, 1, &time)[0])
        .collect();
    assert!(runs.iter().all(|g| !starving.contains(g)), "{runs:?}");
    assert!(record(&once, &k, trip).search.settled(Kind::Cold));
    let many = temp("starving_many");
    let last: Vec<Geometry> = (0..3)
        .map(|_| *process(&many, &k, trip, 20, &time).last().unwrap())
        .collect();
    assert_eq!(last[2], fastest, "{last:?}");
}

/// The replay tests' kernel, trip count, bowl of times and candidates.
fn replayed_bowl() -> (KernelDesc, u64, impl Fn(Geometry) -> f64, Prior) {
    let k = spmd();
    let trip = 1 << 22;
    let prior = online_prior(&h100(), &k, trip);
    (k, trip, bowl(Geometry::new(64, 1 << 14)), prior)
}

/// Ten runs of `launches`, the first of each `cold` times the grid's time.
fn setup(launches: u32, cold: f64, overhead: f64) -> ReplaySetup {
    ReplaySetup {
        runs: 10,
        launches,
        cold,
        overhead,
        bound: Bound::Run,
    }
}

#[test]
fn replay_through_the_store_reaches_the_best_within_a_few_runs() {
    let (_, _, time, prior) = replayed_bowl();
    let best4 = time(best_of(4, &prior, &time));
    let once = replay(&prior, setup(1, 3.0, f64::INFINITY), &time, |_| 1.0, best4);
    assert!(once.runs_to_95pct.is_some_and(|r| r <= 6), "{once:?}");
    assert_eq!(once.kept.len(), 10);
    let best12 = time(best_of(12, &prior, &time));
    let twenty = replay(
        &prior,
        setup(20, 3.0, f64::INFINITY),
        &time,
        |_| 1.0,
        best12,
    );
    assert!(twenty.runs_to_95pct.is_some_and(|r| r <= 2), "{twenty:?}");
    // Settled: every launch of run 10 is the best grid's, the first cold.
    assert!(
        twenty.spent[9] <= best12 * (3.0 + 19.0) / 20.0 * 1.001,
        "{twenty:?}"
    );
    // What the runs spend gets there too: exploring ends.
    assert!(once.runs_to_95pct_spent.is_some_and(|r| r <= 6), "{once:?}");
}

#[test]
fn a_replay_ranks_noisy_samples_and_pays_the_grids_own_times() {
    let (_, _, time, prior) = replayed_bowl();
    let best4 = time(best_of(4, &prior, &time));
    let quiet = replay(&prior, setup(1, 1.0, f64::INFINITY), &time, |_| 1.0, best4);
    // A factor common to every launch says nothing about the grids.
    let scaled = replay(&prior, setup(1, 1.0, f64::INFINITY), &time, |_| 3.0, best4);
    assert_eq!(scaled, quiet);
    // Noise that flatters every other launch by 2x misleads the search,
    // but a run still costs what its grid costs.
    let mut flip = false;
    let noisy = replay(
        &prior,
        setup(1, 1.0, f64::INFINITY),
        &time,
        |_| {
            flip = !flip;
            if flip { 0.5 } else { 1.0 }
        },
        best4,
    );
    assert_ne!(noisy.spent, quiet.spent);
    for t in noisy.spent.iter().chain(&noisy.kept) {
        assert!(
            prior.list.iter().any(|&(_, g)| time(g) == *t),
            "{t} {noisy:?}"
        );
    }
}

// ---- cache ---------------------------------------------------------------------

/// A fresh folder for one test's store, under Cargo's scratch folder for
/// integration tests rather than /tmp: emptied when the test starts again,
/// never left to pile up one per run.
fn temp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tune-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("cache.json")
}

/// `<store>.lock`.
fn store_lock(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// One process's update of (kernel, class of `trip`): a run with one warm
/// sample of `threads` x 8.
fn entry(kernel: &str, trip: u64, threads: u32) -> Update {
    let mut u = Update::new(Key::for_trip(kernel, "H100", 90, trip, ""));
    u.tally.runs = 1;
    u.tally.trips = (trip, trip);
    u.samples = vec![(Candidate::Grid(Geometry::new(threads, 8)), Kind::Warm, 1234)];
    u
}

fn key(kernel: &str, trip: u64) -> Key {
    entry(kernel, trip, 32).key
}

/// Adds `updates` to the store at `path` as a process's writer does when it
/// has not read the store (so no upkeep is due): appended to the journal,
/// or merged into the file where the journal cannot take them.
fn store_updates(path: &Path, updates: &[Update], patience: Duration) -> Result<(), StoreError> {
    files::StoreFile::new(path.to_path_buf(), false).store(updates, patience)
}

/// Adds `updates` to the store at `path` as a process does: reads it, then
/// writes (with the upkeep the read asked for).
fn write_as_a_process(path: &Path, updates: &[Update]) -> Result<(), StoreError> {
    let file = files::StoreFile::new(path.to_path_buf(), false);
    file.load()?;
    file.store(updates, PATIENCE)
}

#[test]
fn store_round_trip_and_merge() {
    let path = temp("round_trip");
    assert_eq!(
        files::load_store(&path).unwrap().table,
        Table::default(),
        "missing = empty"
    );
    store_updates(&path, &[entry("k1", 1000, 128)], PATIENCE).unwrap();
    store_updates(
        &path,
        &[entry("k2", 1000, 64), entry("k1", 1000, 96)],
        PATIENCE,
    )
    .unwrap();
    let t = files::load_store(&path).unwrap().table;
    assert_eq!(t.len(), 2);
    let k1 = t.get(&key("k1", 1000)).unwrap();
    assert_eq!(k1.tally.runs, 2);
    assert_eq!(
        k1.search.candidates.len(),
        2,
        "both processes' samples kept"
    );
    let mut only_k2 = Table::default();
    only_k2.apply(&entry("k2", 1000, 64));
    assert_eq!(t.get(&key("k2", 1000)), only_k2.get(&key("k2", 1000)));
    assert!(
        t.get(&Key {
            sm_arch: 80,
            ..key("k1", 1000)
        })
        .is_none()
    );
    assert!(t.get(&key("k1", 700)).is_none(), "another class");
    // No temporary files left behind.
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp."))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn concurrent_writers_keep_every_entry() {
    let path = temp("concurrent");
    std::thread::scope(|s| {
        for w in 0..8u64 {
            let path = &path;
            s.spawn(move || {
                for i in 0..10u64 {
                    let trip = 1 << (4 * i);
                    store_updates(path, &[entry(&format!("k{w}"), trip, 32)], PATIENCE).unwrap();
                }
            });
        }
    });
    let t = files::load_store(&path).unwrap().table;
    assert_eq!(t.len(), 80);
}

/// Issue 25, 1: a file that is not a gridsel store (a mistyped
/// `GRIDSEL_CACHE=~/.bashrc`) is refused and never replaced, nor is a newer
/// gridsel's; an empty file is a new store.
#[test]
fn only_a_gridsel_store_is_replaced() {
    let path = temp("not_a_store");
    for (text, why) in [
        ("notes\n", "not a gridsel store (expected ident"),
        ("export PATH=$HOME/bin:$PATH\n", "not a gridsel store"),
        (
            "{\"name\": \"x\", \"version\": \"1.0\"}",
            "`version` is \"1.0\"",
        ),
        ("{\"records\": []}", "no `version`"),
        ("{\"version\": 3}", "no `records`"),
    ] {
        std::fs::write(&path, text).unwrap();
        let err = files::load_store(&path).unwrap_err();
        assert!(matches!(err, StoreError::NotAStore(_)), "{text}: {err}");
        assert!(err.to_string().contains(why), "{text}: {err}");
        let err = store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap_err();
        assert!(matches!(err, StoreError::NotAStore(_)), "{text}: {err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
    // A newer gridsel's file is reported and left alone, not overwritten.
    let newer = "{\"version\": 99, \"records\": []}";
    std::fs::write(&path, newer).unwrap();
    let err = files::load_store(&path).unwrap_err();
    assert!(matches!(err, StoreError::Newer(_)), "{err}");
    assert!(err.to_string().contains("version 99"), "{err}");
    assert!(matches!(
        store_updates(&path, &[entry("k", 1, 32)], PATIENCE),
        Err(StoreError::Newer(_))
    ));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), newer);
    // An empty file (made with `touch`) holds nothing to lose: a new store.
    std::fs::write(&path, "").unwrap();
    assert_eq!(files::load_store(&path).unwrap(), Contents::default());
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    assert_eq!(files::load_store(&path).unwrap().table.len(), 1);
    assert!(!bad_copy(&path).exists());
}

/// `<store>.bad`.
fn bad_copy(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".bad");
    PathBuf::from(name)
}

/// Issue 25, 2: one record that does not validate costs only itself; the
/// file as it was is kept as `<store>.bad` before the store is rewritten
/// without it, which a process that read it does at its first write,
/// exclusively: an older `.bad` is never replaced (the store is then left
/// as it is), nor written through a link.
#[test]
fn a_bad_record_is_dropped_alone_and_the_file_kept_as_bad() {
    let path = temp("bad_record");
    store_updates(&path, &[entry("k1", 1, 32), entry("k2", 1, 32)], PATIENCE).unwrap();
    let good = std::fs::read_to_string(&path).unwrap();
    // k1's record gets a ninth warm sample; k2's stays.
    let damaged = good.replacen("\"warm\":[1234]", "\"warm\":[1,2,3,4,5,6,7,8,9]", 1);
    assert_ne!(damaged, good);
    std::fs::write(&path, &damaged).unwrap();
    let read = files::load_store(&path).unwrap();
    assert_eq!(read.table.len(), 1);
    assert!(read.table.get(&key("k2", 1)).is_some());
    assert_eq!(read.dropped.len(), 1);
    assert!(
        read.dropped[0].starts_with("record 1 (kernel k1): `grid:32,8`: more than 8 samples"),
        "{:?}",
        read.dropped
    );

    // An older `.bad` is in the way: nothing is written.
    let bad = bad_copy(&path);
    std::fs::write(&bad, "older").unwrap();
    let err = write_as_a_process(&path, &[entry("k3", 1, 32)]).unwrap_err();
    assert!(matches!(err, StoreError::CopyNotKept(_)), "{err}");
    assert!(err.to_string().contains("moved away"), "{err}");
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), "older");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), damaged);
    // Nor through a link planted there.
    std::fs::remove_file(&bad).unwrap();
    let victim = path.with_file_name("victim");
    std::os::unix::fs::symlink(&victim, &bad).unwrap();
    assert!(write_as_a_process(&path, &[entry("k3", 1, 32)]).is_err());
    assert!(!victim.exists());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), damaged);

    // Moved away: the copy is kept and the store rewritten without k1.
    std::fs::remove_file(&bad).unwrap();
    write_as_a_process(&path, &[entry("k3", 1, 32)]).unwrap();
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), damaged);
    let kept = kernels_read_cleanly(&path);
    assert_eq!(kept, ["k2", "k3"]);
    // A clean store is rewritten without touching the copy.
    write_as_a_process(&path, &[entry("k4", 1, 32)]).unwrap();
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), damaged);
}

/// Issue 25, 4: a rewrite keeps the store's mode (a private store stays
/// private, and so does its `.bad` copy); a read-only store is not
/// replaced.
#[test]
fn a_rewrite_keeps_the_mode_and_a_read_only_store_is_left_alone() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let path = temp("mode");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let chmod =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    let journal = files::journal_path(&path);
    let owner = |p: &Path| {
        let meta = std::fs::metadata(p).unwrap();
        (meta.uid(), meta.gid())
    };
    store_updates(&path, &[entry("k1", 1, 32)], PATIENCE).unwrap();
    for m in [0o600, 0o640, 0o664] {
        // Appended to the journal, which takes the store's mode; and
        // rewritten (the journal merged in).
        chmod(&path, m);
        store_updates(&path, &[entry("k1", 1, 32)], PATIENCE).unwrap();
        assert_eq!(mode(&journal), m, "{m:o} became {:o}", mode(&journal));
        compact(&path);
        assert_eq!(mode(&path), m, "{m:o} became {:o}", mode(&path));
    }
    // Another user's store is refused, even by root
    // (a_store_journal_or_lock_another_user_owns_is_refused_at_once); the
    // group is kept where the process may.
    if std::os::unix::fs::chown(&path, None, Some(4321)).is_ok() {
        store_updates(&path, &[entry("k1", 1, 32)], PATIENCE).unwrap();
        assert_eq!(owner(&journal).1, 4321);
        compact(&path);
        assert_eq!(owner(&path).1, 4321);
        std::os::unix::fs::chown(&path, None, Some(0)).unwrap();
    } else {
        eprintln!("SKIPPED: giving a file to another group needs root");
    }
    // The copy of a private store is private too.
    chmod(&path, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"runs\":", "\"runs\":-", 1)).unwrap();
    write_as_a_process(&path, &[entry("k2", 1, 32)]).unwrap();
    assert_eq!(mode(&bad_copy(&path)), 0o600);
    assert_eq!(mode(&path), 0o600);

    // Read-only: refused, whoever runs it (root may write it, yet the mode
    // says to leave it).
    chmod(&path, 0o444);
    let before = std::fs::read_to_string(&path).unwrap();
    let err = store_updates(&path, &[entry("k3", 1, 32)], PATIENCE).unwrap_err();
    assert_eq!(err.to_string(), "read-only, not replaced");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    assert_eq!(mode(&path), 0o444);
    // Still read (k1's damaged record went, k2's came).
    let read = files::load_store(&path).unwrap();
    assert_eq!(
        read.table
            .records()
            .map(|r| r.key.kernel.as_str())
            .collect::<Vec<_>>(),
        ["k2"]
    );
    // Nor is its journal written: a store would have been.
    assert!(!journal.exists());
    chmod(&path, 0o644);
    store_updates(&path, &[entry("k3", 1, 32)], PATIENCE).unwrap();
    chmod(&path, 0o444);
    let err = store_updates(&path, &[entry("k4", 1, 32)], PATIENCE).unwrap_err();
    assert_eq!(err.to_string(), "read-only, not replaced");
    assert_eq!(files::load_store(&path).unwrap().table.len(), 2);
}

/// Merges the journal of the store at `path` into it.
fn compact(path: &Path) {
    files::edit_store(path, PATIENCE, files::OnInvalid::Refuse, |_| {}).unwrap();
    assert!(!files::journal_path(path).exists());
}

/// The journal's text: its header and lines.
fn journal_text(path: &Path) -> String {
    std::fs::read_to_string(files::journal_path(path)).unwrap()
}

/// The runs the store at `path` counts for `kernel` at `trip`.
fn runs(path: &Path, kernel: &str, trip: u64) -> u32 {
    let table = files::load_store(path).unwrap().table;
    table.get(&key(kernel, trip)).map_or(0, |r| r.tally.runs)
}

/// A process's updates are lines appended to the store's journal, which
/// every reader applies over the file; a store gridsel has not written yet
/// is written whole first. A journal grown long is merged into the file by
/// the writer thread of the next process that reads it, at once, and
/// removed.
#[test]
fn updates_go_to_the_journal_and_a_long_journal_is_merged_in_by_the_next_reader() {
    let path = temp("journal");
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    let store = std::fs::read_to_string(&path).unwrap();
    assert!(!files::journal_path(&path).exists());
    for n in 2..=5 {
        store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
        assert_eq!(runs(&path, "k", 1), n);
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        store,
        "the file untouched"
    );
    assert_eq!(journal_text(&path).lines().count(), 1 + 4);

    // Past JOURNAL_COMPACT_BYTES: a process that reads it merges it in.
    let line = journal_text(&path).lines().nth(1).unwrap().len() as u64 + 1;
    let more = JOURNAL_COMPACT_BYTES / line + 1;
    let batch: Vec<Update> = (0..more).map(|_| entry("k", 1, 32)).collect();
    store_updates(&path, &batch, PATIENCE).unwrap();
    let total = 5 + more as u32;
    assert_eq!(runs(&path, "k", 1), total);
    let file = files::StoreFile::new(path.clone(), false);
    assert!(!file.upkeep_due());
    let writer = StoreWriter::new(Box::new(file));
    writer.load().unwrap();
    // (Whether the merge is still due right after the load is a race with
    // the writer thread, which takes it at once: only its end is checked.)
    eventually("merged in by the writer thread", || {
        !files::journal_path(&path).exists()
    });
    assert_eq!(runs(&path, "k", 1), total);
    // The first update is still written at once, not an interval (10 s)
    // later.
    writer.save(entry("k", 1, 32));
    let soon = SAVE_INTERVAL / 4;
    within(soon, "the first update written at once", || {
        runs(&path, "k", 1) == total + 1
    });
    writer.flush(vec![entry("k", 1, 32)]);
    assert_eq!(runs(&path, "k", 1), total + 2);
    assert_eq!(journal_text(&path).lines().count(), 3, "appended again");
}

/// A compaction killed between replacing the store and removing the
/// journal leaves a journal the store already holds: of another id, it is
/// never read over the store again, and the next write removes it. A line
/// cut short by a process killed while appending is not read, and the next
/// append cuts it off.
#[test]
fn a_journal_is_never_counted_twice_and_a_torn_last_line_costs_nothing() {
    let path = temp("journal_kills");
    let journal = files::journal_path(&path);
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    store_updates(&path, &[entry("k", 1, 32), entry("k", 1, 32)], PATIENCE).unwrap();
    let merged = std::fs::read(&journal).unwrap();
    files::edit_store(&path, PATIENCE, files::OnInvalid::Refuse, |_| {}).unwrap();
    assert!(!journal.exists());
    assert_eq!(runs(&path, "k", 1), 3);
    std::fs::write(&journal, &merged).unwrap();
    assert_eq!(
        runs(&path, "k", 1),
        3,
        "a stale journal read over the store"
    );
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    assert_eq!(runs(&path, "k", 1), 4);
    assert!(!journal.exists(), "the stale journal merged away");

    // A torn last line.
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    let whole = journal_text(&path);
    let line = whole.lines().nth(1).unwrap();
    let torn = format!("{whole}{}", &line[..line.len() / 2]);
    std::fs::write(&journal, &torn).unwrap();
    let read = files::load_store(&path).unwrap();
    assert!(read.dropped.is_empty(), "{:?}", read.dropped);
    assert_eq!(read.table.get(&key("k", 1)).unwrap().tally.runs, 5);
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    assert_eq!(journal_text(&path), format!("{whole}{line}\n"));
    assert_eq!(runs(&path, "k", 1), 6);
}

/// Readers take no lock: one that reads the store, then the journal, while
/// another process merges the journal in between, must neither count its
/// updates twice (the old journal over the new store) nor miss them for
/// good. Writers append and compact while a reader checks that it never
/// sees more runs than were written; at the end every run is there.
#[test]
fn readers_racing_compactions_never_count_an_update_twice() {
    let path = temp("journal_race");
    // An empty store, paired with its (not yet written) journal.
    files::edit_store(&path, PATIENCE, files::OnInvalid::Refuse, |_| {}).unwrap();
    let written = AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    let (mut reads, mut journaled, mut over) = (0, 0, Vec::new());
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    for _ in 0..100 {
                        // Counted before: the reader may see it at once.
                        written.fetch_add(1, Ordering::SeqCst);
                        store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
                    }
                })
            })
            .collect();
        s.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                files::edit_store(&path, PATIENCE, files::OnInvalid::Refuse, |_| {}).unwrap();
                std::thread::sleep(Duration::from_millis(3));
            }
        });
        // Checked after the scope: a panic here would leave the compactor
        // running and the scope waiting for it.
        while !done.load(Ordering::SeqCst) {
            let seen = runs(&path, "k", 1) as usize;
            let now = written.load(Ordering::SeqCst);
            if seen > now {
                over.push((seen, now));
            }
            reads += 1;
            journaled += usize::from(files::journal_path(&path).exists());
            if writers.iter().all(|w| w.is_finished()) {
                done.store(true, Ordering::SeqCst);
            }
        }
    });
    assert!(over.is_empty(), "runs read, written: {over:?}");
    assert_eq!(runs(&path, "k", 1), 200);
    assert!(
        reads > 10 && journaled > 0,
        "{reads} reads, {journaled} with a journal"
    );
}

/// A journal line that does not validate is dropped alone, and the
/// journal as it was kept as `<store>.journal.bad` before a process's
/// write merges the rest into the store. A `.journal` that is not a
/// gridsel journal, a link or a FIFO: the store is
/// refused, and the file left as it is.
#[test]
fn a_bad_journal_line_costs_only_itself_and_a_journal_that_is_not_gridsels_is_left_alone() {
    let path = temp("journal_bad");
    let journal = files::journal_path(&path);
    store_updates(&path, &[entry("k1", 1, 32)], PATIENCE).unwrap();
    for kernel in ["k2", "k3", "k4"] {
        store_updates(&path, &[entry(kernel, 1, 32)], PATIENCE).unwrap();
    }
    let text = journal_text(&path);
    let damaged = text.replacen("\"kernel\":\"k3\"", "\"kernel\":3", 1);
    assert_ne!(damaged, text);
    std::fs::write(&journal, &damaged).unwrap();
    let read = files::load_store(&path).unwrap();
    assert_eq!(read.table.len(), 3);
    assert_eq!(read.dropped.len(), 1, "{:?}", read.dropped);
    assert!(
        read.dropped[0].starts_with("journal line 3: invalid type"),
        "{:?}",
        read.dropped
    );
    write_as_a_process(&path, &[entry("k5", 1, 32)]).unwrap();
    let bad = bad_copy(&journal);
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), damaged);
    assert!(!journal.exists());
    let kept = kernels_read_cleanly(&path);
    assert_eq!(kept, ["k1", "k2", "k4", "k5"]);

    // Files at the journal's name that gridsel did not write.
    let victim = path.with_file_name("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    for (what, make, message) in [
        (
            "notes",
            &(|j: &Path| std::fs::write(j, "notes\n").unwrap()) as &dyn Fn(&Path),
            "not a gridsel journal",
        ),
        (
            "a link",
            &|j: &Path| std::os::unix::fs::symlink(&victim, j).unwrap(),
            "a symbolic link",
        ),
    ] {
        make(&journal);
        let before = std::fs::symlink_metadata(&journal).unwrap();
        let store = std::fs::read_to_string(&path).unwrap();
        let err = files::load_store(&path).unwrap_err();
        assert!(err.to_string().contains(message), "{what}: {err}");
        let err = store_updates(&path, &[entry("k6", 1, 32)], PATIENCE).unwrap_err();
        assert!(err.to_string().contains(message), "{what}: {err}");
        let err = files::edit_store(&path, PATIENCE, files::OnInvalid::SetAside, |t| {
            t.retain(|_| false);
        })
        .unwrap_err();
        assert!(err.to_string().contains(message), "{what}: {err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), store, "{what}");
        let after = std::fs::symlink_metadata(&journal).unwrap();
        assert_eq!(
            (after.len(), after.file_type()),
            (before.len(), before.file_type()),
            "{what}"
        );
        std::fs::remove_file(&journal).unwrap();
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
}

/// An update that would take the journal past its cap is merged into the
/// store instead, so the journal never grows without bound.
#[test]
fn the_journal_never_passes_its_cap() {
    let path = temp("journal_cap");
    let journal = files::journal_path(&path);
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    let line = journal_text(&path).lines().nth(1).unwrap().len() as u64 + 1;
    let fits = (MAX_JOURNAL_BYTES - std::fs::metadata(&journal).unwrap().len()) / line;
    let batch: Vec<Update> = (0..fits).map(|_| entry("k", 1, 32)).collect();
    store_updates(&path, &batch, PATIENCE).unwrap();
    assert!(std::fs::metadata(&journal).unwrap().len() <= MAX_JOURNAL_BYTES);
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    assert!(!journal.exists(), "merged in");
    assert_eq!(runs(&path, "k", 1), 3 + fits as u32);
}

/// A journal over its cap (gridsel never writes one; another program or
/// an older gridsel may) used to lock the store for good: every read
/// failed, so production ignored every record, and every write and
/// `gridsel cache clear` refused. Readers now read the store without it,
/// saying in one line what happens next; the next write, and a clear
/// (`edit_store`, which refuses records that do not validate), keep it as
/// `.journal.bad` and start afresh; a `.bad` in the way is one error
/// saying what to move.
#[test]
fn a_journal_over_its_cap_is_set_aside_by_the_next_write_or_clear() {
    let path = temp("journal_over_cap");
    let journal = files::journal_path(&path);
    let bad = path.with_file_name("cache.json.journal.bad");
    let oversize = |path: &Path| {
        store_updates(path, &[entry("k", 1, 32)], PATIENCE).unwrap();
        let text = journal_text(path);
        let line = format!("{}\n", text.lines().nth(1).unwrap());
        let lines = (MAX_JOURNAL_BYTES as usize / line.len()) + 1;
        let big = text + &line.repeat(lines);
        std::fs::write(files::journal_path(path), &big).unwrap();
        big
    };
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    let big = oversize(&path);
    let read = files::load_store(&path).unwrap();
    assert_eq!(runs(&path, "k", 1), 1, "the store alone");
    assert_eq!(read.dropped.len(), 1, "{:?}", read.dropped);
    assert!(
        read.dropped[0].contains("larger than 1 MiB")
            && read.dropped[0].contains("the next write to the store keeps it as"),
        "{:?}",
        read.dropped
    );
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), big);
    assert!(!journal.exists());
    assert_eq!(runs(&path, "k", 1), 2);
    assert!(files::load_store(&path).unwrap().dropped.is_empty());

    // With a `.bad` in the way: one error naming it; the store unchanged.
    oversize(&path);
    let before = std::fs::read(&path).unwrap();
    let err = store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap_err();
    assert!(
        err.to_string().contains("is in the way of keeping a copy")
            && err.to_string().contains("until that file is moved away"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Moved away: a clear empties the store and sets the journal aside.
    std::fs::remove_file(&bad).unwrap();
    files::edit_store(&path, PATIENCE, files::OnInvalid::Refuse, |table| {
        table.retain(|_| false);
    })
    .unwrap();
    assert!(bad.exists() && !journal.exists());
    assert!(files::load_store(&path).unwrap().table.is_empty());
}

#[test]
fn a_busy_lock_is_reported_not_waited_for() {
    let path = temp("busy");
    let held = gridsel_host::ffi::fs::lock(&store_lock(&path), Duration::ZERO).unwrap();
    let start = std::time::Instant::now();
    // flock locks belong to the open file: a second open in the same process
    // contends like another process would.
    assert!(matches!(
        store_updates(&path, &[entry("k", 1, 32)], Duration::ZERO),
        Err(StoreError::Busy)
    ));
    assert!(start.elapsed() < Duration::from_millis(100));
    drop(held);
    store_updates(&path, &[entry("k", 1, 32)], Duration::ZERO).unwrap();
    assert_eq!(files::load_store(&path).unwrap().table.len(), 1);
}

// ---- store files that are not plain files ----------------------------------------

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

#[test]
fn planted_links_at_temporary_names_are_not_written_through() {
    let path = temp("planted");
    let dir = path.parent().unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    // Earlier gridsels named their temporary file `<store>.tmp.<pid>.<n>`,
    // n counting from 0 in each process.
    let planted: Vec<PathBuf> = (0..1000)
        .map(|n| dir.join(format!("cache.json.tmp.{}.{n}", std::process::id())))
        .collect();
    for link in &planted {
        std::os::unix::fs::symlink(&victim, link).unwrap();
    }
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!is_symlink(&path));
    assert_eq!(files::load_store(&path).unwrap().table.len(), 1);
    assert!(planted.iter().all(|l| is_symlink(l)));
}

#[test]
fn a_linked_store_or_lock_is_refused_and_left_alone() {
    let path = temp("linked");
    let dir = path.parent().unwrap();
    let victim = dir.join("victim.json");
    store_updates(&victim, &[entry("k", 1, 32)], PATIENCE).unwrap();
    let before = std::fs::read_to_string(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let err = files::load_store(&path).unwrap_err();
    assert!(matches!(err, StoreError::Io(_)), "{err:?}");
    assert_eq!(err.to_string(), "a symbolic link, not a regular file");
    let err = store_updates(&path, &[entry("k", 2, 32)], PATIENCE).unwrap_err();
    assert_eq!(err.to_string(), "a symbolic link, not a regular file");
    assert!(is_symlink(&path), "the link was replaced");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), before);

    // A lock planted as a link to a file that does not exist yet.
    let path = dir.join("other.json");
    let target = dir.join("created-through-the-link");
    std::os::unix::fs::symlink(&target, store_lock(&path)).unwrap();
    let err = store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap_err();
    assert_eq!(err.to_string(), "a symbolic link, not a regular file");
    assert!(!target.exists() && !path.exists());
}

/// A store, journal or lock that another user owns (neither this
/// process's nor root) is refused, as ssh refuses such files: another user
/// who may write the store's folder could plant grids for this process to
/// launch, a journal for it to append to, or a lock held with `flock` that
/// made every exit wait out its patience. (Run as root, as the tests are
/// here and in CI, the files are given to another uid; otherwise skipped.)
#[test]
fn a_store_journal_or_lock_another_user_owns_is_refused_at_once() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: giving files to another user needs root");
        return;
    }
    const OTHER: u32 = 4242;
    let give = |p: &Path| std::os::unix::fs::chown(p, Some(OTHER), Some(OTHER)).unwrap();
    let refused = |err: StoreError| {
        let text = err.to_string();
        assert!(
            text.contains("owned by another user (uid 4242), neither this one nor root"),
            "{text}"
        );
    };
    for planted in ["store", "journal", "lock"] {
        let path = temp(&format!("planted_{planted}"));
        store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
        store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
        let file = match planted {
            "store" => path.clone(),
            "journal" => files::journal_path(&path),
            _ => store_lock(&path),
        };
        give(&file);
        let before = std::fs::read(&file).unwrap();
        // A planted lock held by its owner: refused, not waited for.
        let held = gridsel_host::ffi::fs::lock(&store_lock(&path), Duration::ZERO).unwrap();
        let start = Instant::now();
        let patience = if planted == "lock" {
            PATIENCE
        } else {
            Duration::ZERO
        };
        let err = store_updates(&path, &[entry("k", 1, 32)], patience);
        if planted == "lock" {
            refused(err.unwrap_err());
            assert!(
                start.elapsed() < Duration::from_secs(1),
                "{:?}",
                start.elapsed()
            );
        } else {
            assert!(matches!(err, Err(StoreError::Busy)), "{err:?}");
        }
        drop(held);
        if planted != "lock" {
            refused(files::load_store(&path).unwrap_err());
        }
        refused(store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap_err());
        let clear = files::edit_store(&path, PATIENCE, files::OnInvalid::Refuse, |t| {
            t.retain(|_| false);
        });
        refused(clear.unwrap_err());
        assert_eq!(
            std::fs::read(&file).unwrap(),
            before,
            "{planted} left as it is"
        );
    }
}

/// A store whose owner this process may not give a rewrite back to (root's
/// store, rewritten by a user who may write its folder) does not pass its
/// world-writable mode on to the user's own file.
#[test]
fn a_rewrite_never_keeps_another_owners_world_writable_mode() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run a process as another user");
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // Under the system's temporary folder, which the other user can enter:
    // the target folder may lie in root's home, mode 0700 on Debian.
    let dir = std::env::temp_dir().join(format!("gridsel-tune-rewrite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    let _remove = RemoveDir(dir.clone());
    let path = dir.join("cache.json");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    // Another user (uid 4242) rewrites root's store, world-writable.
    let lock = store_lock(&path);
    let _ = std::fs::remove_file(&lock);
    let status = std::process::Command::new("setpriv")
        .args(["--reuid=4242", "--regid=4242", "--clear-groups", "--"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "--nocapture", "rewrite_as_another_user"])
        .env("GRIDSEL_TEST_REWRITE", &path)
        .status();
    let Ok(status) = status else {
        eprintln!("skipped: no setpriv");
        return;
    };
    assert!(status.success());
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.uid(), 4242, "rewritten by the other user");
    assert_eq!(meta.permissions().mode() & 0o777, 0o664);
    // Root refuses it now (another user's), its record still in it.
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("{\"kernel\":\"k\"")
    );
    assert!(files::load_store(&path).is_err());
}

/// Removes its folder when dropped, the test passed or not.
struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// [`a_rewrite_never_keeps_another_owners_world_writable_mode`]'s other
/// user: merges its journal into the store `GRIDSEL_TEST_REWRITE` names.
#[test]
fn rewrite_as_another_user() {
    let Some(path) = std::env::var_os("GRIDSEL_TEST_REWRITE") else {
        return;
    };
    files::edit_store(Path::new(&path), PATIENCE, files::OnInvalid::Refuse, |_| {}).unwrap();
}

#[test]
fn a_device_node_store_is_refused_not_replaced() {
    let path = temp("device");
    // A copy of /dev/null (needs root; skipped otherwise).
    let made = std::process::Command::new("mknod")
        .arg(&path)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("SKIPPED: mknod needs root");
        return;
    }
    let err = files::load_store(&path).unwrap_err();
    assert_eq!(err.to_string(), "a character device, not a regular file");
    let err = store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap_err();
    assert_eq!(err.to_string(), "a character device, not a regular file");
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_char_device(), "{meta:?}");
}

#[test]
fn a_store_over_the_cap_is_an_error_not_a_partial_parse() {
    let path = temp("huge");
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    let mut text = std::fs::read_to_string(&path).unwrap();
    // Valid JSON: padding after the object.
    text.push_str(&" ".repeat(gridsel::tune::store::MAX_BYTES as usize));
    std::fs::write(&path, &text).unwrap();
    let err = files::load_store(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        "larger than 4 MiB, the most gridsel reads of it"
    );
    // Not replaced either: its entries might be wanted.
    assert!(store_updates(&path, &[entry("k", 2, 32)], PATIENCE).is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn stale_temporary_files_of_dead_processes_go_when_the_store_is_written() {
    let path = temp("stale");
    let dir = path.parent().unwrap();
    // Above any pid_max (at most 2^22): a process that no longer exists.
    let stale = dir.join("cache.json.tmp.2000000000.0");
    let live = dir.join(format!("cache.json.tmp.{}.0", std::process::id()));
    for f in [&stale, &live] {
        std::fs::write(f, "partial").unwrap();
    }
    store_updates(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    assert!(!stale.exists());
    assert!(live.exists(), "a live process's file is kept");
}

#[test]
fn learned_moves_come_from_settled_searches_and_survive_empty_records() {
    let mut table = Table::parse(
        "{\"version\": 3, \"records\": [{\"kernel\":\"k\",\"device\":\"NVIDIA H100 80GB HBM3\",\"sm_arch\":90,\"class\":1,\"build\":\"\",\"llvm\":0,\"trips\":[1,1],\"used\":0,\"runs\":1,\"launches_per_run\":1,\"explored\":[0,0],\"settled\":[true,true],\"pinned\":null,\"grids\":{}}]}",
    )
    .unwrap();
    assert!(gridsel::tune::learned_moves(&table, &h100()).is_empty());
    // Not settled either (issue 25, 7: its search was asked for a sample
    // of a leader it does not have).
    let unsettled = Table::parse(
        "{\"version\": 3, \"records\": [{\"kernel\":\"k\",\"device\":\"NVIDIA H100 80GB HBM3\",\"sm_arch\":90,\"class\":1,\"build\":\"\",\"llvm\":0,\"trips\":[1,1],\"used\":0,\"runs\":1,\"launches_per_run\":1,\"explored\":[0,0],\"settled\":[false,false],\"pinned\":null,\"grids\":{}}]}",
    )
    .unwrap();
    assert!(gridsel::tune::learned_moves(&unsettled, &h100()).is_empty());
    let fast = Candidate::Move {
        threads: 64,
        blocks_log2: 1,
    };
    let mut u = entry("k2", 1000, 32);
    u.key.device = h100().name;
    // One fast launch does not make a leader; two do.
    u.samples = vec![
        (Candidate::Auto, Kind::Cold, 2000),
        (fast, Kind::Cold, 1000),
    ];
    u.settled = [true, false];
    table.apply(&u);
    assert!(gridsel::tune::learned_moves(&table, &h100()).is_empty());
    u.samples = vec![(fast, Kind::Cold, 1000)];
    table.apply(&u);
    assert_eq!(gridsel::tune::learned_moves(&table, &h100()), [fast]);

    // The same search for a `target teams` region without a distribute
    // loop (trip count 0, class 0) moved from LLVM's default grid, not
    // from auto's grid for a loop: it teaches the loops nothing.
    let mut regions = Table::default();
    let mut u = entry("k3", 0, 32);
    u.key.device = h100().name;
    assert_eq!(u.key.class, 0);
    u.samples = vec![
        (Candidate::Auto, Kind::Cold, 2000),
        (fast, Kind::Cold, 1000),
    ];
    u.settled = [true, false];
    regions.apply(&u);
    u.samples = vec![(fast, Kind::Cold, 1000)];
    regions.apply(&u);
    assert!(gridsel::tune::learned_moves(&regions, &h100()).is_empty());
}

/// A program launching two kernels once per run, the first's candidates all
/// 1.3x `auto`'s time. Where the launch model predicted one of them no
/// slower and it ran, its excess (30 % of a kernel) overdraws the run's
/// allowance (5 % of the run here: at the default 2.5 % none of them is
/// predicted to fit, and nothing overdraws), and the second kernel's search, whose first
/// exploring launch of the run it would be, is held back in that run: every
/// exploring launch is counted, each search's first too (the old rule ran
/// that one whatever the others had spent). Exploring unbounded (a tuning
/// session), the second search explores from run 2.
#[test]
fn an_overdrawn_allowance_holds_back_every_search_a_searchs_first_launch_too() {
    let (_, _, second, prior) = replayed_bowl();
    let auto = prior.list[0].1;
    let first = |g: Geometry| if g == auto { 100_000.0 } else { 130_000.0 };
    let kernels = [
        ReplayedKernel {
            prior: &prior,
            time: &first,
            best_time: 100_000.0,
        },
        ReplayedKernel {
            prior: &prior,
            time: &second,
            best_time: 100_000.0,
        },
    ];
    let overhead = 0.05;
    let together = replay_program(&kernels, setup(1, 1.0, overhead), |_| 1.0);
    let overdrawn: Vec<usize> = (0..10)
        .filter(|&run| together[0].spent[run] > 100_000.0)
        .collect();
    assert!(!overdrawn.is_empty(), "{:?}", together[0]);
    for run in overdrawn {
        assert_eq!(together[1].spent[run], second(auto), "run {}", run + 1);
    }
    let alone = replay(&prior, setup(1, 1.0, f64::INFINITY), &second, |_| 1.0, 1.0);
    assert!(
        alone.spent[1..].iter().any(|&t| t != second(auto)),
        "{alone:?}"
    );
}

#[test]
fn the_allowance_bounds_what_a_run_pays_for_exploring() {
    let (_, _, time, prior) = replayed_bowl();
    let auto = time(prior.list[0].1);
    let best12 = time(best_of(12, &prior, &time));
    let overhead = gridsel::tune::DEFAULT_OVERHEAD;
    let bounded = replay(&prior, setup(20, 1.0, overhead), &time, |_| 1.0, best12);
    // Run 1 pays its allowance over auto's grid, plus at most the one
    // exploring launch that overdrew it.
    let worst = prior
        .list
        .iter()
        .map(|&(_, g)| time(g) - auto)
        .fold(0.0, f64::max);
    assert!(
        bounded.spent[0] <= auto * (1.0 + overhead) + worst / 20.0,
        "{bounded:?}"
    );
    // Exploring spreads over the next runs, and still gets there; a larger
    // allowance no later.
    assert_eq!(bounded.kept[9], best12, "{bounded:?}");
    let larger = replay(
        &prior,
        setup(20, 1.0, 2.0 * overhead),
        &time,
        |_| 1.0,
        best12,
    );
    assert!(
        larger
            .runs_to_95pct
            .is_some_and(|r| bounded.runs_to_95pct.is_some_and(|b| r <= b)),
        "{larger:?} {bounded:?}"
    );
    // Unbounded, the same search explores all it wants in run 1.
    let free = replay(
        &prior,
        setup(20, 1.0, f64::INFINITY),
        &time,
        |_| 1.0,
        best12,
    );
    assert!(
        free.runs_to_95pct
            .is_some_and(|r| r <= bounded.runs_to_95pct.unwrap())
    );
    // With none, no candidate predicted slower than the leader is
    // launched, a search's first included: every run is auto's.
    let none = replay(&prior, setup(20, 1.0, 0.0), &time, |_| 1.0, best12);
    assert!(
        none.spent.iter().all(|&t| (t - auto).abs() < 1e-6),
        "{none:?}"
    );
}

/// Online `tune` at its default allowance and bound on a kernel launched
/// once per run: a run's one launch is all its kernel time, so no run's
/// 2.5 % covers a trial, predicted at 57 % of the launch and more, and no
/// run spends more than its own share: every run launches `auto`'s grid,
/// and nothing is banked in the store.
#[test]
fn a_kernel_launched_once_per_run_keeps_its_leader_within_each_runs_allowance() {
    let path = temp("once_per_run_per_run");
    let k = spmd();
    let trip = 1 << 22;
    let time = bowl(Geometry::new(64, 1 << 14));
    let auto = resolve(Candidate::Auto, &h100(), &k, &LaunchDesc::open(trip)).unwrap();
    let run = |bound: Bound| {
        let store = Box::new(files::StoreFile::new(path.clone(), false));
        let overhead = gridsel::tune::DEFAULT_OVERHEAD;
        let tune = TunePolicy::new(Some(Box::new(StoreWriter::new(store))), overhead);
        process_on(tune.with_bound(bound), &k, trip, 1, &time, || {})[0].grid
    };
    for _ in 0..40 {
        assert_eq!(run(Bound::default()), auto);
    }
    let r = record(&path, &k, trip);
    assert_eq!((r.tally.runs, r.credit), (40, 0));
    assert_eq!(r.search.ranked(Kind::Cold).len(), 1);
    // What runs under `average` banked is neither spent nor lost.
    for _ in 0..3 {
        assert_eq!(run(Bound::Average), auto);
    }
    let banked = record(&path, &k, trip).credit;
    assert!(banked > 0);
    for _ in 0..5 {
        assert_eq!(run(Bound::Run), auto);
    }
    assert_eq!(record(&path, &k, trip).credit, banked);
    let _ = std::fs::remove_file(&path);
}

/// Online `tune` at its default allowance under `GRIDSEL_TUNE_BOUND=average`
/// on a kernel launched once per run: no run's 2.5 % covers a trial,
/// predicted at 57 % of the launch and more (issue 37: one grid measured
/// after 31 runs, the search still exploring). Each run banks what it
/// leaves of its allowance in the store, and a later run's bank pays for a
/// trial: over the runs the search measures the candidates of its plan,
/// what exploring added stays within 2.5 % of the runs' kernel time, and no
/// run adds more than what the runs before it banked, at most one run's
/// kernel time.
#[test]
fn a_kernel_launched_once_per_run_explores_online_from_what_its_runs_bank() {
    let path = temp("once_per_run_bank");
    let k = spmd();
    let trip = 1 << 22;
    let time = bowl(Geometry::new(64, 1 << 14));
    let overhead = gridsel::tune::DEFAULT_OVERHEAD;
    let auto = resolve(Candidate::Auto, &h100(), &k, &LaunchDesc::open(trip)).unwrap();
    let runs: Vec<Geometry> = (0..100)
        .map(|_| {
            let store = Box::new(files::StoreFile::new(path.clone(), false));
            let tune = TunePolicy::new(Some(Box::new(StoreWriter::new(store))), overhead)
                .with_bound(Bound::Average);
            process_on(tune, &k, trip, 1, &time, || {})[0].grid
        })
        .collect();
    let r = record(&path, &k, trip);
    let measured = r.search.ranked(Kind::Cold).len();
    assert!(measured >= 4, "{measured} grids measured: {runs:?}");
    // Every run's one launch is cold: three times its grid's time.
    let run_time = |g: &Geometry| 3.0 * time(*g);
    let added: Vec<f64> = runs.iter().map(|g| run_time(g) - run_time(&auto)).collect();
    let total: f64 = runs.iter().map(run_time).sum();
    assert!(added.iter().sum::<f64>() <= overhead * total, "{added:?}");
    let most = (gridsel::tune::MAX_BANKED_RUNS + overhead) * run_time(&auto);
    assert!(added.iter().all(|&a| a <= most), "{added:?}");
    // The first run has nothing banked: auto's grid, the only one measured.
    assert_eq!(runs[0], auto);
}

/// A record's banked allowance is kept in the store, as a field that a
/// store without it reads as none and that is written only where there is
/// some: a store of a gridsel before it reads and writes back unchanged.
#[test]
fn a_searchs_bank_survives_the_store_and_older_records_read_without_one() {
    let path = temp("bank_field");
    let mut u = entry("k_l7", 1000, 128);
    u.credit = 4_000;
    write_as_a_process(&path, &[u]).unwrap();
    compact(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"credit\":4000"), "{text}");
    let mut u = entry("k_l7", 1000, 128);
    u.credit = -1_500;
    write_as_a_process(&path, &[u]).unwrap();
    let table = files::load_store(&path).unwrap().table;
    assert_eq!(table.get(&key("k_l7", 1000)).unwrap().credit, 2_500);
    let older = text.replace(",\"credit\":4000", "");
    assert_ne!(older, text);
    let table = Table::parse(&older).unwrap();
    let r = table.records().next().unwrap();
    assert_eq!(r.credit, 0);
    let line = older.lines().find(|l| l.contains("k_l7")).unwrap();
    assert!(table.render().contains(line), "{}", table.render());
}

/// The kernels of the store at `path`, read as a process reads it, which
/// must drop nothing.
fn kernels_read_cleanly(path: &Path) -> Vec<String> {
    let read = files::load_store(path).unwrap();
    assert!(read.dropped.is_empty(), "{:?}", read.dropped);
    read.table.records().map(|r| r.key.kernel.clone()).collect()
}

/// A tuning session (exploring unbounded, as `gridsel tune` runs the
/// program) on a long streaming loop whose fastest grid is one whole wave
/// of 32-thread blocks, as ts_ocean's were on the H100: the session's
/// searches reach it within three runs of 50 launches, and every later
/// launch gets it.
#[test]
fn a_session_finds_a_whole_wave_of_fewer_threads_on_a_long_loop() {
    let k = spmd();
    let trip = 1 << 20;
    let wave = Geometry::new(32, 4224);
    let time = bowl(wave);
    let path = temp("session_wave");
    let mut last = Vec::new();
    for _ in 0..3 {
        last = process(&path, &k, trip, 50, &time);
    }
    assert_eq!(last[45..], [wave; 5], "{last:?}");
    let _ = std::fs::remove_file(&path);
}

/// Samples of two clocks are never ranked together (`GRIDSEL_TUNE_CLOCK`):
/// a search a tuning session timed on the GPU is followed, not re-ranked,
/// by an online process timing on the host, whose launch times would all
/// look slower than the GPU's; and a session timing on the GPU measures
/// afresh a search online `tune` timed on the host.
#[test]
fn a_search_timed_by_another_clock_is_followed_online_and_measured_afresh_by_a_session() {
    let k = spmd();
    let trip = 1 << 22;
    let best = Geometry::new(64, 1 << 14);
    let gpu_time = bowl(best);
    // The host's time: the kernel's plus a grid-blind 80 us around it.
    let host_time = |g: Geometry| gpu_time(g) + 80_000.0;
    let session = |path: &Path| {
        let store = Box::new(files::StoreFile::new(path.to_path_buf(), false));
        let tune = unbounded(store)
            .with_session_runs(Some(1))
            .with_clock(Clock::Gpu);
        process_on(tune, &k, trip, 200, &gpu_time, || {})
    };
    let online = |path: &Path| {
        let store = Box::new(files::StoreFile::new(path.to_path_buf(), false));
        let tune = TunePolicy::new(Some(Box::new(StoreWriter::new(store))), 0.025);
        process_on(tune, &k, trip, 50, &host_time, || {})
    };

    let path = temp("clock_gpu_then_host");
    session(&path);
    let timed = record(&path, &k, trip);
    assert_eq!(timed.clock, Clock::Gpu);
    assert!(timed.search.settled(Kind::Warm));
    let learned = gridsel::tune::learned(&timed).unwrap();
    let learned_grid = resolve(learned, &h100(), &k, &LaunchDesc::open(trip)).unwrap();
    let launched = online(&path);
    assert!(
        launched
            .iter()
            .all(|p| p.grid == learned_grid && !p.observe.timed()),
        "{launched:?}"
    );
    let after = record(&path, &k, trip);
    assert_eq!((after.clock, &after.search), (Clock::Gpu, &timed.search));
    assert_eq!(after.tally.runs, timed.tally.runs + 1);

    let path = temp("clock_host_then_gpu");
    online(&path);
    let host = record(&path, &k, trip);
    assert_eq!(host.clock, Clock::Host);
    assert!(host.measured());
    session(&path);
    let gpu = record(&path, &k, trip);
    assert_eq!(gpu.clock, Clock::Gpu);
    // Every sample is the session's: none of the host's, each 80 us more.
    let all = |r: &gridsel::tune::store::Record| -> Vec<u64> {
        let samples = r.search.samples.iter();
        samples
            .flat_map(|s| s.warm.iter().chain(&s.cold))
            .copied()
            .collect()
    };
    let (host_ns, gpu_ns) = (all(&host), all(&gpu));
    assert!(gpu_ns.iter().all(|ns| !host_ns.contains(ns)), "{gpu_ns:?}");
    assert!(gpu_ns.iter().min() < host_ns.iter().min());
}
