//! # gridsel-core: the decisions, as plain data
//!
//! What gridsel knows and decides, with no FFI, no files and no process
//! state: the kernel descriptors read from device images ([`image`],
//! [`kernel`]), the GPUs ([`device`], [`residency`]), the libomptarget a
//! launch goes to ([`libomptarget`], carried by each [`LaunchDesc`]), the
//! variables' names ([`mod@env`]), the rules about what
//! a launch may change ([`clauses`]), the policies and the grids a launch can
//! run ([`policy`], [`policy::limits`]), the random forest ([`forest_model`]) and
//! `tune`'s search ([`tune`]), a user's text in messages ([`text`]), plus the calibration of a device description from
//! sweep results lives in the command line.
//!
//! The crates around it: `docs/layout.md` in the repository. Where a policy
//! needs the outside world (`tune`'s searches across runs) it takes it as a
//! trait ([`tune::Store`], [`tune::Saver`]: the file, its writer and the
//! clock its searches are stamped by) the host side implements
//! (`gridsel-host`'s store file, the preload library's writer). Policies are
//! pure functions of `(DeviceDesc, KernelDesc, LaunchDesc)` where they can
//! be, and own their state where they learn ([`policy::GridPolicy`]).
//!
//! Two features add what only research needs, off in a user's build:
//! `research` (searches replayed on sweep results, `auto` with other
//! constants, the candidates before pruning, the labelled sweep space), for
//! `gridsel-research` and the tests, and `sweep` (`GRIDSEL_POLICY=sweep`),
//! for the benchmark harness's preload library.

#![forbid(unsafe_code)]

pub mod clauses;
pub mod device;
pub mod env;
pub mod forest_model;
pub mod geometry;
pub mod image;
pub mod kernel;
pub mod libomptarget;
pub mod policy;
pub mod residency;
pub mod splitmix;
pub mod text;
pub mod tune;

pub use device::DeviceDesc;
pub use geometry::{Geometry, LaunchDesc, LoopClass};
pub use kernel::{ExecMode, KernelDesc};
pub use policy::{Decision, Policy};

/// Locks `mutex`, taking over a lock poisoned by a panic elsewhere: the state
/// behind gridsel's locks only steers grid choices, every one of which is
/// clamped before use, and a launch must never fail for gridsel's sake.
pub fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`lock`] for the read side of an `RwLock`.
pub fn read_lock<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`lock`] for the write side of an `RwLock`.
pub fn write_lock<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What was reported already, by key: the one way gridsel says a thing
/// once (per process with `()`, per kernel, store or cause with a key), in
/// the preload library and in the policies alike. Usable in a `static`.
/// Keys are few (kernels, devices, causes) and come from the program, so
/// they hash with [`IntHasher`].
pub struct Reported<K>(std::sync::Mutex<IntSet<K>>);

impl<K: Eq + std::hash::Hash> Reported<K> {
    pub const fn new() -> Self {
        Self(std::sync::Mutex::new(IntSet::with_hasher(
            BuildIntHasher::new(),
        )))
    }

    /// Whether `key` is new, that is, whether the caller should say it now.
    pub fn first(&self, key: K) -> bool {
        lock(&self.0).insert(key)
    }
}

impl<K: Eq + std::hash::Hash> Default for Reported<K> {
    fn default() -> Self {
        Self::new()
    }
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

    #[test]
    fn each_key_is_reported_once() {
        let reported = Reported::new();
        assert!(reported.first(("cause", 1)));
        assert!(!reported.first(("cause", 1)));
        assert!(reported.first(("cause", 2)));
        static ONCE: Reported<()> = Reported::new();
        assert!(ONCE.first(()));
        assert!(!ONCE.first(()));
    }
}
