//! `tune` as the launch pipeline runs it ([`TunePolicy`]), and what
//! exploring may cost a process ([`Allowance`]).
//!
//! The allowance's counters are atomics because launch threads charge them
//! at once; they are the policy's own state, like its learners, and hold
//! nanoseconds the pipeline measured and handed in ([`GridPolicy::observe`]):
//! the clock is the preload library's, never read here.

use super::Clock;
use super::learned::learned;
use super::learner::{Learner, RECHECK_LABEL, TRIAL_LABEL};
use super::prior::{candidates, resolve};
use super::search::{Candidate, Exploring};
use super::session::{Saver, Session};
use super::store::{self, Key};
use crate::env::{ENV_TUNE_BOUND, ENV_TUNE_OVERHEAD};
use crate::geometry::{Geometry, Iterations};
use crate::kernel::KernelDesc;
use crate::libomptarget::LlvmRelease;
use crate::policy::per_launch::PerLaunch;
use crate::policy::{GridPolicy, Launch, Proposal, Rule, chunked};
use std::borrow::Cow;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// `tune` as the launch pipeline runs it: one [`Learner`] per (kernel,
/// device, trip-count class, build), resumed from the store. Launches that cannot
/// be timed (`nowait`, except in a tuning session's runs, which wait for
/// them: `GRIDSEL_TUNE_WAIT`), and classes past
/// [`crate::policy::per_launch::MAX_TRIP_COUNTS`] of a kernel, get `auto`'s
/// grid.
pub struct TunePolicy {
    session: Session,
    learners: PerLaunch<Learner>,
    /// This process's pick among the candidates of a round (see
    /// [`Search::step`]).
    salt: u64,
    allowance: Allowance,
    /// The tuning runs of the `gridsel tune` session this process is one
    /// of, which size its searches' warm plans ([`Exploring::in_session`]);
    /// `None` outside a session.
    session_runs: Option<u32>,
}

/// What exploring may cost one process: a budget charged before each
/// exploring launch, not after it. A candidate is launched only when what
/// it is predicted to cost over its search's leader (its own median where
/// it has one, else the launch model's ratio times `auto`'s median:
/// [`super::cost`]) fits: the summed excess of this process's exploring
/// launches so far plus the candidate's predicted excess at most `overhead`
/// times the process's kernel time; otherwise the search's leader runs
/// (and is sampled), and the search goes on in a later run or a tuning
/// session. Every exploring launch is counted, each search's first in a
/// process too: one launch of a slow candidate on a long kernel is not
/// allowed to spend the budget many times over (the docking program of
/// issue 27: one such launch cost up to 3 s of a 2-5 s run). Faster
/// candidates give allowance back; a prediction that proves too low is
/// charged what the launch really cost, and holds back what follows.
///
/// The process's kernel time is what it has timed so far, or, where more,
/// what the store expects of the searches it has begun: each one's launches
/// per run times its leader's median ([`Learner::expected_ns`]). So a
/// process's first exploring launch has a budget before it has timed
/// anything, from the runs before it; a search with no record gets its
/// budget from the launches this process times (its first launch is
/// `auto`'s grid, free to explore).
///
/// How far one run may go past its own share is the [`Bound`]
/// (`GRIDSEL_TUNE_BOUND`). By default ([`Bound::Run`]) no run does: a
/// kernel launched once per run is the whole of its search's runs, and one
/// trial of a candidate predicted as fast as `auto`'s grid is charged 57 %
/// of the launch (the model's [`super::cost::PREDICTION_MARGIN`]), which no
/// run's 2.5 % covers where the kernel is most of the run, so online such a
/// search keeps its leader (issue 37: one grid measured after 31 runs), and
/// the log says so once per run; a `gridsel tune` session explores it.
///
/// Under [`Bound::Average`], what a process leaves of its allowance is
/// banked in the store for the runs after it ([`Self::banked_share`],
/// [`store::Record::credit`]), and what its searches banked before adds to
/// its budget ([`Self::begin`]). The runs before pay for the trial, and a
/// run may overshoot by at most what they banked, as predicted: never more
/// than one run's kernel time ([`MAX_BANKED_RUNS`]); a trial slower than
/// predicted costs its run more, and leaves a debt. Over the runs, what
/// exploring costs stays within the share of their kernel time: every run
/// banks what it left, a trial that cost more than predicted leaves a debt
/// the next runs repay, and a candidate faster than its leader pays back.
pub struct Allowance {
    overhead: f64,
    bound: Bound,
    timed_ns: AtomicU64,
    expected_ns: AtomicU64,
    excess_ns: AtomicI64,
    banked_ns: AtomicI64,
}

/// Whether every run keeps within its own exploring allowance, or the runs
/// only on average ([`Allowance`]).
///
/// Per run by default: an HPC job's time limit is per run (a Slurm job
/// twice its usual time can be killed at its limit, losing the run), and
/// replayed on the H100 sweep, a program's costliest run under the bank
/// reached +136.8 % over `auto`'s grids (bench/results/h100/NOTES.md §42).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bound {
    /// No run spends more than its own allowance: nothing is banked, and
    /// what a store's records banked before is left as it is, unspent.
    #[default]
    Run,
    /// What a run leaves is banked for its searches' later runs, which may
    /// spend it: a kernel launched once per run is explored online, and one
    /// run may take up to about twice its kernel time.
    Average,
}

impl Bound {
    /// The setting's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Run => "run",
            Self::Average => "average",
        }
    }

    /// The bound [`Bound::name`] calls `word`.
    pub fn named(word: &str) -> Option<Self> {
        [Self::Run, Self::Average]
            .into_iter()
            .find(|b| b.name() == word)
    }
}

/// The most a process banks for later runs, in runs' kernel time (its
/// own): what one run may overshoot its allowance by. One run lets a
/// kernel launched once per run, on its own all of the run's kernel time,
/// try candidates the launch model predicts up to 1.27x its leader's time
/// (times [`super::cost::PREDICTION_MARGIN`]: twice it); slower ones stay
/// a tuning session's work (`GRIDSEL_TUNE_OVERHEAD=off`).
pub const MAX_BANKED_RUNS: f64 = 1.0;

/// [`Allowance`]'s default share: a run explores for at most about 2.5 % of
/// its kernel time. A run of online `tune` may be no more than 3 % slower
/// than `auto` (issue 27); its leaders are `auto`'s grid or grids measured
/// faster, so what exploring adds over them is what it may add over `auto`.
/// The allowance is charged by prediction against leaders that a process's
/// first launches measure slow (they warm up): at 3 % two first runs on an
/// H100 spent 3.0 % and 3.4 % of their GPU time exploring, measured in the
/// runs themselves (bench/results/h100/NOTES.md §39), hence the margin.
/// (5 % until then, the cost the issue "Learn across runs" allowed a first
/// run over `auto`.)
pub const DEFAULT_OVERHEAD: f64 = 0.025;

impl Allowance {
    /// Exploring may add `overhead` (a fraction; infinite: no bound) of the
    /// process's timed kernel time, within each run or over the runs
    /// (`bound`).
    pub fn new(overhead: f64, bound: Bound) -> Self {
        Self {
            overhead,
            bound,
            timed_ns: AtomicU64::new(0),
            expected_ns: AtomicU64::new(0),
            excess_ns: AtomicI64::new(0),
            banked_ns: AtomicI64::new(0),
        }
    }

    /// Whether exploring has no bound (`GRIDSEL_TUNE_OVERHEAD=off`, a
    /// tuning session's runs): the session's plan.
    pub fn unbounded(&self) -> bool {
        self.overhead.is_infinite()
    }

    /// Whether runs bank what they leave and spend what was banked: a
    /// bounded allowance under [`Bound::Average`].
    fn banks(&self) -> bool {
        self.bound == Bound::Average && !self.unbounded()
    }

    /// Whether every run keeps within its own share: a bounded allowance
    /// under [`Bound::Run`].
    fn per_run(&self) -> bool {
        self.bound == Bound::Run && !self.unbounded()
    }

    /// A search begun in this process at trip count `trip`: its runs spend
    /// what the store expects of it ([`Learner::expected_ns`]), and under
    /// [`Bound::Average`] what its earlier runs banked ([`Learner::credit`])
    /// adds to the budget.
    pub fn begin(&self, learner: &Learner, trip: u64) {
        self.expect(learner.expected_ns(trip));
        if self.banks() {
            let credit = learner.credit();
            let _ = self
                .banked_ns
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                    Some(b.saturating_add(credit))
                });
        }
    }

    /// Searches begun in this process whose runs spend `ns` of kernel time.
    pub(super) fn expect(&self, ns: u64) {
        let _ = self
            .expected_ns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(ns))
            });
    }

    /// The process's kernel time: timed, or where more, what the store
    /// expects of the searches it has begun.
    fn basis(&self) -> f64 {
        let timed = self.timed_ns.load(Ordering::Relaxed);
        timed.max(self.expected_ns.load(Ordering::Relaxed)) as f64
    }

    /// What each of the process's `exploring` searches that still explore
    /// banks for its later runs when the process ends (the others bank
    /// nothing): what is left of the allowance, the bank included, shared
    /// among them, at most [`MAX_BANKED_RUNS`] of the process's kernel time
    /// (or what was banked, where more), and negative where the process
    /// spent more than it had; `None` where nothing is banked: exploring
    /// has no bound (a tuning session's runs), or under [`Bound::Run`]
    /// (the bank is left as it is).
    pub fn banked_share(&self, exploring: usize) -> Option<i64> {
        if !self.banks() {
            return None;
        }
        if exploring == 0 {
            return Some(0);
        }
        let basis = self.basis();
        let banked = self.banked_ns.load(Ordering::Relaxed) as f64;
        let spent = self.excess_ns.load(Ordering::Relaxed) as f64;
        let left =
            (self.overhead * basis + banked - spent).min((MAX_BANKED_RUNS * basis).max(banked));
        Some((left / exploring as f64) as i64)
    }

    /// Whether an exploring launch predicted to cost `excess` ns over its
    /// leader (negative: faster) fits what is left.
    pub fn admits(&self, excess: f64) -> bool {
        if self.overhead.is_infinite() {
            return true;
        }
        let banked = self.banked_ns.load(Ordering::Relaxed) as f64;
        let spent = self.excess_ns.load(Ordering::Relaxed) as f64;
        spent + excess.max(0.0) <= self.overhead * self.basis() + banked
    }

    /// A timed launch of `ns` (`u64::MAX`: failed), costing `excess` over
    /// its leader when it explored.
    pub fn charge(&self, ns: u64, excess: Option<i64>) {
        if ns != u64::MAX {
            let _ = self
                .timed_ns
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                    Some(t.saturating_add(ns))
                });
        }
        if let Some(e) = excess {
            // Saturating: a process's sum never wraps round.
            let _ = self
                .excess_ns
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                    Some(s.saturating_add(e))
                });
        }
    }
}

impl TunePolicy {
    /// A tuner whose searches persist in `store`, if any, and whose
    /// exploring may add `overhead` of a process's kernel time
    /// ([`Allowance`]; [`DEFAULT_OVERHEAD`]).
    pub fn new(store: Option<Box<dyn Saver>>, overhead: f64) -> Self {
        use std::hash::BuildHasher;
        Self {
            session: Session::new(store),
            learners: PerLaunch::keyed_by(|l| u64::from(store::class(l.desc.trip_count))),
            salt: std::collections::hash_map::RandomState::new().hash_one(std::process::id()),
            allowance: Allowance::new(overhead, Bound::default()),
            session_runs: None,
        }
    }

    /// In a process that is one of the `runs` tuning runs of a `gridsel
    /// tune` session: with exploring unbounded, a search's warm plan fits
    /// the warm launches the session gives it ([`Exploring::in_session`]).
    pub fn with_session_runs(mut self, runs: Option<u32>) -> Self {
        self.session_runs = runs;
        self
    }

    /// Timing its launches with `clock` (`GRIDSEL_TUNE_CLOCK`, where the
    /// process can: [`Clock`]).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.session.clock = clock;
        self
    }

    /// Every run within its own allowance, or the runs on average
    /// (`GRIDSEL_TUNE_BOUND`; [`Bound`]).
    pub fn with_bound(mut self, bound: Bound) -> Self {
        self.allowance.bound = bound;
        self
    }

    fn start(&self, l: &Launch<'_>) -> Learner {
        self.session.launches_go_to(l.desc.llvm_release);
        let key = Key::of_launch(l);
        let loaded = self.session.loaded();
        let learned = loaded.learned_moves(l.device);
        let record = match loaded.table.for_launch(&key) {
            Some(r) if r.clock != self.session.clock && r.measured() => self.foreign(r),
            r => r.map(Cow::Borrowed),
        };
        let record = record.as_deref();
        let exploring = if self.allowance.unbounded() {
            let launches_per_run = record.map_or(0, |r| r.tally.launches_per_run);
            Exploring::in_session(self.session_runs, launches_per_run)
        } else {
            Exploring::Bounded
        };
        let prior = candidates(l.device, l.kernel, &l.desc, &learned, exploring, |_| true);
        let learner = Learner::resume(key.clone(), &prior, record);
        self.allowance.begin(&learner, l.desc.trip_count);
        learner
    }

    /// What a search of `record`, timed with another clock than this
    /// process's, is to this process. A tuning session's run measures it
    /// afresh (`None`: a search of no record), and its samples replace the
    /// record's ([`store::Record::merge`]). Any other run adds no sample to
    /// it and follows it: its learned grid, else `auto`'s, pinned for this
    /// process alone (a store of GPU-timed searches, read by online `tune`
    /// timing on the host, is not re-ranked by host-timed samples).
    fn foreign<'a>(&self, record: &'a store::Record) -> Option<Cow<'a, store::Record>> {
        if self.session_runs.is_some() {
            return None;
        }
        let mut followed = record.clone();
        followed.pinned = Some(learned(record).unwrap_or(Candidate::Auto));
        Some(Cow::Owned(followed))
    }
}

/// Why online `tune` keeps a kernel launched once per run at its leader
/// under [`Bound::Run`], and what explores it: the run's allowance
/// (`overhead` of its kernel time) is all it may spend, and one trial of
/// the run's only launch costs more.
fn held_back_once_per_run(overhead: f64) -> String {
    format!(
        "launched once per run, and a trial of another grid would cost this run more than \
         its exploring allowance ({ENV_TUNE_OVERHEAD}: {} % of its kernel time), so online \
         tune keeps the grid it leads with; a `gridsel tune` session explores this kernel, \
         or {ENV_TUNE_BOUND}=average lets each run bank what it leaves for later runs \
         (one run may then take up to about twice its kernel time)",
        (overhead * 1e5).round() / 1e3
    )
}

impl GridPolicy for TunePolicy {
    /// Reads the store at program start rather than at the first launch:
    /// work on the launch thread right before a launch slowed it. On the
    /// H100, mriq's first kernel (about 50 us under `auto`) took 14 us more
    /// than under `auto` when the store was read at its launch, 7 us when
    /// read at start (15 of 20 paired runs slower in each), and 2 us
    /// without a store (bench/results/h100/NOTES.md §23).
    fn prepare(&self, _kernels: &[&KernelDesc], _llvm_release: LlvmRelease) {
        self.session.loaded();
    }

    fn decide(&self, l: &Launch<'_>) -> Option<Proposal> {
        let auto = || {
            let (grid, rule) = chunked::grid(l.device, l.kernel, &l.desc);
            Proposal::new(grid, rule)
        };
        if !l.timed {
            return Some(auto());
        }
        let trip = l.desc.trip_count;
        let decided = self.learners.with(
            l,
            || self.start(l),
            |learner| {
                let choice = learner.next(
                    trip,
                    self.salt,
                    |e| self.allowance.admits(e),
                    |c| resolve(c, l.device, l.kernel, &l.desc),
                )?;
                let news = choice.settled_now.then(|| {
                    let description = learner.describe(|c| resolve(c, l.device, l.kernel, &l.desc));
                    (description, learner.take_measured(self.session.now()))
                });
                Some((choice, news))
            },
        );
        let Some(Some((choice, news))) = decided else {
            return Some(auto());
        };
        if choice.held_back_once_per_run && self.allowance.per_run() {
            log::info!(
                "tune: {} on {}, {}: {}",
                l.kernel_name,
                l.device.name,
                Iterations(trip),
                held_back_once_per_run(self.allowance.overhead),
            );
        }
        if let Some((description, update)) = news {
            // Handed over off the searches' lock: other launches go on
            // meanwhile.
            let saved = update.map_or_else(String::new, |u| self.session.save(u));
            log::info!(
                "tune: {} on {}, {}: settled on {description}{saved}",
                l.kernel_name,
                l.device.name,
                Iterations(trip),
            );
        }
        Some(Proposal {
            observe: choice.observe,
            label: match choice.rule {
                Rule::TuneRecheck => Some(RECHECK_LABEL),
                Rule::TuneTrial => Some(TRIAL_LABEL),
                _ => None,
            },
            ..Proposal::new(choice.grid, choice.rule)
        })
    }

    fn observe(&self, l: &Launch<'_>, grid: Geometry, ns: u64) {
        let excess = self
            .learners
            .existing(l, |learner| learner.observe(grid, l.desc.trip_count, ns));
        self.allowance.charge(ns, excess.flatten());
    }

    fn flush(&self) {
        let used = self.session.now();
        let mut exploring = 0;
        self.learners
            .each(|learner| exploring += usize::from(learner.explores()));
        let share = self.allowance.banked_share(exploring);
        let mut updates = Vec::new();
        self.learners.each(|learner| {
            learner.bank(share);
            updates.extend(learner.take_update(used));
        });
        self.session.flush(updates);
    }
}
