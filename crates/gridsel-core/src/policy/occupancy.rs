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
use crate::kernel::KernelDesc;
use crate::occupancy::{resident_blocks, resident_blocks_per_sm};

/// The occupancy-maximising grid.
pub fn occupancy(device: &DeviceDesc, kernel: &KernelDesc, trip_count: u64) -> (Geometry, Rule) {
    let cap = crate::occupancy::thread_cap(device, kernel);
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
    let blocks = div_ceil(trip_count.max(1), u64::from(threads))
        .min(u64::from(resident_blocks(device, kernel, threads)));
    (Geometry::new(threads, saturate(blocks)), Rule::Occupancy)
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
    fn titan_x_pascal_hand_computed() {
        let d = DeviceDesc::preset("titanx-pascal").unwrap();
        // 64 regs: 32 warps/SM at most; 1024 threads -> 1 block (32 warps).
        assert_eq!(
            occupancy(&d, &kernel(64, 1024), 1 << 30).0,
            Geometry::new(1024, 28)
        );
    }
}
