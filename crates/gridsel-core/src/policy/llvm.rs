//! LLVM 19's own grid rule, modelled so logs and the CLI can show it next to
//! gridsel's choice.
//!
//! Source: offload/plugins-nextgen/common/src/PluginInterface.cpp at 19.1.7,
//! `GenericKernelTy::getNumThreads` and `getNumBlocks` (docs/llvm-grid.md §1).

use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc, div_ceil, saturate};
use crate::kernel::{ExecMode, KernelDesc};

/// `GV_Default_WG_Size`: threads per block when nothing says otherwise.
pub const DEFAULT_THREADS: u32 = 128;
/// `GV_Default_Num_Teams`: the block cap for high trip counts.
pub const DEFAULT_BLOCKS: u64 = 3200;
/// `LIBOMPTARGET_MIN_THREADS_FOR_LOW_TRIP_COUNT` default.
pub const MIN_THREADS_FOR_LOW_TRIP_COUNT: u32 = 32;

/// The grid LLVM 19 launches for this request, with its environment defaults.
///
/// An unknown execution mode is taken as SPMD, the mode of every combined
/// `target teams distribute parallel for` at -O2.
pub fn llvm19(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> Geometry {
    let max_threads = crate::occupancy::thread_cap(device, kernel);
    let mode = kernel.exec_mode.unwrap_or(ExecMode::Spmd);

    let mut limit = u32::try_from(launch.thread_limit).unwrap_or(0);
    if limit > 0 && mode == ExecMode::Generic {
        limit += device.warp_size;
    }
    let user_threads = limit > 0;
    let mut threads = max_threads.min(if user_threads { limit } else { DEFAULT_THREADS });

    if launch.num_teams > 0 {
        return Geometry::new(threads, launch.num_teams as u32);
    }
    if launch.num_teams < 0 {
        // Plain `target`: the runtime forces one team.
        return Geometry::new(threads, 1);
    }

    let trip = launch.trip_count;
    let mut blocks = u64::MAX;
    if trip > 0 {
        if mode == ExecMode::Spmd {
            let min_threads = MIN_THREADS_FOR_LOW_TRIP_COUNT.min(threads);
            if trip >= DEFAULT_BLOCKS * u64::from(threads) || user_threads {
                // Enough parallelism for teams and threads.
            } else if trip >= DEFAULT_BLOCKS * u64::from(min_threads) {
                // Enough for teams: cut threads to a power of two >= trip/blocks.
                let per_block = div_ceil(trip, DEFAULT_BLOCKS).next_power_of_two();
                threads = threads.min(saturate(per_block));
            } else {
                threads = threads.min(min_threads);
            }
            blocks = div_ceil(trip, u64::from(threads));
        } else {
            // `teams distribute` + nested `parallel for`: a team per iteration.
            blocks = trip;
        }
    }
    // LIBOMPTARGET_REUSE_BLOCKS_FOR_HIGH_TRIP_COUNT (on by default).
    Geometry::new(
        threads,
        saturate(blocks.min(DEFAULT_BLOCKS)).min(super::MAX_BLOCKS),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> DeviceDesc {
        DeviceDesc::preset("h100").unwrap()
    }

    #[test]
    fn matches_the_examples_of_docs_llvm_grid() {
        let (d, k) = (h100(), KernelDesc::spmd_for_tests(128));
        assert_eq!(
            llvm19(&d, &k, &LaunchDesc::open(1000)),
            Geometry::new(32, 32)
        );
        assert_eq!(
            llvm19(&d, &k, &LaunchDesc::open(100_000)),
            Geometry::new(32, 3125)
        );
        assert_eq!(
            llvm19(&d, &k, &LaunchDesc::open(1_000_000)),
            Geometry::new(128, 3200)
        );
        // The short heavy loop of docs/llvm-grid.md §3: 132 iterations -> 5 blocks x 32 threads.
        assert_eq!(llvm19(&d, &k, &LaunchDesc::open(132)), Geometry::new(32, 5));
    }

    #[test]
    fn middle_band_rounds_threads_to_a_power_of_two() {
        // 3200*32 <= trip < 3200*128: threads = pow2ceil(ceil(trip/3200)).
        let got = llvm19(
            &h100(),
            &KernelDesc::spmd_for_tests(128),
            &LaunchDesc::open(200_000),
        );
        assert_eq!(got, Geometry::new(64, 3125));
    }

    #[test]
    fn clauses_are_taken_as_given() {
        let l = LaunchDesc {
            trip_count: 1000,
            num_teams: 7,
            thread_limit: 64,
        };
        assert_eq!(
            llvm19(&h100(), &KernelDesc::spmd_for_tests(128), &l),
            Geometry::new(64, 7)
        );
        let l = LaunchDesc {
            trip_count: 1000,
            num_teams: 0,
            thread_limit: 64,
        };
        assert_eq!(
            llvm19(&h100(), &KernelDesc::spmd_for_tests(128), &l),
            Geometry::new(64, 16)
        );
    }

    #[test]
    fn generic_kernels_get_a_team_per_iteration_and_an_extra_warp() {
        let mut k = KernelDesc::spmd_for_tests(1024);
        k.exec_mode = Some(ExecMode::GenericSpmd);
        assert_eq!(
            llvm19(&h100(), &k, &LaunchDesc::open(500)),
            Geometry::new(128, 500)
        );
        k.exec_mode = Some(ExecMode::Generic);
        let l = LaunchDesc {
            trip_count: 500,
            num_teams: 0,
            thread_limit: 64,
        };
        assert_eq!(llvm19(&h100(), &k, &l), Geometry::new(96, 500));
    }

    #[test]
    fn no_trip_count_and_plain_target() {
        assert_eq!(
            llvm19(
                &h100(),
                &KernelDesc::spmd_for_tests(128),
                &LaunchDesc::open(0)
            ),
            Geometry::new(128, 3200)
        );
        let l = LaunchDesc {
            trip_count: 0,
            num_teams: -1,
            thread_limit: 0,
        };
        assert_eq!(
            llvm19(&h100(), &KernelDesc::spmd_for_tests(128), &l),
            Geometry::new(128, 1)
        );
    }
}
