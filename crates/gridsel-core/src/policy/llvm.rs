//! LLVM's own grid rule, per release, modelled so logs, the safe range and
//! the CLI can show it next to gridsel's choice.
//!
//! Source: `GenericKernelTy::getNumThreads`/`getNumBlocks` (LLVM 19 to 22)
//! and `getEffectiveNumThreads`/`getEffectiveNumBlocks` (23) in
//! offload/plugins-nextgen/common/src/PluginInterface.cpp, read in Debian's
//! llvm-toolchain-19 19.1.7, -21 21.1.8, -22 22.1.8 and -23 23.1.1 sources
//! (docs/llvm-grid.md §1, §5). For NVIDIA devices the releases differ in one
//! point: from 22 on, SPMD-No-Loop kernels get one thread per iteration.

use crate::device::{DeviceDesc, MAX_BLOCKS};
use crate::geometry::{Geometry, LaunchDesc, div_ceil, saturate};
use crate::kernel::{ExecMode, KernelDesc};

/// `GV_Default_WG_Size`: threads per block when nothing says otherwise.
pub const DEFAULT_THREADS: u32 = 128;
/// `GV_Default_Num_Teams`: the block cap for high trip counts.
pub const DEFAULT_BLOCKS: u64 = 3200;
/// `LIBOMPTARGET_MIN_THREADS_FOR_LOW_TRIP_COUNT` default.
pub const MIN_THREADS_FOR_LOW_TRIP_COUNT: u32 = 32;
/// `OMP_TGT_EXEC_MODE_SPMD_NO_LOOP`, the kernel environment's mode byte for
/// a loop that needs one thread per iteration (LLVM 22 and later).
pub const EXEC_MODE_SPMD_NO_LOOP: u8 = 6;

/// The grid the libomptarget of `launch.llvm_release` launches for this
/// request, with its environment defaults, on an NVIDIA device.
///
/// An unknown execution mode is taken as SPMD, the mode of every combined
/// `target teams distribute parallel for` at -O2; a launch whose flags make
/// its grid strict (LLVM 23) is never modelled, since gridsel leaves it
/// alone.
pub fn grid(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> Geometry {
    let rule = launch.llvm_release.rule();
    let max_threads = crate::residency::thread_cap(device, kernel);
    let mode = kernel.exec_mode.unwrap_or(ExecMode::Spmd);
    let env = kernel.environment.as_ref();

    let mut limit = u32::try_from(launch.thread_limit).unwrap_or(0);
    if limit > 0 && mode == ExecMode::Generic {
        limit += device.warp_size;
    }
    let user_threads = limit > 0;
    // `PreferredNumThreads`: the kernel's minimum, if above the default.
    let preferred = env
        .and_then(|e| e.min_threads)
        .map_or(DEFAULT_THREADS, |min| min.max(DEFAULT_THREADS));
    let mut threads = max_threads.min(if user_threads { limit } else { preferred });

    if launch.num_teams > 0 {
        return Geometry::new(threads, launch.num_teams as u32);
    }
    if launch.num_teams < 0 {
        // Plain `target`: the runtime forces one team.
        return Geometry::new(threads, 1);
    }

    let trip = launch.trip_count;
    if rule.has_no_loop_mode() && env.is_some_and(|e| e.exec_mode == EXEC_MODE_SPMD_NO_LOOP) {
        // One iteration per thread, no loop: neither the 3200 cap nor the
        // low-trip-count cut applies.
        let blocks = if trip > 0 {
            div_ceil(trip, u64::from(threads))
        } else {
            1
        };
        return Geometry::new(threads, saturate(blocks).min(MAX_BLOCKS));
    }
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
        saturate(blocks.min(DEFAULT_BLOCKS)).min(MAX_BLOCKS),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelEnvironment;
    use crate::libomptarget::LlvmRelease;

    fn h100() -> DeviceDesc {
        DeviceDesc::preset("h100").unwrap()
    }

    /// `launch` to LLVM `release`'s libomptarget.
    fn under(release: u32, launch: LaunchDesc) -> LaunchDesc {
        LaunchDesc {
            llvm_release: LlvmRelease::new(release),
            ..launch
        }
    }

    /// A kernel whose environment says `exec_mode`, capped at 128 threads.
    fn with_environment(exec_mode: u8, min_threads: Option<u32>) -> KernelDesc {
        KernelDesc {
            exec_mode: ExecMode::from_raw(exec_mode),
            environment: Some(KernelEnvironment {
                exec_mode,
                min_threads,
                max_threads: Some(128),
                ..KernelEnvironment::default()
            }),
            ..KernelDesc::spmd_for_tests(128)
        }
    }

    #[test]
    fn loop_kernels_get_the_same_grid_from_every_release() {
        // SPMD, Generic-SPMD and Generic kernels: 19's rule unchanged through
        // 23 (getNumBlocks/getEffectiveNumBlocks differ only in No-Loop).
        for release in 19..=23 {
            let d = h100();
            for (trip, expected) in [
                (132, Geometry::new(32, 5)),
                (100_000, Geometry::new(32, 3125)),
                (200_000, Geometry::new(64, 3125)),
                (1_000_000, Geometry::new(128, 3200)),
                (0, Geometry::new(128, 3200)),
            ] {
                let k = KernelDesc::spmd_for_tests(128);
                assert_eq!(
                    grid(&d, &k, &under(release, LaunchDesc::open(trip))),
                    expected,
                    "LLVM {release}, trip {trip}"
                );
            }
            let generic_spmd = with_environment(3, None);
            assert_eq!(
                grid(&d, &generic_spmd, &under(release, LaunchDesc::open(500))),
                Geometry::new(128, 500),
                "LLVM {release}"
            );
        }
    }

    #[test]
    fn spmd_no_loop_kernels_get_a_thread_per_iteration_from_22_on() {
        let no_loop = with_environment(EXEC_MODE_SPMD_NO_LOOP, None);
        for (trip, before_22, from_22) in [
            // 19-21 know no such mode and run the SPMD rule.
            (
                1_000_000,
                Geometry::new(128, 3200),
                Geometry::new(128, 7813),
            ),
            (1000, Geometry::new(32, 32), Geometry::new(128, 8)),
            (0, Geometry::new(128, 3200), Geometry::new(128, 1)),
        ] {
            for release in 19..=23 {
                let expected = if release >= 22 { from_22 } else { before_22 };
                assert_eq!(
                    grid(&h100(), &no_loop, &under(release, LaunchDesc::open(trip))),
                    expected,
                    "LLVM {release}, trip {trip}"
                );
            }
        }
        // A clause still comes first.
        let clause = LaunchDesc {
            num_teams: 7,
            thread_limit: 64,
            ..LaunchDesc::open(1000)
        };
        assert_eq!(
            grid(&h100(), &no_loop, &under(23, clause)),
            Geometry::new(64, 7)
        );
    }

    #[test]
    fn a_kernel_minimum_above_the_default_is_the_preferred_block() {
        // `PreferredNumThreads` = max(MinThreads, 128), then the cap.
        let mut k = with_environment(2, Some(256));
        k.max_threads = Some(512);
        k.environment.as_mut().unwrap().max_threads = Some(512);
        for release in 19..=23 {
            assert_eq!(
                grid(&h100(), &k, &under(release, LaunchDesc::open(1 << 24))),
                Geometry::new(256, 3200),
                "LLVM {release}"
            );
        }
        // A minimum below the default leaves 128.
        let k = with_environment(2, Some(1));
        assert_eq!(
            grid(&h100(), &k, &LaunchDesc::open(1 << 24)),
            Geometry::new(128, 3200)
        );
    }

    #[test]
    fn matches_the_examples_of_docs_llvm_grid() {
        let (d, k) = (h100(), KernelDesc::spmd_for_tests(128));
        assert_eq!(grid(&d, &k, &LaunchDesc::open(1000)), Geometry::new(32, 32));
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(100_000)),
            Geometry::new(32, 3125)
        );
        assert_eq!(
            grid(&d, &k, &LaunchDesc::open(1_000_000)),
            Geometry::new(128, 3200)
        );
        // The short heavy loop of docs/llvm-grid.md §3: 132 iterations -> 5 blocks x 32 threads.
        assert_eq!(grid(&d, &k, &LaunchDesc::open(132)), Geometry::new(32, 5));
    }

    #[test]
    fn middle_band_rounds_threads_to_a_power_of_two() {
        // 3200*32 <= trip < 3200*128: threads = pow2ceil(ceil(trip/3200)).
        let got = grid(
            &h100(),
            &KernelDesc::spmd_for_tests(128),
            &LaunchDesc::open(200_000),
        );
        assert_eq!(got, Geometry::new(64, 3125));
    }

    #[test]
    fn clauses_are_taken_as_given() {
        let l = LaunchDesc {
            num_teams: 7,
            thread_limit: 64,
            ..LaunchDesc::open(1000)
        };
        assert_eq!(
            grid(&h100(), &KernelDesc::spmd_for_tests(128), &l),
            Geometry::new(64, 7)
        );
        let l = LaunchDesc {
            num_teams: 0,
            thread_limit: 64,
            ..LaunchDesc::open(1000)
        };
        assert_eq!(
            grid(&h100(), &KernelDesc::spmd_for_tests(128), &l),
            Geometry::new(64, 16)
        );
    }

    #[test]
    fn generic_kernels_get_a_team_per_iteration_and_an_extra_warp() {
        let mut k = KernelDesc::spmd_for_tests(1024);
        k.exec_mode = Some(ExecMode::GenericSpmd);
        assert_eq!(
            grid(&h100(), &k, &LaunchDesc::open(500)),
            Geometry::new(128, 500)
        );
        k.exec_mode = Some(ExecMode::Generic);
        let l = LaunchDesc {
            num_teams: 0,
            thread_limit: 64,
            ..LaunchDesc::open(500)
        };
        assert_eq!(grid(&h100(), &k, &l), Geometry::new(96, 500));
    }

    #[test]
    fn no_trip_count_and_plain_target() {
        assert_eq!(
            grid(
                &h100(),
                &KernelDesc::spmd_for_tests(128),
                &LaunchDesc::open(0)
            ),
            Geometry::new(128, 3200)
        );
        let l = LaunchDesc {
            num_teams: -1,
            thread_limit: 0,
            ..LaunchDesc::open(0)
        };
        assert_eq!(
            grid(&h100(), &KernelDesc::spmd_for_tests(128), &l),
            Geometry::new(128, 1)
        );
    }
}
