//! `auto`: the grid LLVM 19 kernels want on the device at hand.
//!
//! Two measured facts drive it (bench/results/h100/NOTES.md):
//!
//! 1. An SPMD kernel's `distribute` hands each team chunks of the compiled
//!    thread cap (128 by default), whatever the block size. A block smaller
//!    than the chunk runs the chunk serially (LLVM's 32-thread blocks for
//!    trip counts under 409 600 run 4 iterations per thread; the paper's
//!    1-thread blocks run 128), and blocks beyond the number of chunks idle.
//!    So: threads = the chunk, blocks = one per chunk.
//! 2. Past a device's worth of resident blocks, more blocks only queue; the
//!    calibrated `waves` (device profile) caps the grid at that many waves
//!    of resident blocks, resident blocks counted with the hardware's
//!    allocation granularities ([`crate::occupancy`]).
//!
//! Generic-SPMD and Generic kernels give one `distribute` iteration per team
//! and run the nested `parallel` loop with the team's threads: they keep
//! LLVM's thread count and get one team per iteration up to the same cap.

use super::Rule;
use super::llvm::DEFAULT_THREADS;
use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc, div_ceil, saturate};
use crate::kernel::{ExecMode, KernelDesc};
use crate::occupancy::resident_blocks;

/// The `auto` grid and the rule that chose it.
pub fn auto(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> (Geometry, Rule) {
    let cap = super::thread_cap(device, kernel);
    let trip = launch.trip_count.max(1);
    let (threads, teams_wanted) = match kernel.exec_mode.unwrap_or(ExecMode::Spmd) {
        ExecMode::Spmd => {
            // Unknown cap (no cubin): clang's default, which is also the chunk.
            let chunk = kernel
                .distribute_chunk()
                .unwrap_or(DEFAULT_THREADS)
                .clamp(1, cap);
            (chunk, div_ceil(trip, u64::from(chunk)))
        }
        ExecMode::GenericSpmd | ExecMode::Generic => (cap.min(DEFAULT_THREADS), trip),
    };
    let limit =
        u64::from(resident_blocks(device, kernel, threads)) * u64::from(device.waves.max(1));
    if teams_wanted <= limit {
        (
            Geometry::new(threads, saturate(teams_wanted)),
            Rule::AutoOneTeamPerChunk,
        )
    } else {
        (
            Geometry::new(threads, saturate(limit)),
            Rule::AutoResidentWaves,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> DeviceDesc {
        DeviceDesc::preset("h100").unwrap()
    }

    fn kernel(mode: ExecMode, cap: u32, regs: u32) -> KernelDesc {
        KernelDesc {
            registers: Some(regs),
            shared_mem: Some(0),
            max_threads: Some(cap),
            exec_mode: Some(mode),
            ..KernelDesc::named("k")
        }
    }

    #[test]
    fn spmd_blocks_are_one_per_chunk_of_the_cap() {
        let d = h100();
        let k = kernel(ExecMode::Spmd, 128, 32);
        // The short heavy loop of REFERENCE.md §3: 132 iterations = 2 chunks.
        assert_eq!(
            auto(&d, &k, &LaunchDesc::open(132)),
            (Geometry::new(128, 2), Rule::AutoOneTeamPerChunk)
        );
        assert_eq!(
            auto(&d, &k, &LaunchDesc::open(1000)).0,
            Geometry::new(128, 8)
        );
        assert_eq!(auto(&d, &k, &LaunchDesc::open(1)).0, Geometry::new(128, 1));
        // A raised cap raises the chunk with it.
        let wide = kernel(ExecMode::Spmd, 512, 32);
        assert_eq!(
            auto(&d, &wide, &LaunchDesc::open(4096)).0,
            Geometry::new(512, 8)
        );
    }

    #[test]
    fn long_loops_stop_at_the_calibrated_waves_of_resident_blocks() {
        let mut d = h100();
        let k = kernel(ExecMode::Spmd, 128, 72);
        // 72 regs: 7 blocks of 128 per SM -> 924 resident.
        d.waves = 1;
        assert_eq!(
            auto(&d, &k, &LaunchDesc::open(1 << 30)),
            (Geometry::new(128, 924), Rule::AutoResidentWaves)
        );
        d.waves = 4;
        assert_eq!(
            auto(&d, &k, &LaunchDesc::open(1 << 30)).0,
            Geometry::new(128, 3696)
        );
        // Exactly at the limit is still one team per chunk.
        assert_eq!(
            auto(&d, &k, &LaunchDesc::open(3696 * 128)).1,
            Rule::AutoOneTeamPerChunk
        );
    }

    #[test]
    fn generic_spmd_gets_a_team_per_iteration() {
        let d = h100();
        let k = kernel(ExecMode::GenericSpmd, 128, 50);
        assert_eq!(
            auto(&d, &k, &LaunchDesc::open(500)).0,
            Geometry::new(128, 500)
        );
    }

    #[test]
    fn never_exceeds_the_cap_and_always_launches_something() {
        let d = h100();
        for mode in [ExecMode::Spmd, ExecMode::GenericSpmd, ExecMode::Generic] {
            for cap in [32, 128, 256, 1024] {
                for regs in [16, 64, 255] {
                    for trip in [0, 1, 131, 132, 133, 10_000, 1 << 40] {
                        let (g, _) = auto(&d, &kernel(mode, cap, regs), &LaunchDesc::open(trip));
                        assert!(
                            g.threads >= 1 && g.threads <= cap && g.blocks >= 1,
                            "{mode:?} {cap} {regs} {trip}"
                        );
                    }
                }
            }
        }
        // No cubin: clang's default cap and chunk.
        assert_eq!(
            auto(&d, &KernelDesc::named("k"), &LaunchDesc::open(1000)).0,
            Geometry::new(128, 8)
        );
    }
}
