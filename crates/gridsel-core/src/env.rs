//! The names of the environment variables gridsel reads, for every message
//! that names one. What each takes, its default, its help and how it is read
//! are defined once, in the settings table of `gridsel-host`'s `config`
//! (`SETTINGS`), which names each through these.

/// What every one of them starts with: a session's runs drop the caller's
/// variables of this prefix that the session does not set or keep.
pub const ENV_PREFIX: &str = "GRIDSEL_";
pub const ENV_POLICY: &str = "GRIDSEL_POLICY";
pub const ENV_DEVICE: &str = "GRIDSEL_DEVICE";
pub const ENV_THREADS_PER_BLOCK: &str = "GRIDSEL_THREADS_PER_BLOCK";
pub const ENV_OVERRIDE_CLAUSES: &str = "GRIDSEL_OVERRIDE_CLAUSES";
pub const ENV_TEAMS_REGIONS: &str = "GRIDSEL_TEAMS_REGIONS";
pub const ENV_PROFILE: &str = "GRIDSEL_PROFILE";
pub const ENV_LOG: &str = "GRIDSEL_LOG";
pub const ENV_CACHE: &str = "GRIDSEL_CACHE";
pub const ENV_SITE_CACHE: &str = "GRIDSEL_SITE_CACHE";
pub const ENV_MODEL: &str = "GRIDSEL_MODEL";
pub const ENV_SAFE_RANGE: &str = "GRIDSEL_SAFE_RANGE";
pub const ENV_TUNE_OVERHEAD: &str = "GRIDSEL_TUNE_OVERHEAD";
pub const ENV_TUNE_BOUND: &str = "GRIDSEL_TUNE_BOUND";
pub const ENV_TUNE_SESSION_RUNS: &str = "GRIDSEL_TUNE_SESSION_RUNS";
pub const ENV_LEARNED_ALTERNATE: &str = "GRIDSEL_LEARNED_ALTERNATE";
pub const ENV_TUNE_WAIT: &str = "GRIDSEL_TUNE_WAIT";
pub const ENV_TUNE_CLOCK: &str = "GRIDSEL_TUNE_CLOCK";
/// Not a setting: a library built with the `fault-injection` feature, for
/// the tests only, panics at every launch while it is set.
pub const ENV_INJECT_PANIC: &str = "GRIDSEL_INJECT_PANIC";
