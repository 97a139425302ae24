//! What timed a search's samples.

/// The clock a process times its launches with, which a search's samples
/// carry in the store ([`super::store::Record::clock`]): samples of two
/// clocks are never compared with each other.
///
/// The host clock is the wall time of the `__tgt_target_kernel` call, the
/// kernel and the work libomptarget does around it (argument mapping, the
/// launch, the wait). Around a short kernel that work is most of it: on
/// the H100 LULESH's kernels of 8.5-94 us (Nsight Compute) took 73-195 us
/// so timed, and a grid 10 % faster on the GPU was within the noise of the
/// rest (bench/results/h100/NOTES.md §48). The GPU clock is the kernel's
/// own start-to-end time, as CUPTI's activity records give it: what a
/// tuning session times with where CUPTI is there (`GRIDSEL_TUNE_CLOCK`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    /// The wall time of the launch call.
    #[default]
    Host,
    /// The kernel's time on the GPU.
    Gpu,
}

impl Clock {
    /// The setting's and the store's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Gpu => "gpu",
        }
    }

    /// The clock [`Clock::name`] calls `word`.
    pub fn named(word: &str) -> Option<Self> {
        [Self::Host, Self::Gpu]
            .into_iter()
            .find(|c| c.name() == word)
    }
}
