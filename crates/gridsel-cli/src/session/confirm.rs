//! Whether what a tuning session learned holds in production: a pure
//! decision over the confirmation pairs' launch times.
//!
//! Samples taken inside tuning runs mislead: in a time-stepping code a
//! kernel's time depends on what its neighbours launch, and in a tuning run
//! they explore. So a session ends with pairs of production runs, one under
//! `auto` without the store and one under `auto` reading what was learned,
//! and keeps a learned search only where the learned grid was faster there:
//! - per search (kernel and trip-count class, as the store keys them), when
//!   the learned runs launched another grid than auto's: kept only when
//!   the learned run's median launch time is below auto's in **every**
//!   pair. One pair the other way is enough to doubt it, and a kernel kept
//!   at auto's grid costs nothing.
//! - per program: nothing is kept when the learned runs' GPU time (the sum
//!   of every launch's time) is not below auto's in the median pair, i.e.
//!   when the median of the pairs' ratios is not below 1.

use std::collections::BTreeMap;

/// (blocks, threads).
pub type Grid = (u32, u32);

/// A search as the store keys it within one program's session: the kernel
/// and its trip-count class.
pub type SearchKey = (String, u32);

/// One search's launches in one run: the grid launched most often and the
/// median launch time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Launched {
    pub grid: Grid,
    pub median_ns: f64,
}

/// One confirmation run: per search its launches, and the run's GPU time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunTimes {
    pub searches: BTreeMap<SearchKey, Launched>,
    pub total_ns: f64,
}

/// A confirmation pair: the run without the store and the one reading it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pair {
    pub auto: RunTimes,
    pub learned: RunTimes,
}

/// What was decided for one search.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub key: SearchKey,
    /// The grids launched in the first pair.
    pub auto_grid: Grid,
    pub learned_grid: Grid,
    /// The median over the pairs of learned over auto (median launch times).
    pub ratio: Option<f64>,
    pub kept: bool,
    /// Why, in the user's terms.
    pub reason: String,
}

/// The decisions for one program's session.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Per search launched in every run of the pairs.
    pub searches: Vec<Decision>,
    /// The median over the pairs of the learned run's GPU time over auto's.
    pub total_ratio: Option<f64>,
    /// `None` when the program's learned searches may be written, else why
    /// none may.
    pub program_dropped: Option<String>,
}

impl Verdict {
    /// Whether the search `key` may be written: not when the program's are
    /// dropped, nor when its learned grid was not faster; a search the
    /// pairs did not launch everywhere (one still exploring, which
    /// production runs do not use) is written as it is.
    pub fn keeps(&self, key: &SearchKey) -> bool {
        self.program_dropped.is_none()
            && self
                .searches
                .iter()
                .find(|d| d.key == *key)
                .is_none_or(|d| d.kept)
    }
}

/// Decides over `pairs` (module doc).
pub fn decide(pairs: &[Pair]) -> Verdict {
    let total_ratio = median(
        pairs
            .iter()
            .filter(|p| p.auto.total_ns > 0.0)
            .map(|p| p.learned.total_ns / p.auto.total_ns),
    );
    let program_dropped = match total_ratio {
        Some(r) if r < 1.0 => None,
        Some(r) => Some(format!(
            "the runs reading the store took {} the GPU time of the runs without it (median pair)",
            percent(r)
        )),
        None => Some("the confirmation runs launched no kernel".to_string()),
    };
    let searches = match pairs.first() {
        Some(first) => first
            .auto
            .searches
            .keys()
            .filter_map(|key| decide_search(key, pairs))
            .collect(),
        None => Vec::new(),
    };
    Verdict {
        searches,
        total_ratio,
        program_dropped,
    }
}

/// The decision for `key`, when every run of the pairs launched it.
fn decide_search(key: &SearchKey, pairs: &[Pair]) -> Option<Decision> {
    let launched: Vec<(Launched, Launched)> = pairs
        .iter()
        .map(|p| Some((*p.auto.searches.get(key)?, *p.learned.searches.get(key)?)))
        .collect::<Option<_>>()?;
    let (auto, learned) = launched[0];
    let ratios: Vec<f64> = launched
        .iter()
        .map(|(a, l)| l.median_ns / a.median_ns.max(1.0))
        .collect();
    let ratio = median(ratios.iter().copied());
    let same_grid = launched.iter().all(|(a, l)| a.grid == l.grid);
    let faster_everywhere = ratios.iter().all(|r| *r < 1.0);
    let shown = ratios
        .iter()
        .map(|r| format!("{r:.3}"))
        .collect::<Vec<_>>()
        .join(" ");
    let (kept, reason) = if same_grid {
        (true, "learned auto's grid".to_string())
    } else if faster_everywhere {
        (
            true,
            format!("the learned grid was faster in every pair (ratios {shown})"),
        )
    } else {
        (
            false,
            format!(
                "kept: auto's grid, the learned {} was not faster in production (ratios {shown})",
                grid_label(learned.grid)
            ),
        )
    };
    Some(Decision {
        key: key.clone(),
        auto_grid: auto.grid,
        learned_grid: learned.grid,
        ratio,
        kept,
        reason,
    })
}

/// `blocks`x`threads`, as the reports write grids.
pub fn grid_label((blocks, threads): Grid) -> String {
    format!("{blocks}x{threads}")
}

fn percent(ratio: f64) -> String {
    format!("{:.1} %", ratio * 100.0)
}

/// The median of `xs` (the mean of the middle two for an even count).
pub fn median(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let mut xs: Vec<f64> = xs.collect();
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    Some(if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        (xs[mid - 1] + xs[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const L52: &str = "__omp_offloading_fd00_2a_ad_step_l52";
    const L70: &str = "__omp_offloading_fd00_2a_oc_step_l70";

    /// A run launching `searches` as (kernel, class, grid, median µs),
    /// its GPU time `total_us`.
    fn run(searches: &[(&str, u32, Grid, f64)], total_us: f64) -> RunTimes {
        RunTimes {
            searches: searches
                .iter()
                .map(|&(k, c, grid, us)| {
                    let median_ns = us * 1e3;
                    ((k.to_string(), c), Launched { grid, median_ns })
                })
                .collect(),
            total_ns: total_us * 1e3,
        }
    }

    /// ts_advect_diag on the H100: the session's search said 4096x128 was
    /// 2.9x faster than auto's 3200x128; production said 50.6 µs against
    /// 32.2. Another kernel's learned grid held up.
    fn advect(learned_l52_us: [f64; 3], totals: [(f64, f64); 3]) -> Vec<Pair> {
        (0..3)
            .map(|i| Pair {
                auto: run(
                    &[
                        (L52, 45, (3200, 128), 32.2 + i as f64 * 0.3),
                        (L70, 45, (3200, 128), 30.8),
                    ],
                    totals[i].0,
                ),
                learned: run(
                    &[
                        (L52, 45, (4096, 128), learned_l52_us[i]),
                        (L70, 45, (1188, 128), 29.9 - i as f64 * 0.2),
                    ],
                    totals[i].1,
                ),
            })
            .collect()
    }

    #[test]
    fn a_learned_grid_slower_in_production_is_dropped_and_a_faster_one_kept() {
        let pairs = advect([50.6, 49.8, 51.2], [(9000.0, 8900.0); 3]);
        let verdict = decide(&pairs);
        assert_eq!(verdict.program_dropped, None);
        let [l52, l70] = &verdict.searches[..] else {
            panic!("{verdict:?}")
        };
        assert_eq!(
            (l52.auto_grid, l52.learned_grid),
            ((3200, 128), (4096, 128))
        );
        assert!(!l52.kept, "{l52:?}");
        assert!((l52.ratio.unwrap() - 51.2 / 32.8).abs() < 1e-9, "{l52:?}");
        assert_eq!(
            l52.reason,
            "kept: auto's grid, the learned 4096x128 was not faster in production (ratios 1.571 1.532 1.561)"
        );
        assert!(l70.kept, "{l70:?}");
        assert!(
            l70.reason
                .starts_with("the learned grid was faster in every pair")
        );
        assert!(!verdict.keeps(&(L52.to_string(), 45)));
        assert!(verdict.keeps(&(L70.to_string(), 45)));
        // A search the pairs did not launch (still exploring) is written.
        assert!(verdict.keeps(&(L52.to_string(), 44)));
    }

    #[test]
    fn one_pair_the_other_way_drops_a_learned_grid() {
        let verdict = decide(&advect([30.0, 33.0, 31.0], [(9000.0, 8900.0); 3]));
        assert!(!verdict.searches[0].kept, "{verdict:?}");
        assert!(
            verdict.searches[0]
                .reason
                .contains("ratios 0.932 1.015 0.945")
        );
        let verdict = decide(&advect([30.0, 32.0, 31.0], [(9000.0, 8900.0); 3]));
        assert!(verdict.searches[0].kept, "{verdict:?}");
    }

    #[test]
    fn a_grid_equal_to_autos_needs_no_decision() {
        let same = |us| run(&[(L70, 45, (3200, 128), us)], 100.0);
        let pairs = [Pair {
            auto: same(30.0),
            learned: same(33.0),
        }];
        let verdict = decide(&pairs);
        assert!(verdict.searches[0].kept);
        assert_eq!(verdict.searches[0].reason, "learned auto's grid");
    }

    #[test]
    fn a_program_slower_in_the_median_pair_keeps_nothing() {
        // Every kernel's learned grid faster, but the program's GPU time
        // not below auto's in the median pair (1.02 of 0.98, 1.02, 1.03).
        let pairs = advect(
            [31.0, 31.5, 31.9],
            [(9000.0, 8820.0), (9000.0, 9180.0), (9000.0, 9270.0)],
        );
        let verdict = decide(&pairs);
        assert!(verdict.searches.iter().all(|d| d.kept), "{verdict:?}");
        assert_eq!(
            verdict.program_dropped.as_deref(),
            Some(
                "the runs reading the store took 102.0 % the GPU time of the runs without it (median pair)"
            )
        );
        assert!(!verdict.keeps(&(L70.to_string(), 45)));
        // The first pair alone: below auto's.
        assert_eq!(decide(&pairs[..1]).program_dropped, None);
        assert!(decide(&[]).program_dropped.is_some());
    }
}
