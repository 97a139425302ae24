//! `tune`: online empirical tuning for programs that launch the same kernel
//! with the same trip count many times.
//!
//! Static policies guess; a program that runs one loop hundreds of times can
//! afford to measure. Under `GRIDSEL_POLICY=tune` the first launches of each
//! (kernel, device, trip count) try a short list of grids, the runtime times
//! each forwarded launch (launch and wait), and once the search has
//! converged every later launch gets the winner, which costs one hash lookup
//! on the launch path. With `GRIDSEL_CACHE=<file>` winners are saved and the
//! next run starts tuned ([`cache`]).
//!
//! The search (a [`Tuner`]) is IterML's (Cui and Feng) iterate-and-prune
//! loop with the model replaced by a ranking:
//!
//! 1. **Candidates** ([`candidates`]): `auto`'s grid first (the best static
//!    policy), then its neighbours (threads in {cap, cap/2, ...} down to a
//!    warp, blocks x{1/4, 1/2, 1, 2, 4}) nearest first, then the other
//!    policies' grids (`occupancy`, `lloyd`, `llvm`), then the rest of the
//!    [`sweep::space`] by distance from `auto` (log2 of threads and blocks).
//!    The list is cut to what the budget can measure ([`Params`]).
//! 2. **Rounds** (successive halving): one warm-up launch (discarded: the
//!    first launch may load the image), every candidate once, then the best
//!    half (IterML's cut ratio 0.5) measured [`Params::repeats`] more times,
//!    and so on until one grid is left. Candidates are ranked by the median
//!    of all their samples; launches of a round are interleaved, so drift
//!    hits every candidate alike.
//! 3. **Budget**: at most [`BUDGET`] launches per (kernel, device, trip
//!    count) are spent exploring (the default plan: 20 candidates, 61
//!    launches). The info log reports what was spent and the speedup over
//!    the first candidate.
//!
//! [`Tuner`] is a pure state machine (no clock, no I/O): tests and
//! `gridsel tune-sim` drive it with stand-in timers.

pub mod cache;

use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc, div_ceil, saturate};
use crate::kernel::{ExecMode, KernelDesc};
use crate::policy::per_launch::PerLaunch;
use crate::policy::{self, Decision, GridPolicy, Launch, Policy, Proposal, Rule, auto, sweep};
use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, OnceLock, TryLockError};
use std::time::{Duration, Instant};

/// Most launches spent exploring per (kernel, device, trip count).
pub const BUDGET: u32 = 64;

/// The knobs of the search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Most launches handed out for exploration, warm-up included.
    pub budget: u32,
    /// Most candidates measured (fewer when the budget cannot cover them).
    pub max_candidates: usize,
    /// Launches of the first candidate whose time is thrown away.
    pub warmup: u32,
    /// Samples of every candidate in the first round (IterML's pick).
    pub first_repeats: u32,
    /// Samples added to each survivor in every later round.
    pub repeats: u32,
    /// Fraction of the survivors kept after each round (1 - IterML's cut ratio).
    pub keep: f64,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            budget: BUDGET,
            max_candidates: 20,
            warmup: 1,
            first_repeats: 1,
            repeats: 2,
            keep: 0.5,
        }
    }
}

impl Params {
    /// Survivors kept out of `m` (at least one, fewer than `m` when `m > 1`).
    fn kept(&self, m: usize) -> usize {
        if m <= 1 {
            return m;
        }
        ((m as f64 * self.keep).ceil() as usize).clamp(1, m - 1)
    }

    /// Launches a search over `n` candidates takes from start to winner.
    pub fn planned_launches(&self, n: usize) -> u64 {
        let mut total = u64::from(self.warmup) + n as u64 * u64::from(self.first_repeats);
        let mut m = self.kept(n);
        while m > 1 {
            total += m as u64 * u64::from(self.repeats);
            m = self.kept(m);
        }
        total
    }

    /// The most candidates (up to `available`) the budget covers.
    pub fn candidates_within_budget(&self, available: usize) -> usize {
        let mut n = available.min(self.max_candidates);
        while n > 1 && self.planned_launches(n) > u64::from(self.budget) {
            n -= 1;
        }
        n
    }
}

/// What a converged search found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    pub winner: Geometry,
    /// Median time of the winner.
    pub winner_ns: u64,
    /// The first candidate (`auto`'s grid in the runtime) and its median time.
    pub first: Geometry,
    pub first_ns: u64,
    /// Launches handed out for exploration, warm-up included.
    pub launches: u32,
    /// Candidates measured.
    pub candidates: usize,
}

impl Report {
    /// How much faster the winner is than the first candidate.
    pub fn speedup(&self) -> f64 {
        self.first_ns as f64 / self.winner_ns.max(1) as f64
    }
}

/// The search state for one (kernel, device, trip count).
#[derive(Clone, Debug)]
pub struct Tuner {
    params: Params,
    candidates: Vec<Geometry>,
    samples: Vec<Vec<u64>>,
    /// Launches handed out and not yet observed, per candidate.
    pending: Vec<u32>,
    warmups_pending: u32,
    survivors: Vec<usize>,
    queue: VecDeque<(usize, bool)>,
    spent: u32,
    winner: Option<usize>,
}

impl Tuner {
    /// A search over `candidates` (best guess first, duplicates dropped, cut
    /// to the budget); `None` when there is nothing to try.
    pub fn new(candidates: Vec<Geometry>, params: Params) -> Option<Self> {
        let mut seen = HashSet::new();
        let mut candidates: Vec<Geometry> =
            candidates.into_iter().filter(|g| seen.insert(*g)).collect();
        if candidates.is_empty() {
            return None;
        }
        candidates.truncate(params.candidates_within_budget(candidates.len()));
        let n = candidates.len();
        let mut tuner = Self {
            params,
            samples: vec![Vec::new(); n],
            pending: vec![0; n],
            warmups_pending: 0,
            survivors: (0..n).collect(),
            queue: VecDeque::new(),
            spent: 0,
            winner: None,
            candidates,
        };
        if params.planned_launches(n) > u64::from(params.budget) {
            // Not even one measurement fits: keep the best guess.
            tuner.winner = Some(0);
            return Some(tuner);
        }
        tuner.queue.extend((0..params.warmup).map(|_| (0, true)));
        for _ in 0..params.first_repeats.max(1) {
            tuner.queue.extend((0..n).map(|i| (i, false)));
        }
        Some(tuner)
    }

    /// The candidates, in the order they are tried.
    pub fn candidates(&self) -> &[Geometry] {
        &self.candidates
    }

    /// The grid for the next launch: the next trial while exploring, the
    /// best so far while a round waits for its last times, the winner after.
    // Not an Iterator: it never ends, and what it returns depends on observe().
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Geometry {
        if let Some(w) = self.winner {
            return self.candidates[w];
        }
        match self.queue.pop_front() {
            Some((i, warmup)) => {
                self.spent += 1;
                if warmup {
                    self.warmups_pending += 1;
                } else {
                    self.pending[i] += 1;
                }
                self.candidates[i]
            }
            None => self.candidates[self.incumbent_index()],
        }
    }

    /// Records the time of a launch of `grid`. Times nobody asked for
    /// (grids outside the list, launches made while a round waits) are
    /// ignored, so the caller may time every launch it likes.
    pub fn observe(&mut self, grid: Geometry, ns: u64) {
        if self.winner.is_some() {
            return;
        }
        let Some(i) = self.candidates.iter().position(|g| *g == grid) else {
            return;
        };
        if i == 0 && self.warmups_pending > 0 {
            self.warmups_pending -= 1;
        } else if self.pending[i] > 0 {
            self.pending[i] -= 1;
            self.samples[i].push(ns);
        } else {
            return;
        }
        if self.queue.is_empty()
            && self.warmups_pending == 0
            && self.pending.iter().all(|&p| p == 0)
        {
            self.finish_round();
        }
    }

    fn finish_round(&mut self) {
        let mut ranked = self.survivors.clone();
        ranked.sort_by_key(|&i| (self.median(i), i));
        ranked.truncate(self.params.kept(ranked.len()));
        self.survivors = ranked;
        if self.survivors.len() <= 1 {
            self.winner = self.survivors.first().copied().or(Some(0));
            return;
        }
        for _ in 0..self.params.repeats.max(1) {
            self.queue
                .extend(self.survivors.iter().map(|&i| (i, false)));
        }
    }

    /// Median of a candidate's samples (`u64::MAX` without any).
    fn median(&self, i: usize) -> u64 {
        let mut s = self.samples[i].clone();
        if s.is_empty() {
            return u64::MAX;
        }
        s.sort_unstable();
        let m = s.len() / 2;
        if s.len() % 2 == 1 {
            s[m]
        } else {
            s[m - 1] / 2 + s[m] / 2 + (s[m - 1] % 2 + s[m] % 2) / 2
        }
    }

    fn incumbent_index(&self) -> usize {
        (0..self.candidates.len())
            .filter(|&i| !self.samples[i].is_empty())
            .min_by_key(|&i| (self.median(i), i))
            .unwrap_or(0)
    }

    /// The grid this search would keep if it stopped now.
    pub fn incumbent(&self) -> Geometry {
        self.candidates[self.winner.unwrap_or_else(|| self.incumbent_index())]
    }

    /// The winner, once the search is over.
    pub fn converged(&self) -> Option<Geometry> {
        self.winner.map(|w| self.candidates[w])
    }

    /// Launches handed out for exploration so far (never above the budget).
    pub fn spent(&self) -> u32 {
        self.spent
    }

    /// The outcome, once converged.
    pub fn report(&self) -> Option<Report> {
        let w = self.winner?;
        let known = |i: usize| {
            let m = self.median(i);
            if m == u64::MAX { 0 } else { m }
        };
        Some(Report {
            winner: self.candidates[w],
            winner_ns: known(w),
            first: self.candidates[0],
            first_ns: known(0),
            launches: self.spent,
            candidates: self.candidates.len(),
        })
    }
}

/// Log2 distance between two grids, the ranking's model of "similar".
fn distance(a: Geometry, b: Geometry) -> f64 {
    let l = |x: u32| f64::from(x.max(1)).log2();
    (l(a.threads) - l(b.threads)).abs() + BLOCK_WEIGHT * (l(a.blocks) - l(b.blocks)).abs()
}

/// Times change more slowly with blocks than with threads (H100 sweep).
const BLOCK_WEIGHT: f64 = 0.25;

/// The candidate grids for one launch, best guess first, each allowed by
/// `available` (everything in the runtime; the measured grids in
/// `gridsel tune-sim`). See the module documentation for the order.
pub fn candidates(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
    available: impl Fn(Geometry) -> bool,
) -> Vec<Geometry> {
    let decide =
        |p: &Policy| policy::decide(p, device, kernel, launch).map(|d: Decision| d.geometry);
    let Some(auto) = decide(&Policy::Auto) else {
        return Vec::new();
    };
    let trip = launch.trip_count.max(1);
    let spmd = kernel.exec_mode.unwrap_or(ExecMode::Spmd) == ExecMode::Spmd;
    let chunk = kernel
        .distribute_chunk()
        .filter(|_| spmd)
        .unwrap_or(1)
        .max(1);
    // Teams beyond the number of chunks idle (sweep.rs).
    let useful_blocks = saturate(div_ceil(trip, u64::from(chunk)));
    let sensible = |g: Geometry| {
        let busy = u64::from(g.blocks.min(useful_blocks)) * u64::from(g.threads);
        div_ceil(trip, busy.max(1)) <= sweep::MAX_ITERATIONS_PER_THREAD
    };
    let by_distance = |mut v: Vec<Geometry>| {
        v.sort_by(|a, b| distance(*a, auto).total_cmp(&distance(*b, auto)));
        v
    };

    let limits = policy::Limits::of(device, kernel, launch);
    let cap = limits.max_threads;
    let mut threads = vec![auto.threads];
    let mut t = cap;
    while t >= device.warp_size.min(cap) && t > 0 {
        threads.push(t);
        t /= 2;
    }
    let mut neighbours = Vec::new();
    for &t in &threads {
        for (num, den) in [(1, 1), (1, 2), (2, 1), (1, 4), (4, 1), (16, 1), (64, 1)] {
            let blocks = u64::from(auto.blocks) * num / den;
            let blocks = saturate(blocks.max(1))
                .min(useful_blocks.max(1))
                .min(sweep::MAX_SWEEP_BLOCKS);
            let (g, _) = limits.clamp(Geometry::new(t, blocks));
            neighbours.push(g);
        }
    }
    let policies: Vec<Geometry> = [Policy::Occupancy, Policy::Lloyd, Policy::Llvm]
        .iter()
        .filter_map(decide)
        .collect();
    let rest: Vec<Geometry> = sweep::space(device, kernel, launch)
        .into_iter()
        .map(|c| c.decision.geometry)
        .collect();

    let mut seen = HashSet::new();
    std::iter::once(auto)
        .chain(by_distance(neighbours))
        .chain(policies)
        .chain(by_distance(rest))
        .filter(|&g| limits.contains(g) && sensible(g) && available(g) && seen.insert(g))
        .collect()
}

// ---- the runtime's side ------------------------------------------------------

/// Where one (device, trip count) of a kernel stands.
#[derive(Clone, Debug)]
pub enum State {
    Tuning(Box<Tuner>),
    /// Tuned in this process, or read from the cache.
    Done(Geometry),
}

/// `tune` as the launch pipeline runs it: a search per (kernel, device,
/// trip count), started from the cache when it knows the answer; launches
/// that cannot be timed (`nowait`), and trip counts past
/// [`crate::policy::per_launch::MAX_TRIP_COUNTS`] of a kernel, get `auto`'s grid.
pub struct TunePolicy {
    session: Session,
    states: PerLaunch<State>,
}

impl TunePolicy {
    /// A tuner whose winners persist in `store`, if any.
    pub fn new(store: Option<Box<dyn WinnerStore>>) -> Self {
        Self {
            session: Session::new(store),
            states: PerLaunch::default(),
        }
    }
}

impl GridPolicy for TunePolicy {
    fn decide(&self, l: &Launch<'_>) -> Option<Proposal> {
        let auto = || {
            let (grid, rule) = auto::auto(l.device, l.kernel, &l.desc);
            Proposal::new(grid, rule)
        };
        if !l.timed {
            return Some(auto());
        }
        let proposal = self.states.with(
            l,
            || self.session.start(l),
            |state| match state {
                State::Done(g) => Proposal::new(*g, Rule::TuneWinner),
                State::Tuning(t) => Proposal {
                    observe: true,
                    ..Proposal::new(t.next(), Rule::TuneTrial)
                },
            },
        );
        Some(proposal.unwrap_or_else(auto))
    }

    fn observe(&self, l: &Launch<'_>, grid: Geometry, ns: u64) {
        let report = self.states.existing(l, |state| {
            let State::Tuning(t) = state else {
                return None;
            };
            t.observe(grid, ns);
            let report = t.report()?;
            *state = State::Done(report.winner);
            Some(report)
        });
        if let Some(report) = report.flatten() {
            self.session.converged(l, &report);
        }
    }

    fn flush(&self) {
        self.session.flush();
    }
}

/// How long the flush at exit waits for another process's lock on the
/// cache: long enough for dozens of processes ending together to take their
/// turns (each holds the lock for a read, a write and an fsync), short
/// enough that a stopped process cannot hang the program's exit.
const EXIT_PATIENCE: Duration = Duration::from_secs(5);

/// The cache file's entries, read once, and whether winners go to it.
struct Loaded {
    table: cache::Table,
    /// False without a cache, or when the file could not be read or was
    /// written by a newer gridsel: then it is left as it is.
    save: bool,
}

/// Where `tune` keeps its winners across runs; the preload library's
/// `GRIDSEL_CACHE` file (`files::CacheFile`) implements it.
pub trait WinnerStore: Send + Sync {
    /// What to call it in the log (the file's path).
    fn location(&self) -> String;
    /// Every winner stored; an empty table when there is nothing yet.
    fn load(&self) -> Result<cache::Table, cache::CacheError>;
    /// Merges `entries` in, waiting at most `patience` for other writers
    /// (then [`cache::CacheError::Busy`]).
    fn store(&self, entries: &[cache::Entry], patience: Duration) -> Result<(), cache::CacheError>;
}

/// The store of `tune`'s winners: read at the first search, the winners not
/// yet saved.
///
/// A converged search saves its winner on the launch thread, but only if the
/// cache's lock is free at that instant: a launch never waits for another
/// process (nor for another thread of this one) to finish writing. Winners
/// that could not be written stay queued for the next convergence and for
/// [`Session::flush`] at exit, which waits up to [`EXIT_PATIENCE`]. The
/// queue holds one entry per converged search, bounded like the searches.
struct Session {
    store: Option<Box<dyn WinnerStore>>,
    cache: OnceLock<Loaded>,
    /// Winners not yet in the file.
    unsaved: Mutex<Vec<cache::Entry>>,
    /// Held while a thread of this process writes the cache.
    writing: Mutex<()>,
    /// Causes of failed writes already logged: one line per cause.
    reported: Mutex<HashSet<String>>,
}

impl Session {
    fn new(store: Option<Box<dyn WinnerStore>>) -> Self {
        Self {
            store,
            cache: OnceLock::new(),
            unsaved: Mutex::default(),
            writing: Mutex::default(),
            reported: Mutex::default(),
        }
    }

    /// The cache file, read once; a file that cannot be used is one warning
    /// and an empty table.
    fn loaded(&self) -> &Loaded {
        self.cache.get_or_init(|| {
            let Some(store) = &self.store else {
                return Loaded {
                    table: cache::Table::default(),
                    save: false,
                };
            };
            let (table, save) = match store.load() {
                Ok(t) => {
                    log::info!("tune: cache {}: {} tuned grids", store.location(), t.len());
                    (t, true)
                }
                Err(e @ cache::CacheError::Corrupt(_)) => {
                    log::warn!(
                        "tune: cache {}: {e}; ignored (replaced at the next save)",
                        store.location()
                    );
                    (cache::Table::default(), true)
                }
                Err(e) => {
                    log::warn!(
                        "tune: cache {}: {e}; ignored (not read or written)",
                        store.location()
                    );
                    (cache::Table::default(), false)
                }
            };
            Loaded { table, save }
        })
    }

    /// Where a search of `l` starts: the cache's winner, or a new search.
    fn start(&self, l: &Launch<'_>) -> State {
        let trip = l.desc.trip_count;
        let (name, device) = (l.kernel_name, l.device);
        if let Some(hit) = self
            .loaded()
            .table
            .get(name, &device.name, device.sm_arch, trip)
        {
            log::info!(
                "tune: {name} trip {trip}: {} from the cache {} (measured {} ns, found in {} launches); not tuning",
                Geometry::new(hit.threads, hit.blocks),
                self.store
                    .as_ref()
                    .map_or_else(String::new, |s| s.location()),
                hit.ns,
                hit.launches
            );
            // The pipeline cuts the grid to today's limits: the cache may
            // predate them, or come from another build of the program.
            return State::Done(Geometry::new(hit.threads, hit.blocks));
        }
        let list = candidates(device, l.kernel, &l.desc, |_| true);
        match Tuner::new(list, Params::default()) {
            Some(t) => State::Tuning(Box::new(t)),
            None => State::Done(auto::auto(device, l.kernel, &l.desc).0),
        }
    }

    /// Logs a converged search and saves its winner.
    fn converged(&self, l: &Launch<'_>, report: &Report) {
        let (name, device, trip) = (l.kernel_name, l.device, l.desc.trip_count);
        let saved = self.save(cache::Entry {
            kernel: name.to_string(),
            device: device.name.clone(),
            sm_arch: device.sm_arch,
            trip_count: trip,
            threads: report.winner.threads,
            blocks: report.winner.blocks,
            ns: report.winner_ns,
            launches: report.launches,
        });
        log::info!(
            "tune: {name} trip {trip} on {}: converged to {} ({} ns) after {} launches of {} candidates (budget {BUDGET}); {:.2}x over the first candidate {} ({} ns){saved}",
            device.name,
            report.winner,
            report.winner_ns,
            report.launches,
            report.candidates,
            report.speedup(),
            report.first,
            report.first_ns,
        );
    }

    /// Queues a winner for the cache and writes the queue if that needs no
    /// waiting; returns the end of the convergence's log line.
    fn save(&self, entry: cache::Entry) -> String {
        let Some(store) = self.store.as_deref().filter(|_| self.loaded().save) else {
            return String::new();
        };
        crate::lock(&self.unsaved).push(entry);
        if self.write_unsaved(store) {
            format!("; saved to {}", store.location())
        } else {
            format!("; not saved to {} yet", store.location())
        }
    }

    /// Writes the winners still queued, waiting up to [`EXIT_PATIENCE`] for
    /// the cache's lock. Called at exit, never on a launch thread.
    fn flush(&self) {
        let Some(store) = self.store.as_deref() else {
            return;
        };
        if crate::lock(&self.unsaved).is_empty() {
            return;
        }
        // Waits for a write by another thread of this process, then for
        // other processes, both bounded.
        let _turn = crate::lock(&self.writing);
        self.write_queue(store, EXIT_PATIENCE);
    }

    /// [`Self::write_queue`] without waiting, unless another thread of this
    /// process is writing already (it, or a later call, takes the queue).
    fn write_unsaved(&self, store: &dyn WinnerStore) -> bool {
        let _turn = match self.writing.try_lock() {
            Ok(turn) => turn,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        self.write_queue(store, Duration::ZERO)
    }

    /// Writes the queue (with the writing turn held) until it is empty or a
    /// write fails; the entries of a failed write go back to the queue, and
    /// each cause of failure is logged once (a busy lock only when waited
    /// for). Returns whether the queue is empty.
    fn write_queue(&self, store: &dyn WinnerStore, patience: Duration) -> bool {
        loop {
            let batch = std::mem::take(&mut *crate::lock(&self.unsaved));
            if batch.is_empty() {
                return true;
            }
            let start = Instant::now();
            match store.store(&batch, patience) {
                Ok(()) => log::debug!(
                    "tune: cache {}: saved {} tuned grids in {} us",
                    store.location(),
                    batch.len(),
                    start.elapsed().as_micros()
                ),
                Err(e) => {
                    crate::lock(&self.unsaved).extend(batch);
                    let cause = e.to_string();
                    if (patience > Duration::ZERO || !matches!(e, cache::CacheError::Busy))
                        && crate::lock(&self.reported).insert(cause)
                    {
                        log::warn!("tune: cannot save to the cache {}: {e}", store.location());
                    }
                    return false;
                }
            }
        }
    }
}

// ---- gridsel tune-sim ----------------------------------------------------------

/// One replay of the search against measured times.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// Launches after which the grid the search would keep stays within 95 %
    /// of the best measured performance (best / time >= 0.95); `None` if
    /// it never gets there.
    pub launches_to_95pct: Option<u32>,
    pub report: Report,
    /// Time of the winner and of the best measured grid.
    pub winner_time: f64,
    pub best_time: f64,
}

/// Runs a [`Tuner`] over `candidates` with a stand-in timer (`time` of a
/// grid, in any unit), to convergence.
pub fn replay(
    candidates: Vec<Geometry>,
    params: Params,
    time: impl Fn(Geometry) -> f64,
    best_time: f64,
) -> Option<Replay> {
    let mut tuner = Tuner::new(candidates, params)?;
    let good = |g: Geometry| best_time / time(g) >= 0.95;
    let mut reached: Option<u32> = good(tuner.incumbent()).then_some(0);
    // Every launch hands out a trial; guard against a search that stalls.
    for _ in 0..=params.budget {
        if tuner.converged().is_some() {
            break;
        }
        let g = tuner.next();
        let t = time(g);
        tuner.observe(g, (t * 1e6).round().max(1.0) as u64);
        if good(tuner.incumbent()) {
            reached.get_or_insert(tuner.spent());
        } else {
            reached = None;
        }
    }
    let report = tuner.report()?;
    Some(Replay {
        launches_to_95pct: reached,
        winner_time: time(report.winner),
        best_time,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_plan_fits_the_budget() {
        let p = Params::default();
        assert_eq!(p.candidates_within_budget(100), 20);
        assert_eq!(p.planned_launches(20), 61);
        assert!(p.planned_launches(21) > u64::from(BUDGET));
        assert_eq!(p.planned_launches(1), 2);
        assert_eq!(p.planned_launches(2), 3);
    }

    #[test]
    fn candidates_start_with_auto_and_respect_the_cap() {
        let d = DeviceDesc::preset("h100").unwrap();
        let k = KernelDesc {
            local_mem: Some(0),
            max_threads: Some(128),
            exec_mode: Some(ExecMode::Spmd),
            registers: Some(32),
            shared_mem: Some(0),
            ..KernelDesc::named("k")
        };
        let l = LaunchDesc::open(1 << 20);
        let c = candidates(&d, &k, &l, |_| true);
        let auto = policy::decide(&Policy::Auto, &d, &k, &l).unwrap().geometry;
        assert_eq!(c[0], auto);
        assert!(c.iter().all(|g| g.threads <= 128 && g.blocks >= 1));
        assert!(c.contains(&Geometry::new(64, auto.blocks)));
        let unique: HashSet<_> = c.iter().collect();
        assert_eq!(unique.len(), c.len());
        assert_eq!(c, candidates(&d, &k, &l, |_| true));
    }
}
