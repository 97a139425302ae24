//! `tune`: grids measured on real launches, learned across runs.
//!
//! Static policies guess; measuring finds the best grid of every kernel,
//! but only if the measurements outlive the process: most benchmark
//! programs launch a kernel once or a few dozen times per run. Under
//! `GRIDSEL_POLICY=tune` each (kernel, device, trip-count class, build) is a
//! [`search::Search`] whose samples persist in a store (`GRIDSEL_CACHE`,
//! by default `$XDG_CACHE_HOME/gridsel/tune.json`; [`store`] is the
//! format). A run goes on from where the last one stopped, so a kernel
//! launched once per run settles after a few runs, and processes running
//! at once add to the same searches.
//!
//! - **Candidates, in the order of a prior** ([`candidates`]): `auto`'s
//!   grid, LLVM's grid (measured early by a search of warm samples, so
//!   that it never settles slower than LLVM beyond the noise; a search of
//!   cold samples, too noisy to tell, skips it: [`search::Params::COLD`]),
//!   `occupancy`'s (in a tuning session then the static answers: one wave
//!   of `occupancy`'s block size, `forest`'s grid, the grids the other
//!   rules of `auto`'s static rule give the kernel, `lloyd`'s), then the moves
//!   (threads, and blocks as a multiple of `auto`'s) that won most often
//!   for other kernels on this device, then the neighbours of `auto` by
//!   distance; grids that would starve a launch `auto` keeps under one wave
//!   go last ([`Prior::starving_from`]), and a search of cold samples
//!   screens none of them (a once-per-run kernel pays a whole run for each
//!   candidate it explores). Candidates predicted ([`cost`]: chunks,
//!   waves, threads per chunk, a cross-team reduction's teams) to take
//!   more than [`PRUNE_ABOVE`] times
//!   `auto`'s time are never listed, and a loop of fewer distribute chunks
//!   than SMs also tries `auto`'s threads spread over every SM, right after
//!   `auto`'s grid. A tuning session (exploring unbounded:
//!   [`search::Exploring`]) also tries one and two whole waves of fewer
//!   threads than `auto`'s, and `auto`'s threads on 2 and 4 blocks per SM
//!   where those are fewer than `auto`'s blocks, last among the
//!   neighbours. Candidates are relative
//!   to the launch, so one
//!   search serves every trip count of its class ([`store::class`]: half
//!   octaves).
//!   A `target teams` region without a distribute loop (trip count 0,
//!   searched only under `GRIDSEL_TEAMS_REGIONS=change`, in a class of its
//!   own) starts from LLVM's grid, which is `auto`'s there, then tries
//!   block counts from one per SM to LLVM's times 16 at LLVM's thread
//!   count, 64 and 32, coarse to fine.
//! - **The search** ([`search`]): successive halving written over the
//!   samples, with far slower candidates dropped at once, an early stop
//!   when the leader is clear of the rest, and the static grids kept
//!   unless a later candidate beats them by more than the search's own
//!   measured noise. A tuning session's warm plan measures more
//!   candidates and measures its leader again before settling on it
//!   ([`search::Params::SESSION_WARM`]), as many as the warm launches the
//!   session's runs give the search can settle
//!   ([`search::Params::session_warm`]: `GRIDSEL_TUNE_SESSION_RUNS` and
//!   the store's launches per run, through [`search::Exploring`]). Cold samples (a process's first
//!   launch of the kernel) and warm ones are never compared with each
//!   other.
//! - **What exploring may cost** ([`Allowance`], `GRIDSEL_TUNE_OVERHEAD`):
//!   every exploring launch, each search's first in a process too, runs
//!   only when what the process's exploring has cost plus what this one is
//!   predicted to cost over its leader fits 2.5 % of the process's kernel
//!   time (timed, or expected from the store), and once the leader has
//!   three warm samples (`YARDSTICK_SAMPLES`); otherwise the leader runs,
//!   and the search goes on in a later run or a tuning session. By default
//!   every run keeps within its own share ([`Bound::Run`],
//!   `GRIDSEL_TUNE_BOUND`), so a kernel launched once per run, whose trials
//!   no run's share covers, keeps its leader online (the log says so once
//!   per run) and is a tuning session's to explore. Under
//!   [`Bound::Average`] what a process leaves of its allowance is banked
//!   in its searches' records that still explore (at most one run's kernel
//!   time), and later runs explore such a kernel from what was banked.
//! - **Safety**: every candidate is cut to the launch's limits (the safe
//!   range) before it is launched; a failed launch ranks last.
//! - **After settling**, every 16th launch is timed and sampled, and every
//!   256th launch (16th run for kernels launched once per run) measures the
//!   runner-up, so a grid that degrades loses its lead. A process keeps the
//!   grid it settled on; what its later samples say takes effect from the
//!   next run, unless the kept grid fails or falls far behind (then at once).
//!
//! [`Learner`] is one search in one process and is pure (no clock, no
//! I/O): tests, and the replay of searches on sweep results (`replay`,
//! with the `research` feature), drive it with stand-in timers, run after
//! run, through the store's format.
//!
//! Production runs read what was learned without exploring: under the
//! default policy [`LearnedPolicy`] launches the grid of every settled
//! search of the program's build, reading the store at start and never
//! writing it ([`learned`]); for a tuning session's confirmation it can
//! alternate, launching the learned grids at every other launch of each
//! search and `auto`'s at the others ([`LearnedPolicy::alternating`]).
//!
//! By job: `prior` (the candidates and their order), [`cost`] (what a
//! candidate is predicted to cost), `learned` (what a production run
//! reads), `learner` (one
//! search in one process), `policy` ([`TunePolicy`] and its [`Allowance`]),
//! `session` (the store as one process uses it), `replay` (searches
//! replayed on sweep results, research only: feature `research`),
//! [`search`] (the ranking of samples), [`store`] (the store's format).

mod clock;
pub mod cost;
mod learned;
mod learner;
mod policy;
mod prior;
#[cfg(feature = "research")]
mod replay;
pub mod search;
mod session;
pub mod store;
#[cfg(test)]
mod tests;

pub use clock::Clock;
pub use learned::{LEARNED_LABEL, LearnedLaunches, LearnedPolicy, learned, ranked_for_production};
pub use learner::{
    Learner, RECHECK_EVERY, RECHECK_LABEL, RECHECK_RUNS, SAMPLE_EVERY, SearchLaunch, TRIAL_LABEL,
};
pub use policy::{Allowance, Bound, DEFAULT_OVERHEAD, MAX_BANKED_RUNS, TunePolicy};
#[cfg(feature = "research")]
pub use prior::candidates_before_pruning;
pub use prior::{MAX_CANDIDATE_BLOCKS, PRUNE_ABOVE, Prior, candidates, learned_moves, resolve};
#[cfg(feature = "research")]
pub use replay::{Replay, ReplaySetup, ReplayedKernel, replay, replay_program, runs_until_within};
pub use session::{Saver, Store};
