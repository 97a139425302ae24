//! # gridsel: launch grids for OpenMP offload kernels, chosen per GPU and kernel
//!
//! gridsel is loaded with `LD_PRELOAD` under unmodified clang OpenMP offload
//! programs. libomptarget picks every kernel's grid (blocks = teams, threads per
//! block) with one fixed rule; gridsel intercepts the launch, looks at what it
//! knows about the kernel and the GPU, and writes a better grid into the launch
//! before forwarding it.
//!
//! ## How a launch flows
//!
//! 1. Before `main`, each binary or shared library with offload code calls
//!    `__tgt_register_lib`. [`ffi::api`] records its offload entries (host
//!    address -> kernel name) and its device images; [`image`] parses each
//!    cubin once into [`KernelDesc`]s (registers, shared and local memory,
//!    thread cap, execution mode).
//! 2. At every `__tgt_target_kernel`, [`runtime`] maps the host address to the
//!    kernel, the device id to a [`DeviceDesc`] (from the driver, a preset or a
//!    profile file) and, when the program left the grid open, asks the
//!    [`Policy`] in force for a [`Geometry`]. [`plan`] holds the rules about
//!    what may be changed at all; the policies are pure functions.
//! 3. The grid is written into both the call arguments and `KernelArgs`, and
//!    the call is forwarded to the real libomptarget.
//!
//! All `unsafe` code, the C ABI and the CUDA driver live in [`ffi`]; everything
//! else is plain data. Every export catches panics and forwards the call
//! unchanged. A grid gridsel writes never exceeds the kernel's compiled cap or
//! the device's limits, and is only written where the OpenMP program left the
//! grid to the implementation, so results do not depend on it.

pub mod calibrate;
pub mod config;
pub mod device;
pub mod ffi;
pub mod forest;
pub mod geometry;
pub mod guard;
pub mod image;
pub mod kernel;
pub mod logging;
pub mod occupancy;
pub mod plan;
pub mod policy;
pub mod profile;
pub mod runtime;
pub mod tune;

pub use device::DeviceDesc;
pub use geometry::{Geometry, LaunchDesc, LoopClass};
pub use kernel::{ExecMode, KernelDesc};
pub use policy::{Decision, Policy};

/// Locks `mutex`, taking over a lock poisoned by a panic elsewhere: the state
/// behind gridsel's locks only steers grid choices, every one of which is
/// clamped before use, and a launch must never fail for gridsel's sake.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`lock`] for the read side of an `RwLock`.
pub(crate) fn read_lock<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`lock`] for the write side of an `RwLock`.
pub(crate) fn write_lock<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A hash map keyed by the launch path's integers (host addresses, device
/// ids, trip counts), hashed with [`IntHasher`].
pub type IntMap<K, V> = std::collections::HashMap<K, V, BuildIntHasher>;
/// A hash set of such integers.
pub type IntSet<K> = std::collections::HashSet<K, BuildIntHasher>;
/// Builds [`IntHasher`]s.
pub type BuildIntHasher = std::hash::BuildHasherDefault<IntHasher>;

/// One multiply per word (FxHash's mix) for the integer keys of
/// the launch path's tables. SipHash, std's default, was a quarter of a
/// cached `forest` launch; these keys come from the program's own launches,
/// not from an adversary, so collision resistance buys nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct IntHasher(u64);

impl IntHasher {
    const K: u64 = 0xf135_7aea_2e62_a9c5;
}

impl std::hash::Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(Self::K);
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    /// Folds the well-mixed high bits into the low ones hashbrown indexes
    /// buckets with, twice: aligned addresses and trip counts that are
    /// multiples of a power of two would otherwise share buckets.
    fn finish(&self) -> u64 {
        let h = (self.0 ^ (self.0 >> 32)).wrapping_mul(Self::K);
        h ^ (h >> 32)
    }
}

/// The crate version, as the C API reports it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn aligned_addresses_and_trip_counts_spread_over_the_low_bits() {
        let low_byte = |h: u64| (h & 0xff) as usize;
        let build = BuildIntHasher::default();
        let mut buckets = [false; 256];
        for i in 0..1024usize {
            buckets[low_byte(build.hash_one(0x5555_0000_1000 + 64 * i))] = true;
        }
        assert!(buckets.iter().filter(|&&b| b).count() > 200);
        let mut buckets = [false; 256];
        for trip in (1..=1024u64).map(|i| i << 10) {
            buckets[low_byte(build.hash_one((0i64, trip)))] = true;
        }
        assert!(buckets.iter().filter(|&&b| b).count() > 200);
        assert_ne!(build.hash_one((0i64, 7u64)), build.hash_one((7i64, 0u64)));
    }
}
