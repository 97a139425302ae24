//! One search — a (kernel, device, trip-count class) — as a pure function of
//! its samples, so that it can stop at the end of a run and go on in the
//! next one from what the store kept.
//!
//! The search is IterML's (Cui and Feng) iterate-and-prune loop, successive
//! halving, written as a rule over the samples rather than a queue of
//! launches: [`Search::step`] looks at how many samples each candidate has
//! and what their medians are, and says which candidate the next launch
//! measures, or that the search has settled. Nothing else is state, so a
//! search resumed from a file, or fed by several processes at once, is the
//! same search.
//!
//! Samples come in two [`Kind`]s, compared only with their own kind: the
//! first launch of a kernel in a process is **cold** (CUDA loads the kernel
//! lazily, at its first launch, and the caches are cold), every later one
//! **warm**. A kernel launched once per run only ever has cold samples; one
//! launched many times is ranked by its warm ones. Each kind has its own
//! plan ([`Params::COLD`], [`Params::WARM`]): a few candidates and few
//! repeats for kernels that give one sample per run, more for kernels that
//! give dozens.
//!
//! **Noise.** A search leaves the prior's order only for a difference it
//! can tell from noise ([`Search::leader`]). The noise is measured, not
//! assumed: the upper quartile of every candidate's absolute deviations from
//! its own median, in median-deviation units ([`Search::spread`]), pooled
//! over the candidates with a floor per kind ([`Params::spread_floor`]),
//! and each candidate's own, never below the pooled one, for the error of
//! its median (Welch's form; bench/results/h100/NOTES.md §17: launches that fall in a slow
//! mode now and then). On the H100 a kernel's cold
//! launch varied with a median of 6.6 % (p90 18 %) around its median from
//! run to run, its warm launches 3.7 % (p90 18 %) — more than most grid
//! differences at 0.05-1 ms, so a rule that trusted one fast sample
//! changed grids on noise (bench/results/h100/learn/learn.md).
//!
//! **Close calls.** A candidate faster than the leader, which the noise
//! still keeps from the lead, is measured again before the search settles
//! ([`Confirm`]): a warm search measures it up to three samples; a cold
//! one measures it in turn with the leader, four samples each, after which
//! it leads at one standard error instead of two. At one sample a run, two
//! standard errors would take a dozen runs more to show a 7 % gain.

mod plan;

pub use plan::{Confirm, Exploring, Params};

use crate::geometry::Geometry;
use plan::kept;
use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

/// A grid to try, written relative to the launch so that one candidate
/// means the same thing at every trip count of a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Candidate {
    /// `auto`'s grid for the launch: its static rule's
    /// ([`crate::policy::chunked`]), what the launch gets where nothing is
    /// learned. The store and `gridsel tune` call it `auto`.
    Auto,
    /// LLVM's own grid for the launch: measured early by a search of warm
    /// samples, so that it never settles slower than LLVM beyond the noise
    /// (a cold search cannot tell; [`Params::COLD`]).
    Llvm,
    /// `occupancy`'s grid for the launch.
    Occupancy,
    /// `threads` per block, and `auto`'s blocks times 2^`blocks_log2`.
    Move { threads: u32, blocks_log2: i8 },
    /// A grid fixed whatever the launch (a store pinned to a sweep's best
    /// grids, `gridsel cache-entries`; the SM multiples tried on a `target
    /// teams` region without a distribute loop).
    Grid(Geometry),
}

impl fmt::Display for Candidate {
    /// The store's spelling: `auto`, `llvm`, `occupancy`, `move:T,K`,
    /// `grid:T,B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => write!(f, "auto"),
            Self::Llvm => write!(f, "llvm"),
            Self::Occupancy => write!(f, "occupancy"),
            Self::Move {
                threads,
                blocks_log2,
            } => write!(f, "move:{threads},{blocks_log2}"),
            Self::Grid(g) => write!(f, "grid:{},{}", g.threads, g.blocks),
        }
    }
}

impl FromStr for Candidate {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let pair = |spec: &str| {
            let (a, b) = spec.split_once(',')?;
            Some((a.trim().to_string(), b.trim().to_string()))
        };
        let bad = || {
            format!(
                "`{}` is not a candidate (auto, llvm, occupancy, move:T,K, grid:T,B)",
                crate::text::shown(text)
            )
        };
        match text {
            "auto" => return Ok(Self::Auto),
            "llvm" => return Ok(Self::Llvm),
            "occupancy" => return Ok(Self::Occupancy),
            _ => {}
        }
        let threads_ok = |t: u32| (1..=1024).contains(&t);
        if let Some((t, k)) = text.strip_prefix("move:").and_then(pair) {
            let threads: u32 = t.parse().map_err(|_| bad())?;
            let blocks_log2: i8 = k.parse().map_err(|_| bad())?;
            if !threads_ok(threads) || !(-16..=16).contains(&blocks_log2) {
                return Err(bad());
            }
            return Ok(Self::Move {
                threads,
                blocks_log2,
            });
        }
        if let Some((t, b)) = text.strip_prefix("grid:").and_then(pair) {
            let threads: u32 = t.parse().map_err(|_| bad())?;
            let blocks: u32 = b.parse().map_err(|_| bad())?;
            if !threads_ok(threads) || blocks == 0 {
                return Err(bad());
            }
            return Ok(Self::Grid(Geometry::new(threads, blocks)));
        }
        Err(bad())
    }
}

/// Whether a sample is a process's first launch of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Cold,
    Warm,
}

/// Samples kept per candidate and kind: the latest, so that a grid that
/// degrades (a driver update, another GPU under the same name) shows it.
pub const KEEP: usize = 8;

/// A candidate's times, in ns, oldest first, at most [`KEEP`] of each kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Samples {
    pub cold: Vec<u64>,
    pub warm: Vec<u64>,
}

impl Samples {
    pub fn of(&self, kind: Kind) -> &[u64] {
        match kind {
            Kind::Cold => &self.cold,
            Kind::Warm => &self.warm,
        }
    }

    /// Whether it holds no sample of either kind.
    pub fn is_empty(&self) -> bool {
        self.cold.is_empty() && self.warm.is_empty()
    }

    /// Adds a sample, dropping the oldest past [`KEEP`].
    pub fn push(&mut self, kind: Kind, ns: u64) {
        let list = match kind {
            Kind::Cold => &mut self.cold,
            Kind::Warm => &mut self.warm,
        };
        list.push(ns);
        if list.len() > KEEP {
            list.remove(0);
        }
    }

    /// The median of one kind's samples, `None` without any.
    pub fn median(&self, kind: Kind) -> Option<u64> {
        median(self.of(kind))
    }
}

/// The upper quartile of `values` (sorted here), interpolated between
/// neighbours; 0 when empty.
fn upper_quartile(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n => {
            let at = 0.75 * (n - 1) as f64;
            let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
            values[lo] + (values[hi] - values[lo]) * (at - lo as f64)
        }
    }
}

/// The median of `values` (the lower middle's and upper middle's mean for
/// an even count), `None` when empty.
pub fn median(values: &[u64]) -> Option<u64> {
    // A sample list holds at most KEEP values: sort a copy on the stack (the
    // settled launch path re-ranks a search now and then).
    let mut buf = [0u64; KEEP];
    let mut heap = Vec::new();
    let s: &mut [u64] = if values.len() <= KEEP {
        buf[..values.len()].copy_from_slice(values);
        &mut buf[..values.len()]
    } else {
        heap.extend_from_slice(values);
        &mut heap
    };
    s.sort_unstable();
    let m = s.len() / 2;
    match s.len() {
        0 => None,
        n if n % 2 == 1 => Some(s[m]),
        _ => Some(s[m - 1] / 2 + s[m] / 2 + (s[m - 1] % 2 + s[m] % 2) / 2),
    }
}

/// Medians within this fraction of each other are a tie however quiet the
/// samples, won by the candidate earlier in the prior's order.
pub const TIE: f64 = 0.01;

/// How many standard errors of the difference of two medians a candidate
/// must be faster by to displace an earlier one (about 98 % one-sided, for
/// normal noise).
pub const SIGNIFICANCE: f64 = 2.0;

/// How many standard errors a session's warm close call takes between
/// candidates of four samples or more ([`Params::SESSION_WARM`]). A session
/// can afford a lower bar than a search that writes straight to production:
/// its confirmation runs the learned grids against `auto`'s, launch by
/// launch in one process where the kernels allow it, and refuses one more
/// than 1 % slower there (3 % between whole runs). Production ranks a
/// settled record by the same rule ([`crate::tune::learned`]). Replayed
/// over the sweeps (`tune-sim --live-prior`, 20 launches per run, seeds
/// 3-4), the grid production launches ends 0.2-0.5 points nearer the best
/// than at two standard errors, on both sweeps and at both noise levels;
/// the replays more than 3 % slower than `auto`'s grid, before any
/// confirmation, stay at 0.1 % at the measured noise and are 0.4-0.7 %
/// instead of 0.4-0.5 % at three times it. In the replay of the search's
/// own leader, one standard error gained 0.1-0.6 points more than 1.5 and
/// raised that tail to 1.1-1.2 % (bench/results/h100/NOTES.md §53).
pub const SESSION_SIGNIFICANCE: f64 = 1.5;

/// The median absolute deviation per upper quartile of absolute deviations,
/// for normal noise: 0.6745 / 1.1503 (the normal quantiles at 75 % and
/// 87.5 %), so that [`Search::spread`] reads as a median deviation.
pub const MAD_PER_UPPER_QUARTILE_DEVIATION: f64 = 0.6745 / 1.1503;

/// Standard deviation per median absolute deviation (normal noise), times
/// the standard error of a median over that of a mean (sqrt(pi/2)): the
/// standard error of a median of n samples is this times the spread over
/// sqrt(n).
const MEDIAN_ERROR_PER_MAD: f64 = 1.4826 * 1.2533;

/// Samples from which a candidate's own spread stands for its noise
/// ([`Search::spreads`]): the samples a plan confirms a close call with.
/// Replayed over the sweeps with measured warm noise, 4 keeps grids up to
/// 0.5 points nearer the best than 6 or 8, never farther
/// (bench/results/h100/NOTES.md §47).
const OWN_SPREAD_SAMPLES: usize = 4;

/// Samples a candidate needs before it may displace an earlier one: one
/// fast launch is not a measurement.
pub const MIN_SAMPLES_TO_LEAD: usize = 2;

/// What the next launch of a search does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Measure this candidate.
    Explore(usize),
    /// The search has settled on this candidate.
    Settled(usize),
}

impl Step {
    pub fn candidate(self) -> usize {
        match self {
            Self::Explore(i) | Self::Settled(i) => i,
        }
    }
}

/// A search: candidates in the prior's order, their samples, and how many
/// launches of each kind went to exploring.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Search {
    pub candidates: Vec<Candidate>,
    pub samples: Vec<Samples>,
    /// Exploring launches so far, cold and warm (not counting the first
    /// candidate's).
    pub explored: [u32; 2],
    /// The plan of each kind has run to its end: from then on the leader is
    /// kept (it changes only when later samples, the leader's own or a
    /// re-check's, reorder the candidates), and noise in those samples does
    /// not reopen the search.
    pub settled: [bool; 2],
    /// The candidates from this index on would starve the launch (the
    /// prior puts them last: [`super::Prior`]); a plan that does not screen
    /// them ([`Params::screens_starving`]) leaves them out. `None`: none
    /// would, or the search does not know (a store's record).
    pub starving_from: Option<usize>,
    /// How freely the search may explore, which picks its plan
    /// ([`Params::for_search`]); not stored: the process that resumes a
    /// search decides.
    pub exploring: Exploring,
    /// The candidates from this index on are not the plan's (a
    /// refinement's neighbours, a store's of an earlier prior): neither
    /// screened nor halved, so that adding one does not reopen the plan's
    /// rounds, they race the leader only as a close call does, and only in
    /// a tuning session (online `tune` launches none of them to explore
    /// it). `None`: every candidate is the plan's. Not stored: the process
    /// that resumes a search decides.
    pub raced_from: Option<usize>,
}

fn slot(kind: Kind) -> usize {
    match kind {
        Kind::Cold => 0,
        Kind::Warm => 1,
    }
}

impl Search {
    /// A search over `candidates` (duplicates dropped) with no samples.
    pub fn new(candidates: Vec<Candidate>) -> Self {
        let mut search = Self::default();
        for c in candidates {
            search.index_of(c);
        }
        search
    }

    /// The index of `c`, added at the end when new.
    pub fn index_of(&mut self, c: Candidate) -> usize {
        if let Some(i) = self.candidates.iter().position(|x| *x == c) {
            return i;
        }
        self.candidates.push(c);
        self.samples.push(Samples::default());
        self.candidates.len() - 1
    }

    /// The plan of `kind` this search follows.
    pub fn params(&self, kind: Kind) -> Params {
        Params::for_search(kind, self.exploring)
    }

    pub fn explored(&self, kind: Kind) -> u32 {
        self.explored[slot(kind)]
    }

    pub fn settled(&self, kind: Kind) -> bool {
        self.settled[slot(kind)]
    }

    /// Whether the search of `kind` explores no more: its plan ran to its
    /// end or its budget is spent.
    pub fn finished(&self, kind: Kind) -> bool {
        self.settled(kind) || self.explored(kind) >= self.params(kind).budget
    }

    /// Marks the plan of `kind` finished (see [`Self::settled`]).
    pub fn settle(&mut self, kind: Kind) {
        self.settled[slot(kind)] = true;
    }

    /// Records a launch's time; `exploring` counts it against the budget,
    /// unless it measured the first candidate (`auto`'s grid, what the
    /// launch gets without a search: processes that start at once all
    /// measure it, at no cost).
    pub fn record(&mut self, i: usize, kind: Kind, ns: u64, exploring: bool) {
        self.samples[i].push(kind, ns);
        if exploring && i != 0 {
            self.explored[slot(kind)] = self.explored[slot(kind)].saturating_add(1);
        }
    }

    /// The candidates with samples of `kind`, fastest first (ties by order).
    pub fn ranked(&self, kind: Kind) -> Vec<(usize, u64)> {
        let mut ranked: Vec<(usize, u64)> = (0..self.candidates.len())
            .filter_map(|i| Some((i, self.samples[i].median(kind)?)))
            .collect();
        ranked.sort_by_key(|&(i, m)| (m, i));
        ranked
    }

    /// The candidates still in the race: within [`Params::drop`] of the leader.
    fn alive(&self, kind: Kind) -> Vec<(usize, u64)> {
        let ranked = self.ranked(kind);
        let Some(&(_, lead)) = ranked.first() else {
            return ranked;
        };
        let limit = lead as f64 * self.params(kind).drop;
        ranked
            .into_iter()
            .filter(|&(_, m)| m as f64 <= limit)
            .collect()
    }

    /// Whether candidate `i` has fallen far behind the leader of `kind`: its
    /// median over [`Params::drop`] times the leader's, and the leader
    /// faster beyond the noise ([`SIGNIFICANCE`]), so that a grid whose
    /// launches are merely noisy is not judged degraded.
    pub fn far_behind(&self, i: usize, kind: Kind) -> bool {
        let drop = self.params(kind).drop;
        let Some(mi) = self.samples[i].median(kind) else {
            return false;
        };
        let ranked = self.ranked(kind);
        // The common case first, without ranking by the noise rule: no
        // median is that far ahead at all (a sampled settled launch asks).
        if !ranked
            .iter()
            .any(|&(j, m)| j != i && m as f64 * drop < mi as f64)
        {
            return false;
        }
        let (_, spreads) = self.spreads(kind);
        let leader = self.leader_of(kind, &ranked, &spreads);
        let Some(ml) = self.samples[leader].median(kind) else {
            return false;
        };
        leader != i
            && mi as f64 > ml as f64 * drop
            && self.beats(kind, (leader, ml), (i, mi), &spreads)
    }

    /// The run-to-run spread of `kind`'s samples, in median-absolute-
    /// deviation units: the upper quartile, over every sample of a
    /// candidate with at least two, of its absolute deviation from the
    /// candidate's median, relative to that median, times
    /// [`MAD_PER_UPPER_QUARTILE_DEVIATION`]; never below the kind's
    /// [`Params::spread_floor`].
    ///
    /// For normal noise that is the median deviation. The upper quartile
    /// also sees noise that strikes a minority of launches: on the H100 a
    /// 30 us kernel ran 26-35 us or 52-66 us launch by launch, in one
    /// process, on one grid; the median deviation saw 4 % and let a grid
    /// whose eight samples fell mostly in the fast mode take the lead at
    /// 10 % slower than auto's grid (bench/results/h100/NOTES.md §17).
    pub fn spread(&self, kind: Kind) -> f64 {
        self.spreads(kind).0
    }

    /// [`Self::spread`], and each candidate's own spread in the same units:
    /// a candidate whose launches fall in a slow mode now and then is judged
    /// by its own noise, however quiet the others are. On fewer than
    /// [`OWN_SPREAD_SAMPLES`] its own spread reads low (two samples deviate
    /// alike), so the pooled one is the least it is taken for; from then on
    /// the kind's [`Params::spread_floor`] is, so that one noisy candidate
    /// (a session's run explores every search at once) does not make a
    /// close call between two quiet ones undecidable.
    fn spreads(&self, kind: Kind) -> (f64, Vec<f64>) {
        let floor = self.params(kind).spread_floor;
        let mut pooled: Vec<f64> = Vec::with_capacity(self.samples.len() * KEEP);
        let mut own: Vec<(f64, usize)> = Vec::with_capacity(self.samples.len());
        for i in 0..self.samples.len() {
            let (mut deviations, n) = self.deviations(i, kind);
            pooled.extend_from_slice(&deviations[..n]);
            own.push((
                upper_quartile(&mut deviations[..n]) * MAD_PER_UPPER_QUARTILE_DEVIATION,
                n,
            ));
        }
        let pooled = (upper_quartile(&mut pooled) * MAD_PER_UPPER_QUARTILE_DEVIATION).max(floor);
        let own = own
            .into_iter()
            .map(|(s, n)| {
                s.max(if n >= OWN_SPREAD_SAMPLES {
                    floor
                } else {
                    pooled
                })
            })
            .collect();
        (pooled, own)
    }

    /// The absolute deviations of candidate `i`'s samples of `kind` from
    /// their median, relative to it (failed launches, `u64::MAX`, say nothing
    /// about the noise); none below two samples. On the stack: the settled
    /// launch path re-ranks a search now and then.
    fn deviations(&self, i: usize, kind: Kind) -> ([f64; KEEP], usize) {
        let mut ran = [0u64; KEEP];
        let mut n = 0;
        for &x in self.samples[i].of(kind).iter().filter(|&&x| x != u64::MAX) {
            if n < KEEP {
                ran[n] = x;
                n += 1;
            }
        }
        let mut deviations = [0.0; KEEP];
        let m = match median(&ran[..n]) {
            Some(m) if n >= 2 => m.max(1) as f64,
            _ => return (deviations, 0),
        };
        for (d, &x) in deviations.iter_mut().zip(&ran[..n]) {
            *d = (x as f64 - m).abs() / m;
        }
        (deviations, n)
    }

    /// Whether candidate `fast` is faster than `slow` beyond the noise, each
    /// given with its median: `fast` has [`MIN_SAMPLES_TO_LEAD`] samples and
    /// its median is below `slow`'s by more than [`SIGNIFICANCE`] standard
    /// errors of the difference (at least [`TIE`]), each median's error
    /// from its own spread in `spreads` ([`Self::spreads`]; Welch's form).
    fn beats(
        &self,
        kind: Kind,
        (fast, mf): (usize, u64),
        (slow, ms): (usize, u64),
        spreads: &[f64],
    ) -> bool {
        let (nf, ns) = (
            self.samples[fast].of(kind).len(),
            self.samples[slow].of(kind).len(),
        );
        if nf < MIN_SAMPLES_TO_LEAD || ns == 0 {
            return false;
        }
        // Both errors on the fast median's scale, as the rule was
        // calibrated and measured (§14-17): that understates the slow
        // median's error by ms / mf, which matters for gaps far past the
        // noise (`far_behind`), not for the close calls that decide a lead.
        let (sf, ss) = (spreads[fast], spreads[slow]);
        let error = MEDIAN_ERROR_PER_MAD * (sf * sf / nf as f64 + ss * ss / ns as f64).sqrt();
        let z = self.params(kind).confirm.significance(nf, ns);
        mf as f64 * (1.0 + (z * error).max(TIE)) < ms as f64
    }

    /// The candidate to keep if the search stopped now. The earliest in the
    /// prior's order (auto, then LLVM, ...) that no measured candidate beats
    /// beyond the noise ([`SIGNIFICANCE`]), among those that may lead: the
    /// earliest candidate measured, and every other with
    /// [`MIN_SAMPLES_TO_LEAD`] samples; never one whose launches failed
    /// while another ran. So a later candidate takes the lead from the
    /// earliest only once its advantage over every earlier one is measured,
    /// on two samples at least. There is always one: the fastest with two
    /// samples is beaten by none, and without any, nothing beats the
    /// earliest.
    ///
    /// Once the earliest measured candidate (the grid the launch gets
    /// without a search) has lost the lead, the prior's order says no more
    /// than a guess: among the candidates no other beats, one with the
    /// samples its plan confirms a close call with ([`Params::confirm`])
    /// and a lower median takes the lead, the lowest. On the H100 the
    /// earliest rule kept a grid 3-31 % slower than one measured at least
    /// four times, in three sessions of the PRK star stencil; replayed over
    /// the sweeps, the lowest median keeps grids 0.1-0.7 points nearer the
    /// best and a third as many grids more than 3 % slower than `auto`'s
    /// (bench/results/h100/NOTES.md §47).
    ///
    /// The first candidate when nothing is measured: 0, which names no
    /// candidate in a search without any (a store's record of processes
    /// that timed no launch), so callers that may meet one look it up with
    /// `get`.
    pub fn leader(&self, kind: Kind) -> usize {
        self.leader_of(kind, &self.ranked(kind), &self.spreads(kind).1)
    }

    /// [`Self::leader`] from [`Self::ranked`] and [`Self::spreads`], for a
    /// caller that needs them too.
    fn leader_of(&self, kind: Kind, ranked: &[(usize, u64)], spreads: &[f64]) -> usize {
        let ran = |&(i, _): &(usize, u64)| !self.samples[i].of(kind).contains(&u64::MAX);
        let mut by_prior: Vec<(usize, u64)> = ranked.iter().copied().filter(ran).collect();
        if by_prior.is_empty() {
            by_prior = ranked.to_vec();
        }
        by_prior.sort_unstable();
        let first = by_prior.first().map(|&(i, _)| i);
        let may_lead = |i: usize, samples: usize| {
            Some(i) == first || self.samples[i].of(kind).len() >= samples
        };
        let unbeaten = |c: &(usize, u64)| {
            !ranked
                .iter()
                .any(|&d| d.0 != c.0 && self.beats(kind, d, *c, spreads))
        };
        let Some(earliest) = by_prior
            .iter()
            .copied()
            .filter(|&(i, _)| may_lead(i, MIN_SAMPLES_TO_LEAD))
            .find(unbeaten)
        else {
            return 0;
        };
        if Some(earliest.0) == first {
            return earliest.0;
        }
        let confirmed = self.params(kind).confirm.samples();
        by_prior
            .iter()
            .copied()
            .filter(|&(i, m)| m < earliest.1 && may_lead(i, confirmed))
            .filter(unbeaten)
            .chain([earliest])
            .min_by_key(|&(i, m)| (m, i))
            .map_or(0, |(i, _)| i)
    }

    /// The runner-up of [`Self::leader`], the grid a re-check measures.
    pub fn runner_up(&self, kind: Kind) -> Option<usize> {
        let leader = self.leader(kind);
        self.alive(kind)
            .into_iter()
            .map(|(i, _)| i)
            .find(|&i| i != leader)
    }

    /// What the next launch of `kind` does. `salt` (a per-process random
    /// number) spreads processes that run the same search at once over
    /// different candidates of the same round instead of the same one. A
    /// search without candidates is settled on its [`Self::leader`], 0.
    pub fn step(&self, kind: Kind, salt: u64) -> Step {
        let p = self.params(kind);
        if self.finished(kind) {
            return Step::Settled(self.leader(kind));
        }
        let pick = |options: &[usize]| options[(salt % options.len() as u64) as usize];
        let measured = (0..self.candidates.len())
            .filter(|&i| !self.samples[i].of(kind).is_empty())
            .count();
        if measured < p.candidates {
            // Screening, in the prior's order: the first candidate (auto,
            // the grid the process would get anyway) before all others,
            // then one of the next few unmeasured.
            if self.samples.first().is_some_and(|s| s.of(kind).is_empty()) {
                return Step::Explore(0);
            }
            let window: Vec<usize> = (0..self.candidates.len())
                .filter(|&i| self.samples[i].of(kind).is_empty())
                .filter(|&i| p.screens_llvm || self.candidates[i] != Candidate::Llvm)
                .filter(|&i| p.screens_starving || self.starving_from.is_none_or(|s| i < s))
                .filter(|&i| self.raced_from.is_none_or(|r| i < r))
                .take((p.candidates - measured).min(SPREAD))
                .collect();
            if !window.is_empty() {
                return Step::Explore(pick(&window));
            }
        }
        // Successive halving over the survivors, by sample counts: round r
        // keeps the best half of round r-1 and wants 1 + repeats * r
        // samples of each, at most the KEEP a candidate keeps.
        let alive = self.alive(kind);
        let count = |i: usize| self.samples[i].of(kind).len() as u32;
        // Copied only where some candidates are not the plan's: ranking
        // runs at every sample of a held-back search.
        let planned: Cow<'_, [(usize, u64)]> = match self.raced_from {
            Some(r) if r < self.candidates.len() => {
                Cow::Owned(alive.iter().copied().filter(|&(i, _)| i < r).collect())
            }
            _ => Cow::Borrowed(&alive),
        };
        let mut k = planned.len();
        let mut round = 0;
        loop {
            let next = kept(k);
            if next <= 1 {
                break;
            }
            round += 1;
            let target = plan::round_target(p.repeats, round);
            let (lead, lead_ns) = planned[0];
            let clear = lead_ns as f64 * (1.0 + p.clear);
            if count(lead) >= target && planned[1..].iter().all(|&(_, m)| m as f64 > clear) {
                break;
            }
            let needy: Vec<usize> = planned[..next]
                .iter()
                .map(|&(i, _)| i)
                .filter(|&i| count(i) < target)
                .collect();
            if !needy.is_empty() {
                return Step::Explore(pick(&needy));
            }
            k = next;
        }
        // A candidate faster than the leader by more than a tie, which the
        // noise still keeps from the lead, is measured again (with the
        // leader, when the plan confirms in pairs) before the search settles
        // without it.
        let leader = self.leader(kind);
        let wanted = p.confirm.samples() as u32;
        // A warm search leaves its first candidate (`auto`'s grid) only on
        // as many samples of it as a close call gets (unless its budget
        // ran out first, which settles it above): the first is the
        // process's first warm launch of the kernel, which some programs
        // run slow (miniWeather's first launches took 1.5-1.7x their steady
        // time on the H100, and one such sample made a session keep a grid
        // 1.7-3 % slower than `auto`'s: bench/results/h100/NOTES.md §49).
        // Launching `auto`'s grid costs nothing over what the launch gets
        // without a search.
        if kind == Kind::Warm && leader != 0 {
            let first = self.samples.first().map_or(&[][..], |s| s.of(kind));
            if !first.is_empty() && (first.len() as u32) < wanted && !first.contains(&u64::MAX) {
                return Step::Explore(0);
            }
        }
        let paired = matches!(p.confirm, Confirm::Paired { .. });
        // Candidates that are not the plan's race the leader in a session
        // only: online `tune` never launches a grid its prior does not list
        // (and would otherwise hold its launches back for good).
        let racing = if self.exploring.unbounded() {
            &alive[..]
        } else {
            &planned[..]
        };
        // `racing` is empty only for a search without candidates, whose
        // `leader` 0 names none: no sample of it is looked up.
        match racing.first() {
            Some(&(fastest, ns))
                if fastest != leader
                    && (ns as f64) * (1.0 + TIE)
                        < self.samples[leader].median(kind).unwrap_or(0) as f64 =>
            {
                let (f, l) = (count(fastest), count(leader));
                if paired && l < wanted && (l < f || f >= wanted) {
                    Step::Explore(leader)
                } else if f < wanted {
                    Step::Explore(fastest)
                } else {
                    Step::Settled(leader)
                }
            }
            _ => Step::Settled(leader),
        }
    }

    /// How sure the search is of its leader: the next fastest candidate's
    /// median over the leader's (1.10: 10 % slower; below 1 when a faster
    /// one does not beat it beyond the noise),
    /// `None` with fewer than two candidates measured.
    pub fn margin(&self, kind: Kind) -> Option<f64> {
        let leader = self.leader(kind);
        let lead = self.samples.get(leader)?.median(kind)?;
        let (_, next) = self.ranked(kind).into_iter().find(|&(i, _)| i != leader)?;
        Some(next as f64 / lead.max(1) as f64)
    }
}

/// Processes running one search at once pick among this many candidates of
/// a round.
const SPREAD: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_round_trip_through_their_spelling() {
        for c in [
            Candidate::Auto,
            Candidate::Llvm,
            Candidate::Occupancy,
            Candidate::Move {
                threads: 64,
                blocks_log2: -2,
            },
            Candidate::Grid(Geometry::new(32, 4224)),
        ] {
            assert_eq!(c.to_string().parse::<Candidate>(), Ok(c));
        }
        for bad in [
            "",
            "move:64",
            "move:0,1",
            "move:64,99",
            "grid:32,0",
            "grid:2048,1",
            "fast",
        ] {
            assert!(bad.parse::<Candidate>().is_err(), "{bad}");
        }
    }

    /// A store's record of processes that timed no launch holds no
    /// candidate (`"grids": {}`): every question about it is answered
    /// without looking up a sample, settled or not.
    #[test]
    fn a_search_without_candidates_answers_without_indexing_its_samples() {
        for settled in [[false, false], [true, true]] {
            let s = Search {
                settled,
                ..Search::default()
            };
            for kind in [Kind::Cold, Kind::Warm] {
                assert_eq!(s.leader(kind), 0);
                for salt in 0..3 {
                    assert_eq!(s.step(kind, salt), Step::Settled(0));
                }
                assert_eq!(s.runner_up(kind), None);
                assert_eq!(s.margin(kind), None);
                assert!(s.ranked(kind).is_empty());
                assert_eq!(s.spread(kind), Params::of(kind).spread_floor);
            }
        }
    }

    #[test]
    fn median_and_rolling_samples() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3, 1, 2]), Some(2));
        assert_eq!(median(&[1, 4]), Some(2));
        let mut s = Samples::default();
        for ns in 1..=20 {
            s.push(Kind::Warm, ns);
        }
        assert_eq!(s.warm, (13..=20).collect::<Vec<u64>>());
        assert!(s.cold.is_empty());
    }

    /// Runs `kind` launches through a search with exact times until it
    /// settles; returns the candidates it launched, in order.
    fn settle(search: &mut Search, kind: Kind, time: impl Fn(usize) -> u64) -> Vec<usize> {
        let mut launches = vec![];
        while let Step::Explore(i) = search.step(kind, 0) {
            search.record(i, kind, time(i), true);
            launches.push(i);
            assert!(
                search.explored(kind) <= Params::of(kind).budget,
                "over the budget"
            );
        }
        launches
    }

    /// A search over `moves(n)` with `samples` (candidate, ns) of `kind`.
    fn measured(n: usize, kind: Kind, samples: &[(usize, u64)]) -> Search {
        let mut s = Search::new(moves(n));
        for &(i, ns) in samples {
            s.record(i, kind, ns, true);
        }
        s
    }

    fn moves(n: usize) -> Vec<Candidate> {
        let mut c = vec![Candidate::Auto, Candidate::Llvm, Candidate::Occupancy];
        c.extend((0..n as i8).map(|k| Candidate::Move {
            threads: 64,
            blocks_log2: k,
        }));
        c
    }

    #[test]
    fn a_cold_search_settles_within_six_runs_on_the_best_of_four() {
        // Screened: auto, occupancy and the first two moves. LLVM's grid
        // (index 1) is never launched, fast as it would be; the third move,
        // faster than the rest, is beyond the cold plan.
        let times = [100, 10, 130, 80, 90, 50];
        let mut s = Search::new(moves(10));
        let launches = settle(&mut s, Kind::Cold, |i| times.get(i).copied().unwrap_or(200));
        // Four screened (130 is dropped: over 1.5x the leader), the leader
        // measured again, and then it is clear of the others by 10 %.
        assert_eq!(launches.len(), 5);
        assert_eq!(s.step(Kind::Cold, 0), Step::Settled(3));
        assert!(s.samples[1].cold.is_empty());
        assert!(s.samples[5].cold.is_empty());
        // Closer rivals take the whole plan: the two best twice each.
        let times = [1000, 1040, 1300, 995];
        let mut s = Search::new(moves(10));
        let launches = settle(&mut s, Kind::Cold, |i| {
            times.get(i).copied().unwrap_or(2000)
        });
        assert_eq!(launches.len(), 6);
        assert_eq!(
            s.step(Kind::Cold, 0),
            Step::Settled(0),
            "995 vs 1000 is a tie: auto"
        );
        assert!(s.samples[1].cold.is_empty());
    }

    /// ts_ocean's searches in a `gridsel tune` run on the H100: `auto`'s
    /// grid, dropped from the halving after one slow warm sample, stays the
    /// leader (one sample cannot be beaten beyond the noise) while a
    /// candidate of seven samples is faster. Online the plan settles on it;
    /// a session measures the leader again first (in pairs, up to four
    /// samples each), and the faster candidate takes the lead as soon as
    /// the leader's samples confirm it.
    #[test]
    fn a_session_measures_a_leader_of_one_sample_before_settling_on_it() {
        let mut samples = vec![(0, 1120), (3, 1000)];
        samples.extend([1080, 940, 1060, 960, 1050, 950].map(|ns| (3, ns)));
        samples.extend((1..13).filter(|&i| i != 3).map(|i| (i, 1200)));
        let online = measured(10, Kind::Warm, &samples);
        assert_eq!(online.step(Kind::Warm, 0), Step::Settled(0));
        let mut session = Search {
            exploring: Exploring::UNBOUNDED,
            ..online
        };
        let mut leader_samples = 0;
        while let Step::Explore(i) = session.step(Kind::Warm, 0) {
            assert_eq!(i, 0, "only the leader is measured");
            session.record(0, Kind::Warm, 1120 + 10 * (leader_samples % 2), true);
            leader_samples += 1;
        }
        assert!(
            (1..=3).contains(&leader_samples),
            "paired up to four samples each: {leader_samples}"
        );
        assert_eq!(session.step(Kind::Warm, 0), Step::Settled(3));
    }

    /// Twelve warm launches: the plan for twelve settles within them (the
    /// twelfth launch at the latest finds it settled), SESSION_WARM's does
    /// not; also when noise reorders the medians launch by launch, as it
    /// did on the host in `gridsel tune --runs 3` of a kernel launched five
    /// times per run (these times, in ns, by candidate and sample): every
    /// candidate got its second sample in the halving round that wanted
    /// two of them, and the leader and the fastest were then measured in
    /// pairs to four, which took the twelve. The budget settles it.
    #[test]
    fn a_search_given_twelve_warm_launches_settles_within_them_whatever_the_times() {
        let explores = |exploring, time: &dyn Fn(usize, usize) -> u64| {
            let mut s = Search {
                exploring,
                ..Search::new(moves(20))
            };
            let mut launches = 0;
            while let Step::Explore(i) = s.step(Kind::Warm, launches) {
                s.record(i, Kind::Warm, time(i, s.samples[i].warm.len()), true);
                launches += 1;
            }
            launches
        };
        let twelve = Exploring::in_session(Some(3), 5);
        let apart = |i: usize, _| 1000 + 30 * (i as u64 % 5);
        assert!(explores(twelve, &apart) <= 11);
        assert!(explores(Exploring::UNBOUNDED, &apart) > 11);
        let host = [
            [37_240, 31_955, 4_582, 4_197],
            [32_266, 32_448, 30_000, 30_000],
            [31_555, 38_823, 30_000, 30_000],
            [31_148, 32_208, 14_753, 4_291],
        ];
        let reordered = |i: usize, k: usize| host.get(i).map_or(40_000, |t| t[k.min(3)]);
        assert!(explores(twelve, &reordered) <= 11);
    }

    /// A session's search reaches the 22nd candidate of its prior, where
    /// the H100's best grids of PRK star2 and grid3 and LULESH l683 were
    /// (bench/results/h100/NOTES.md §43), and keeps it, the finalists'
    /// rounds stopping at the samples a candidate keeps; online `tune`'s
    /// twelve do not reach it.
    #[test]
    fn a_sessions_search_reaches_the_22nd_candidate_and_keeps_it() {
        let time = |i: usize, n: usize| match i {
            21 => 800,
            _ => 1000 + 7 * (i as u64 % 5) + (n as u64 % 2),
        };
        let run = |exploring| {
            let mut s = Search {
                exploring,
                ..Search::new(moves(27))
            };
            let mut launches = 0;
            while let Step::Explore(i) = s.step(Kind::Warm, launches) {
                s.record(i, Kind::Warm, time(i, s.samples[i].warm.len()), true);
                launches += 1;
                assert!(s.explored(Kind::Warm) <= s.params(Kind::Warm).budget);
            }
            (s.step(Kind::Warm, 0), launches)
        };
        let (session, launches) = run(Exploring::UNBOUNDED);
        assert_eq!(session, Step::Settled(21));
        assert!(launches as u32 <= Params::SESSION_WARM.most_launches());
        assert_eq!(run(Exploring::Bounded).0, Step::Settled(0));
        // Sized to the 48 warm launches of sixteen's plan, it stays short.
        let sized = Exploring::Unbounded {
            warm_launches: Some(48),
        };
        assert_eq!(run(sized).0, Step::Settled(0));
    }

    #[test]
    fn only_a_warm_search_screens_llvms_grid() {
        for (kind, launched) in [(Kind::Cold, false), (Kind::Warm, true)] {
            let mut s = Search::new(moves(10));
            settle(&mut s, kind, |i| 1000 + i as u64);
            assert_eq!(!s.samples[1].of(kind).is_empty(), launched, "{kind:?}");
        }
    }

    #[test]
    fn a_warm_search_halves_to_the_best_within_its_budget() {
        let mut s = Search::new(moves(20));
        let launches = settle(&mut s, Kind::Warm, |i| 1000 + 37 * (i as u64 % 7));
        assert!(launches.len() <= 34, "{launches:?}");
        let Step::Settled(w) = s.step(Kind::Warm, 0) else {
            panic!()
        };
        // Fastest among the first twelve: indices 0 and 7 tie at 1000; the
        // earlier wins.
        assert_eq!(w, 0);
        assert_eq!(s.ranked(Kind::Warm).len(), 12);
    }

    #[test]
    fn ties_go_to_the_earlier_candidate_and_far_slower_ones_are_dropped() {
        let s = measured(3, Kind::Cold, &[(0, 1000), (1, 1005), (2, 3000), (3, 995)]);
        assert_eq!(s.leader(Kind::Cold), 0);
        assert_eq!(s.alive(Kind::Cold).len(), 3);
        assert_eq!(s.runner_up(Kind::Cold), Some(3));
        assert!(s.margin(Kind::Cold).unwrap() < 1.0);
    }

    #[test]
    fn a_clear_leader_stops_the_search_early() {
        let mut s = Search::new(moves(10));
        let launches = settle(&mut s, Kind::Warm, |i| {
            if i == 5 { 800 } else { 1000 + i as u64 }
        });
        // Twelve screened, then the leader's two more samples make it
        // clear: no halving rounds for the others; `auto`'s grid, which
        // lost the lead on one sample, is measured to the three a close
        // call gets before the search settles.
        assert_eq!(launches.len(), 16);
        assert_eq!(&launches[14..], [0, 0]);
        assert_eq!(s.step(Kind::Warm, 0), Step::Settled(5));
    }

    #[test]
    fn a_slow_first_sample_of_autos_grid_is_no_ground_to_leave_it() {
        // `auto`'s first warm launch in the process runs 50 % slow, as a
        // program's first steps can; every grid is 1-3 % slower than it.
        for exploring in [Exploring::Bounded, Exploring::UNBOUNDED] {
            let mut s = Search::new(moves(10));
            s.exploring = exploring;
            let autos = std::cell::Cell::new(0);
            let launches = settle(&mut s, Kind::Warm, |i| match i {
                0 => {
                    autos.set(autos.get() + 1);
                    if autos.get() == 1 { 1500 } else { 1000 }
                }
                _ => 1000 + 10 * i.min(3) as u64,
            });
            assert!(
                launches.iter().filter(|&&i| i == 0).count() > 1,
                "{launches:?}"
            );
            assert_eq!(
                s.step(Kind::Warm, 0),
                Step::Settled(0),
                "{exploring:?}: {launches:?}"
            );
        }
    }

    #[test]
    fn salts_spread_concurrent_processes_over_a_round() {
        let mut s = Search::new(moves(10));
        assert_eq!(
            s.step(Kind::Warm, 3),
            Step::Explore(0),
            "auto first, whatever the salt"
        );
        s.record(0, Kind::Warm, 1000, true);
        let picks: std::collections::HashSet<usize> = (0..4u64)
            .map(|salt| s.step(Kind::Warm, salt).candidate())
            .collect();
        assert_eq!(picks.len(), 4);
    }

    #[test]
    fn the_spread_is_the_pooled_upper_quartile_deviation_with_a_floor() {
        let mut s = Search::new(moves(2));
        assert_eq!(s.spread(Kind::Cold), Params::COLD.spread_floor);
        // Median 1050 of four samples: deviations 50, 50, 150, 150 over
        // 1050; one sample of another candidate: none. Upper quartile
        // (interpolated at 2.25 of 0..3): 150.
        for ns in [1000, 1100, 900, 1200] {
            s.record(0, Kind::Cold, ns, true);
        }
        s.record(1, Kind::Cold, 2000, true);
        let want = 150.0 / 1050.0 * MAD_PER_UPPER_QUARTILE_DEVIATION;
        assert!((s.spread(Kind::Cold) - want).abs() < 1e-9);
        assert_eq!(s.spread(Kind::Warm), Params::WARM.spread_floor);
    }

    /// Launches in two modes, the slow one a minority: the median deviation
    /// sees only the fast mode's jitter, the upper quartile sees both.
    #[test]
    fn the_spread_sees_a_slow_mode_of_a_minority_of_launches() {
        let mut s = Search::new(moves(2));
        for ns in [30, 31, 29, 30, 55, 30, 58, 31] {
            s.record(0, Kind::Warm, ns * 1000, true);
        }
        // Median 30.5: six deviations of at most 1.5 (the median one 0.5,
        // 1.6 %), two of 24.5 and 27.5; the upper quartile is 7.25.
        let want = 7.25 / 30.5 * MAD_PER_UPPER_QUARTILE_DEVIATION;
        assert!(
            (s.spread(Kind::Warm) - want).abs() < 1e-9,
            "{}",
            s.spread(Kind::Warm)
        );
        // A challenger 10 % faster on three samples of the fast mode does
        // not take the lead through that noise.
        for ns in [27, 28, 27] {
            s.record(3, Kind::Warm, ns * 1000, true);
        }
        assert_eq!(s.leader(Kind::Warm), 0);
    }

    #[test]
    fn a_grid_is_far_behind_only_behind_the_leader_and_beyond_the_noise() {
        // auto's launches alternate 1000 and 2600 ns (median 1800); two
        // others ran once each, one of them at 700: the fastest median,
        // but one sample leads nothing, so auto is not far behind.
        let mut samples: Vec<(usize, u64)> =
            [1000, 2600].repeat(4).into_iter().map(|t| (0, t)).collect();
        samples.extend([(1, 1100), (2, 700)]);
        let noisy = measured(2, Kind::Warm, &samples);
        assert_eq!(noisy.leader(Kind::Warm), 0);
        assert!(!noisy.far_behind(0, Kind::Warm));
        // auto degraded to 3000 against LLVM's steady 1000: far behind.
        let mut samples = vec![(0, 3000); 8];
        samples.extend([(1, 1000), (1, 1010), (1, 990)]);
        let degraded = measured(2, Kind::Warm, &samples);
        assert_eq!(degraded.leader(Kind::Warm), 1);
        assert!(degraded.far_behind(0, Kind::Warm));
        assert!(!degraded.far_behind(1, Kind::Warm), "the leader");
        // A later grid whose launches alternate 700 and 2500 ns: its median
        // (1600) is past 1.5x auto's steady 1000, but its own noise is as
        // wide as the gap, so it is not judged degraded.
        let mut samples = vec![(0, 1000), (0, 1010), (0, 990), (0, 1000)];
        samples.extend([700, 2500].repeat(2).into_iter().map(|t| (3, t)));
        let wide = measured(2, Kind::Warm, &samples);
        assert_eq!(wide.leader(Kind::Warm), 0);
        assert!(!wide.far_behind(3, Kind::Warm));
    }

    #[test]
    fn a_later_candidate_leads_only_by_more_than_the_noise() {
        let auto = |ns: &[u64]| ns.iter().map(|&t| (0, t)).collect::<Vec<_>>();
        let with = |kind, auto_ns: &[u64], challenger: &[u64]| {
            let mut samples = auto(auto_ns);
            samples.extend(challenger.iter().map(|&t| (3, t)));
            measured(2, kind, &samples)
        };
        // A challenger 10 % faster than auto, on quiet samples: it leads.
        let quiet = [1000, 1010, 990, 1000];
        assert_eq!(
            with(Kind::Warm, &quiet, &[900, 905, 895]).leader(Kind::Warm),
            3
        );
        // One fast launch is not enough: auto keeps the lead, and the next
        // launch measures the challenger again.
        let once = with(Kind::Warm, &quiet, &[900]);
        assert_eq!(once.leader(Kind::Warm), 0);
        assert_eq!(once.runner_up(Kind::Warm), Some(3));
        // The same medians on samples that vary by 20 % from run to run:
        // a tie, kept by auto.
        let noisy = [1000, 1200, 800, 1000];
        assert_eq!(
            with(Kind::Cold, &noisy, &[900, 1100, 700]).leader(Kind::Cold),
            0
        );
        // Twice as fast wins through the same noise of auto's samples.
        assert_eq!(
            with(Kind::Cold, &noisy, &[500, 520, 480]).leader(Kind::Cold),
            3
        );
        // Measured as often as a plan confirms with, a challenger still
        // leaves auto a tie it keeps.
        assert_eq!(
            with(Kind::Cold, &noisy, &[900, 1100, 700, 900]).leader(Kind::Cold),
            0
        );
    }

    #[test]
    fn once_auto_is_beaten_the_lowest_median_measured_enough_leads() {
        // auto quiet at 1000. Occupancy (2) and move 0 (3), eight samples
        // each with a 5 % spread, both beat it; 900 against 870 is a tie
        // between them, which the prior's order gave occupancy.
        let quiet = [1000, 1010, 990, 1000].repeat(2);
        let mut samples: Vec<(usize, u64)> = quiet.iter().map(|&t| (0, t)).collect();
        let jitter = [-50, 50, -60, 60, 0, -10, 10, 0];
        samples.extend(jitter.iter().map(|&d| (2, (900 + d) as u64)));
        samples.extend(jitter.iter().map(|&d| (3, (870 + d) as u64)));
        let s = measured(3, Kind::Warm, &samples);
        assert_eq!(s.leader(Kind::Warm), 3);
        // A third one at 860 on three samples, fewer than the four a
        // session's plan confirms with, does not take it.
        let mut more = samples.clone();
        more.extend([(4, 840), (4, 880), (4, 860)]);
        let s = measured(3, Kind::Warm, &more);
        assert_eq!(s.params(Kind::Warm).confirm.samples(), 3);
        let mut session = s.clone();
        session.exploring = Exploring::Unbounded {
            warm_launches: None,
        };
        assert_eq!(session.leader(Kind::Warm), 3);
        // Online `tune` confirms with three: it leads there.
        assert_eq!(s.leader(Kind::Warm), 4);
    }

    #[test]
    fn a_sessions_close_call_leads_at_a_lower_significance() {
        // PRK nstream on the H100 (NOTES §52): auto at 350 us over 6
        // samples, a move 1.7 % faster over 8, both far quieter than the
        // 1 % floor. Two standard errors of the difference are 2.0 %: online
        // `tune` keeps auto's grid; a session, at 1.5, takes the faster one.
        let quiet = |centre: u64, n: usize| {
            [-1i64, 1, 0, 1, -1, 0, 1, -1][..n]
                .iter()
                .map(move |&d| (centre as i64 + d) as u64)
        };
        let mut samples: Vec<(usize, u64)> = quiet(350_000, 6).map(|t| (0, t)).collect();
        samples.extend(quiet(344_050, 8).map(|t| (3, t)));
        let online = measured(1, Kind::Warm, &samples);
        assert_eq!(online.spread(Kind::Warm), Params::WARM.spread_floor);
        assert_eq!(online.leader(Kind::Warm), 0);
        let session = Search {
            exploring: Exploring::UNBOUNDED,
            ..online.clone()
        };
        assert_eq!(session.leader(Kind::Warm), 3);
        // At 1.2 % faster the session keeps auto's grid too.
        let mut closer: Vec<(usize, u64)> = quiet(350_000, 6).map(|t| (0, t)).collect();
        closer.extend(quiet(345_800, 8).map(|t| (3, t)));
        let session = Search {
            exploring: Exploring::UNBOUNDED,
            ..measured(1, Kind::Warm, &closer)
        };
        assert_eq!(session.leader(Kind::Warm), 0);
        // 2.2 % faster, but auto has 3 samples, fewer than the close call's
        // 4: two standard errors (2.5 % here) until its fourth.
        let mut few: Vec<(usize, u64)> = quiet(350_000, 3).map(|t| (0, t)).collect();
        few.extend(quiet(342_300, 8).map(|t| (3, t)));
        let mut session = Search {
            exploring: Exploring::UNBOUNDED,
            ..measured(1, Kind::Warm, &few)
        };
        assert_eq!(session.leader(Kind::Warm), 0);
        session.record(0, Kind::Warm, 350_001, true);
        assert_eq!(session.leader(Kind::Warm), 3);
    }

    #[test]
    fn a_noisy_candidate_leaves_a_close_call_between_quiet_ones_decidable() {
        // auto and move 0 quiet (0.5 %), move 0 3 % faster; move 1 swings
        // by 20 %. Pooled, move 1's deviations would be the spread of all,
        // and 3 % a tie; each judged by its own eight samples, it is not.
        let mut samples: Vec<(usize, u64)> = vec![];
        for (i, centre) in [(0, 1000), (3, 970)] {
            samples.extend(
                [-5, 5, 0, 0]
                    .repeat(2)
                    .iter()
                    .map(|&d| (i, (centre + d) as u64)),
            );
        }
        samples.extend([900, 1300, 850, 1350, 950, 1250, 1000, 1200].map(|t| (4, t)));
        let s = measured(3, Kind::Warm, &samples);
        assert!(s.spread(Kind::Warm) > 0.05, "{}", s.spread(Kind::Warm));
        assert_eq!(s.leader(Kind::Warm), 3);
    }

    #[test]
    fn one_sample_never_leads_and_failures_never_do() {
        let cold = |samples: &[(usize, u64)]| measured(2, Kind::Cold, samples);
        // A launch 1.5x faster than the rest drops them from the race, but
        // it is one launch: auto keeps the lead and the challenger is
        // measured again.
        let s = cold(&[(0, 1000), (1, 1600), (2, 1700), (3, 600)]);
        assert_eq!(s.leader(Kind::Cold), 0);
        assert_eq!(s.step(Kind::Cold, 0), Step::Explore(3));
        // Occupancy beats auto on three samples; LLVM's one fast launch,
        // earlier in the prior, does not take the lead from it.
        let mut samples = vec![(0, 1000), (0, 1000), (0, 1000), (1, 840), (3, 1400)];
        samples.extend([(2, 700); 3]);
        assert_eq!(cold(&samples).leader(Kind::Cold), 2);
        // auto's launch failed: the one candidate that ran leads, also
        // when auto ran before (its median is no failure then).
        let s = cold(&[(0, u64::MAX), (1, 900)]);
        assert_eq!(s.leader(Kind::Cold), 1);
        assert_eq!(
            cold(&[(0, 800), (0, u64::MAX), (1, 900)]).leader(Kind::Cold),
            1
        );
        assert_eq!(s.spread(Kind::Cold), Params::COLD.spread_floor);
    }

    #[test]
    fn a_fast_challenger_is_confirmed_before_the_search_settles() {
        // Screening finds move 0 (index 3) 30 % faster than auto once; the
        // plan measures it again rather than settle on one launch.
        let mut s = measured(2, Kind::Cold, &[(0, 1000), (1, 1600), (2, 1700), (3, 700)]);
        assert_eq!(s.leader(Kind::Cold), 0);
        assert_eq!(s.step(Kind::Cold, 0), Step::Explore(3));
        s.record(3, Kind::Cold, 710, true);
        assert_eq!(s.step(Kind::Cold, 0), Step::Settled(3));
    }

    #[test]
    fn a_cold_search_confirms_a_close_challenger_in_pairs_with_the_leader() {
        // Move 0 (index 3) is 8 % faster than auto on quiet samples: under
        // the 5 % cold floor, three samples against two are within two
        // standard errors (17 %), so the plan measures the pair in turn to
        // four samples each, and then the challenger leads at one (6.6 %).
        let times = [1000, 3000, 1250, 920, 1200];
        let mut s = Search::new(moves(2));
        let order = settle(&mut s, Kind::Cold, |i| times[i]);
        assert_eq!(s.step(Kind::Cold, 0), Step::Settled(3), "{order:?}");
        assert_eq!(order, [0, 2, 3, 4, 3, 0, 3, 0, 3, 0]);
        assert_eq!((s.samples[0].cold.len(), s.samples[3].cold.len()), (4, 4));
        assert!(s.samples[1].cold.is_empty());
        // Four samples each of a challenger within the 5 % floor stay a
        // tie: auto keeps the lead.
        let times = [1000, 3000, 1250, 960, 1200];
        let mut s = Search::new(moves(2));
        settle(&mut s, Kind::Cold, |i| times[i]);
        assert_eq!(s.step(Kind::Cold, 0), Step::Settled(0));
        assert_eq!(s.samples[3].cold.len(), 4);
        // A warm search measures only the challenger again, to three
        // samples, and leads at two standard errors, as it always did: with
        // auto's grid as quiet, 8 % under its 1 % floor is clear at once.
        let mut s = Search::new(moves(2));
        settle(&mut s, Kind::Warm, |i| {
            times.get(i).copied().unwrap_or(1300)
        });
        assert_eq!(s.step(Kind::Warm, 0), Step::Settled(3));
    }

    #[test]
    fn warm_and_cold_samples_never_mix() {
        let mut s = Search::new(moves(2));
        s.record(0, Kind::Cold, 10, true);
        s.record(1, Kind::Warm, 1, true);
        s.record(2, Kind::Cold, 20, true);
        assert_eq!(s.leader(Kind::Cold), 0);
        assert_eq!(s.leader(Kind::Warm), 1);
        // auto's launches are free.
        assert_eq!(s.explored(Kind::Cold), 1);
        assert_eq!(s.explored(Kind::Warm), 1);
    }
}
