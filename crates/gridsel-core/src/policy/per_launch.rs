//! State a learning policy keeps per launch class: per kernel, device and
//! trip count (or a class of trip counts), bounded per kernel.

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
    states: Mutex<States<S>>,
    /// The launch's trip count, or the class of trip counts that share a state.
    trips: fn(&Launch<'_>) -> u64,
}

struct States<S> {
    /// By (kernel serial, device id, trip count): one hash on the launch path.
    by_launch: IntMap<(u64, i64, u64), S>,
    /// How many states each kernel has, consulted only to add one.
    per_kernel: IntMap<u64, usize>,
}

impl<S> Default for PerLaunch<S> {
    /// One state per exact trip count.
    fn default() -> Self {
        Self::keyed_by(|l| l.desc.trip_count)
    }
}

impl<S> PerLaunch<S> {
    /// One state per kernel, device and `trips(launch)`.
    pub fn keyed_by(trips: fn(&Launch<'_>) -> u64) -> Self {
        Self {
            states: Mutex::new(States {
                by_launch: IntMap::default(),
                per_kernel: IntMap::default(),
            }),
            trips,
        }
    }

    fn key(&self, launch: &Launch<'_>) -> (u64, i64, u64) {
        (launch.kernel_serial, launch.device_id, (self.trips)(launch))
    }

    /// Runs `f` on `launch`'s state, made by `init` on first use; `None`
    /// when the state is new and its kernel already has the most.
    pub fn with<R>(
        &self,
        launch: &Launch<'_>,
        init: impl FnOnce() -> S,
        f: impl FnOnce(&mut S) -> R,
    ) -> Option<R> {
        let mut guard = crate::lock(&self.states);
        let states = &mut *guard;
        let key = self.key(launch);
        if let Some(state) = states.by_launch.get_mut(&key) {
            return Some(f(state));
        }
        let count = states.per_kernel.entry(launch.kernel_serial).or_default();
        if *count >= MAX_TRIP_COUNTS {
            return None;
        }
        *count += 1;
        Some(f(states.by_launch.entry(key).or_insert_with(init)))
    }

    /// Runs `f` on `launch`'s state if there is one.
    pub fn existing<R>(&self, launch: &Launch<'_>, f: impl FnOnce(&mut S) -> R) -> Option<R> {
        crate::lock(&self.states)
            .by_launch
            .get_mut(&self.key(launch))
            .map(f)
    }

    /// Runs `f` on every state (off the launch path: at exit).
    pub fn each(&self, mut f: impl FnMut(&mut S)) {
        crate::lock(&self.states)
            .by_launch
            .values_mut()
            .for_each(&mut f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceDesc;
    use crate::geometry::LaunchDesc;
    use crate::kernel::KernelDesc;

    #[test]
    fn states_are_per_kernel_device_and_trip_and_bounded_per_kernel() {
        let device = DeviceDesc::preset("h100").unwrap();
        let kernel = KernelDesc::named("k");
        let launch = |serial: u64, trip: u64| Launch {
            kernel_serial: serial,
            kernel_name: "k",
            kernel: &kernel,
            device_id: 0,
            device: &device,
            desc: LaunchDesc::open(trip),
            timed: true,
        };
        let states = PerLaunch::<u64>::default();
        for trip in 0..MAX_TRIP_COUNTS as u64 {
            assert_eq!(states.with(&launch(1, trip), || trip, |s| *s), Some(trip));
        }
        // Full for kernel 1, but its known states still answer ...
        assert_eq!(states.with(&launch(1, u64::MAX), || 0, |s| *s), None);
        assert_eq!(states.with(&launch(1, 7), || 0, |s| *s), Some(7));
        // ... and another kernel (a new serial for a reused address) starts afresh.
        assert_eq!(states.with(&launch(2, 7), || 70, |s| *s), Some(70));
        assert_eq!(states.existing(&launch(2, 8), |s| *s), None);
        states.with(&launch(2, 7), || 0, |s| *s += 1);
        assert_eq!(states.existing(&launch(2, 7), |s| *s), Some(71));
    }
}
