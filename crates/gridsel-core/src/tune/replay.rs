//! Searches replayed against measured times, run after run, through the
//! store's format: research only (feature `research`), for
//! `gridsel-research tune-sim` and the tests.

use super::learned;
use super::learner::Learner;
use super::policy::{Allowance, Bound};
use super::prior::Prior;
use super::search::Candidate;
use super::store::{Key, Table};
use crate::geometry::Geometry;
use std::collections::HashMap;

/// How a search is replayed: runs in a row, launches per run, what the
/// first launch of a run costs more (`cold` times the grid's time), and
/// each run's exploring [`Allowance`] (`overhead`, within each run or on
/// average over the runs: `bound`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplaySetup {
    pub runs: usize,
    pub launches: u32,
    pub cold: f64,
    pub overhead: f64,
    pub bound: Bound,
}

/// One search replayed against measured times, run after run.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// Per run: the time of the grid production would launch after the run
    /// ([`Self::kept_grids`]), and the mean time of the run's launches
    /// (exploration included), in the timer's unit.
    pub kept: Vec<f64>,
    pub spent: Vec<f64>,
    /// Per run: the grid production would launch after it, from the store
    /// the run left ([`learned`]: `auto`'s grid until the search settles),
    /// not the search's own leader, which a plan may rank by another rule.
    pub kept_grids: Vec<Geometry>,
    /// The first run after which the kept grid stays within 95 % of the
    /// best measured performance; `None` if it never does.
    pub runs_to_95pct: Option<usize>,
    /// The same for what the runs spent: the first run from which every
    /// run's launches, exploring included, cost within 95 % of what the best
    /// grid's would.
    pub runs_to_95pct_spent: Option<usize>,
    /// The first run (from 1) at whose end the search explores no more;
    /// `None` if it still does after the last.
    pub settled_after: Option<usize>,
    pub best_time: f64,
}

/// The first run (from 1) from which every time of `per_run` is within
/// `share` (0.95: 95 %) of `best_time`'s performance; `None` if the last one
/// is not.
pub fn runs_until_within(per_run: &[f64], best_time: f64, share: f64) -> Option<usize> {
    match per_run.iter().rposition(|t| best_time / t < share) {
        None => Some(1),
        Some(last_bad) => (last_bad + 1 < per_run.len()).then_some(last_bad + 2),
    }
}

/// Runs the search over the `prior`'s candidates as `setup` says, through
/// the store's format between runs, each run a process with its own
/// [`Allowance`]: [`replay_program`] of a program with one kernel.
pub fn replay(
    prior: &Prior,
    setup: ReplaySetup,
    time: impl Fn(Geometry) -> f64,
    noise: impl FnMut(u32) -> f64,
    best_time: f64,
) -> Replay {
    let kernel = ReplayedKernel {
        prior,
        time: &time,
        best_time,
    };
    let mut replays = replay_program(&[kernel], setup, noise);
    replays.remove(0)
}

/// One kernel of a replayed program: its prior, what a launch on a grid
/// costs (infinite for a grid with no time: the search sees it fail), and
/// the best time it is judged against.
pub struct ReplayedKernel<'a> {
    pub prior: &'a Prior,
    pub time: &'a dyn Fn(Geometry) -> f64,
    pub best_time: f64,
}

/// Runs one search per kernel of a program as `setup` says, through the
/// store's format between runs. Each run is a process with one
/// [`Allowance`] for all its searches, which launches every kernel in turn,
/// `setup.launches` times over, as a time-stepping loop does (a kernel
/// launched once per run: the program's kernels once each, in order). A
/// launch costs `time` of its grid; its search sees that times a draw of
/// `noise` (1.0 for a noiseless replay), told the launch's place among the
/// kernel's launches of the run (0: its first, cold; 1: its first warm
/// one), so that a plan is judged against the run-to-run noise it has to
/// rank through. No learned moves: each prior is
/// the caller's.
pub fn replay_program(
    kernels: &[ReplayedKernel<'_>],
    setup: ReplaySetup,
    mut noise: impl FnMut(u32) -> f64,
) -> Vec<Replay> {
    let key = |k: usize| Key::for_trip(format!("replay{k}"), "replay", 0, 1, "");
    let grids: Vec<HashMap<Candidate, Geometry>> = kernels
        .iter()
        .map(|k| k.prior.list.iter().copied().collect())
        .collect();
    // A fixed grid the prior does not list (a refinement's neighbour)
    // resolves where the sweep measured it.
    let resolve = |k: usize, c: Candidate| match (grids[k].get(&c), c) {
        (Some(&g), _) => Some(g),
        (None, Candidate::Grid(g)) => (kernels[k].time)(g).is_finite().then_some(g),
        (None, _) => None,
    };
    let mut table = Table::default();
    let mut kept_grids = vec![Vec::new(); kernels.len()];
    let mut spent = vec![Vec::new(); kernels.len()];
    let mut settled_after = vec![None; kernels.len()];
    let launches = f64::from(setup.launches.max(1));
    for run in 0..setup.runs {
        let text = table.render();
        table = Table::parse(&text).unwrap_or_default();
        let mut learners: Vec<Learner> = kernels
            .iter()
            .enumerate()
            .map(|(k, kernel)| Learner::resume(key(k), kernel.prior, table.get(&key(k))))
            .collect();
        let mut total = vec![0.0; kernels.len()];
        let allowance = Allowance::new(setup.overhead, setup.bound);
        for l in &learners {
            allowance.begin(l, 1);
        }
        for n in 0..setup.launches {
            for (k, learner) in learners.iter_mut().enumerate() {
                let Some(choice) =
                    learner.next(1, run as u64, |e| allowance.admits(e), |c| resolve(k, c))
                else {
                    continue;
                };
                let cold = if n == 0 { setup.cold } else { 1.0 };
                let t = (kernels[k].time)(choice.grid) * cold;
                // A grid without a time (infinite: one a sweep did not
                // measure) fails to the search (`u64::MAX`) and is
                // spent as the first candidate's, `auto`'s grid.
                total[k] += if t.is_finite() {
                    t
                } else {
                    kernels[k]
                        .prior
                        .list
                        .first()
                        .map_or(0.0, |&(_, g)| (kernels[k].time)(g))
                        * cold
                };
                if choice.observe.timed() {
                    let ns = if t.is_finite() {
                        (t * noise(n) * 1e3).round().max(1.0) as u64
                    } else {
                        u64::MAX
                    };
                    allowance.charge(ns, learner.observe(choice.grid, 1, ns));
                }
            }
        }
        let exploring = learners.iter().filter(|l| l.explores()).count();
        let share = allowance.banked_share(exploring);
        for (k, learner) in learners.iter_mut().enumerate() {
            learner.bank(share);
            spent[k].push(total[k] / launches);
            let search = learner.search();
            let kind = learner.kind();
            if settled_after[k].is_none() && search.finished(kind) {
                settled_after[k] = Some(run + 1);
            }
            if let Some(u) = learner.take_update(run as u64) {
                table.apply(&u);
            }
            let production = table
                .get(&key(k))
                .and_then(learned)
                .unwrap_or(Candidate::Auto);
            kept_grids[k]
                .push(resolve(k, production).expect("a learned grid was launched, so it resolves"));
        }
    }
    kernels
        .iter()
        .zip(kept_grids.into_iter().zip(spent).zip(settled_after))
        .map(|(kernel, ((kept_grids, spent), settled_after))| {
            let best_time = kernel.best_time;
            let kept: Vec<f64> = kept_grids.iter().map(|&g| (kernel.time)(g)).collect();
            Replay {
                runs_to_95pct: runs_until_within(&kept, best_time, 0.95),
                runs_to_95pct_spent: runs_until_within(
                    &spent,
                    best_time * (setup.cold + launches - 1.0) / launches,
                    0.95,
                ),
                kept,
                spent,
                kept_grids,
                settled_after,
                best_time,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::search::Exploring;

    /// A grid the timer has no time for (`tune-sim --live-prior`, a grid
    /// the sweep did not measure) is launched as the plan says, fails to
    /// the search, so it never leads, and is spent as `auto`'s grid: the
    /// replay still finds the measured faster grid after it, and every
    /// run's spending stays finite.
    #[test]
    fn a_grid_without_a_time_fails_to_the_search_and_is_spent_as_autos() {
        let (auto, unmeasured, fast) = (
            Geometry::new(128, 3200),
            Geometry::new(64, 1600),
            Geometry::new(32, 4224),
        );
        let moves = [(64, -1), (32, 0)].map(|(threads, blocks_log2)| Candidate::Move {
            threads,
            blocks_log2,
        });
        let mut prior = Prior::unpredicted(vec![
            (Candidate::Auto, auto),
            (moves[0], unmeasured),
            (moves[1], fast),
        ]);
        prior.exploring = Exploring::UNBOUNDED;
        let time = |g: Geometry| match (g.threads, g.blocks) {
            (128, 3200) => 100.0,
            (32, 4224) => 80.0,
            _ => f64::INFINITY,
        };
        let setup = ReplaySetup {
            runs: 3,
            launches: 20,
            cold: 1.0,
            overhead: f64::INFINITY,
            bound: Bound::Run,
        };
        let r = replay(&prior, setup, time, |_| 1.0, 80.0);
        assert_eq!(r.kept.last(), Some(&80.0), "{r:?}");
        assert!(
            r.spent.iter().all(|&t| (80.0..=100.0).contains(&t)),
            "{r:?}"
        );
    }

    /// The noise is told each timed launch's place in its run, so that a
    /// replay can give a run's first warm launch its own (`tune-sim
    /// --first-warm-noise`): where that launch, `auto`'s grid's first warm
    /// sample, runs 1.5x slow, the search still keeps `auto`'s grid over
    /// two grids 1-2 % slower.
    #[test]
    fn the_noise_is_told_each_launchs_place_in_its_run() {
        let grid = |threads| Geometry::new(threads, 3200);
        let moves = [64, 32].map(|threads| Candidate::Move {
            threads,
            blocks_log2: 0,
        });
        let mut prior = Prior::unpredicted(vec![
            (Candidate::Auto, grid(128)),
            (moves[0], grid(64)),
            (moves[1], grid(32)),
        ]);
        prior.exploring = Exploring::UNBOUNDED;
        let setup = ReplaySetup {
            runs: 2,
            launches: 20,
            cold: 1.0,
            overhead: f64::INFINITY,
            bound: Bound::Run,
        };
        let time = |g: Geometry| match g.threads {
            128 => 100.0,
            64 => 101.0,
            _ => 102.0,
        };
        let mut places = Vec::new();
        let r = replay(
            &prior,
            setup,
            time,
            |n| {
                places.push(n);
                if n == 1 { 1.5 } else { 1.0 }
            },
            100.0,
        );
        assert_eq!(&places[..3], [0, 1, 2]);
        assert!(places.iter().all(|&n| n < 20), "{places:?}");
        assert_eq!(r.kept.last(), Some(&100.0), "{r:?}");
    }
}
