//! The grids a launch can run: every policy's grid is cut to these.
//!
//! A launch that fails once its grid is chosen ends the program: there is no
//! host fallback at that point, and an illegal memory access takes the
//! process's CUDA context with it. So no policy, `tune`'s exploration
//! included, may pick a grid outside [`Limits::of`]. Three things bound it:
//!
//! 1. **The compiled cap.** `.maxntid` and the kernel environment's
//!    MaxThreads (128 unless `thread_limit`/launch bounds raise it); more
//!    threads cannot be launched. Generic kernels need one warp for the main
//!    thread plus at least one worker.
//! 2. **The device.** Threads per block and CUDA's grid x-limit.
//! 3. **The device runtime's heap, for kernels that may use nested
//!    parallelism** (bench/results/h100/NOTES.md §9). A `parallel` region
//!    inside another one runs serialized, and each team's first entry
//!    `malloc`s an array of 8 bytes per thread of the block (every thread of
//!    a warp that sees it missing allocates its own copy; the winner is never
//!    freed), plus 40 bytes per thread per region. The heap is CUDA's device
//!    `malloc` heap, 8 MB unless `LIBOMPTARGET_HEAP_SIZE` says otherwise, and
//!    a failed `malloc` is not checked: the kernel writes through a null
//!    pointer. Demand grows with threads per block squared times busy teams,
//!    and the leak accumulates launch after launch. Measured on the H100
//!    (probe_nested_simd): every grid with more threads per block than
//!    LLVM's failed at 24 576 and 98 304 samples, every grid with LLVM's
//!    threads and at most LLVM's busy teams ran. Such a kernel therefore
//!    keeps at most LLVM's threads and blocks for the launch: it never asks
//!    the heap for more than LLVM's own grid does. Where the image cannot
//!    tell whether the kernel nests (no kernel environment, and no bounded
//!    stack to rule out the runtime's recursion), the same limit applies.

use crate::device::{DeviceDesc, MAX_BLOCKS};
use crate::geometry::{Geometry, LaunchDesc};
use crate::kernel::{ExecMode, KernelDesc};
use crate::residency::thread_cap;
use std::fmt;

/// Why a launch's range is narrower than the compiled and device limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Narrowed {
    /// The kernel environment says a `parallel` region may nest.
    NestedParallelism,
    /// Nothing in the image says whether it may (host and JIT images, older
    /// compilers with an unbounded stack).
    NestingUnknown,
}

impl fmt::Display for Narrowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NestedParallelism => "the kernel may use nested parallelism",
            Self::NestingUnknown => "the image does not say whether the kernel nests parallelism",
        })
    }
}

/// Why `kernel`'s launches keep at most LLVM's grid, if they do: a GPU
/// kernel that may nest parallel regions, or whose image cannot tell. Host
/// plugin kernels run on the CPU and are never narrowed.
pub fn narrowing(kernel: &KernelDesc) -> Option<Narrowed> {
    if kernel.host {
        return None;
    }
    match kernel.nested_parallelism() {
        Some(false) => None,
        Some(true) => Some(Narrowed::NestedParallelism),
        None => Some(Narrowed::NestingUnknown),
    }
}

/// The grids a launch can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub min_threads: u32,
    pub max_threads: u32,
    pub max_blocks: u32,
    /// Set when the range is cut to LLVM's own grid for the launch.
    pub narrowed: Option<Narrowed>,
}

impl Limits {
    /// What the compiled kernel and the device allow, whatever the launch.
    pub fn compiled(device: &DeviceDesc, kernel: &KernelDesc) -> Self {
        let cap = thread_cap(device, kernel);
        let min_threads = if kernel.exec_mode == Some(ExecMode::Generic) {
            (device.warp_size + 1).min(cap)
        } else {
            1
        };
        Self {
            min_threads,
            max_threads: cap,
            max_blocks: MAX_BLOCKS,
            narrowed: None,
        }
    }

    /// The grids this launch of `kernel` can run (module documentation).
    pub fn of(device: &DeviceDesc, kernel: &KernelDesc, launch: &LaunchDesc) -> Self {
        let compiled = Self::compiled(device, kernel);
        let Some(narrowed) = narrowing(kernel) else {
            return compiled;
        };
        let llvm = super::llvm::grid(device, kernel, launch);
        Self {
            min_threads: compiled.min_threads.min(llvm.threads),
            max_threads: llvm.threads.min(compiled.max_threads),
            max_blocks: llvm.blocks.clamp(1, compiled.max_blocks),
            narrowed: Some(narrowed),
        }
    }

    /// Whether `g` lies inside.
    pub fn contains(&self, g: Geometry) -> bool {
        (self.min_threads..=self.max_threads).contains(&g.threads)
            && (1..=self.max_blocks).contains(&g.blocks)
    }

    /// Cuts `g` into the range; reports whether it had to.
    pub fn clamp(&self, g: Geometry) -> (Geometry, bool) {
        let out = Geometry::new(
            g.threads.clamp(self.min_threads, self.max_threads),
            g.blocks.clamp(1, self.max_blocks),
        );
        (out, out != g)
    }
}

impl fmt::Display for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "threads {}..{}, blocks <= {}",
            self.min_threads, self.max_threads, self.max_blocks
        )?;
        if let Some(why) = self.narrowed {
            write!(f, " (LLVM's grid at most: {why})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelEnvironment;

    fn h100() -> DeviceDesc {
        DeviceDesc::preset("h100").unwrap()
    }

    fn spmd(nested: Option<bool>) -> KernelDesc {
        KernelDesc {
            max_threads: Some(128),
            exec_mode: Some(ExecMode::Spmd),
            local_mem: Some(0),
            environment: Some(KernelEnvironment {
                may_use_nested_parallelism: nested,
                exec_mode: 2,
                max_threads: Some(128),
                ..KernelEnvironment::default()
            }),
            ..KernelDesc::named("k")
        }
    }

    #[test]
    fn kernels_without_nesting_get_the_compiled_and_device_limits() {
        let d = h100();
        let l = Limits::of(&d, &spmd(Some(false)), &LaunchDesc::open(24_576));
        assert_eq!(l, Limits::compiled(&d, &spmd(Some(false))));
        assert_eq!(
            (l.max_threads, l.max_blocks, l.narrowed),
            (128, MAX_BLOCKS, None)
        );
        assert_eq!(
            l.clamp(Geometry::new(1024, 0)),
            (Geometry::new(128, 1), true)
        );
        assert_eq!(
            l.clamp(Geometry::new(96, 10)),
            (Geometry::new(96, 10), false)
        );
    }

    #[test]
    fn nesting_kernels_keep_at_most_llvms_grid() {
        let d = h100();
        let k = spmd(Some(true));
        // The crash case of NOTES.md §9: LLVM runs 768 x 32 at 24 576 samples,
        // every 96- and 128-thread grid failed.
        let l = Limits::of(&d, &k, &LaunchDesc::open(24_576));
        assert_eq!(
            (l.max_threads, l.max_blocks, l.narrowed),
            (32, 768, Some(Narrowed::NestedParallelism))
        );
        for bad in [
            Geometry::new(128, 192),
            Geometry::new(96, 264),
            Geometry::new(64, 768),
        ] {
            assert!(!l.contains(bad), "{bad}");
        }
        assert!(l.contains(Geometry::new(32, 768)));
        assert!(l.contains(Geometry::new(32, 192)));
        assert_eq!(
            l.clamp(Geometry::new(128, 4224)),
            (Geometry::new(32, 768), true)
        );
        // Past 409 600 iterations LLVM itself runs 128 x 3200.
        let l = Limits::of(&d, &k, &LaunchDesc::open(1 << 24));
        assert_eq!((l.max_threads, l.max_blocks), (128, 3200));
    }

    #[test]
    fn unknown_nesting_is_treated_as_nesting() {
        let d = h100();
        let mut k = spmd(None);
        k.environment = None;
        k.local_mem = None;
        let l = Limits::of(&d, &k, &LaunchDesc::open(100_000));
        assert_eq!(l.narrowed, Some(Narrowed::NestingUnknown));
        assert_eq!((l.max_threads, l.max_blocks), (32, 3125));
        // A bounded stack rules out the runtime's recursion, so no nesting.
        k.local_mem = Some(0);
        assert_eq!(
            Limits::of(&d, &k, &LaunchDesc::open(100_000)).narrowed,
            None
        );
        k.local_mem = None;
        k.unbounded_stack = true;
        assert_eq!(
            Limits::of(&d, &k, &LaunchDesc::open(100_000)).narrowed,
            Some(Narrowed::NestingUnknown)
        );
        // Host plugin kernels run on the CPU: no device heap.
        k.host = true;
        assert_eq!(
            Limits::of(&d, &k, &LaunchDesc::open(100_000)).narrowed,
            None
        );
    }

    #[test]
    fn generic_kernels_keep_a_worker_above_the_main_warp() {
        let d = h100();
        let k = KernelDesc {
            max_threads: Some(128),
            exec_mode: Some(ExecMode::Generic),
            local_mem: Some(0),
            ..KernelDesc::named("k")
        };
        let l = Limits::of(&d, &k, &LaunchDesc::open(1000));
        assert_eq!(l.clamp(Geometry::new(1, 10)), (Geometry::new(33, 10), true));
        let mut unknown_cap = k.clone();
        unknown_cap.max_threads = None;
        assert_eq!(
            Limits::of(&d, &unknown_cap, &LaunchDesc::open(1000))
                .clamp(Geometry::new(4096, u32::MAX)),
            (Geometry::new(1024, MAX_BLOCKS), true)
        );
    }
}
