//! `gridsel-research calibrate`: a device description from sweep measurements, with the
//! paper's leave-one-out method (Lloyd et al. 2018, §II-B).
//!
//! Input: the harness's `points.csv` (one row per measured grid of each
//! kernel and trip count, with the median time) and the descriptors of the
//! kernels measured. For every kernel case the constants are derived from the
//! *other* cases only, and the case is judged with them; the description ships the
//! value most folds chose. Two constants are calibrated:
//!
//! - `threads_per_block` (`lloyd`): the block size whose best time, summed
//!   over the fold's cases, is closest to the sum of their best times (the
//!   paper's Fig. 3 criterion);
//! - `waves` (`auto`'s static rule, [`chunked`]): the number of waves of resident blocks whose grids
//!   leave the fewest of the fold's cases more than 3 % slower than LLVM's
//!   grid, and among those the smallest geomean slowdown against each case's
//!   best grid (safety first: gridsel runs inside other people's programs).

use crate::sweep::{Case, Measured};
use gridsel_cli::csv;
use gridsel_core::device::DeviceDesc;
use gridsel_core::env::ENV_DEVICE;
use gridsel_core::geometry::{Geometry, LaunchDesc};
use gridsel_core::kernel::KernelDesc;
use gridsel_core::policy::chunked;
use gridsel_core::policy::llvm;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::path::Path;

/// Candidate wave counts for the chunk-aware rule's long-loop cap.
pub const WAVE_CANDIDATES: [u32; 3] = [1, 2, 4];

/// A grid this much slower than LLVM's counts as a regression.
pub const REGRESSION: f64 = 1.03;

/// The outcome of calibration.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    pub threads_per_block: u32,
    pub waves: u32,
    /// Per case: the fold's constants and `auto`'s grid and slowdown with them.
    pub folds: Vec<Fold>,
}

/// One leave-one-out fold.
#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    pub case: usize,
    pub threads_per_block: Option<u32>,
    pub waves: Option<u32>,
    /// `auto`'s grid for the left-out case with the fold's waves, and its time.
    pub auto: Option<(Geometry, f64)>,
}

fn mode(values: impl Iterator<Item = u32>) -> Option<u32> {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(v, n)| (n, std::cmp::Reverse(v)))
        .map(|(v, _)| v)
}

/// The paper's ThreadsPerBlock for the cases in `fold`: the block size
/// whose best times, summed over the cases, come closest to the sum of their
/// best times. Candidates are the thread counts measured in at least half of
/// the cases, and only cases that measured every candidate enter the sums,
/// so all candidates are judged on the same cases (a kernel that may nest
/// parallel regions is swept at LLVM's threads and below only, and must not
/// make that one count the only candidate every case has).
fn fold_threads(cases: &[&Case]) -> Option<u32> {
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    for c in cases {
        let threads: BTreeSet<u32> = c.times.keys().map(|g| g.threads).collect();
        for t in threads {
            *seen.entry(t).or_default() += 1;
        }
    }
    let candidates: Vec<u32> = seen
        .into_iter()
        .filter(|&(_, n)| 2 * n >= cases.len())
        .map(|(t, _)| t)
        .collect();
    let judged: Vec<&Case> = cases
        .iter()
        .copied()
        .filter(|c| candidates.iter().all(|&t| c.best_at(t).is_some()))
        .collect();
    if judged.is_empty() {
        return None;
    }
    let total_best: f64 = judged.iter().map(|c| c.best()).sum();
    candidates
        .into_iter()
        .map(|t| {
            let sum: f64 = judged.iter().filter_map(|c| c.best_at(t)).sum();
            (t, sum / total_best)
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(t, _)| t)
}

/// The chunk-aware rule's grid for a case with `waves`.
fn chunked_grid(device: &DeviceDesc, kernel: &KernelDesc, case: &Case, waves: u32) -> Geometry {
    let device = DeviceDesc {
        waves,
        ..device.clone()
    };
    chunked::grid(&device, kernel, &LaunchDesc::open(case.trip_count)).0
}

/// The chunk-aware rule's grid for a case with `waves`, and its measured
/// time if any.
fn chunked_time(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    case: &Case,
    waves: u32,
) -> Option<(Geometry, f64)> {
    let grid = chunked_grid(device, kernel, case, waves);
    case.time_of(grid).map(|t| (grid, t))
}

/// The waves whose chunk-aware grids regress the fewest cases against
/// LLVM's grid and then have the smallest geomean slowdown against the
/// best grid. A candidate whose grid the sweep did not measure on some case
/// is dropped. Cases whose grid no candidate moves are left out: they count
/// the same for every candidate, so they cannot change the choice, and a
/// grid the waves do not set (a cross-team reduction's, rule 6) may be
/// missing from an older sweep space without dropping every candidate.
fn fold_waves(device: &DeviceDesc, cases: &[(&Case, &KernelDesc)]) -> Option<u32> {
    let moved: Vec<(&Case, &KernelDesc, Vec<Geometry>)> = cases
        .iter()
        .filter_map(|&(c, k)| {
            let grids: Vec<Geometry> = WAVE_CANDIDATES
                .iter()
                .map(|&w| chunked_grid(device, k, c, w))
                .collect();
            grids
                .iter()
                .any(|g| *g != grids[0])
                .then_some((c, k, grids))
        })
        .collect();
    WAVE_CANDIDATES
        .iter()
        .enumerate()
        .filter_map(|(i, &w)| {
            let mut logs = Vec::with_capacity(moved.len());
            let mut regressions = 0usize;
            for (c, k, grids) in &moved {
                let t = c.time_of(grids[i])?;
                logs.push((t / c.best()).ln());
                let llvm = c.llvm.or_else(|| {
                    let g = llvm::grid(device, k, &LaunchDesc::open(c.trip_count));
                    c.times.get(&g).map(|&t| (g, t))
                });
                if llvm.is_some_and(|(_, base)| t > base * REGRESSION) {
                    regressions += 1;
                }
            }
            (!logs.is_empty())
                .then(|| (w, regressions, logs.iter().sum::<f64>() / logs.len() as f64))
        })
        .min_by(|a, b| a.1.cmp(&b.1).then(a.2.total_cmp(&b.2)))
        .map(|(w, _, _)| w)
}

/// Leave-one-out calibration over `cases`, with `kernels` giving each case's
/// descriptor (cases without one are left out of `auto`'s constants).
pub fn calibrate(
    device: &DeviceDesc,
    cases: &[Case],
    kernels: &HashMap<String, KernelDesc>,
) -> Calibration {
    let mut folds = Vec::with_capacity(cases.len());
    for (i, left_out) in cases.iter().enumerate() {
        let others: Vec<&Case> = cases
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, c)| c)
            .collect();
        let with_desc: Vec<(&Case, &KernelDesc)> = others
            .iter()
            .filter_map(|c| kernels.get(&c.kernel).map(|k| (*c, k)))
            .collect();
        let waves = fold_waves(device, &with_desc);
        let auto = match (waves, kernels.get(&left_out.kernel)) {
            (Some(w), Some(k)) => chunked_time(device, k, left_out, w),
            _ => None,
        };
        folds.push(Fold {
            case: i,
            threads_per_block: fold_threads(&others),
            waves,
            auto,
        });
    }
    Calibration {
        threads_per_block: mode(folds.iter().filter_map(|f| f.threads_per_block))
            .unwrap_or(device.threads_per_block),
        waves: mode(folds.iter().filter_map(|f| f.waves)).unwrap_or(device.waves),
        folds,
    }
}

/// The device description for a calibration, starting from `base`.
pub fn description_toml(
    base: &str,
    device: &DeviceDesc,
    calibration: &Calibration,
    cases: usize,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# gridsel device description, written by `gridsel-research calibrate` from {cases} measured kernel cases"
    );
    let _ = writeln!(
        out,
        "# (leave-one-out, Lloyd et al. 2018 §II-B). Load with {ENV_DEVICE}=<this file>."
    );
    let _ = writeln!(out, "base = \"{base}\"");
    let _ = writeln!(out, "name = \"{}\"", device.name);
    let _ = writeln!(out, "threads_per_block = {}", calibration.threads_per_block);
    let _ = writeln!(out, "waves = {}", calibration.waves);
    out
}

/// `gridsel-research calibrate`: calibrates on `sweep`'s cases, writes the
/// description to `out` (stdout when absent) and, with `loo_csv`, `auto`'s
/// grid and time per case with its fold's constants.
pub fn run(sweep: &Measured, out: Option<&Path>, loo_csv: Option<&Path>) -> Result<(), String> {
    let (base, cases, kernels) = sweep.load()?;
    let cal = calibrate(&base, &cases, &kernels);
    let judged = cal.folds.iter().filter(|f| f.auto.is_some()).count();
    eprintln!(
        "calibrated on {} cases ({} with descriptors): threads_per_block {}, waves {}; auto (leave-one-out) judged on {judged} cases",
        cases.len(),
        cases
            .iter()
            .filter(|c| kernels.contains_key(&c.kernel))
            .count(),
        cal.threads_per_block,
        cal.waves,
    );
    let description = description_toml(&sweep.device, &base, &cal, cases.len());
    match out {
        Some(path) => {
            std::fs::write(path, &description).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => print!("{description}"),
    }
    if let Some(path) = loo_csv {
        std::fs::write(path, loo_csv_text(&cases, &cal))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Per case, its fold's constants and `auto`'s grid and time with them (CSV).
fn loo_csv_text(cases: &[Case], cal: &Calibration) -> String {
    let mut text = String::from(
        "program,kernel,trip_count,fold_threads_per_block,fold_waves,threads,blocks,median_ms\n",
    );
    let show = |v: Option<u32>| v.map_or_else(String::new, |v| v.to_string());
    for f in &cal.folds {
        let c = &cases[f.case];
        let (threads, blocks, time) = match f.auto {
            Some((g, t)) => (g.threads.to_string(), g.blocks.to_string(), t.to_string()),
            None => Default::default(),
        };
        let _ = writeln!(
            text,
            "{},{},{},{},{},{threads},{blocks},{time}",
            csv::field(&c.program),
            csv::field(&c.kernel),
            c.trip_count,
            show(f.threads_per_block),
            show(f.waves)
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsel_core::kernel::ExecMode;

    /// Resident blocks of [`spmd32`] on the H100 at 128 threads.
    const RESIDENT_32: u32 = 2112;

    /// An SPMD kernel of 32 registers and cap 128 ([`RESIDENT_32`] resident
    /// blocks on the H100).
    fn spmd32(name: &str) -> KernelDesc {
        KernelDesc {
            local_mem: Some(0),
            registers: Some(32),
            shared_mem: Some(0),
            max_threads: Some(128),
            exec_mode: Some(ExecMode::Spmd),
            ..KernelDesc::named(name)
        }
    }

    /// Three kernels of [`spmd32`]'s shape, 10^5 chunks each, fastest at two
    /// waves of resident blocks.
    fn two_waves_win() -> Vec<Case> {
        let trip = 128 * 100_000;
        let resident = RESIDENT_32;
        let pts = [
            (128, resident, 1.2),
            (128, 2 * resident, 1.0),
            (128, 4 * resident, 1.1),
            (128, 100_000, 1.5),
        ];
        (0..3).map(|i| case(&format!("k{i}"), trip, &pts)).collect()
    }

    /// `calibrate` on the H100 preset with no kernel facts.
    fn h100_calibration(cases: &[Case]) -> Calibration {
        calibrate(&DeviceDesc::preset("h100").unwrap(), cases, &HashMap::new())
    }

    fn case(kernel: &str, trip: u64, points: &[(u32, u32, f64)]) -> Case {
        Case {
            program: "p".into(),
            kernel: kernel.into(),
            trip_count: trip,
            times: points
                .iter()
                .map(|&(t, b, m)| (Geometry::new(t, b), m))
                .collect(),
            llvm: None,
        }
    }

    #[test]
    fn threads_per_block_is_chosen_without_the_case_judged() {
        // Three cases prefer 128 threads, one prefers 32: its fold still says 128,
        // and the 32-lover's own data never decides its value.
        let fast128 = |k: &str| case(k, 1000, &[(32, 32, 2.0), (128, 8, 1.0)]);
        let cases = vec![
            fast128("a"),
            fast128("b"),
            fast128("c"),
            case("d", 1000, &[(32, 32, 1.0), (128, 8, 1.5)]),
        ];
        let cal = h100_calibration(&cases);
        assert_eq!(cal.threads_per_block, 128);
        assert!(cal.folds.iter().all(|f| f.threads_per_block == Some(128)));
    }

    #[test]
    fn waves_follow_the_other_kernels() {
        let d = DeviceDesc::preset("h100").unwrap();
        let k = spmd32("k");
        let cases = two_waves_win();
        let kernels: HashMap<String, KernelDesc> = (0..3)
            .map(|i| {
                (
                    format!("k{i}"),
                    KernelDesc {
                        local_mem: Some(0),
                        name: format!("k{i}"),
                        ..k.clone()
                    },
                )
            })
            .collect();
        let cal = calibrate(&d, &cases, &kernels);
        assert_eq!(cal.waves, 2);
        assert_eq!(
            cal.folds[0].auto,
            Some((Geometry::new(128, 2 * RESIDENT_32), 1.0))
        );
        let toml = description_toml("h100", &d, &cal, cases.len());
        let loaded = DeviceDesc::from_toml(&toml).unwrap();
        assert_eq!(
            (loaded.waves, loaded.threads_per_block, loaded.sm_count),
            (2, 128, 132)
        );
    }

    #[test]
    fn cases_swept_at_fewer_thread_counts_do_not_decide_threads_per_block() {
        // Three cases measured 32 and 128 threads and prefer 128; two (kernels
        // that may nest, swept at LLVM's 32 threads only) measured 32 alone.
        // Before, 32 was the only count every case had, so it won.
        let fast128 = |k: &str| case(k, 1000, &[(32, 32, 2.0), (128, 8, 1.0)]);
        let only32 = |k: &str| case(k, 1000, &[(32, 32, 1.0), (32, 8, 3.0)]);
        let cases = vec![
            fast128("a"),
            fast128("b"),
            fast128("c"),
            only32("n1"),
            only32("n2"),
        ];
        let cal = h100_calibration(&cases);
        assert_eq!(cal.threads_per_block, 128);
        assert!(cal.folds.iter().all(|f| f.threads_per_block == Some(128)));
        // With 32 the majority's only count, 128 is no candidate.
        let cases = vec![fast128("a"), only32("n1"), only32("n2"), only32("n3")];
        let cal = h100_calibration(&cases);
        assert_eq!(cal.threads_per_block, 32);
    }

    #[test]
    fn a_case_whose_grid_no_candidate_moves_is_left_out_of_the_waves() {
        let d = DeviceDesc::preset("h100").unwrap();
        let mut cases = two_waves_win();
        // 10 chunks: auto's grid is 128 x 10 under every candidate, and the
        // sweep did not measure it. Before, every candidate was dropped in
        // every fold holding this case.
        cases.push(case("k3", 1280, &[(32, 40, 2.0), (128, 5, 1.5)]));
        let kernels: HashMap<String, KernelDesc> = (0..4)
            .map(|i| (format!("k{i}"), spmd32(&format!("k{i}"))))
            .collect();
        let cal = calibrate(&d, &cases, &kernels);
        assert_eq!(cal.waves, 2);
        assert!(cal.folds.iter().all(|f| f.waves == Some(2)));
        assert_eq!(cal.folds[3].auto, None, "its own grid was not measured");
        assert_eq!(
            cal.folds[1].auto,
            Some((Geometry::new(128, 2 * RESIDENT_32), 1.0))
        );
        // Alone, it says nothing about the waves.
        let cal = calibrate(&d, &cases[3..], &kernels);
        assert!(cal.folds.iter().all(|f| f.waves.is_none()));
        assert_eq!(cal.waves, d.waves);
    }
}
