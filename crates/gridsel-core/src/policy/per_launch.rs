//! State a learning policy keeps per launch class: per kernel, device and
//! trip count, bounded per kernel.

use super::Launch;
use crate::IntMap;
use std::sync::Mutex;

/// Trip counts per kernel for which a policy keeps state; a kernel whose trip
/// count changes at every launch gets no more, so memory and launch-path work
/// stay bounded (past the bound the policy answers statelessly).
pub const MAX_TRIP_COUNTS: usize = 256;

/// One `S` per (kernel, device, trip count), at most [`MAX_TRIP_COUNTS`] per
/// kernel. Keyed by the kernel's registration serial, not its host address,
/// which a library loaded later may reuse.
pub struct PerLaunch<S> {
    states: Mutex<IntMap<u64, OfKernel<S>>>,
}

/// One kernel's states by (device id, trip count).
type OfKernel<S> = IntMap<(i64, u64), S>;

impl<S> Default for PerLaunch<S> {
    fn default() -> Self {
        Self {
            states: Mutex::default(),
        }
    }
}

impl<S> PerLaunch<S> {
    /// Runs `f` on `launch`'s state, made by `init` on first use; `None`
    /// when the state is new and its kernel already has the most.
    pub fn with<R>(
        &self,
        launch: &Launch<'_>,
        init: impl FnOnce() -> S,
        f: impl FnOnce(&mut S) -> R,
    ) -> Option<R> {
        let mut states = crate::lock(&self.states);
        let of_kernel = states.entry(launch.kernel_serial).or_default();
        let key = (launch.device_id, launch.desc.trip_count);
        if !of_kernel.contains_key(&key) && of_kernel.len() >= MAX_TRIP_COUNTS {
            return None;
        }
        Some(f(of_kernel.entry(key).or_insert_with(init)))
    }

    /// Runs `f` on `launch`'s state if there is one.
    pub fn existing<R>(&self, launch: &Launch<'_>, f: impl FnOnce(&mut S) -> R) -> Option<R> {
        let mut states = crate::lock(&self.states);
        let key = (launch.device_id, launch.desc.trip_count);
        states
            .get_mut(&launch.kernel_serial)
            .and_then(|k| k.get_mut(&key))
            .map(f)
    }
}
