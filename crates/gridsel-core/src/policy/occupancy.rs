//! `occupancy`: NVIDIA's occupancy-calculator answer (SNOWPACK's "OCC").
//!
//! The block size is the one with the highest theoretical occupancy among
//! whole warps up to the kernel's cap; ties go to the largest block, as
//! `cuOccupancyMaxPotentialBlockSize` does (it scans block sizes downwards
//! and keeps a new size only when strictly better). The grid fills the
//! device with one wave of resident blocks, or covers the trip count one
//! iteration per thread when that needs fewer blocks.

use super::Rule;
use crate::device::DeviceDesc;
use crate::geometry::{Geometry, div_ceil, saturate};
use crate::kernel::{ExecMode, KernelDesc};
use crate::residency::{resident_blocks, resident_blocks_per_sm};

/// The occupancy-maximising grid.
pub fn occupancy(device: &DeviceDesc, kernel: &KernelDesc, trip_count: u64) -> (Geometry, Rule) {
    let cap = crate::residency::thread_cap(device, kernel);
    let warp = device.warp_size;
    let mut best = (0u64, warp.min(cap));
    for threads in (1..=cap / warp).rev().map(|w| w * warp) {
        let active =
            u64::from(resident_blocks_per_sm(device, kernel, threads)) * u64::from(threads);
        if active > best.0 {
            best = (active, threads);
        }
    }
    let threads = best.1;
    let blocks = one_per_unit_of_work(kernel, trip_count.max(1), threads)
        .min(u64::from(resident_blocks(device, kernel, threads)));
    (Geometry::new(threads, saturate(blocks)), Rule::Occupancy)
}

/// The blocks that give every unit of work its own thread: one iteration
/// per thread in an SPMD loop, one per team where a team runs the
/// distribute loop's iterations with its threads inside them (Generic and
/// Generic-SPMD: `teams distribute` over a nested `parallel`). Dividing by
/// the threads there left 8 teams for 1 024 rows, 25x slower than LLVM's
/// grid on the H100.
fn one_per_unit_of_work(kernel: &KernelDesc, trip_count: u64, threads: u32) -> u64 {
    match kernel.exec_mode {
        Some(ExecMode::Generic | ExecMode::GenericSpmd) => trip_count,
        Some(ExecMode::Spmd) | None => div_ceil(trip_count, u64::from(threads)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(registers: u32, cap: u32) -> KernelDesc {
        KernelDesc {
            local_mem: Some(0),
            registers: Some(registers),
            shared_mem: Some(0),
            max_threads: Some(cap),
            ..KernelDesc::named("k")
        }
    }

    #[test]
    fn h100_picks_the_largest_block_at_full_occupancy() {
        let d = DeviceDesc::preset("h100").unwrap();
        // 32 regs: every size up to 1024 reaches 64 warps; the largest wins.
        assert_eq!(
            occupancy(&d, &kernel(32, 1024), 1 << 30).0,
            Geometry::new(1024, 264)
        );
        // Capped at clang's default 128 threads: 16 blocks/SM x 132.
        assert_eq!(
            occupancy(&d, &kernel(32, 128), 1 << 30).0,
            Geometry::new(128, 2112)
        );
        // 72 regs: 28 warps max; 128 threads give 7x4 = 28 warps, 896 threads give 1x28.
        assert_eq!(
            occupancy(&d, &kernel(72, 1024), 1 << 30).0,
            Geometry::new(896, 132)
        );
        // Small trip counts need fewer blocks than a wave.
        assert_eq!(
            occupancy(&d, &kernel(32, 128), 1000).0,
            Geometry::new(128, 8)
        );
    }

    #[test]
    fn a_team_per_distribute_iteration_outside_spmd_loops() {
        let d = DeviceDesc::preset("h100").unwrap();
        let mut k = kernel(32, 128);
        for mode in [ExecMode::Generic, ExecMode::GenericSpmd] {
            k.exec_mode = Some(mode);
            // 1 024 rows, each a team's: not 1 024 / 128 = 8 teams.
            assert_eq!(occupancy(&d, &k, 1024).0, Geometry::new(128, 1024));
            // Still one wave at most.
            assert_eq!(occupancy(&d, &k, 1 << 20).0, Geometry::new(128, 2112));
        }
        k.exec_mode = Some(ExecMode::Spmd);
        assert_eq!(occupancy(&d, &k, 1024).0, Geometry::new(128, 8));
    }

    #[test]
    fn titan_x_pascal_hand_computed() {
        let d = DeviceDesc::preset("titanx-pascal").unwrap();
        // 64 regs: 32 warps/SM at most; 1024 threads -> 1 block (32 warps).
        assert_eq!(
            occupancy(&d, &kernel(64, 1024), 1 << 30).0,
            Geometry::new(1024, 28)
        );
    }
}
