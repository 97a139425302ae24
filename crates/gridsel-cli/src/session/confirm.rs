//! Whether what a tuning session learned holds in production: a pure
//! decision over the confirmation pairs' launch times.
//!
//! Samples taken inside tuning runs mislead: in a time-stepping code a
//! kernel's time depends on what its neighbours launch, and in a tuning run
//! they explore. So a session ends with pairs of production runs, one under
//! `auto` without the store and one under `auto` reading what was learned.
//! Those runs are noisy in two ways, both seen on an H100: single outlier
//! launches (one launch at 3x its kernel's median), and whole-run shifts of
//! several per cent between processes running the very same grids (clocks,
//! memory placement). Within one kernel, three pairs' ratios spread from
//! 0.86 to 1.77 in a time-stepping code. A rule asking every pair to agree
//! refuses real gains on that noise, so the learned grids are judged as the
//! set production runs launch together, and a single grid only for harm:
//!
//! - **The program** is judged on its GPU time, taken as the sum over its
//!   searches of the median launch time times the launches ("median-sum"):
//!   unlike the plain sum of every launch's time (reported beside it), it
//!   is not moved by one outlier launch, which on a short kernel weighs as
//!   much as a real gain. Whole-run shifts remain, and pairing is what
//!   cancels them: per pair, the learned run's median-sum over auto's. The
//!   learned set is **kept** when the median of those ratios is below 1 and
//!   a sign test says the pairs are not noise: so many pairs faster that,
//!   were either run as likely to win, the session would keep a set at
//!   some look with a chance of at most 1/8 ([`Looks`]: at 3 pairs asked,
//!   4 of 4, 5 of 5, 6 of 6, 6 of 7, 7 of 8, 8 of 9); it is
//!   **refused** as slower when the median is at least 1 and as many pairs
//!   are slower. Otherwise (the pairs disagree) it is **undecided**: the
//!   session adds pairs while that holds, up to three times the pairs
//!   asked, and refuses what is still undecided then, since auto's grids
//!   cost nothing and a production run must not be slower than auto.
//!   The session then confirms, against auto's with the program's other
//!   searches at auto's grids and by this same decision, first the set's
//!   searches launched often enough to alternate, together, where the set
//!   went to pairs of runs for others launched too rarely ([`together`]),
//!   then each of the searches that gained most on its own ([`alone`]);
//!   one kept so is written whatever the set's verdict.
//! - **A search** (kernel and trip-count class, as the store keys them)
//!   whose learned grid differs from auto's is refused, even in a kept set,
//!   when it is slower than auto's grid beyond the noise: its median launch
//!   time over auto's above [`HARM`] (1.03) in the median pair of runs, or
//!   above [`HARM_WITHIN`] (1.01) in the median alternating run, and above 1
//!   in most. Failing to win every pair is no reason: that is the noise.
//! - When no search launched another grid than auto's, there is nothing to
//!   confirm: what was learned changes nothing in production.
//!
//! Where every search the learned set changes is launched at least
//! [`MIN_ALTERNATING_LAUNCHES`] times a run ([`can_alternate`]), a "pair"
//! is one run instead, under `auto` reading the store with the learned grids
//! launched only at each search's odd-numbered launches in odd-numbered
//! runs, at its even-numbered ones from the third on in even-numbered runs
//! (`GRIDSEL_LEARNED_ALTERNATE`, `LearnedLaunches::of_run`), and auto's
//! at the others, the cold first launch among them but left out of both
//! sides (`gridsel_cli::launches`, where `gridsel-research sides` splits
//! the measurements' runs the same way). A code doing different work on odd
//! and even steps (ping-pong buffers) so favours each side in turn, and
//! the sign test reads that as noise, not as an effect of the grids. Two
//! halves of one run of the very same grids differ by 1-4 % where two runs
//! differ by 10-40 % (an H200, run 4 of the session measurements), so the
//! same decision tells far smaller gains; in a time-stepping code, where
//! every kernel is launched once a step, whole steps alternate, and a
//! search whose grid did not change still shows what its neighbours' do to
//! it. A search launched once or twice a run has no warm launch on one
//! side, so a set changing one is confirmed in pairs of runs.
//!
//! What is refused must not survive from an earlier session either, so a
//! search whose own grid the runs reading the store launched is written
//! ([`Action::Write`]) or removed from the store ([`Action::Remove`]); one
//! that gave auto's grid (settled there, or still exploring: production
//! launches auto's grid for it) or that the pairs did not launch (a trip
//! count only the tuning runs reached) is written with a kept set and left
//! as the store has it otherwise. The session hands over only the searches
//! its runs added to, of the GPU and build they ran: never another GPU's or
//! build's, nor a pinned one (`session/store.rs`).

use crate::compare::report::counted;
use gridsel_cli::launches::{
    Grid, Launched, MIN_ALTERNATING_LAUNCHES, Pair, RunTimes, SearchKey, grid_label,
};
use gridsel_cli::stats::median;
use std::collections::{BTreeMap, BTreeSet};

/// How much slower than auto's grid, in the median pair, a learned grid
/// must be before it is refused: beyond the few per cent that the same
/// grid's median moves between processes.
const HARM: f64 = 1.03;

/// [`HARM`] where the two sides ran in one process, launch by launch
/// ([`Confirmed::Alternating`]): no difference between processes enters, so
/// a learned grid more than 1 % slower than auto's in the median run (and
/// slower in most) is refused, the bound a production run is held to
/// against auto's grids within one process (issue 37). On the H100 a
/// session that refused only above 3 % kept LULESH's `l2298` and `l2022`
/// at 1.013 and 1.014 (slower in 4 and 3 of 4 alternating runs), which its
/// production then ran 1.5-3.8 % slower than auto under Nsight Compute
/// (bench/results/h100/NOTES.md §44).
const HARM_WITHIN: f64 = 1.01;

/// The sign test's level: the chance, were the two runs of a pair equally
/// likely to win, that the session keeps (or refuses as slower) a set at
/// any of its looks ([`Looks`]).
const LEVEL: f64 = 0.125;

/// When the session looks at the pairs: after `first` (the pairs asked,
/// `--confirm`) and after each pair more up to `last`. Looking again after
/// every added pair would, at one fixed per-look level, keep a set no
/// better than auto's more often than [`LEVEL`] (about 1 time in 5 over
/// 3 to 9 pairs at 1/8 per look), so the pairs that must agree at each look
/// are set together: the largest per-look level whose chance of any look
/// agreeing, with no difference between the runs, is at most [`LEVEL`]
/// (a group-sequential sign test). At 3 to 9 pairs: 4 of 4, 5 of 5, 6 of 6,
/// 6 of 7, 7 of 8, 8 of 9 (9.4 % in all); at 1 pair asked: 3 of 3 (12.5 %).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Looks {
    pub first: usize,
    pub last: usize,
}

impl Looks {
    /// The pairs that must agree at each look, from `first` to `last`
    /// pairs (more than the pairs: no verdict at that look).
    fn needed(self) -> Vec<usize> {
        let (mut low, mut high) = (0.0, LEVEL);
        for _ in 0..60 {
            let level = (low + high) / 2.0;
            if self.chance(level).0 <= LEVEL {
                low = level;
            } else {
                high = level;
            }
        }
        self.chance(low).1
    }

    /// At a per-look `level`: the chance that some look agrees, with no
    /// difference between the runs (ties count against agreeing), and the
    /// pairs each look needs.
    fn chance(self, level: f64) -> (f64, Vec<usize>) {
        let first = self.first.max(1);
        // `paths[k]`: the chance of k pairs agreeing so far, no look having
        // stopped there.
        let mut paths = vec![1.0];
        let (mut stopped, mut needed) = (0.0, Vec::new());
        for n in 1..=self.last.max(first) {
            let mut next = vec![0.0; n + 1];
            for (k, p) in paths.iter().enumerate() {
                next[k] += p / 2.0;
                next[k + 1] += p / 2.0;
            }
            paths = next;
            if n >= first {
                let need = (0..=n).find(|&k| tail(k, n) <= level).unwrap_or(n + 1);
                for p in paths.iter_mut().skip(need) {
                    stopped += *p;
                    *p = 0.0;
                }
                needed.push(need);
            }
        }
        (stopped, needed)
    }

    /// The pairs that must agree at the look after `n` pairs; `None` where
    /// there is no look (before the first, past the last).
    fn needed_at(self, n: usize) -> Option<usize> {
        let first = self.first.max(1);
        n.checked_sub(first)
            .and_then(|look| self.needed().get(look).copied())
    }
}

/// The chance of at least `k` of `n` fair coin flips coming up one side.
fn tail(k: usize, n: usize) -> f64 {
    let ways = |j: usize| (0..j).fold(1.0, |c: f64, i| c * (n - i) as f64 / (i + 1) as f64);
    (k..=n).map(ways).sum::<f64>() / 2f64.powi(n as i32)
}

/// Whether the confirmation runs can alternate: every search in `changed`
/// (those the learned set launches another grid than auto's for) that a
/// run launches is launched at least [`MIN_ALTERNATING_LAUNCHES`] times, as
/// `per_run` counts a run's launches per search, and some search is (else
/// an alternating run would compare nothing). A search the run does not
/// launch (a trip count only the tuning runs reached, another GPU's) is no
/// reason to run pairs.
pub fn can_alternate<'a>(
    mut changed: impl Iterator<Item = &'a SearchKey>,
    per_run: &BTreeMap<SearchKey, usize>,
) -> bool {
    per_run.values().any(|&n| often(n))
        && changed.all(|key| per_run.get(key).is_none_or(|&n| often(n)))
}

/// Whether a search launched `n` times a run is launched often enough to
/// alternate ([`MIN_ALTERNATING_LAUNCHES`]).
fn often(n: usize) -> bool {
    n >= MIN_ALTERNATING_LAUNCHES
}

/// What was decided for one search.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchVerdict {
    pub key: SearchKey,
    /// The grids launched in the first pair that launched the search.
    pub auto_grid: Grid,
    pub learned_grid: Grid,
    /// Whether the runs reading the store launched another grid than
    /// auto's in some pair (else the store changes nothing for it).
    pub changed: bool,
    /// The median over the pairs of learned over auto (median launch times).
    pub ratio: Option<f64>,
    /// Whether the search passed its own test (the program's may still
    /// refuse it: [`Verdict::action`]).
    pub kept: bool,
    /// Why, in the user's terms.
    pub reason: String,
}

/// What the pairs say of the program's learned set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No search launched another grid than auto's.
    NothingChanged,
    Faster,
    Slower,
    /// The pairs disagree: more pairs may tell.
    Undecided,
    /// The confirmation runs launched no kernel.
    NoLaunches,
}

/// What happens to a search in the store the session writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Written in place of the store's search of its key.
    Write,
    /// Refused: the store's search of its key, an earlier session's, is
    /// removed, so that production runs do not launch it.
    Remove,
    /// Left as the store has it.
    Leave,
}

/// How the confirmation compared the two sets: the unit its decision
/// counts, and what its messages call the two sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirmed {
    /// Pairs of runs, one without the store and one reading it.
    Pairs,
    /// Alternating runs, each split into its learned grids' launches and
    /// auto's.
    Alternating,
}

impl Confirmed {
    /// Its word in kernels.csv.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pairs => "pairs",
            Self::Alternating => "alternating",
        }
    }

    /// `n` of the unit a decision counts: "3 pairs", "1 alternating run".
    pub fn counted(self, n: usize) -> String {
        match self {
            Self::Pairs => counted(n, "pair", "pairs"),
            Self::Alternating => counted(n, "alternating run", "alternating runs"),
        }
    }

    /// The median one: "the median pair", "the median run".
    pub fn median(self) -> &'static str {
        match self {
            Self::Pairs => "the median pair",
            Self::Alternating => "the median run",
        }
    }

    /// The runs one of its pairs takes.
    pub fn runs_per_pair(self) -> f64 {
        match self {
            Self::Pairs => 2.0,
            Self::Alternating => 1.0,
        }
    }

    /// The learned side and auto's, as the messages name them.
    pub fn sides(self) -> (&'static str, &'static str) {
        match self {
            Self::Pairs => ("the runs reading the store", "the runs without it"),
            Self::Alternating => ("the learned grids' launches", "auto's"),
        }
    }
}

/// The decisions for one program's session.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Per search launched in every run of the pairs.
    pub searches: Vec<SearchVerdict>,
    /// How many pairs were judged, and in how many the runs reading the
    /// store had the lower median-sum GPU time.
    pub pairs: usize,
    pub faster_pairs: usize,
    pub slower_pairs: usize,
    /// The median over the pairs of the learned run's GPU time over
    /// auto's: median-sum (what is decided on) and plain sum.
    pub gpu_ratio: Option<f64>,
    pub plain_ratio: Option<f64>,
    pub outcome: Outcome,
    /// Whether the pairs were pairs of runs or alternating runs.
    pub by: Confirmed,
}

impl Verdict {
    /// Whether more pairs could decide what these could not.
    pub fn undecided(&self) -> bool {
        self.outcome == Outcome::Undecided
    }

    /// Why the program's learned set is refused, in the user's terms;
    /// `None` when it is kept.
    pub fn program_refused(&self) -> Option<String> {
        let (faster, slower) = (self.faster_pairs, self.slower_pairs);
        let pairs = self.by.counted(self.pairs);
        let (learned, auto) = self.by.sides();
        let median = self.by.median();
        let ratio = self.gpu_ratio.map_or("-".into(), percent);
        match self.outcome {
            Outcome::NothingChanged | Outcome::Faster => None,
            Outcome::Slower => Some(format!(
                "{learned} took {ratio} of the GPU time of {auto} \
                 (median of {pairs}, slower in {slower})"
            )),
            Outcome::Undecided => Some(format!(
                "{pairs} could not tell {learned} from {auto} \
                 ({ratio} of their GPU time in {median}, faster in {faster})"
            )),
            Outcome::NoLaunches => Some("the confirmation runs launched no kernel".to_string()),
        }
    }

    /// What to do with the search `key` in the store (module doc).
    pub fn action(&self, key: &SearchKey) -> Action {
        let set_kept = self.program_refused().is_none();
        match self.searches.iter().find(|d| d.key == *key) {
            Some(d) if set_kept && d.kept => Action::Write,
            // Only a grid production would launch instead of auto's is
            // refused; a search that gave auto's grid (settled there, or
            // still exploring) keeps what it has.
            Some(d) if d.changed => Action::Remove,
            _ if set_kept => Action::Write,
            _ => Action::Leave,
        }
    }
}

/// The searches to confirm on their own where the pairs could not tell
/// the learned set from auto's, at most `most`: those whose own learned
/// grid the set changed and that were faster than auto's in the median
/// pair, the fastest first. A set whose gain is in a few kernels, drowned
/// by the noise of all the others, is then not refused whole.
pub fn alone(verdict: &Verdict, most: usize) -> Vec<SearchKey> {
    let mut faster: Vec<(f64, &SearchKey)> = verdict
        .searches
        .iter()
        .filter(|d| d.changed && d.kept)
        .filter_map(|d| Some((d.ratio.filter(|r| *r < 1.0)?, &d.key)))
        .collect();
    faster.sort_by(|a, b| a.0.total_cmp(&b.0));
    faster
        .into_iter()
        .take(most)
        .map(|(_, k)| k.clone())
        .collect()
}

/// The searches to confirm together in alternating runs where the set was
/// confirmed in pairs of runs because some of its searches are launched too
/// rarely to alternate (a set-up kernel beside a time step's): those the
/// runs reading the store changed and that the run counted launched often
/// enough to alternate ([`often`]); none unless at least two are (one is confirmed
/// alone, [`alone`]). Also those the pairs found slower than auto's: on
/// the H100 a whole-run shift made every search of a miniWeather session
/// 9-11 % slower in the median pair, `auto`'s own grid too
/// (bench/results/h100/NOTES.md §47); within one process the few per cent
/// they gain or lose is told from noise, and one slower by more than
/// [`HARM_WITHIN`] is refused there.
pub fn together(verdict: &Verdict, per_run: &BTreeMap<SearchKey, usize>) -> Vec<SearchKey> {
    if verdict.by != Confirmed::Pairs {
        return Vec::new();
    }
    let often: Vec<SearchKey> = (verdict.searches.iter())
        .filter(|d| d.changed)
        .filter(|d| per_run.get(&d.key).is_some_and(|&n| often(n)))
        .map(|d| d.key.clone())
        .collect();
    if often.len() < 2 { Vec::new() } else { often }
}

/// Decides over `pairs`, at the look `looks` places them, `by` pairs of
/// runs or alternating runs (module doc).
pub fn decide(pairs: &[Pair], looks: Looks, by: Confirmed) -> Verdict {
    let ratios = |gpu: fn(&RunTimes) -> f64| -> Vec<f64> {
        pairs
            .iter()
            .filter(|p| gpu(&p.auto) > 0.0)
            .map(|p| gpu(&p.learned) / gpu(&p.auto))
            .collect()
    };
    let gpu = ratios(RunTimes::median_sum_ns);
    let gpu_ratio = median(&gpu);
    let plain_ratio = median(&ratios(|r| r.total_ns));
    let keys: BTreeSet<&SearchKey> = pairs
        .iter()
        .flat_map(|p| p.auto.searches.keys().chain(p.learned.searches.keys()))
        .collect();
    let searches: Vec<SearchVerdict> = keys
        .into_iter()
        .filter_map(|key| decide_search(key, pairs, by))
        .collect();
    let faster_pairs = gpu.iter().filter(|r| **r < 1.0).count();
    let slower_pairs = gpu.iter().filter(|r| **r > 1.0).count();
    let need = looks.needed_at(gpu.len());
    let outcome = match gpu_ratio {
        None => Outcome::NoLaunches,
        Some(_) if searches.iter().all(|d| !d.changed) => Outcome::NothingChanged,
        Some(r) if r < 1.0 && need.is_some_and(|k| faster_pairs >= k) => Outcome::Faster,
        Some(r) if r >= 1.0 && need.is_some_and(|k| slower_pairs >= k) => Outcome::Slower,
        Some(_) => Outcome::Undecided,
    };
    Verdict {
        searches,
        pairs: gpu.len(),
        faster_pairs,
        slower_pairs,
        gpu_ratio,
        plain_ratio,
        outcome,
        by,
    }
}

/// The decision for `key`, over the pairs whose both runs launched it. A
/// search only the runs reading the store launched cannot be compared with
/// auto's and is refused; one only auto's runs launched is none of the
/// store's doing.
fn decide_search(key: &SearchKey, pairs: &[Pair], by: Confirmed) -> Option<SearchVerdict> {
    let launched: Vec<(Launched, Launched)> = pairs
        .iter()
        .filter_map(|p| Some((*p.auto.searches.get(key)?, *p.learned.searches.get(key)?)))
        .collect();
    let Some(&(auto, learned)) = launched.first() else {
        let learned = pairs.iter().find_map(|p| p.learned.searches.get(key))?;
        return Some(SearchVerdict {
            key: key.clone(),
            auto_grid: learned.grid,
            learned_grid: learned.grid,
            changed: true,
            ratio: None,
            kept: false,
            reason:
                "launched only by the runs reading the store: not compared with auto's, refused"
                    .to_string(),
        });
    };
    let ratios: Vec<f64> = launched
        .iter()
        .map(|(a, l)| l.median_ns / a.median_ns.max(1.0))
        .collect();
    let ratio = median(&ratios);
    let same_grid = launched.iter().all(|(a, l)| a.grid == l.grid);
    let slower_in_most = 2 * ratios.iter().filter(|r| **r > 1.0).count() > ratios.len();
    let harm = match by {
        Confirmed::Alternating => HARM_WITHIN,
        Confirmed::Pairs => HARM,
    };
    let harmful = ratio.is_some_and(|r| r > harm) && slower_in_most;
    let shown = ratios
        .iter()
        .map(|r| format!("{r:.3}"))
        .collect::<Vec<_>>()
        .join(" ");
    let (kept, reason) = if same_grid {
        (true, "learned auto's grid".to_string())
    } else if harmful {
        (
            false,
            format!(
                "kept: auto's grid, the learned {} was slower in production (ratios {shown})",
                grid_label(learned.grid)
            ),
        )
    } else {
        (
            true,
            format!("the learned grid was not slower in production (ratios {shown})"),
        )
    };
    Some(SearchVerdict {
        key: key.clone(),
        auto_grid: auto.grid,
        learned_grid: learned.grid,
        changed: !same_grid,
        ratio,
        kept,
        reason,
    })
}

fn percent(ratio: f64) -> String {
    format!("{:.1} %", ratio * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsel_cli::launches::{Launches, Side, alternating_side};
    use gridsel_cli::profile_rows::ProfileRow;
    use gridsel_core::tune::LearnedLaunches;

    const L52: &str = "__omp_offloading_fd00_2a_ad_step_l52";
    const L64: &str = "__omp_offloading_fd00_2a_oc_step_l64";
    const L70: &str = "__omp_offloading_fd00_2a_oc_step_l70";
    const L91: &str = "__omp_offloading_fd00_2a_oc_step_l91";
    const AUTO: Grid = (3200, 128);

    /// A run launching each of `searches` (kernel, grid, median µs) 10
    /// times at trip-count class 45; its plain GPU time their median-sum
    /// plus `outliers_us`.
    fn run(searches: &[(&str, Grid, f64)], outliers_us: f64) -> RunTimes {
        let searches: BTreeMap<SearchKey, Launched> = searches
            .iter()
            .map(|&(k, grid, us)| {
                let median_ns = us * 1e3;
                let launched = Launched {
                    grid,
                    median_ns,
                    launches: 10,
                };
                ((k.to_string(), 45), launched)
            })
            .collect();
        let mut run = RunTimes {
            searches,
            total_ns: 0.0,
        };
        run.total_ns = run.median_sum_ns() + outliers_us * 1e3;
        run
    }

    fn key(kernel: &str) -> SearchKey {
        (kernel.to_string(), 45)
    }

    /// Pairs of a time-stepping code as an H100 ran it: per pair, each
    /// kernel's (grid, µs) under auto and reading the store, where every
    /// kernel moves with the whole run (`shift`: the learned run's clocks
    /// against auto's).
    fn pairs(kernels: &[(&str, Grid, [f64; 2])], shifts: &[f64], noise: &[&[f64]]) -> Vec<Pair> {
        shifts
            .iter()
            .enumerate()
            .map(|(i, shift)| {
                let side = |learned: bool| -> Vec<(&str, Grid, f64)> {
                    kernels
                        .iter()
                        .enumerate()
                        .map(|(k, &(name, grid, [auto_us, learned_us]))| {
                            if learned {
                                (name, grid, learned_us * shift * noise[k][i])
                            } else {
                                (name, AUTO, auto_us)
                            }
                        })
                        .collect()
                };
                Pair {
                    auto: run(&side(false), 0.0),
                    learned: run(&side(true), 0.0),
                }
            })
            .collect()
    }

    const QUIET: &[f64] = &[1.0; 9];

    /// The looks of the default, `--confirm 3`: after 3 pairs, then up to 9.
    const THREE: Looks = Looks { first: 3, last: 9 };

    #[test]
    fn identical_grids_in_noisy_pairs_change_nothing_and_need_no_more_pairs() {
        // long_stream_minmax: the store held nothing for it, so both runs
        // launched auto's grids; one pair 48 % apart all the same.
        let kernels = [(L64, AUTO, [52.0, 52.0]), (L70, AUTO, [30.0, 30.0])];
        let verdict = decide(
            &pairs(&kernels, &[0.99, 1.48, 1.02], &[QUIET, QUIET]),
            THREE,
            Confirmed::Pairs,
        );
        assert_eq!(verdict.outcome, Outcome::NothingChanged);
        assert!(!verdict.undecided());
        assert_eq!(verdict.program_refused(), None);
        assert!(
            (verdict.gpu_ratio.unwrap() - 1.02).abs() < 1e-9,
            "{verdict:?}"
        );
        for k in [L64, L70] {
            assert_eq!(verdict.action(&key(k)), Action::Write);
        }
    }

    #[test]
    fn a_set_ten_percent_faster_with_one_noisy_kernel_is_kept_whole() {
        // l64's learned grid is 1.4x faster; l91's ratios spread 0.86-1.77
        // over the pairs with its neighbours' grids (median 0.95).
        let kernels = [
            (L64, (7392, 32), [100.0, 70.0]),
            (L91, (4096, 128), [10.0, 10.0]),
            (L70, AUTO, [200.0, 200.0]),
        ];
        let shifts = [1.02, 1.01, 1.03, 1.0];
        let l91 = [0.86 / shifts[0], 1.77 / shifts[1], 0.95 / shifts[2], 0.9];
        let noise = [QUIET, &l91, QUIET];
        // 3 of 3 faster is not yet beyond chance when up to 9 may follow.
        let three = decide(
            &pairs(&kernels, &shifts[..3], &noise),
            THREE,
            Confirmed::Pairs,
        );
        assert_eq!((three.outcome, three.faster_pairs), (Outcome::Undecided, 3));
        let verdict = decide(&pairs(&kernels, &shifts, &noise), THREE, Confirmed::Pairs);
        assert_eq!(verdict.outcome, Outcome::Faster, "{verdict:?}");
        assert_eq!((verdict.pairs, verdict.faster_pairs), (4, 4));
        let gpu = verdict.gpu_ratio.unwrap();
        assert!((0.9..0.95).contains(&gpu), "{verdict:?}");
        let noisy = verdict.searches.iter().find(|d| d.key == key(L91)).unwrap();
        assert_eq!(
            noisy.reason,
            "the learned grid was not slower in production (ratios 0.860 1.770 0.950 0.900)"
        );
        for k in [L64, L91, L70] {
            assert_eq!(verdict.action(&key(k)), Action::Write, "{verdict:?}");
        }
    }

    #[test]
    fn one_kernel_ten_percent_slower_in_every_pair_is_dropped_from_a_kept_set() {
        let kernels = [
            (L64, (7392, 32), [52.0, 29.0]),
            (L52, (4096, 128), [32.2, 35.42]),
        ];
        let l52 = &[1.0, 0.99, 1.01, 1.0][..];
        let verdict = decide(
            &pairs(&kernels, &[1.0; 4], &[QUIET, l52]),
            THREE,
            Confirmed::Pairs,
        );
        assert_eq!(verdict.outcome, Outcome::Faster, "{verdict:?}");
        let slower = verdict.searches.iter().find(|d| d.key == key(L52)).unwrap();
        assert!(!slower.kept);
        assert_eq!(
            slower.reason,
            "kept: auto's grid, the learned 4096x128 was slower in production (ratios 1.100 1.089 1.111 1.100)"
        );
        assert_eq!(verdict.action(&key(L52)), Action::Remove);
        assert_eq!(verdict.action(&key(L64)), Action::Write);
        // A search the pairs did not launch (still exploring) is written
        // with a kept set.
        assert_eq!(verdict.action(&(L52.to_string(), 44)), Action::Write);
    }

    #[test]
    fn a_kernel_a_little_slower_or_slower_in_one_pair_only_is_not_dropped() {
        let kernels = [
            (L64, (7392, 32), [52.0, 29.0]),
            (L52, (4096, 128), [32.2, 32.2]),
        ];
        // 2 % slower; slower by half in one pair; slower in the median pair
        // (of 4) but not in most.
        for l52 in [
            &[1.02, 1.025, 1.01, 1.02][..],
            &[0.97, 1.5, 0.99, 0.98],
            &[0.9, 0.95, 1.2, 1.3],
        ] {
            let verdict = decide(
                &pairs(&kernels, &vec![1.0; l52.len()], &[QUIET, l52]),
                THREE,
                Confirmed::Pairs,
            );
            assert_eq!(verdict.action(&key(L52)), Action::Write, "{verdict:?}");
        }
    }

    #[test]
    fn pairs_that_disagree_ask_for_more_which_decide_or_refuse_the_set() {
        // 5 % faster, under whole-run shifts of up to 8 %.
        let kernels = [(L64, (7392, 32), [100.0, 95.0])];
        let shifts = [0.98, 1.08, 0.97, 0.96, 1.01, 0.98, 1.04, 0.93, 0.98];
        let three = decide(
            &pairs(&kernels, &shifts[..3], &[QUIET]),
            THREE,
            Confirmed::Pairs,
        );
        assert_eq!((three.outcome, three.faster_pairs), (Outcome::Undecided, 2));
        assert!(three.undecided());
        // 8 of 9 faster: beyond chance at the last look.
        let nine = decide(&pairs(&kernels, &shifts, &[QUIET]), THREE, Confirmed::Pairs);
        assert_eq!((nine.outcome, nine.faster_pairs), (Outcome::Faster, 8));
        assert_eq!(nine.action(&key(L64)), Action::Write);
        // 7 of 9 is not, and the session refuses what it cannot tell: the
        // search the pairs launched is removed from the store, one they
        // did not is left as the store has it.
        let mut seven = shifts;
        seven[0] = 1.06;
        let six = decide(&pairs(&kernels, &seven, &[QUIET]), THREE, Confirmed::Pairs);
        assert_eq!((six.outcome, six.faster_pairs), (Outcome::Undecided, 7));
        assert_eq!(
            six.program_refused().as_deref(),
            Some(
                "9 pairs could not tell the runs reading the store from the runs without it \
                 (93.1 % of their GPU time in the median pair, faster in 7)"
            )
        );
        assert_eq!(six.action(&key(L64)), Action::Remove);
        assert_eq!(six.action(&(L64.to_string(), 44)), Action::Leave);
    }

    #[test]
    fn undecided_pairs_name_the_searches_that_gained_most_to_confirm_alone() {
        // l64 25 % faster, l91 5 % faster, l52 10 % slower, l70 unchanged,
        // under whole-run shifts the three pairs cannot tell from noise.
        let kernels = [
            (L64, (7392, 32), [100.0, 75.0]),
            (L91, (1024, 64), [100.0, 95.0]),
            (L52, (4096, 128), [30.0, 33.0]),
            (L70, AUTO, [30.0, 30.0]),
        ];
        let verdict = decide(
            &pairs(&kernels, &[0.98, 1.4, 0.97], &[QUIET; 4]),
            THREE,
            Confirmed::Pairs,
        );
        assert!(verdict.undecided(), "{verdict:?}");
        assert_eq!(alone(&verdict, 3), [key(L64), key(L91)]);
        assert_eq!(alone(&verdict, 1), [key(L64)]);
        // Were the set's pairs pairs of runs for a kernel launched once a
        // run, the searches launched every step that it changed are
        // confirmed together, in alternating runs: l52 too, slower in the
        // pairs, not l70, unchanged.
        let per_run = |rare: &[&str]| {
            (kernels.iter())
                .map(|(k, _, _)| (key(k), if rare.contains(k) { 1 } else { 50 }))
                .collect::<BTreeMap<SearchKey, usize>>()
        };
        let every_step = per_run(&[]);
        assert_eq!(
            together(&verdict, &every_step),
            [key(L52), key(L64), key(L91)]
        );
        // One of them is confirmed alone; an alternating set's searches
        // were confirmed so already.
        assert!(together(&verdict, &per_run(&[L91, L52])).is_empty());
        let alternated = Verdict {
            by: Confirmed::Alternating,
            ..verdict.clone()
        };
        assert!(together(&alternated, &every_step).is_empty());
        // Confirmed alone and kept, a search is written whatever the set's
        // verdict: its own decides it.
        let l64 = [(L64, (7392, 32), [100.0, 75.0]), (L70, AUTO, [30.0, 30.0])];
        let own = decide(
            &pairs(&l64, &[1.0; 4], &[QUIET; 2]),
            THREE,
            Confirmed::Pairs,
        );
        assert_eq!(own.action(&key(L64)), Action::Write);
        assert_eq!(verdict.action(&key(L64)), Action::Remove);
    }

    #[test]
    fn a_slower_set_is_refused_whole_and_decided_on_the_median_sum() {
        // The learned grid 2 % slower; one outlier launch in each run under
        // auto (3x its 52 µs median) makes the plain sum say faster.
        let kernels = [(L64, (7392, 32), [52.0, 53.04])];
        let mut pairs = pairs(&kernels, &[1.0; 4], &[QUIET]);
        for pair in &mut pairs {
            pair.auto.total_ns += 2.0 * 52e3;
        }
        let verdict = decide(&pairs, THREE, Confirmed::Pairs);
        assert_eq!(verdict.outcome, Outcome::Slower, "{verdict:?}");
        assert!(verdict.plain_ratio.unwrap() < 0.9, "{verdict:?}");
        assert_eq!(
            verdict.program_refused().as_deref(),
            Some(
                "the runs reading the store took 102.0 % of the GPU time of the runs without it \
                 (median of 4 pairs, slower in 4)"
            )
        );
        // Not slower beyond the noise as a kernel, but refused with its set.
        assert!(verdict.searches[0].kept);
        assert_eq!(verdict.action(&key(L64)), Action::Remove);
        assert_eq!(verdict.action(&(L64.to_string(), 44)), Action::Leave);
    }

    #[test]
    fn the_looks_together_keep_a_set_no_better_than_autos_at_most_one_time_in_eight() {
        // At --confirm 3, looks after 3 to 9 pairs: 4 of 4 ... 8 of 9.
        assert_eq!(THREE.needed(), [4, 4, 5, 6, 6, 7, 8]);
        let (chance, _) = THREE.chance(1.0);
        assert!(chance > LEVEL, "every look at level 1 decides at once");
        // Every sequence of pair outcomes, counted: the chance that some
        // look reaches its pairs needed, with no difference between the runs.
        let level = |looks: Looks| -> f64 {
            let needed = looks.needed();
            let keeps = (0u32..1 << looks.last)
                .filter(|flips| {
                    (looks.first..=looks.last).any(|n| {
                        let agreeing = (flips & ((1 << n) - 1)).count_ones() as usize;
                        agreeing >= needed[n - looks.first]
                    })
                })
                .count();
            keeps as f64 / f64::from(1u32 << looks.last)
        };
        assert_eq!(level(THREE), 0.09375);
        // Looking after every pair at 1/8 each (3 of 3, 4 of 4, 5 of 5, 5 of
        // 6, ...) would keep such a set about 1 time in 5.
        let once = Looks { first: 3, last: 3 };
        assert_eq!(once.needed(), [3]);
        // --confirm 1: looks after 1 to 3 pairs; only 3 of 3 decides.
        assert_eq!(Looks { first: 1, last: 3 }.needed(), [2, 3, 3]);
        for looks in [THREE, once, Looks { first: 1, last: 3 }] {
            assert!(level(looks) <= LEVEL, "{looks:?}");
        }
        // --confirm 20's looks, 20 to 60 pairs, by the code's own reckoning.
        let wide = Looks {
            first: 20,
            last: 60,
        };
        let needed = wide.needed();
        assert_eq!(needed.len(), 41);
        assert!(needed.windows(2).all(|w| w[0] <= w[1]), "{needed:?}");
        assert_eq!(THREE.needed_at(2), None, "before the first look");
        assert_eq!(THREE.needed_at(10), None, "past the last look");
        assert_eq!(THREE.needed_at(9), Some(8));
        assert_eq!(Looks { first: 0, last: 0 }.needed_at(0), None);
    }

    #[test]
    fn a_refused_set_leaves_searches_that_launched_autos_grid_as_they_are() {
        // l70 learned auto's grid (settled there, or still exploring: both
        // launch it); l64 changed, and the pairs cannot tell.
        let kernels = [(L64, (7392, 32), [100.0, 95.0]), (L70, AUTO, [30.0, 30.0])];
        let verdict = decide(
            &pairs(&kernels, &[0.98, 1.08, 0.97], &[QUIET, QUIET]),
            THREE,
            Confirmed::Pairs,
        );
        assert_eq!(verdict.outcome, Outcome::Undecided);
        assert_eq!(verdict.action(&key(L64)), Action::Remove);
        assert_eq!(verdict.action(&key(L70)), Action::Leave);
    }

    #[test]
    fn a_search_missing_from_some_runs_is_still_judged() {
        // l64 changed grid but one auto run did not launch it: it is judged
        // on the other pairs, so the set is not "nothing changed".
        let kernels = [(L64, (7392, 32), [100.0, 70.0]), (L70, AUTO, [30.0, 30.0])];
        let mut ps = pairs(&kernels, &[1.0; 4], &[QUIET, QUIET]);
        ps[1].auto.searches.remove(&key(L64));
        let verdict = decide(&ps, THREE, Confirmed::Pairs);
        assert_ne!(verdict.outcome, Outcome::NothingChanged, "{verdict:?}");
        let l64 = verdict.searches.iter().find(|d| d.key == key(L64)).unwrap();
        assert!(l64.changed && l64.kept, "{verdict:?}");
        // Launched only by the runs reading the store: refused.
        let mut only = pairs(&kernels, &[1.0; 4], &[QUIET, QUIET]);
        for p in &mut only {
            p.auto.searches.remove(&key(L64));
        }
        let verdict = decide(&only, THREE, Confirmed::Pairs);
        let l64 = verdict.searches.iter().find(|d| d.key == key(L64)).unwrap();
        assert!(l64.changed && !l64.kept, "{verdict:?}");
        assert_eq!(verdict.action(&key(L64)), Action::Remove);
    }

    /// An alternating run of a time-stepping code whose learned grids
    /// went to the launches `at`: 7 steps of l64 at class 45 (learned
    /// 7392x32 at those steps, 70 µs, against auto's 100 µs; the cold first
    /// 900 µs), each followed by l70 (auto's grid throughout, 30 µs, 31 µs
    /// after the learned l64); l70 at class 44 twice and l91 once.
    fn alternating_run(at: LearnedLaunches) -> Launches {
        let mut run = Launches::default();
        // Trip counts of classes 45 (2^22) and 44.
        let mut add = |kernel: &str, class, (blocks, threads): Grid, us: f64| {
            let trip_count = if class == 45 { 1 << 22 } else { 3_000_000 };
            let ns = (us * 1e3) as u64;
            run.add(&ProfileRow {
                kernel: kernel.into(),
                trip_count,
                blocks,
                threads,
                ns,
            })
        };
        for step in 0..7 {
            let learned = at.learned_at(step as u64);
            let (grid, us) = match step {
                0 => (AUTO, 900.0),
                _ if learned => ((7392, 32), 70.0),
                _ => (AUTO, 100.0),
            };
            assert_eq!(add(L64, 45, grid, us), step);
            add(L70, 45, AUTO, if learned { 31.0 } else { 30.0 });
        }
        add(L70, 44, AUTO, 5.0);
        add(L70, 44, AUTO, 6.0);
        add(L91, 45, AUTO, 40.0);
        run
    }

    #[test]
    fn an_alternating_run_splits_each_search_by_its_side_without_its_cold_launch() {
        use LearnedLaunches::{Even, Odd};
        let sides = |at| -> Vec<_> { (0..5).map(|j| alternating_side(at, j)).collect() };
        let (learned, auto) = (Some(Side::Learned), Some(Side::Auto));
        assert_eq!(sides(Odd), [None, learned, auto, learned, auto]);
        assert_eq!(sides(Even), [None, auto, learned, auto, learned]);
        for at in [Odd, Even] {
            split_alternating_run(at);
        }
    }

    fn split_alternating_run(at: LearnedLaunches) {
        let pair = alternating_run(at).alternating(at);
        // The cold 900 µs launch is on neither side; each side weighs as
        // the run's 7 launches.
        let l64 = |side: &RunTimes| side.searches[&key(L64)];
        assert_eq!(
            l64(&pair.learned),
            Launched {
                grid: (7392, 32),
                median_ns: 70e3,
                launches: 7
            }
        );
        assert_eq!(
            l64(&pair.auto),
            Launched {
                grid: AUTO,
                median_ns: 100e3,
                launches: 7
            }
        );
        assert_eq!(pair.learned.searches[&key(L70)].median_ns, 31e3);
        assert_eq!(pair.auto.searches[&key(L70)].median_ns, 30e3);
        // Twice launched (no warm auto launch) or once: on neither side.
        for side in [&pair.auto, &pair.learned] {
            assert_eq!(side.searches.len(), 2, "{side:?}");
        }
        assert!((pair.learned.total_ns - 7.0 * (70e3 + 31e3)).abs() < 1e-6);
        assert!((pair.auto.total_ns - 7.0 * (100e3 + 30e3)).abs() < 1e-6);
        // The decision reads the split as it reads a pair of runs.
        let four = [pair.clone(), pair.clone(), pair.clone(), pair];
        let verdict = decide(&four, THREE, Confirmed::Alternating);
        assert_eq!(verdict.outcome, Outcome::Faster, "{verdict:?}");
        assert_eq!(verdict.action(&key(L64)), Action::Write);
    }

    /// A learned grid 2 % slower than auto's in every run: beyond the noise
    /// within one process (refused), within it between processes (kept
    /// with the faster set).
    #[test]
    fn a_grid_slower_by_two_percent_is_refused_within_one_process_only() {
        let kernels = [
            (L64, (7392, 32), [100.0, 80.0]),
            (L70, (264, 64), [30.0, 30.6]),
        ];
        let four = pairs(&kernels, &[1.0; 4], &[QUIET, QUIET]);
        let within = decide(&four, THREE, Confirmed::Alternating);
        assert_eq!(within.outcome, Outcome::Faster, "{within:?}");
        assert_eq!(within.action(&key(L64)), Action::Write);
        assert_eq!(within.action(&key(L70)), Action::Remove, "{within:?}");
        let across = decide(&four, THREE, Confirmed::Pairs);
        assert_eq!(across.outcome, Outcome::Faster, "{across:?}");
        assert_eq!(across.action(&key(L70)), Action::Write, "{across:?}");
    }

    /// What the session tells of its rule, in its `--help` and in the
    /// README it writes, states both bounds as this decision applies them.
    #[test]
    fn the_session_states_both_bounds_a_grid_is_refused_at() {
        use clap::Args as _;
        let percent = |harm: f64| format!("over {} %", ((harm - 1.0) * 100.0).round());
        let (pair, within) = (percent(HARM), percent(HARM_WITHIN));
        let help = super::super::Args::augment_args(clap::Command::new("tune"))
            .get_after_help()
            .map(|h| h.to_string())
            .unwrap_or_default();
        for (told, text) in [
            ("--help", help.as_str()),
            ("README", super::super::report::METHOD),
        ] {
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let says = |bound: &str, of: &str| {
                [" ", " above auto's "]
                    .iter()
                    .any(|between| text.contains(&format!("{bound}{between}in the median {of}")))
            };
            assert!(says(&pair, "pair"), "{told}: {text}");
            assert!(
                says(&format!("({within}"), "alternating run"),
                "{told}: {text}"
            );
        }
    }

    #[test]
    fn an_alternating_confirmations_messages_speak_of_alternating_runs() {
        let kernels = [(L64, (7392, 32), [100.0, 95.0]), (L70, AUTO, [30.0, 30.0])];
        let shifts = [0.98, 1.08, 0.97];
        let undecided = decide(
            &pairs(&kernels, &shifts, &[QUIET, QUIET]),
            THREE,
            Confirmed::Alternating,
        );
        assert_eq!(
            undecided.program_refused().as_deref(),
            Some(
                "3 alternating runs could not tell the learned grids' launches from auto's \
                 (94.2 % of their GPU time in the median run, faster in 2)"
            )
        );
        let slower = decide(
            &pairs(&kernels, &[1.1; 4], &[QUIET, QUIET]),
            THREE,
            Confirmed::Alternating,
        );
        assert_eq!(
            slower.program_refused().as_deref(),
            Some(
                "the learned grids' launches took 105.8 % of the GPU time of auto's \
                 (median of 4 alternating runs, slower in 4)"
            )
        );
    }

    #[test]
    fn a_plain_runs_times_count_every_launch() {
        let times = alternating_run(LearnedLaunches::Odd).times();
        let l64 = times.searches[&key(L64)];
        assert_eq!((l64.grid, l64.median_ns, l64.launches), (AUTO, 100e3, 7));
        assert_eq!(times.searches.len(), 4);
        let all = 900.0 + 3.0 * 70.0 + 3.0 * 100.0 + 4.0 * 30.0 + 3.0 * 31.0 + 5.0 + 6.0 + 40.0;
        assert!((times.total_ns - all * 1e3).abs() < 1e-6);
    }

    #[test]
    fn only_searches_launched_three_times_a_run_can_alternate() {
        let per_run: BTreeMap<SearchKey, usize> =
            [(key(L64), 5), (key(L70), 2), ((L91.to_string(), 44), 3)].into();
        let can = |changed: &[SearchKey]| can_alternate(changed.iter(), &per_run);
        assert!(can(&[key(L64), (L91.to_string(), 44)]));
        assert!(!can(&[key(L64), key(L70)]), "twice a run");
        assert!(
            can(&[key(L64), key(L91)]),
            "not launched in the run counted"
        );
        assert!(can(&[]));
        // Nothing launched often enough to compare: pairs of runs.
        let once: BTreeMap<SearchKey, usize> = [(key(L64), 1), (key(L70), 2)].into();
        assert!(!can_alternate([].iter(), &once));
    }

    #[test]
    fn no_launch_is_refused_without_more_pairs() {
        let verdict = decide(&[Pair::default()], THREE, Confirmed::Pairs);
        assert_eq!(verdict.outcome, Outcome::NoLaunches);
        assert!(!verdict.undecided());
        assert!(verdict.program_refused().is_some());
        assert!(
            decide(&[], THREE, Confirmed::Pairs)
                .program_refused()
                .is_some()
        );
    }
}
