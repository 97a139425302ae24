//! A run's launches per search, read from its `GRIDSEL_PROFILE` file, and
//! an alternating run split into its two sides: the launches that got the
//! learned grids and those that got auto's (`GRIDSEL_LEARNED_ALTERNATE`).
//!
//! `gridsel tune` decides on these splits (its confirmation), and
//! `gridsel-research sides` prints them for the measurements that judge
//! production runs within one process: one reading of a profile, one
//! parity rule ([`alternating_side`]) and one median-sum
//! ([`Launched::median_sum_ns`]), so that what a measurement reports of an
//! alternating run is what a session would have decided on.

use crate::profile_rows::{self, ProfileRow};
use crate::stats::median;
use gridsel_core::tune::LearnedLaunches;
use gridsel_core::tune::store::class;
use std::collections::{BTreeMap, BTreeSet};

/// (blocks, threads).
pub type Grid = (u32, u32);

/// A search as the store keys it within one program: the kernel and its
/// trip-count class.
pub type SearchKey = (String, u32);

/// One search's launches in one run (or on one side of it): the grid
/// launched most often, the median launch time and how many launches it
/// weighs as.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Launched {
    pub grid: Grid,
    pub median_ns: f64,
    pub launches: usize,
}

impl Launched {
    /// Of `launches` (grid, time) of one search, at least one: the grid
    /// launched most often (the smaller of two as often) and the median,
    /// weighed as `weight` launches.
    fn of(launches: &[(Grid, f64)], weight: usize) -> Option<Self> {
        let (grid, _) = *grid_counts(launches).first()?;
        Some(Self {
            grid,
            median_ns: median(&launches.iter().map(|(_, ns)| *ns).collect::<Vec<_>>())?,
            launches: weight,
        })
    }

    /// The search's share of a run's GPU time robust to outlier launches:
    /// its median launch time times its launches.
    pub fn median_sum_ns(&self) -> f64 {
        self.median_ns * self.launches as f64
    }
}

/// Each grid of `launches` and how often it was launched, the most
/// launched first (of two as often, the smaller).
fn grid_counts(launches: &[(Grid, f64)]) -> Vec<(Grid, usize)> {
    let mut grids: BTreeMap<Grid, usize> = BTreeMap::new();
    for (grid, _) in launches {
        *grids.entry(*grid).or_default() += 1;
    }
    let mut counted: Vec<(Grid, usize)> = grids.into_iter().collect();
    counted.sort_by_key(|&(grid, n)| (std::cmp::Reverse(n), grid));
    counted
}

/// One run's GPU time: per search its launches, and the sum of every
/// launch's time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunTimes {
    pub searches: BTreeMap<SearchKey, Launched>,
    pub total_ns: f64,
}

impl RunTimes {
    /// The run's GPU time robust to outlier launches: per search its median
    /// launch time times its launches, summed ("median-sum").
    pub fn median_sum_ns(&self) -> f64 {
        self.searches.values().map(Launched::median_sum_ns).sum()
    }
}

/// The fewest launches a run must give a search for an alternating run to
/// compare it: the cold first, then at least one on each side.
pub const MIN_ALTERNATING_LAUNCHES: usize = 3;

/// Which side of an alternating run whose learned grids went to the
/// launches `at` a search's launch `j` (from 0, in launch order) is on;
/// `None` for the first, cold one, auto's, which would weigh on one side.
pub fn alternating_side(at: LearnedLaunches, j: usize) -> Option<Side> {
    match j as u64 {
        0 => None,
        j if at.learned_at(j) => Some(Side::Learned),
        _ => Some(Side::Auto),
    }
}

/// A side of an alternating run: auto's grids, or the learned ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Auto,
    Learned,
}

/// One side of a search in an alternating run.
#[derive(Clone, Debug, PartialEq)]
pub struct SideLaunches {
    /// Its most launched grid and median launch time, weighed as the run's
    /// launches of the search, as production would launch them.
    pub launched: Launched,
    /// The launches on this side.
    pub on_side: usize,
    /// Each grid the side launched and how often, the most launched first.
    pub grids: Vec<(Grid, usize)>,
    /// The side's launch times summed, scaled to the run's launches of the
    /// search: its share of the side's plain GPU time.
    pub sum_ns: f64,
}

/// A search of an alternating run, split by [`alternating_side`]; a side
/// is `None` when the search had no launch on it (launched once or twice).
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// The run's launches of the search.
    pub launches: usize,
    /// The trip counts its launches had (all of one class).
    pub trip_counts: BTreeSet<u64>,
    pub auto: Option<SideLaunches>,
    pub learned: Option<SideLaunches>,
}

/// A search's launches in one run, in launch order.
#[derive(Clone, Debug, Default)]
struct Search {
    trip_counts: BTreeSet<u64>,
    launches: Vec<(Grid, f64)>,
}

/// A run's launches, per search in launch order.
#[derive(Clone, Debug, Default)]
pub struct Launches {
    searches: BTreeMap<SearchKey, Search>,
}

impl Launches {
    /// The launches of a profile's text, in the profile's order, which is
    /// launch order: a launch's row is written when it returns, and a
    /// program's host thread waits for a launch (without `nowait`) before
    /// the next. (Where several host threads or processes launch one kernel
    /// at once, their rows interleave and an alternating run's split mixes
    /// the sides, which blunts the comparison.) `each` gets every launch
    /// with its place among its search's launches, from 0. Also returns the
    /// profile's malformed lines ([`profile_rows::parse`]).
    pub fn read<'a>(text: &'a str, mut each: impl FnMut(ProfileRow<'a>, usize)) -> (Self, usize) {
        let mut run = Self::default();
        let bad_rows = profile_rows::parse(text, |launch| {
            let j = run.add(&launch);
            each(launch, j);
        });
        (run, bad_rows)
    }

    /// Adds the next launch of its search; returns its place among the
    /// run's launches of that search, from 0.
    pub fn add(&mut self, launch: &ProfileRow<'_>) -> usize {
        let key = (launch.kernel.to_string(), class(launch.trip_count));
        let search = self.searches.entry(key).or_default();
        search.trip_counts.insert(launch.trip_count);
        let grid = (launch.blocks, launch.threads);
        search.launches.push((grid, launch.ns as f64));
        search.launches.len() - 1
    }

    /// How many launches the run gave each search.
    pub fn counts(&self) -> BTreeMap<SearchKey, usize> {
        let count = |(key, s): (&SearchKey, &Search)| (key.clone(), s.launches.len());
        self.searches.iter().map(count).collect()
    }

    /// The run's times, every launch on one side.
    pub fn times(&self) -> RunTimes {
        let searches = self
            .searches
            .iter()
            .filter_map(|(key, s)| {
                Some((key.clone(), Launched::of(&s.launches, s.launches.len())?))
            })
            .collect();
        let total_ns = self
            .searches
            .values()
            .flat_map(|s| &s.launches)
            .map(|(_, ns)| ns)
            .sum();
        RunTimes { searches, total_ns }
    }

    /// An alternating run whose learned grids went to the launches `at`,
    /// each search split by [`alternating_side`]. Each side's search weighs
    /// as the run's launches of it, as production would launch them, and so
    /// does its share of the plain sum.
    pub fn sides(&self, at: LearnedLaunches) -> BTreeMap<SearchKey, Split> {
        let split = |s: &Search| {
            let n = s.launches.len();
            let side = |side| -> Option<SideLaunches> {
                let sided = s.launches.iter().enumerate();
                let on: Vec<(Grid, f64)> = sided
                    .filter(|(j, _)| alternating_side(at, *j) == Some(side))
                    .map(|(_, l)| *l)
                    .collect();
                let sum: f64 = on.iter().map(|(_, ns)| ns).sum();
                Some(SideLaunches {
                    launched: Launched::of(&on, n)?,
                    on_side: on.len(),
                    grids: grid_counts(&on),
                    sum_ns: sum * n as f64 / on.len() as f64,
                })
            };
            Split {
                launches: n,
                trip_counts: s.trip_counts.clone(),
                auto: side(Side::Auto),
                learned: side(Side::Learned),
            }
        };
        let each = |(key, s): (&SearchKey, &Search)| (key.clone(), split(s));
        self.searches.iter().map(each).collect()
    }

    /// An alternating run whose learned grids went to the launches `at`,
    /// as a pair of runs: [`Launches::sides`], a search without a launch on
    /// both sides left out of both.
    pub fn alternating(&self, at: LearnedLaunches) -> Pair {
        let mut pair = Pair::default();
        for (key, split) in self.sides(at) {
            let (Some(auto), Some(learned)) = (split.auto, split.learned) else {
                continue;
            };
            for (times, side) in [(&mut pair.auto, auto), (&mut pair.learned, learned)] {
                times.total_ns += side.sum_ns;
                times.searches.insert(key.clone(), side.launched);
            }
        }
        pair
    }
}

/// A pair of runs compared: one without the store and one reading it, or
/// the two sides of an alternating run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pair {
    pub auto: RunTimes,
    pub learned: RunTimes,
}

/// `blocks`x`threads`, as the reports write grids.
pub fn grid_label((blocks, threads): Grid) -> String {
    format!("{blocks}x{threads}")
}
