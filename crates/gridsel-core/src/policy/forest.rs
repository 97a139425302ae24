//! `forest`: the grid of least predicted time under a random forest
//! (Lloyd et al. 2018, §III; the model is described in [`crate::forest_model`]).
//!
//! The candidates are the grid points of the sweep space ([`sweep::columns`]:
//! the sweep's space minus the policies' own points), the grids the training
//! data measured, so the model is never asked about a grid it has not seen
//! the like of; above four warps only power-of-two thread counts are
//! searched ([`searched_threads`]). The runtime caches each decision per
//! (kernel, trip count, device); the first one walks each tree once per
//! thread count (docs/measurements.md §4: launch-path cost).

use super::per_launch::PerLaunch;
use super::{GridPolicy, Launch, Proposal, Rule, sweep};
use crate::device::DeviceDesc;
use crate::forest_model::{Forest, KernelFeatures};
use crate::geometry::{Geometry, LaunchDesc};
use crate::kernel::KernelDesc;
use std::sync::Arc;

/// Whether the forest searches blocks of `threads` threads: every count up
/// to four warps (clang's default cap, where all but one kernel of the H100
/// suite stays), then powers of two (8, 16, 32 warps: the sizes that fill an
/// SM's 2048 threads exactly). The search costs 1.5-2.5 us per thread count
/// (dev VM, H100 host); the full warp ladder of a 1024-thread kernel (33
/// counts) took 46 us against a 20 us budget, and on the suite's only
/// raised-cap kernel the best grid of these counts was within 7 % of the full
/// space's (bench/results/h100/NOTES.md §7).
pub fn searched_threads(device: &DeviceDesc, threads: u32) -> bool {
    let warp = device.warp_size.max(1);
    threads <= 4 * warp || (threads.is_multiple_of(warp) && (threads / warp).is_power_of_two())
}

/// The grid's columns the forest searches, threads ascending.
fn columns(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> Vec<sweep::Column> {
    sweep::columns(device, kernel, launch, |t| searched_threads(device, t))
}

/// The grids the forest chooses among for one launch, in sweep order.
pub fn candidates(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> Vec<Geometry> {
    sweep::points(columns(device, kernel, launch))
}

/// The candidate of least predicted time with `model`; `None` when the space
/// is empty.
pub fn choose(
    model: &Forest,
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
) -> Option<Geometry> {
    let columns = columns(device, kernel, launch);
    let base = KernelFeatures::new(device, kernel, launch.trip_count);
    let (mut i, _) = model.argmin(columns.iter().map(|c| {
        (
            base.column(device, c.threads, c.resident_per_sm),
            c.blocks.as_slice(),
        )
    }))?;
    // The index counts candidates column by column, as `candidates` lists them.
    columns.iter().find_map(|c| match c.blocks.get(i) {
        Some(&b) => Some(Geometry::new(c.threads, b)),
        None => {
            i -= c.blocks.len();
            None
        }
    })
}

/// The forest's grid and rule; the chunk-aware rule's ([`super::chunked`])
/// when there is no candidate, and LLVM's for a launch without a trip
/// count: its features start from the trip count, and the model never saw
/// such a launch
/// ([`super::llvm_without_trip_count`]).
pub fn forest(
    model: &Forest,
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
) -> (Geometry, Rule) {
    if launch.trip_count == 0 {
        return super::llvm_without_trip_count(device, kernel, launch);
    }
    match choose(model, device, kernel, launch) {
        Some(g) => (g, Rule::Forest),
        None => super::chunked::grid(device, kernel, launch),
    }
}

/// [`forest`] with the embedded model, for the CLI and the C API; if that
/// model cannot be loaded (a build error tests catch), the chunk-aware
/// rule's grid, as when `GRIDSEL_MODEL` names a bad file (the default
/// policy then, its store unread).
pub fn with_embedded_model(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
) -> (Geometry, Rule) {
    match Forest::embedded() {
        Ok(model) => forest(&model, device, kernel, launch),
        Err(_) => super::chunked::grid(device, kernel, launch),
    }
}

/// `forest` as the launch pipeline runs it: the model's choice, searched
/// once per (kernel, device, trip count) and kept; past
/// [`super::per_launch::MAX_TRIP_COUNTS`] trip counts of a kernel, the
/// chunk-aware rule's grid.
pub struct ForestPolicy {
    model: Arc<Forest>,
    chosen: PerLaunch<(Geometry, Rule)>,
}

impl ForestPolicy {
    pub fn new(model: Arc<Forest>) -> Self {
        Self {
            model,
            chosen: PerLaunch::default(),
        }
    }
}

impl GridPolicy for ForestPolicy {
    fn decide(&self, l: &Launch<'_>) -> Option<Proposal> {
        let search = || forest(&self.model, l.device, l.kernel, &l.desc);
        let (grid, rule) = self
            .chosen
            .with(l, search, |chosen| *chosen)
            .unwrap_or_else(|| super::chunked::grid(l.device, l.kernel, &l.desc));
        Some(Proposal::new(grid, rule))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ExecMode;

    #[test]
    fn candidates_are_the_sweep_space_grid_points_of_the_searched_thread_counts() {
        let d = DeviceDesc::preset("h100").unwrap();
        for (mode, cap) in [
            (ExecMode::Spmd, 128),
            (ExecMode::Spmd, 1024),
            (ExecMode::Generic, 256),
        ] {
            let k = KernelDesc {
                registers: Some(64),
                max_threads: Some(cap),
                exec_mode: Some(mode),
                ..KernelDesc::named("k")
            };
            for trip in [1, 132, 10_000, 1 << 24, 1 << 34] {
                let l = LaunchDesc::open(trip);
                let from_space: Vec<Geometry> = sweep::space(&d, &k, &l)
                    .into_iter()
                    .filter(|c| c.label == "grid")
                    .map(|c| c.decision.geometry)
                    .filter(|g| searched_threads(&d, g.threads))
                    .collect();
                assert_eq!(candidates(&d, &k, &l), from_space);
            }
        }
    }

    #[test]
    fn searches_every_thread_count_to_four_warps_then_powers_of_two() {
        let d = DeviceDesc::preset("h100").unwrap();
        let searched: Vec<u32> = (1..=1024).filter(|&t| searched_threads(&d, t)).collect();
        let mut expected: Vec<u32> = (1..=128).collect();
        expected.extend([256, 512, 1024]);
        assert_eq!(searched, expected);
    }

    #[test]
    fn chooses_a_sweep_grid_within_the_kernel_limits() {
        let d = DeviceDesc::preset("h100").unwrap();
        let k = KernelDesc {
            registers: Some(32),
            shared_mem: Some(0),
            local_mem: Some(0),
            max_threads: Some(128),
            exec_mode: Some(ExecMode::Spmd),
            code_size: Some(2048),
            ..KernelDesc::named("k")
        };
        let model = Forest::embedded().unwrap();
        for trip in [1, 100, 100_000, 1 << 30] {
            let launch = LaunchDesc::open(trip);
            let (g, rule) = forest(&model, &d, &k, &launch);
            assert_eq!(rule, Rule::Forest);
            assert!(candidates(&d, &k, &launch).contains(&g), "{trip}: {g}");
            assert!(g.threads <= 128 && g.blocks >= 1);
        }
    }
}
