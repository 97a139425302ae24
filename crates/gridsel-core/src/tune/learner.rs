//! One search in one process: what each launch runs, what its time
//! teaches the search, and what the process has to save.

use super::cost;
use super::prior::Prior;
use super::search::{Candidate, Exploring, Kind, Search, Step};
use super::store::{self, Key, Record, Update};
use crate::geometry::Geometry;
use crate::policy::{MAX_LATE_LAUNCHES, Observe, Rule};
use std::fmt::Write;

/// After settling, one launch in this many is timed and sampled (from the
/// 16th on, never the first). While the allowance holds a search back,
/// every launch is timed (the process's kernel time, which the allowance is
/// a share of) and each is a sample until the leader has
/// `YARDSTICK_SAMPLES`, then one in this many. A held-back launch that became a sample made the next one
/// rank the search again, about 1 us a launch on the development machine:
/// online `tune` held miniWeather's searches back for most of their 3 700
/// launches a run, on the H100 its launches ran `auto`'s very grids 6-11 %
/// slower, and one in 16 brings a held-back launch to a quarter of that
/// cost (bench/results/h100/NOTES.md §50).
pub const SAMPLE_EVERY: u32 = 16;

/// Whether the `n`th launch (from 1) of a process's settled or held-back
/// launches of a search is a sample: its 16th, 32nd, ... ([`SAMPLE_EVERY`]),
/// never its first, which is mostly the process's first warm launch, and
/// some programs run that slow (bench/results/h100/NOTES.md §49).
fn is_sample(n: u32) -> bool {
    n.is_multiple_of(SAMPLE_EVERY)
}
/// After settling, one launch in this many (one run in
/// [`RECHECK_RUNS`] for kernels ranked by cold samples) measures the
/// runner-up.
pub const RECHECK_EVERY: u32 = 256;
pub const RECHECK_RUNS: u32 = 16;

/// Launch ns per ns of a sample at trip count `trip` (samples are scaled to
/// their class's smallest trip count: [`store::scale_to_class`]).
fn unscale(trip: u64) -> f64 {
    match store::class_floor(store::class(trip)) {
        0 => 1.0,
        floor => trip as f64 / floor as f64,
    }
}

/// The warm samples a search's leader needs before an exploring launch is
/// charged against its median, where exploring is bounded: until it has
/// them, the leader runs and is sampled. On the H100 a search's first warm
/// launch in a fresh process ran 15-100 % slower than the kernel's steady
/// time (LULESH, 15 of 16 kernels); as the only sample of the leader it
/// made trial after trial look faster than the leader, and that credit let
/// online `tune` explore on: the first run came out 4.3 % slower than
/// `auto`'s under a 2.5 % allowance (bench/results/h100/NOTES.md §46).
/// The median of three is robust to one such launch.
pub const YARDSTICK_SAMPLES: usize = 3;

/// The profile's label (`GRIDSEL_PROFILE`) of a launch that re-checks the
/// runner-up ([`Rule::TuneRecheck`]): a grid the search launches on purpose
/// although it settled elsewhere, which a convergence benchmark must not
/// read as a relapse (bench/harness/learn_report.py).
pub const RECHECK_LABEL: &str = "tune-recheck";

/// The profile's label of an exploring launch ([`Rule::TuneTrial`]): a
/// candidate launched to be measured, not because it leads. A run's
/// exploring cost is measured on these against its search's other launches
/// in the same process, where two runs of the very same grids would differ
/// by more than the cost itself (bench/harness/tune_session_report.py).
pub const TRIAL_LABEL: &str = "tune-trial";

/// What one launch of a search does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchLaunch {
    pub grid: Geometry,
    pub rule: Rule,
    /// Time the launch and hand it to [`Learner::observe`], and how soon.
    pub observe: Observe,
    /// The search settled at this launch (or was settled when this process
    /// first launched it): time to say so, and to save what the process
    /// measured before it ([`Learner::take_measured`]).
    pub settled_now: bool,
    /// The search ranks cold samples (its kernel is launched once per run)
    /// and the allowance held back its trial: the leader runs instead. At
    /// most once per process, its only launch.
    pub held_back_once_per_run: bool,
}

/// What a launch of a search runs, by the candidate's index, before its
/// grid is resolved.
#[derive(Clone, Copy, Debug)]
enum Turn {
    /// The store pins this candidate: every launch runs it, untimed.
    Pinned(usize),
    /// The leader, timed as a sample: a warm search's first launch in a
    /// process, or a search held back by the [`Allowance`](super::Allowance).
    Leader(usize),
    /// A candidate explored (index 0, `auto`'s grid, costs nothing to
    /// explore).
    Explore(usize),
    /// The settled search's grid, timed when the flag says so.
    Settled(usize, bool),
    /// The settled search's runner-up, re-checked.
    Recheck(usize),
}

impl Turn {
    fn candidate(self) -> usize {
        match self {
            Self::Pinned(i)
            | Self::Leader(i)
            | Self::Explore(i)
            | Self::Settled(i, _)
            | Self::Recheck(i) => i,
        }
    }

    /// Whether the launch is timed and its time handed to
    /// [`Learner::observe`], and how soon: a trial's or a re-check's time
    /// decides what the search launches next; a leader's or a settled
    /// grid's only adds a sample (or, held back, the process's kernel time).
    fn observe(self) -> Observe {
        match self {
            Self::Pinned(_) | Self::Settled(_, false) => Observe::No,
            Self::Settled(_, true) | Self::Leader(_) => Observe::Later,
            Self::Explore(_) | Self::Recheck(_) => Observe::Now,
        }
    }

    /// Whether the search has settled (or is pinned).
    fn settled(self) -> bool {
        matches!(self, Self::Pinned(_) | Self::Settled(..) | Self::Recheck(_))
    }

    /// The rule the log gives the launch; `only_measured`: the search has
    /// measured no grid but this one (of the kind it ranks by), asked only
    /// of a leader's launch.
    fn rule(self, only_measured: impl Fn() -> bool) -> Rule {
        match self {
            Self::Explore(_) => Rule::TuneTrial,
            Self::Recheck(_) => Rule::TuneRecheck,
            Self::Leader(_) | Self::Settled(..) if only_measured() => Rule::TuneOnlyMeasured,
            Self::Pinned(_) | Self::Leader(_) | Self::Settled(..) => Rule::TuneWinner,
        }
    }
}

/// A launch handed out and not yet observed.
#[derive(Clone, Copy, Debug)]
struct Pending {
    grid: Geometry,
    candidate: usize,
    kind: Kind,
    exploring: bool,
    /// The time becomes a sample of the search; otherwise it only counts
    /// towards the process's kernel time ([`SAMPLE_EVERY`]).
    sample: bool,
}

/// The predicted cost ([`Learner`]'s `cost`) of a candidate the prior does
/// not list: a refinement's neighbour, or a store's, pruned since or of
/// another version. A session may measure one, its own median predicting
/// it (a refinement's neighbour may be left by a run with fewer samples
/// than a close call gets): never explorable, it would hold the search's
/// launches back for good. Online `tune` never explores one (infinite;
/// `Search::raced_from`).
fn unlisted_cost(exploring: Exploring) -> f64 {
    if exploring.unbounded() {
        1.0
    } else {
        f64::INFINITY
    }
}

/// The exploring launches a refinement needs left in the plan's budget
/// ([`Learner::refinement`]): its finalists' four neighbours screened, and
/// one of them and the leader brought to the `confirm` samples of a close
/// call.
fn refine_launches(confirm: u32) -> u32 {
    4 + 2 * confirm.saturating_sub(1)
}

/// Launches of one search whose times may be outstanding at once: threads of
/// one process launching the same kernel, and the [`Observe::Later`] ones
/// the GPU clock hands over in a batch. Beyond it the oldest is dropped:
/// a launch whose time never came (its CUPTI record did not come back).
const MAX_PENDING: usize = MAX_LATE_LAUNCHES + 8;

/// One search in one process: the store's record, what this process
/// measured, and what it has not saved yet.
#[derive(Clone, Debug)]
pub struct Learner {
    key: Key,
    search: Search,
    pinned: Option<usize>,
    stored_runs: u32,
    stored_launches_per_run: u32,
    /// The record's banked exploring allowance ([`Record::credit`]).
    stored_credit: i64,
    launches: u32,
    settled_launches: u32,
    announced: bool,
    /// Each candidate's predicted time over `auto`'s grid, by the search's
    /// index ([`Prior::cost`]); for a candidate the prior does not list (a
    /// store's: a refinement's neighbour, or pruned since, or of another
    /// version) 1.0 in a tuning session and infinite online, which never
    /// launches it to explore it.
    cost: Vec<f64>,
    /// The grid this process settled on, per kind: kept for the rest of the
    /// process, so that its own sampled launches cannot swap it back and
    /// forth among close candidates (measured on the H100: gramschmidt's
    /// settled search ran three grids by turns in one run, +52 % GPU time
    /// for the run). Later samples move the leader from the next run on;
    /// a kept grid that fails, or that its samples put past the drop factor
    /// behind the leader beyond the noise (a grid that degraded), is left
    /// at once.
    kept: Option<(Kind, usize)>,
    /// [`Search::step`]'s last answer for a kind, until the next sample.
    step: Option<(Kind, Step)>,
    /// [`Search::leader`] of a kind, until the next sample: a launch the
    /// allowance holds back asks for it twice, and ranking a search's
    /// candidates takes microseconds.
    leader: Option<(Kind, usize)>,
    /// Launches the allowance held back ([`SAMPLE_EVERY`]).
    held_back_launches: u32,
    pending: Vec<Pending>,
    /// The last candidate resolved, for its trip count.
    resolved: Option<(usize, u64, Geometry)>,
    /// [`Prior::refine_threads`].
    refine_threads: u32,
    update: Update,
}

impl Learner {
    /// Resumes the search `key` over the `prior`'s candidates from the
    /// store's `record`, if any.
    pub fn resume(key: Key, prior: &Prior, record: Option<&Record>) -> Self {
        let mut search = Search::new(prior.candidates());
        search.starving_from = prior.starving_from;
        search.exploring = prior.exploring;
        let listed = search.candidates.len();
        search.raced_from = Some(listed);
        let (mut pinned, mut stored_runs, mut stored_launches_per_run, mut stored_credit) =
            (None, 0, 0, 0);
        if let Some(r) = record {
            for (c, s) in r.search.candidates.iter().zip(&r.search.samples) {
                let i = search.index_of(*c);
                search.samples[i] = s.clone();
            }
            search.explored = r.search.explored;
            search.settled = r.search.settled;
            pinned = r.pinned.map(|c| search.index_of(c));
            stored_runs = r.tally.runs;
            stored_launches_per_run = r.tally.launches_per_run;
            stored_credit = r.credit;
        }
        let mut cost = prior.cost.clone();
        cost.resize(listed, 1.0);
        cost.resize(search.candidates.len(), unlisted_cost(prior.exploring));
        Self {
            update: Update::new(key.clone()),
            key,
            search,
            pinned,
            stored_runs,
            stored_launches_per_run,
            stored_credit,
            launches: 0,
            settled_launches: 0,
            announced: false,
            cost,
            kept: None,
            step: None,
            leader: None,
            held_back_launches: 0,
            pending: Vec::new(),
            resolved: None,
            refine_threads: prior.refine_threads,
        }
    }

    pub fn key(&self) -> &Key {
        &self.key
    }

    pub fn search(&self) -> &Search {
        &self.search
    }

    /// The kernel time one run of the program spends on this search, as the
    /// store knows it: its launches per run times its leader's median, in
    /// the ns of a launch at trip count `trip`; 0 without a record.
    pub fn expected_ns(&self, trip: u64) -> u64 {
        let kind = self.kind();
        let Some(lead) = self.search.samples.get(self.search.leader(kind)) else {
            return 0;
        };
        match lead.median(kind) {
            Some(m) if m != u64::MAX => {
                let per_run = f64::from(self.stored_launches_per_run);
                (per_run * m as f64 * unscale(trip)).min(u64::MAX as f64) as u64
            }
            _ => 0,
        }
    }

    /// The exploring allowance earlier runs banked for this search, in ns
    /// (negative: owed; [`Record::credit`]).
    pub fn credit(&self) -> i64 {
        self.stored_credit
    }

    /// Whether the search still explores: not pinned, and its plan neither
    /// ran to its end nor spent its budget.
    pub fn explores(&self) -> bool {
        self.pinned.is_none() && !self.search.finished(self.kind())
    }

    /// Banks `share` for the search's later runs where it still explores,
    /// nothing where it does not (`None`: leaves the bank as it is;
    /// [`super::Allowance::banked_share`]): what this process adds to the
    /// record's credit is the difference.
    pub fn bank(&mut self, share: Option<i64>) {
        if let Some(share) = share {
            let credit = if self.explores() { share } else { 0 };
            self.update.credit = credit.saturating_sub(self.stored_credit);
        }
    }

    /// What exploring candidate `i` at trip count `trip` is predicted to cost
    /// over the leader of `kind`, in ns: its own median where it has one,
    /// else the model's ratio ([`Prior::cost`]) times `auto`'s median (or
    /// the leader's, over the leader's ratio), times the model's
    /// [`cost::PREDICTION_MARGIN`]. Infinite for a warm search whose leader
    /// has fewer than [`YARDSTICK_SAMPLES`] warm samples: no yardstick yet,
    /// so that nothing but an unbounded allowance (a tuning session) fits.
    /// `None` when the leader has no median yet.
    fn predicted_excess(&self, i: usize, kind: Kind, leader: usize, trip: u64) -> Option<f64> {
        let samples = &self.search.samples;
        if kind == Kind::Warm && samples[leader].warm.len() < YARDSTICK_SAMPLES {
            return Some(f64::INFINITY);
        }
        let lead = samples[leader].median(kind)? as f64;
        let time = match samples[i].median(kind) {
            Some(m) => m as f64,
            None => {
                let auto = samples[0]
                    .median(kind)
                    .map_or(lead / self.cost[leader].max(f64::MIN_POSITIVE), |a| {
                        a as f64
                    });
                auto * self.cost[i] * cost::PREDICTION_MARGIN
            }
        };
        Some((time - lead) * unscale(trip))
    }

    /// Whether candidate `i` may be launched to explore it: it is one the
    /// prior lists, and what it is predicted to cost over the leader fits
    /// what `fits` (the process's [`Allowance`](super::Allowance)) has left.
    fn may_explore(
        &self,
        i: usize,
        kind: Kind,
        leader: usize,
        trip: u64,
        fits: impl Fn(f64) -> bool,
    ) -> bool {
        self.cost[i].is_finite()
            && fits(self.predicted_excess(i, kind, leader, trip).unwrap_or(0.0))
    }

    /// [`Search::leader`] of `kind`, ranked once per sample.
    fn leader(&mut self, kind: Kind) -> usize {
        match self.leader {
            Some((k, i)) if k == kind => i,
            _ => {
                let i = self.search.leader(kind);
                self.leader = Some((kind, i));
                i
            }
        }
    }

    /// The kind the search ranks by now.
    pub fn kind(&self) -> Kind {
        if self.stored_launches_per_run.max(self.launches) >= 2 {
            Kind::Warm
        } else {
            Kind::Cold
        }
    }

    fn step(&mut self, kind: Kind, salt: u64) -> Step {
        match self.step {
            Some((k, step)) if k == kind => step,
            _ => {
                let step = self.search.step(kind, salt);
                self.step = Some((kind, step));
                step
            }
        }
    }

    /// The next launch at trip count `trip`; `resolve` gives a candidate's
    /// grid for this launch. `salt` spreads concurrent processes. `fits`
    /// says whether an exploring launch predicted to cost that many ns over
    /// the leader fits what the process's [`Allowance`](super::Allowance)
    /// has left: when it does not, the leader runs instead, and is sampled.
    /// Every exploring launch asks, each search's first in a process too
    /// (`auto`'s grid, what the launch gets without a search, costs nothing).
    pub fn next(
        &mut self,
        trip: u64,
        salt: u64,
        fits: impl Fn(f64) -> bool,
        resolve: impl Fn(Candidate) -> Option<Geometry>,
    ) -> Option<SearchLaunch> {
        if self.search.candidates.is_empty() {
            return None;
        }
        self.launches = self.launches.saturating_add(1);
        self.update.tally.launches_per_run = self.launches;
        self.update.tally.trips = (
            self.update.tally.trips.0.min(trip),
            self.update.tally.trips.1.max(trip),
        );
        if self.launches == 1 {
            // This process is one more run of the search.
            self.update.tally.runs = 1;
        }
        let sample = if self.launches == 1 {
            Kind::Cold
        } else {
            Kind::Warm
        };
        let rank = self.kind();
        let mut held_back = false;
        let turn = if let Some(p) = self.pinned {
            Turn::Pinned(p)
        } else if sample == Kind::Cold && rank == Kind::Warm {
            // A kernel known to run many times: its first launch gives no
            // warm sample; it runs the leader and samples it cold.
            Turn::Leader(self.leader(Kind::Warm))
        } else {
            let step = match self.step(rank, salt) {
                Step::Settled(leader) => self
                    .refinement(rank, leader, &resolve)
                    .map_or(Step::Settled(leader), Step::Explore),
                step => step,
            };
            match step {
                // Held back: the leader runs and is timed like an exploring
                // launch (its time is what reopens the allowance; one in
                // `SAMPLE_EVERY` a sample of the leader once it has its
                // yardstick), until the search may go on: in a later
                // launch, a later run, or a tuning session.
                Step::Explore(i) if i != 0 => {
                    let leader = self.leader(rank);
                    if self.may_explore(i, rank, leader, trip, &fits) {
                        Turn::Explore(i)
                    } else {
                        held_back = true;
                        Turn::Leader(leader)
                    }
                }
                Step::Explore(i) => Turn::Explore(i),
                Step::Settled(leader) => {
                    let i = match self.kept {
                        Some((k, i)) if k == rank => i,
                        _ => {
                            self.kept = Some((rank, leader));
                            leader
                        }
                    };
                    if !self.search.settled(rank) {
                        self.search.settle(rank);
                        self.update.settled[usize::from(rank == Kind::Warm)] = true;
                    }
                    self.settled_launches = self.settled_launches.saturating_add(1);
                    let n = self.settled_launches;
                    let recheck = match rank {
                        Kind::Warm => n.is_multiple_of(RECHECK_EVERY),
                        Kind::Cold => (self.stored_runs + 1).is_multiple_of(RECHECK_RUNS),
                    };
                    // The runner-up is worked out only for a re-check: the
                    // settled launch path is a counter and a cached grid.
                    match recheck.then(|| self.search.runner_up(rank)).flatten() {
                        Some(r) => Turn::Recheck(r),
                        None => {
                            let observe = rank == Kind::Cold || is_sample(n);
                            Turn::Settled(i, observe)
                        }
                    }
                }
            }
        };
        let (candidate, mut observe, settled) = (turn.candidate(), turn.observe(), turn.settled());
        let grid = match self.resolved {
            Some((c, t, g)) if c == candidate && t == trip => g,
            _ => {
                let g = resolve(self.search.candidates[candidate])?;
                self.resolved = Some((candidate, trip, g));
                g
            }
        };
        if observe.timed() {
            if self.pending.len() == MAX_PENDING {
                // Seldom (times that never came), so a `Vec`: a `VecDeque`
                // cost the held-back launch path 40 ns (launch_path bench).
                self.pending.remove(0);
            }
            if held_back {
                self.held_back_launches = self.held_back_launches.wrapping_add(1);
            }
            let short = held_back && self.yardstick_short(candidate, sample);
            if short {
                // Until the leader has its yardstick the search cannot
                // reckon what a trial would cost: these times decide
                // when it may explore.
                observe = Observe::Now;
            }
            let sampled = !held_back || short || is_sample(self.held_back_launches);
            self.pending.push(Pending {
                grid,
                candidate,
                kind: sample,
                exploring: matches!(turn, Turn::Explore(_)),
                sample: sampled,
            });
        }
        let settled_now = settled && !self.announced;
        self.announced |= settled;
        // Settled launches take this path: the scan stops at a second
        // measured grid, near the front in the prior's order.
        let only_measured = || {
            let measured = self.search.samples.iter();
            measured.filter(|s| !s.of(rank).is_empty()).nth(1).is_none()
        };
        Some(SearchLaunch {
            grid,
            rule: turn.rule(only_measured),
            observe,
            settled_now,
            held_back_once_per_run: held_back && rank == Kind::Cold,
        })
    }

    /// The grid next to a finalist's that the search measures before it
    /// settles, where the prior refines it ([`Prior::refine_threads`]) and
    /// the plan has exploring left: the finalist's blocks with a warp fewer
    /// threads, then a warp more, for the leader and then the runner-up,
    /// each added to the candidates unless one already launches that grid;
    /// `None` once all are measured (or cannot be launched). The runner-up
    /// too: where the two are close the leader is a draw of the noise (PRK
    /// flat transpose on the H100: 128 x 25 344 and 128 x 32 768 within
    /// 0.5 %, the best grid 96 x 32 768; bench/results/h100/NOTES.md §52).
    /// The search ranks the new grids with the others, so one that wins is
    /// refined in turn, until the finalists' neighbours are measured or the
    /// budget is spent. Asked at every launch whose step is settled, it
    /// returns at once there (a comparison or two).
    fn refinement(
        &mut self,
        kind: Kind,
        leader: usize,
        resolve: impl Fn(Candidate) -> Option<Geometry>,
    ) -> Option<usize> {
        let step = self.refine_threads;
        if step == 0 || kind != Kind::Warm || self.search.settled(kind) {
            return None;
        }
        // Only on exploring launches the plan left unspent (none once its
        // budget is spent): a plan sized to the session's launches ends on
        // its own grids.
        let p = self.search.params(kind);
        let left = p.budget.saturating_sub(self.search.explored(kind));
        if left < refine_launches(p.confirm.samples() as u32) {
            return None;
        }
        let finalists = [Some(leader), self.search.runner_up(kind)];
        let grids: Vec<Geometry> = finalists
            .into_iter()
            .flatten()
            .filter_map(|i| resolve(*self.search.candidates.get(i)?))
            .collect();
        for at in grids {
            let neighbours = [at.threads.checked_sub(step), at.threads.checked_add(step)];
            for threads in neighbours.into_iter().flatten().filter(|&t| t > 0) {
                let candidate = Candidate::Grid(Geometry::new(threads, at.blocks));
                // Within the launch's limits, or not at all: clamped back
                // onto the finalist (its most threads), it is no neighbour.
                let Some(grid) = resolve(candidate).filter(|&g| g != at) else {
                    continue;
                };
                let same = |c: &Candidate| resolve(*c) == Some(grid);
                let i = match self.search.candidates.iter().position(same) {
                    Some(i) => i,
                    None => {
                        self.cost.push(unlisted_cost(self.search.exploring));
                        self.search.index_of(candidate)
                    }
                };
                if self.search.samples[i].of(kind).is_empty() {
                    return Some(i);
                }
            }
        }
        None
    }

    /// Whether `candidate` has fewer samples of `kind` than the yardstick,
    /// counting those still to come: on the GPU clock a held-back launch's
    /// time comes with a later batch ([`Observe::Later`]), and the launches
    /// meanwhile must not all become samples.
    fn yardstick_short(&self, candidate: usize, kind: Kind) -> bool {
        let have = self.search.samples[candidate].of(kind).len();
        have < YARDSTICK_SAMPLES
            && have
                + self
                    .pending
                    .iter()
                    .filter(|p| p.sample && p.candidate == candidate && p.kind == kind)
                    .count()
                < YARDSTICK_SAMPLES
    }

    /// The time of a launch of `grid` at trip count `trip` (`u64::MAX` when
    /// it failed: it ranks last). Times nobody asked for are ignored.
    /// Returns what an exploring launch cost over the search's leader, in
    /// ns (negative when it was faster), where the leader has a median.
    pub fn observe(&mut self, grid: Geometry, trip: u64, ns: u64) -> Option<i64> {
        let at = self.pending.iter().position(|p| p.grid == grid)?;
        let p = self.pending.remove(at);
        if !p.sample && ns != u64::MAX {
            // A held-back launch of the leader between samples: its time
            // counts towards the process's kernel time, nothing more.
            return None;
        }
        let raw = ns;
        let ns = if ns == u64::MAX {
            ns
        } else {
            store::scale_to_class(ns, trip)
        };
        let excess = (p.exploring && p.candidate != 0 && ns != u64::MAX)
            .then(|| {
                let leader = self.leader(p.kind);
                let lead = &self.search.samples[leader];
                // A leader whose launches failed is no yardstick.
                if lead.of(p.kind).contains(&u64::MAX) {
                    return None;
                }
                let lead = lead.median(p.kind)?;
                // In the launch's own ns (samples are scaled to the class),
                // and never more than the launch itself either way.
                let raw = raw as f64;
                let over = (ns as f64 - lead as f64) / ns.max(1) as f64 * raw;
                Some(over.clamp(-raw, raw) as i64)
            })
            .flatten();
        self.search.record(p.candidate, p.kind, ns, p.exploring);
        self.step = None;
        self.leader = None;
        if self.kept.is_some_and(|(kind, i)| {
            i == p.candidate && (ns == u64::MAX || self.search.far_behind(i, kind))
        }) {
            // A kept grid that fails, or whose samples now put it far behind
            // the leader beyond the noise (a grid that degraded), is not
            // kept: the next launch runs the leader. Noise alone must not
            // release it: on the H100 a gramschmidt kernel whose launches
            // vary 60-150 us ran three grids by turns in one run when
            // being far behind the fastest median was enough.
            self.kept = None;
            log::info!(
                "tune: {}: leaves the grid it kept ({}), which {}; the next launch runs the leader",
                self.key.kernel,
                self.search.candidates[p.candidate],
                if ns == u64::MAX {
                    "failed"
                } else {
                    "fell far behind it"
                }
            );
        }
        let c = self.search.candidates[p.candidate];
        self.update.samples.push((c, p.kind, ns));
        if p.exploring && p.candidate != 0 {
            let slot = usize::from(p.kind == Kind::Warm);
            self.update.explored[slot] = self.update.explored[slot].saturating_add(1);
        }
        excess
    }

    /// What this process added since the last call, stamped `used`; `None`
    /// when nothing.
    pub fn take_update(&mut self, used: u64) -> Option<Update> {
        if self.update.is_empty() {
            return None;
        }
        let mut fresh = Update::new(self.key.clone());
        fresh.tally.launches_per_run = self.launches;
        fresh.tally.trips = self.update.tally.trips;
        let mut update = std::mem::replace(&mut self.update, fresh);
        update.tally.used = used;
        Some(update)
    }

    /// [`Self::take_update`], when this process has timed a launch of the
    /// search since the last call. A search that was settled before the
    /// process launched it has only "one more run" to add, which can wait
    /// for the exit: writing the store (read, merge, write, fsync) right
    /// before the process's first launch slowed that launch. On the H100
    /// mriq's first kernel, 54 us under `auto`, took 31 us more (11 of 12
    /// paired runs) in processes that resumed its settled search from a
    /// store, and none more from an empty store (bench/results/h100/NOTES.md
    /// §23).
    pub fn take_measured(&mut self, used: u64) -> Option<Update> {
        if self.update.samples.is_empty() {
            return None;
        }
        self.take_update(used)
    }

    /// Where the search stands, for the log line that says it settled, in
    /// the user's terms: the grid (`resolve` gives a candidate's grid for
    /// the launch), how it compares with `auto`'s grid and with the next
    /// fastest, in time taken, and what was measured.
    pub fn describe(&self, resolve: impl Fn(Candidate) -> Option<Geometry>) -> String {
        let kind = self.kind();
        let search = &self.search;
        let leader = search.leader(kind);
        let candidate = search.candidates[leader];
        let mut line = resolve(candidate).map_or_else(|| candidate.to_string(), |g| g.to_string());
        // A ratio of medians as time taken: 0.88 is "12.0 % less time".
        let than = |ratio: f64| {
            let change = (ratio - 1.0) * 100.0;
            let word = if change >= 0.0 { "more" } else { "less" };
            format!("{:.1} % {word} time", change.abs())
        };
        let lead = search.samples[leader].median(kind);
        let auto = search.candidates.iter().position(|c| *c == Candidate::Auto);
        let auto_median = auto.and_then(|a| search.samples[a].median(kind));
        match (candidate, lead, auto_median) {
            (Candidate::Auto, ..) => line.push_str(", auto's grid"),
            (_, Some(lead), Some(auto)) => {
                let ratio = lead as f64 / auto.max(1) as f64;
                let _ = write!(line, ", which took {} than auto's grid", than(ratio));
            }
            _ => {}
        }
        if let Some(m) = search.margin(kind) {
            let _ = write!(line, "; the next fastest took {}", than(m));
            if m < 1.0 {
                line.push_str(", within the noise");
            }
        }
        let timed = search.samples[leader].of(kind).len();
        let _ = write!(
            line,
            "; {} grids measured over {} runs, {} trial launches; medians of {}",
            search.ranked(kind).len(),
            self.stored_runs + 1,
            search.explored(kind),
            match kind {
                Kind::Warm => format!("repeated launches ({timed} of this grid)"),
                Kind::Cold => format!("each run's first launch ({timed} of this grid)"),
            }
        );
        line
    }
}
