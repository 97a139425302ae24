//! Resident blocks per SM, computed the way the hardware allocates.
//!
//! The paper's Fig. 7 divides the SM's limits by a block's needs. The
//! hardware allocates registers per warp in units of `register_alloc_unit`,
//! shared memory per block in units of `shared_alloc_unit` plus a system
//! reserve, and threads in whole warps; these granularities are what
//! `cuOccupancyMaxActiveBlocksPerMultiprocessor` applies, and what the CUDA
//! occupancy calculator documents for each compute capability.

use crate::device::DeviceDesc;
use crate::kernel::KernelDesc;

/// Warps limited by registers come in multiples of this many (the CUDA
/// occupancy calculator's "warp allocation granularity", 4 on every compute
/// capability from 5.0 to 9.0; `gridsel-research check-driver` confirmed it on the H100).
const WARP_ALLOCATION_GRANULARITY: u64 = 4;

/// Rounds `value` up to a multiple of `unit` (`unit > 0`).
fn round_up(value: u64, unit: u64) -> u64 {
    value.div_ceil(unit) * unit
}

/// Blocks of `threads` threads that one SM holds at once; 0 when even one
/// block does not fit. Unknown kernel facts do not limit.
pub fn resident_blocks_per_sm(device: &DeviceDesc, kernel: &KernelDesc, threads: u32) -> u32 {
    let warp = u64::from(device.warp_size);
    let warps_per_block = u64::from(threads.max(1)).div_ceil(warp);
    let max_warps = u64::from(device.max_threads_per_sm) / warp;
    let mut limit = (max_warps / warps_per_block).min(u64::from(device.max_blocks_per_sm));

    if let Some(regs) = kernel.registers.filter(|&r| r > 0) {
        let per_warp = round_up(
            u64::from(regs) * warp,
            u64::from(device.register_alloc_unit),
        );
        let warps = u64::from(device.max_registers_per_sm) / per_warp;
        let warps_by_regs = warps / WARP_ALLOCATION_GRANULARITY * WARP_ALLOCATION_GRANULARITY;
        limit = limit.min(warps_by_regs / warps_per_block);
    }
    if let Some(shared) = kernel.shared_mem {
        let per_block = round_up(
            u64::from(shared) + u64::from(device.reserved_shared_per_block),
            u64::from(device.shared_alloc_unit),
        );
        if let Some(by_shared) = u64::from(device.max_shared_mem_per_sm).checked_div(per_block) {
            limit = limit.min(by_shared);
        }
    }
    u32::try_from(limit).unwrap_or(u32::MAX)
}

/// Blocks of `threads` threads the whole device holds at once (at least 1).
pub fn resident_blocks(device: &DeviceDesc, kernel: &KernelDesc, threads: u32) -> u32 {
    on_every_sm(device, resident_blocks_per_sm(device, kernel, threads))
}

/// `per_sm` resident blocks on each SM, over the device (at least 1).
pub fn on_every_sm(device: &DeviceDesc, per_sm: u32) -> u32 {
    per_sm.saturating_mul(device.sm_count).max(1)
}

/// Fraction of the SM's warp slots `threads`-thread blocks keep busy.
pub fn occupancy(device: &DeviceDesc, kernel: &KernelDesc, threads: u32) -> f64 {
    occupancy_with(
        device,
        threads,
        resident_blocks_per_sm(device, kernel, threads),
    )
}

/// [`occupancy`] when the resident blocks per SM are already known.
pub fn occupancy_with(device: &DeviceDesc, threads: u32, per_sm: u32) -> f64 {
    let warp = device.warp_size.max(1);
    let warps = u64::from(threads.max(1)).div_ceil(u64::from(warp));
    let active = u64::from(per_sm) * warps;
    active as f64 / (f64::from(device.max_threads_per_sm) / f64::from(warp))
}

/// Largest thread count a launch of `kernel` can actually get.
pub fn thread_cap(device: &DeviceDesc, kernel: &KernelDesc) -> u32 {
    kernel
        .max_threads
        .map_or(device.max_threads_per_block, |cap| {
            cap.min(device.max_threads_per_block)
        })
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(registers: u32, shared: u32) -> KernelDesc {
        KernelDesc {
            registers: Some(registers),
            shared_mem: Some(shared),
            ..KernelDesc::named("k")
        }
    }

    #[test]
    fn h100_hand_computed_cases() {
        let d = DeviceDesc::preset("h100").unwrap();
        // 32 regs, 128 threads: 4 warps/block; 1024 regs/warp -> 64 warps -> 16 blocks;
        // threads: 64 warps / 4 = 16; shared: (0+1024) -> 228 blocks. -> 16.
        assert_eq!(resident_blocks_per_sm(&d, &kernel(32, 0), 128), 16);
        // 72 regs (gemm): 72*32 = 2304 regs/warp (already a multiple of 256) ->
        // 65536/2304 = 28 warps (a multiple of 4) -> 7 blocks of 4 warps.
        assert_eq!(resident_blocks_per_sm(&d, &kernel(72, 0), 128), 7);
        // 37 regs round to 40*32=1280/warp -> 51 warps, 48 in whole
        // allocation units of 4 -> 12 blocks.
        assert_eq!(resident_blocks_per_sm(&d, &kernel(37, 0), 128), 12);
        // 48 regs, 64 threads: 65536/1536 = 42 warps -> 40 -> 20 blocks (the
        // driver's answer for cg's update_xr kernel; 21 without the granule).
        assert_eq!(resident_blocks_per_sm(&d, &kernel(48, 0), 64), 20);
        // Shared memory bound: 48 KiB + 1 KiB reserve -> 233472/50176 = 4.
        assert_eq!(resident_blocks_per_sm(&d, &kernel(16, 48 * 1024), 128), 4);
        // Block limit: 32 threads -> 64 warps would allow 64 blocks; limit 32.
        assert_eq!(resident_blocks_per_sm(&d, &kernel(16, 0), 32), 32);
        // One thread still takes a whole warp.
        assert_eq!(resident_blocks_per_sm(&d, &kernel(16, 0), 1), 32);
        // 255 regs x 1024 threads does not fit at all.
        assert_eq!(resident_blocks_per_sm(&d, &kernel(255, 0), 1024), 0);
        assert_eq!(resident_blocks(&d, &kernel(255, 0), 1024), 1);
        assert_eq!(resident_blocks(&d, &kernel(32, 0), 128), 16 * 132);
        assert!((occupancy(&d, &kernel(72, 0), 128) - 28.0 / 64.0).abs() < 1e-12);
    }

    #[test]
    fn titan_x_pascal_hand_computed_cases() {
        let d = DeviceDesc::preset("titanx-pascal").unwrap();
        // 64 regs, 64 threads: 2048 regs/warp -> 32 warps -> 16 blocks (Table I's 448/28).
        assert_eq!(resident_blocks_per_sm(&d, &kernel(64, 0), 64), 16);
        // No reserve on Pascal: 98304 / 49152 = 2 blocks.
        assert_eq!(resident_blocks_per_sm(&d, &kernel(16, 49_152), 96), 2);
    }
}
