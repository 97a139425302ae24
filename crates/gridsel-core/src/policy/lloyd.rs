//! The heuristic of Lloyd et al. 2018 ("Automated GPU Grid Geometry Selection
//! for OpenMP Kernels"), Fig. 7, exactly as published.
//!
//! ```text
//! if Parallelism <= SMCount:            short: (1, Parallelism)
//! else threads = ThreadsPerBlock
//!      blocksPerSM = min(ThreadLimit / threads,
//!                        RegisterLimit / (Registers * threads),
//!                        SharedMemLimit / SharedMem,
//!                        BlockLimit)
//!      maxBlocks = blocksPerSM * SMCount
//!      kernelBlocks = ceil(Parallelism / threads)
//!      long:  (threads, maxBlocks)    if kernelBlocks > maxBlocks
//!      ideal: (threads, kernelBlocks) otherwise
//! ```
//!
//! The divisions are floors, as the per-SM limits are whole blocks. A fact the
//! kernel descriptor lacks (no cubin) drops its limit from the minimum. The
//! text's ceil(tripcount/96) fixes the rounding of `kernelBlocks`.

use super::Rule;
use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LoopClass, div_ceil, saturate};
use crate::kernel::KernelDesc;

/// Blocks of `threads` threads one SM holds at once under the paper's limits.
pub fn blocks_per_sm(device: &DeviceDesc, kernel: &KernelDesc, threads: u32) -> u32 {
    let threads = threads.max(1);
    let mut limit = (device.max_threads_per_sm / threads).min(device.max_blocks_per_sm);
    if let Some(regs) = kernel.registers.filter(|&r| r > 0) {
        limit = limit.min(saturate(
            u64::from(device.max_registers_per_sm) / (u64::from(regs) * u64::from(threads)),
        ));
    }
    if let Some(shared) = kernel.shared_mem.filter(|&s| s > 0) {
        limit = limit.min(device.max_shared_mem_per_sm / shared);
    }
    limit
}

/// The paper's loop class for `trip_count` iterations.
pub fn classify(device: &DeviceDesc, kernel: &KernelDesc, trip_count: u64) -> LoopClass {
    if trip_count == 0 {
        return LoopClass::None;
    }
    if trip_count <= u64::from(device.sm_count) {
        return LoopClass::Short;
    }
    let threads = device.threads_per_block;
    let max_blocks = u64::from(blocks_per_sm(device, kernel, threads)) * u64::from(device.sm_count);
    if div_ceil(trip_count, u64::from(threads)) > max_blocks {
        LoopClass::Long
    } else {
        LoopClass::Ideal
    }
}

/// Fig. 7's grid and the branch that chose it.
pub fn lloyd(device: &DeviceDesc, kernel: &KernelDesc, trip_count: u64) -> (Geometry, Rule) {
    let threads = device.threads_per_block;
    match classify(device, kernel, trip_count) {
        LoopClass::Short => (Geometry::new(1, saturate(trip_count)), Rule::LloydShort),
        LoopClass::Long => {
            let max_blocks = blocks_per_sm(device, kernel, threads).saturating_mul(device.sm_count);
            (Geometry::new(threads, max_blocks.max(1)), Rule::LloydLong)
        }
        LoopClass::Ideal | LoopClass::None => {
            let blocks = div_ceil(trip_count.max(1), u64::from(threads));
            (Geometry::new(threads, saturate(blocks)), Rule::LloydIdeal)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ExecMode;

    /// The paper's GPU with the leave-one-out ThreadsPerBlock of Table I.
    fn titan(tpb: u32) -> DeviceDesc {
        DeviceDesc {
            threads_per_block: tpb,
            ..DeviceDesc::preset("titanx-pascal").unwrap()
        }
    }

    fn kernel(registers: u32, shared: u32) -> KernelDesc {
        KernelDesc {
            local_mem: Some(0),
            registers: Some(registers),
            shared_mem: Some(shared),
            max_threads: Some(1024),
            exec_mode: Some(ExecMode::Spmd),
            ..KernelDesc::named("k")
        }
    }

    #[test]
    fn table_1_short_loops_get_one_thread_per_iteration() {
        // S-1 and S-2: trip count 10 on 28 SMs -> (1, 10).
        let (g, rule) = lloyd(&titan(64), &kernel(32, 0), 10);
        assert_eq!(g, Geometry::new(1, 10));
        assert_eq!(rule, Rule::LloydShort);
        // The boundary: trip == SMCount is still short, one more is not.
        assert_eq!(
            lloyd(&titan(96), &kernel(32, 0), 28).0,
            Geometry::new(1, 28)
        );
        assert_eq!(lloyd(&titan(96), &kernel(32, 0), 29).1, Rule::LloydIdeal);
    }

    #[test]
    fn table_1_register_limited_long_loops_get_448_blocks() {
        // S-18..S-23 with ThreadsPerBlock 64: (64, 448) = 16 blocks/SM x 28 SMs,
        // i.e. 65536 / (64 regs x 64 threads) = 16.
        for trip in [128 * 256, 128 * 1024, 128 * 8192, 128 * 125_986] {
            let (g, rule) = lloyd(&titan(64), &kernel(64, 0), trip);
            assert_eq!(g, Geometry::new(64, 448), "trip {trip}");
            assert_eq!(rule, Rule::LloydLong);
        }
    }

    #[test]
    fn table_1_ideal_loops_use_ceil_trip_over_threads() {
        // P-5: LLVM (128,4) means trip in (384, 512]; Fig. 7 gives (64, 8) at 512.
        assert_eq!(
            lloyd(&titan(64), &kernel(64, 0), 512).0,
            Geometry::new(64, 8)
        );
        // P-13: (128,64) -> trip 8192 -> (64, 128) < 448.
        assert_eq!(
            lloyd(&titan(64), &kernel(64, 0), 8192).0,
            Geometry::new(64, 128)
        );
        // P-11 used ThreadsPerBlock 32: (32, 64) for trip 2048.
        assert_eq!(
            lloyd(&titan(32), &kernel(32, 0), 2048).0,
            Geometry::new(32, 64)
        );
        // Rounding up: 97 iterations with 96 threads need 2 blocks.
        assert_eq!(
            lloyd(&titan(96), &kernel(32, 0), 97).0,
            Geometry::new(96, 2)
        );
    }

    #[test]
    fn each_resource_can_be_the_binding_limit() {
        let d = titan(96);
        // Threads: 2048/96 = 21 blocks.
        assert_eq!(blocks_per_sm(&d, &kernel(16, 0), 96), 21);
        // Registers: 65536/(255*96) = 2.
        assert_eq!(blocks_per_sm(&d, &kernel(255, 0), 96), 2);
        // Shared memory: 98304/40000 = 2.
        assert_eq!(blocks_per_sm(&d, &kernel(16, 40_000), 96), 2);
        // Block limit: 2048/32 = 64 > 32.
        assert_eq!(blocks_per_sm(&d, &kernel(16, 0), 32), 32);
        // Unknown facts drop out of the minimum.
        assert_eq!(blocks_per_sm(&d, &KernelDesc::named("k"), 96), 21);
    }

    #[test]
    fn properties_hold_over_a_range_of_inputs() {
        let devices =
            ["titanx-pascal", "v100", "a100", "h100"].map(|n| DeviceDesc::preset(n).unwrap());
        for d in &devices {
            for regs in [0, 16, 32, 64, 128, 255] {
                for shared in [0, 1060, 48 * 1024] {
                    for trip in [
                        1,
                        2,
                        27,
                        28,
                        29,
                        131,
                        132,
                        133,
                        1000,
                        1 << 20,
                        1 << 40,
                        u64::MAX,
                    ] {
                        let k = kernel(regs, shared);
                        let (g, _) = lloyd(d, &k, trip);
                        assert!(g.blocks >= 1 && g.threads >= 1, "{d:?} {trip}");
                        assert!(g.threads <= d.max_threads_per_block);
                        assert_eq!(
                            lloyd(d, &k, trip),
                            (g, lloyd(d, &k, trip).1),
                            "deterministic"
                        );
                        if classify(d, &k, trip) == LoopClass::Long {
                            let resident =
                                u64::from(blocks_per_sm(d, &k, g.threads)) * u64::from(d.sm_count);
                            assert!(u64::from(g.blocks) <= resident.max(1));
                        }
                    }
                }
            }
        }
    }
}
