//! A search's key and its trip-count class.

/// The trip-count class of a launch: half octaves, so that the trip counts
/// of a solver's shrinking loops (one launch each) share a search. Class 0
/// is a trip count of 0 (unknown to the host); class c > 0 holds trip counts
/// in [2^((c-1)/2), 2^(c/2)).
pub fn class(trip: u64) -> u32 {
    if trip == 0 {
        return 0;
    }
    // The largest c - 1 with 2^((c-1)/2) <= trip, i.e. 2^(c-1) <= trip^2,
    // computed exactly on integers.
    let square = u128::from(trip) * u128::from(trip);
    square.ilog2() + 1
}

/// The smallest trip count of `class`: samples of a class are scaled to it.
pub fn class_floor(class: u32) -> u64 {
    if class == 0 {
        return 0;
    }
    // The least t with t^2 >= 2^(class-1).
    let target = 1u128 << (class - 1);
    let mut t = (target as f64).sqrt() as u128;
    while t * t < target {
        t += 1;
    }
    while t > 1 && (t - 1) * (t - 1) >= target {
        t -= 1;
    }
    t as u64
}

/// A time measured at `trip`, scaled to its class's smallest trip count, so
/// that samples taken at different trip counts of one class compare.
pub fn scale_to_class(ns: u64, trip: u64) -> u64 {
    let floor = class_floor(class(trip));
    if trip == 0 || floor == trip {
        return ns;
    }
    let scaled = u128::from(ns) * u128::from(floor) / u128::from(trip);
    u64::try_from(scaled).unwrap_or(u64::MAX).max(1)
}

/// What identifies a search: kernel, device name, sm_arch, trip class,
/// and the build of the program (the device image's
/// [`crate::image::build_id`]; empty where unknown).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub kernel: String,
    pub device: String,
    pub sm_arch: u32,
    pub class: u32,
    pub build: String,
}

impl Key {
    /// The key of the search a launch joins: its kernel and build, the
    /// device it runs on and its trip count's [`class`].
    pub fn of_launch(l: &crate::policy::Launch<'_>) -> Self {
        Self::for_trip(
            l.kernel_name,
            l.device.name.as_str(),
            l.device.sm_arch,
            l.desc.trip_count,
            l.kernel.build.as_str(),
        )
    }

    /// The key of the search that launches of `kernel` of `build` at `trip`
    /// iterations on a device join: the trip count's [`class`], never the
    /// trip count.
    pub fn for_trip(
        kernel: impl Into<String>,
        device: impl Into<String>,
        sm_arch: u32,
        trip: u64,
        build: impl Into<String>,
    ) -> Self {
        Self {
            kernel: kernel.into(),
            device: device.into(),
            sm_arch,
            class: class(trip),
            build: build.into(),
        }
    }
}

impl Key {
    /// The key of the same search for any build: a record without a build
    /// (pinned from a sweep's best grids, or written by hand) that is
    /// pinned pins every build of its kernel ([`Table::for_launch`](super::Table::for_launch)).
    pub fn any_build(&self) -> Self {
        Self {
            build: String::new(),
            ..self.clone()
        }
    }
}
