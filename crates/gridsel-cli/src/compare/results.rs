//! From the launches and wall times of a program's runs to its comparison:
//! per (kernel, trip count) and policy the median launch time over every
//! launch of every successful round, the grids used, the spread and the
//! speedup over `llvm`; per policy the geomean of those speedups and the
//! program's median wall time.

use gridsel_cli::profile_rows::ProfileRow;
use gridsel_cli::stats::{Summary, geomean};
use std::collections::BTreeMap;

/// A launch grid as the profile writes it: (blocks, threads).
pub type Grid = (u32, u32);

/// Index of `llvm`, the baseline, in every policy list.
pub const BASELINE: usize = 0;

/// The samples of one program, gathered run by run.
pub struct Samples {
    policies: usize,
    /// kernel -> trip count -> per policy.
    kernels: BTreeMap<String, BTreeMap<u64, Vec<Cell>>>,
    /// Per policy, the wall seconds of its successful runs.
    walls: Vec<Vec<f64>>,
}

#[derive(Clone, Default)]
struct Cell {
    ns: Vec<f64>,
    grids: BTreeMap<Grid, usize>,
}

impl Samples {
    pub fn new(policies: usize) -> Self {
        Self {
            policies,
            kernels: BTreeMap::new(),
            walls: vec![Vec::new(); policies],
        }
    }

    pub fn add_launch(&mut self, policy: usize, launch: ProfileRow<'_>) {
        // Looked up by &str first: most launches repeat a known kernel.
        if !self.kernels.contains_key(&*launch.kernel) {
            self.kernels
                .insert(launch.kernel.to_string(), BTreeMap::new());
        }
        let trips = self
            .kernels
            .get_mut(&*launch.kernel)
            .expect("inserted above");
        let cell = &mut trips
            .entry(launch.trip_count)
            .or_insert_with(|| vec![Cell::default(); self.policies])[policy];
        cell.ns.push(launch.ns as f64);
        *cell
            .grids
            .entry((launch.blocks, launch.threads))
            .or_default() += 1;
    }

    pub fn add_wall(&mut self, policy: usize, seconds: f64) {
        self.walls[policy].push(seconds);
    }

    pub fn finish(self) -> ProgramResult {
        let mut rows = Vec::new();
        for (kernel, trips) in self.kernels {
            for (trip_count, cells) in trips {
                let baseline = Summary::of(&cells[BASELINE].ns);
                let baseline_grids = cells[BASELINE].grids.keys().copied().collect::<Vec<_>>();
                for (policy, cell) in cells.into_iter().enumerate() {
                    let Some(time) = Summary::of(&cell.ns) else {
                        continue;
                    };
                    let mut grids: Vec<(Grid, usize)> = cell.grids.into_iter().collect();
                    let same_grid_as_llvm = baseline.is_some()
                        && grids
                            .iter()
                            .map(|(g, _)| *g)
                            .eq(baseline_grids.iter().copied());
                    // Most used first; ties in grid order.
                    grids.sort_by_key(|&(grid, launches)| (std::cmp::Reverse(launches), grid));
                    rows.push(KernelRow {
                        kernel: kernel.clone(),
                        trip_count,
                        policy,
                        grids,
                        speedup: baseline.map(|b| b.median / time.median),
                        time,
                        same_grid_as_llvm,
                    });
                }
            }
        }
        let walls = self.walls.iter().map(|w| Summary::of(w)).collect();
        ProgramResult { rows, walls }
    }
}

/// One policy's launches of one (kernel, trip count).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelRow {
    pub kernel: String,
    pub trip_count: u64,
    pub policy: usize,
    /// The grids and how many launches got each, most used first.
    pub grids: Vec<(Grid, usize)>,
    /// Launch times in ns.
    pub time: Summary,
    /// `llvm`'s median over this policy's; `None` when `llvm` has no launch
    /// of this (kernel, trip count).
    pub speedup: Option<f64>,
    /// Whether the policy launched exactly the grids `llvm` did: its speedup
    /// is then run-to-run noise.
    pub same_grid_as_llvm: bool,
}

/// A program's comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramResult {
    /// By kernel, trip count, then policy.
    pub rows: Vec<KernelRow>,
    /// Per policy, its successful runs' wall seconds.
    pub walls: Vec<Option<Summary>>,
}

impl ProgramResult {
    /// The policy's kernel time in all: the sum of every launch's time over
    /// its successful runs, in ns (`None` without launches).
    pub fn kernel_total(&self, policy: usize) -> Option<f64> {
        let mut rows = self.rows.iter().filter(|r| r.policy == policy).peekable();
        rows.peek()?;
        Some(rows.map(|r| r.time.total).sum())
    }

    /// `llvm`'s median wall time over the policy's.
    pub fn wall_speedup(&self, policy: usize) -> Option<f64> {
        Some(self.walls[BASELINE]?.median / self.walls[policy]?.median)
    }
}

/// A policy's geomean speedup over `llvm` on some set of rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geomean {
    /// Over every case, (kernel, trip count), with launches under both.
    pub all: Option<f64>,
    pub cases: usize,
    /// Over those where the policy's grid differs from `llvm`'s.
    pub changed: Option<f64>,
    pub changed_cases: usize,
}

/// The geomean of `policy`'s speedups over the rows of `results`.
pub fn geomean_of<'a>(
    results: impl IntoIterator<Item = &'a ProgramResult>,
    policy: usize,
) -> Geomean {
    let (mut all, mut changed) = (Vec::new(), Vec::new());
    for row in results.into_iter().flat_map(|r| &r.rows) {
        let Some(speedup) = row.speedup.filter(|_| row.policy == policy) else {
            continue;
        };
        all.push(speedup);
        if !row.same_grid_as_llvm {
            changed.push(speedup);
        }
    }
    Geomean {
        all: geomean(&all),
        cases: all.len(),
        changed: geomean(&changed),
        changed_cases: changed.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(kernel: &str, trip_count: u64, grid: Grid, ns: u64) -> ProfileRow<'_> {
        ProfileRow {
            kernel: kernel.into(),
            trip_count,
            blocks: grid.0,
            threads: grid.1,
            ns,
        }
    }

    /// Policies llvm (0) and auto (1): kernel `a` at two trip counts, auto
    /// changing the grid of one; kernel `b` launched by auto only.
    fn sample() -> ProgramResult {
        let mut s = Samples::new(2);
        for ns in [100, 120, 110] {
            s.add_launch(0, launch("a", 1000, (32, 32), ns));
            s.add_launch(1, launch("a", 1000, (8, 128), ns / 2));
        }
        s.add_launch(0, launch("a", 20, (1, 32), 300));
        s.add_launch(1, launch("a", 20, (1, 32), 200));
        s.add_launch(1, launch("a", 20, (1, 32), 400));
        s.add_launch(1, launch("b", 5, (1, 128), 10));
        s.add_launch(1, launch("b", 5, (2, 64), 10));
        s.add_launch(1, launch("b", 5, (2, 64), 12));
        s.add_wall(0, 2.0);
        s.add_wall(0, 4.0);
        s.add_wall(1, 1.5);
        s.finish()
    }

    #[test]
    fn rows_per_kernel_trip_count_and_policy() {
        let r = sample();
        let keys: Vec<_> = r
            .rows
            .iter()
            .map(|row| (row.kernel.as_str(), row.trip_count, row.policy))
            .collect();
        assert_eq!(
            keys,
            [
                ("a", 20, 0),
                ("a", 20, 1),
                ("a", 1000, 0),
                ("a", 1000, 1),
                ("b", 5, 1)
            ]
        );
        let a1000_auto = &r.rows[3];
        assert_eq!(a1000_auto.grids, [((8, 128), 3)]);
        assert_eq!(a1000_auto.time.median, 55.0);
        assert_eq!(a1000_auto.speedup, Some(2.0));
        assert!(!a1000_auto.same_grid_as_llvm);
        let a20_auto = &r.rows[1];
        assert_eq!(a20_auto.time.median, 300.0);
        assert_eq!(a20_auto.speedup, Some(1.0));
        assert!(a20_auto.same_grid_as_llvm);
        assert_eq!(r.rows[0].speedup, Some(1.0));
        // No llvm launch of `b`: no speedup; grids most used first.
        assert_eq!(r.rows[4].speedup, None);
        assert!(!r.rows[4].same_grid_as_llvm);
        assert_eq!(r.rows[4].grids, [((2, 64), 2), ((1, 128), 1)]);
    }

    #[test]
    fn wall_times_and_geomeans() {
        let r = sample();
        assert_eq!(r.walls[0].unwrap().median, 3.0);
        assert_eq!(r.wall_speedup(1), Some(2.0));
        // Every launch counts in the total: a20's 400 ns one too.
        assert_eq!(r.kernel_total(1), Some(165.0 + 600.0 + 32.0));
        assert_eq!(r.kernel_total(0), Some(330.0 + 300.0));
        let g = geomean_of([&r], 1);
        assert!((g.all.unwrap() - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!((g.cases, g.changed, g.changed_cases), (2, Some(2.0), 1));
        // Over two programs the rows pool.
        let g = geomean_of([&r, &r], 1);
        assert_eq!((g.cases, g.changed_cases), (4, 2));
        let none = Samples::new(2).finish();
        assert_eq!(none.wall_speedup(1), None);
        assert_eq!(none.kernel_total(1), None);
        assert_eq!(
            geomean_of([&none], 1),
            Geomean {
                all: None,
                cases: 0,
                changed: None,
                changed_cases: 0
            }
        );
    }
}
