//! `forest`: the grid of least predicted time under a random forest
//! (Lloyd et al. 2018, §III; the model is described in [`crate::forest`]).
//!
//! The candidates are the grid points of the sweep space ([`sweep::grid`]:
//! [`sweep::space`] minus the policies' own points), the grids the training data measured, so
//! the model is never asked about a grid it has not seen the like of. The
//! runtime caches each decision per (kernel, trip count, device); the first
//! one costs a forest walk per candidate (README: launch-path cost).

use super::{Decision, Rule, sweep};
use crate::device::DeviceDesc;
use crate::forest::{Forest, KernelFeatures, N_FEATURES};
use crate::geometry::{Geometry, LaunchDesc};
use crate::kernel::KernelDesc;
use crate::occupancy::resident_blocks_per_sm;

/// The grids the forest chooses among for one launch, in sweep order.
pub fn candidates(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> Vec<Geometry> {
    sweep::grid(device, kernel, launch)
}

/// The candidate of least predicted time with `model`; `None` when the space
/// is empty.
pub fn choose(
    model: &Forest,
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
) -> Option<Geometry> {
    let grids = candidates(device, kernel, launch);
    let base = KernelFeatures::new(device, kernel, launch.trip_count);
    let mut resident: Option<(u32, u32)> = None;
    let rows: Vec<[f32; N_FEATURES]> = grids
        .iter()
        .map(|&g| {
            // The space is ordered by threads: one occupancy computation each.
            let per_sm = match resident {
                Some((t, r)) if t == g.threads => r,
                _ => {
                    let r = resident_blocks_per_sm(device, kernel, g.threads);
                    resident = Some((g.threads, r));
                    r
                }
            };
            base.row(device, g, per_sm)
        })
        .collect();
    model.argmin(&rows).map(|(i, _)| grids[i])
}

/// The forest's grid and rule; `auto`'s when there is no candidate.
pub fn forest(
    model: &Forest,
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
) -> (Geometry, Rule) {
    match choose(model, device, kernel, launch) {
        Some(g) => (g, Rule::Forest),
        None => super::auto::auto(device, kernel, launch),
    }
}

/// [`forest`] with the embedded model; `lloyd` if that model failed to load
/// (a build error that tests catch).
pub fn embedded(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> (Geometry, Rule) {
    match Forest::embedded() {
        Ok(model) => forest(&model, device, kernel, launch),
        Err(_) => super::lloyd::lloyd(device, kernel, launch.trip_count),
    }
}

/// A full decision (class, clamp) with a given model, for the runtime.
pub fn decide_with(
    model: &Forest,
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
) -> Decision {
    let class = super::lloyd::classify(device, kernel, launch.trip_count);
    let (geometry, rule) = forest(model, device, kernel, launch);
    let (geometry, clamped) = super::clamp(geometry, device, kernel);
    Decision {
        geometry,
        class,
        rule,
        clamped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ExecMode;

    #[test]
    fn candidates_are_the_sweep_space_grid_points() {
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
                    .collect();
                assert_eq!(candidates(&d, &k, &l), from_space);
            }
        }
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
