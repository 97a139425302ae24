//! The environment variables gridsel reads: one table, [`SETTINGS`], gives
//! each its name, the values the user writes, its default, its help and the
//! function that reads it into a [`Config`]. [`Config::from_lookup`] is a
//! loop over that table (and [`PROTOCOL`], the variables `gridsel tune` sets
//! on its own runs), the CLI's `gridsel env` prints it, and docs/usage.md's
//! tables are [`markdown_table`]'s, which a test checks; every
//! message names a variable through its constant ([`ENV_POLICY`] and the
//! others, from `gridsel_core::env`). So a setting is defined in one place (as
//! ripgrep defines each flag once).
//!
//! Every variable follows the same rules: an empty or blank value is no value
//! ([`given`]); a boolean takes the words of [`on_off`]; and parsing never
//! fails: a bad value is one error line naming the variable, the value, what
//! it accepts and what holds instead, which is the default (for the policy:
//! pass-through, so that a mistyped policy changes no grid).

use gridsel_core::clauses::OptIn;
use gridsel_core::device::{DeviceDesc, MAX_THREADS_PER_BLOCK};
use gridsel_core::policy::{DEFAULT_POLICY, POLICY_NAMES, Policy};
use gridsel_core::text::shown;
use gridsel_core::tune::{Bound, Clock, LearnedLaunches};
use log::LevelFilter;
use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

pub use gridsel_core::env::*;

/// One environment variable, defined once: what help shows and how its value
/// is read.
pub struct Setting {
    pub name: &'static str,
    /// The values the user may write, as help and error lines show them.
    pub values: &'static str,
    /// What holds while the variable is unset, empty or blank, and after a
    /// bad value unless [`Setting::if_bad`] says otherwise.
    pub default: DefaultValue,
    /// What the setting does, in one or two sentences.
    pub help: &'static str,
    /// What a bad value leaves in force where that is not the default.
    pub if_bad: Option<&'static str>,
    /// Reads a given value into the config; on a refused value the config
    /// holds what [`Setting::if_bad`] or the default says.
    read: fn(&mut Config, &OsStr) -> Result<(), Refused>,
}

/// A setting's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultValue {
    /// A value the user could write, such as `on` (reading it gives
    /// `Config::default()`'s, which a test checks).
    Written(&'static str),
    /// No value: what gridsel does without one, in words.
    Described(&'static str),
}

impl DefaultValue {
    /// The value or the words, as a table shows them.
    pub fn text(&self) -> &'static str {
        match *self {
            Self::Written(text) | Self::Described(text) => text,
        }
    }
}

/// As an error line shows it: a value in backticks.
impl fmt::Display for DefaultValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Written(v) => write!(f, "`{v}`"),
            Self::Described(what) => f.write_str(what),
        }
    }
}

/// Why a value was refused.
enum Refused {
    /// It is not one of the setting's [`Setting::values`].
    NotOneOf,
    /// A reason of its own, naming the value (a grid no GPU can launch, a
    /// device file that cannot be read).
    Because(String),
}

/// The words every on/off setting takes, in any case.
pub const ON_OFF: &str = "on or off (also 1/0, true/false, yes/no)";

/// A boolean setting's value: `on`/`off`, `1`/`0`, `true`/`false` or
/// `yes`/`no`, in any case and with blanks around it; `None` for any other
/// text. The one parser of every on/off setting, so none takes words another
/// refuses.
pub fn on_off(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "on" | "1" | "true" | "yes" => Some(true),
        "off" | "0" | "false" | "no" => Some(false),
        _ => None,
    }
}

/// Whether a value that is otherwise a path or a number is the word `off`
/// (in any case), which switches its setting off.
fn is_off(text: &str) -> bool {
    text.trim().eq_ignore_ascii_case("off")
}

/// A variable's value as gridsel takes it: `None` when unset, and also when
/// empty or blank, so `GRIDSEL_X=` means what no `GRIDSEL_X` means (the
/// Unix convention). Every variable gridsel reads goes through here.
pub fn given(value: Option<OsString>) -> Option<OsString> {
    value.filter(|v| !v.as_bytes().iter().all(u8::is_ascii_whitespace))
}

/// A value that is not a path, as text: invalid UTF-8 is replaced (U+FFFD),
/// which no valid value contains, so such a value is refused like any other
/// bad value, with its one line.
fn text(value: &OsStr) -> Cow<'_, str> {
    value.to_string_lossy()
}

/// Every setting a user may give, in the order help lists them.
pub static SETTINGS: &[Setting] = &[
    Setting {
        name: ENV_POLICY,
        values: POLICY_NAMES,
        default: DefaultValue::Written("auto"),
        help: "How each launch's grid is chosen: `auto` from the kernel and the GPU, `llvm` as LLVM chooses it (pass-through), `tune` by measuring across runs; docs/policies.md describes each.",
        if_bad: Some("passing every launch through unchanged"),
        // A policy the user did not ask for must not run: a bad value
        // passes every launch through (`llvm`), not the default.
        read: |config, value| match text(value).parse() {
            Ok(policy) => {
                config.policy = policy;
                Ok(())
            }
            Err(e) => {
                config.policy = Policy::Llvm;
                Err(Refused::Because(e))
            }
        },
    },
    Setting {
        name: ENV_DEVICE,
        values: "a preset (titanx-pascal, v100, a100, h100) or a TOML file",
        default: DefaultValue::Described("the GPU's own description"),
        help: "Decide for this device instead of the GPU's own description (works without a GPU). A TOML file may start from `base = \"h100\"` and override fields.",
        if_bad: None,
        read: |config, value| {
            let device = crate::files::device(&text(value));
            config.device = Some(device.map_err(|e| Refused::Because(e.to_string()))?);
            Ok(())
        },
    },
    Setting {
        name: ENV_THREADS_PER_BLOCK,
        values: "a thread count in 1-1024",
        default: DefaultValue::Described("the device's"),
        help: "The ThreadsPerBlock of `lloyd` (Lloyd et al.'s rule), over any device description.",
        if_bad: None,
        read: |config, value| {
            let n = text(value).trim().parse::<u32>().ok();
            let n = n.filter(|n| (1..=MAX_THREADS_PER_BLOCK).contains(n));
            config.threads_per_block = Some(n.ok_or(Refused::NotOneOf)?);
            Ok(())
        },
    },
    Setting {
        name: ENV_OVERRIDE_CLAUSES,
        values: ON_OFF,
        default: DefaultValue::Written("off"),
        help: "Let the policy replace the program's num_teams and thread_limit clauses: for benchmarking, unsafe for code that reads omp_get_num_teams().",
        if_bad: None,
        read: |config, value| {
            config.opt_in.override_clauses = on_off(&text(value)).ok_or(Refused::NotOneOf)?;
            Ok(())
        },
    },
    Setting {
        name: ENV_TEAMS_REGIONS,
        values: "keep or change",
        default: DefaultValue::Written("keep"),
        help: "`change` asserts that the program's results do not depend on the number of teams of its `target teams` regions without a distribute loop, and lets gridsel choose it.",
        if_bad: None,
        read: |config, value| {
            config.opt_in.teams_regions = text(value).parse().map_err(|_| Refused::NotOneOf)?;
            Ok(())
        },
    },
    Setting {
        name: ENV_TUNE_OVERHEAD,
        values: "a percentage in 0-1000, or off",
        default: DefaultValue::Written("2.5"),
        help: "What `tune`'s exploring may add to a process's kernel time, in percent of it; off: no bound.",
        if_bad: None,
        read: |config, value| {
            let text = text(value);
            config.tune_overhead = if is_off(&text) {
                f64::INFINITY
            } else {
                let percent = text.trim().parse::<f64>().ok();
                let percent = percent.filter(|p| (0.0..=1000.0).contains(p));
                percent.ok_or(Refused::NotOneOf)? / 100.0
            };
            Ok(())
        },
    },
    Setting {
        name: ENV_TUNE_BOUND,
        values: "run or average",
        default: DefaultValue::Written("run"),
        help: "Whether `tune`'s allowance holds in every run (`run`: a job's time limit is per run) or over the runs on average (`average`: what a run leaves is banked in the store for later runs, so that a kernel launched once per run is explored online, and one run may take up to about twice its kernel time).",
        if_bad: None,
        read: |config, value| {
            let word = text(value).trim().to_ascii_lowercase();
            config.tune_bound = Bound::named(&word).ok_or(Refused::NotOneOf)?;
            Ok(())
        },
    },
    Setting {
        name: ENV_SAFE_RANGE,
        values: ON_OFF,
        default: DefaultValue::Written("on"),
        help: "off lets fixed:T,B leave the launch's safe range, to measure that range; a launch outside it can fail and end the program. Every other policy stays inside.",
        if_bad: None,
        read: |config, value| {
            config.safe_range = on_off(&text(value)).ok_or(Refused::NotOneOf)?;
            Ok(())
        },
    },
    Setting {
        name: ENV_PROFILE,
        values: "a file",
        default: DefaultValue::Described("no profile"),
        help: "Append one CSV row per launch to this file: kernel,trip_count,policy,blocks,threads,ns.",
        if_bad: None,
        read: |config, value| {
            config.profile = Some(value.into());
            Ok(())
        },
    },
    Setting {
        name: ENV_CACHE,
        values: "a file, or off",
        default: DefaultValue::Described(
            "$XDG_CACHE_HOME/gridsel/tune.json, else ~/.cache/gridsel/tune.json",
        ),
        help: "Where `tune` keeps what it measured across runs, and where the default policy reads the grids tuning settled on (never writing it); off: nowhere, each run starts afresh.",
        if_bad: None,
        read: |config, value| {
            config.store = (!is_off(&text(value))).then(|| StorePath {
                path: value.into(),
                default: false,
            });
            Ok(())
        },
    },
    Setting {
        name: ENV_SITE_CACHE,
        values: "a file",
        default: DefaultValue::Described("none"),
        help: "A store shared read-only (a site's, or an MPI job's): the default policy reads its learned grids where the user's store has none for the same kernel, build and GPU; nothing writes it, and `tune` does not read it.",
        if_bad: None,
        read: |config, value| {
            config.site_store = Some(value.into());
            Ok(())
        },
    },
    Setting {
        name: ENV_MODEL,
        values: "a file",
        default: DefaultValue::Described("the embedded H100 model"),
        help: "The `forest` policy's model file.",
        if_bad: None,
        read: |config, value| {
            config.model = Some(value.into());
            Ok(())
        },
    },
    Setting {
        name: ENV_LOG,
        values: "off, error, warn, info, debug or trace",
        default: DefaultValue::Written("warn"),
        help: "What gridsel writes to stderr; at info, each distinct decision with LLVM's grid next to gridsel's and the rule that chose it.",
        if_bad: None,
        read: |config, value| {
            config.log = crate::logging::parse_level(&text(value)).ok_or(Refused::NotOneOf)?;
            Ok(())
        },
    },
];

/// The private protocol between `gridsel tune` and the runs it starts:
/// variables the session sets on its own runs, never a user (docs/usage.md
/// lists them apart from the settings). Read like the settings.
pub static PROTOCOL: &[Setting] = &[
    Setting {
        name: ENV_TUNE_SESSION_RUNS,
        values: "a run count in 1-1000",
        default: DefaultValue::Described("not a tuning session's run"),
        help: "Set by `gridsel tune` on its tuning runs: how many the session runs, so that with exploring unbounded each search measures only as many grids as its launches in those runs can settle.",
        if_bad: None,
        read: |config, value| {
            let runs = text(value).trim().parse::<u32>().ok();
            config.tune_session_runs = Some(
                runs.filter(|r| (1..=1000).contains(r))
                    .ok_or(Refused::NotOneOf)?,
            );
            Ok(())
        },
    },
    Setting {
        name: ENV_LEARNED_ALTERNATE,
        values: "odd, even or off",
        default: DefaultValue::Written("off"),
        help: "Set by `gridsel tune` on its confirmation runs: the default policy launches a search's learned grid only at its odd-numbered launches (odd: the 2nd, 4th, ...) or its even-numbered ones (even: the 3rd, 5th, ...) and auto's at the others, the first always, so that one run compares the two step by step.",
        if_bad: None,
        read: |config, value| {
            let word = text(value).trim().to_ascii_lowercase();
            config.learned_alternate = match LearnedLaunches::named(&word) {
                Some(side) => Some(side),
                None if word == "off" => None,
                None => return Err(Refused::NotOneOf),
            };
            Ok(())
        },
    },
    Setting {
        name: ENV_TUNE_WAIT,
        values: ON_OFF,
        default: DefaultValue::Written("off"),
        help: "Set by `gridsel tune` on every run of a session: a launch of a `nowait` target region waits for its kernel, as one without `nowait` does, so that the session can time it and search its grid (the launch of a `nowait` region returns before its kernel ends). Outside a session such launches run as the program asked.",
        if_bad: None,
        read: |config, value| {
            config.tune_wait = on_off(&text(value)).ok_or(Refused::NotOneOf)?;
            Ok(())
        },
    },
    Setting {
        name: ENV_TUNE_CLOCK,
        values: "gpu or host",
        default: DefaultValue::Written("host"),
        help: "Set to gpu by `gridsel tune` on every run of a session: `tune` times its launches by the kernel's own time on the GPU (CUPTI's activity records), not the wall time of the launch call, whose mapping and launch work hides a short kernel's differences. Without CUPTI (libcupti.so on the library path or in a CUDA toolkit's extras/CUPTI/lib64 or lib64, under $CUDA_HOME, $CUDA_PATH or /usr/local), or on a forced device, the launch call's wall time, as with host. A search keeps the clock that timed it: a process timing with another adds no sample to it.",
        if_bad: None,
        read: |config, value| {
            let word = text(value).trim().to_ascii_lowercase();
            config.tune_clock = Clock::named(&word).ok_or(Refused::NotOneOf)?;
            Ok(())
        },
    },
];

/// Every variable gridsel reads: the settings, then the session's protocol.
pub fn every_variable() -> impl Iterator<Item = &'static Setting> {
    SETTINGS.iter().chain(PROTOCOL)
}

/// `settings` as a Markdown table (variable, values, default, effect): a
/// docs/usage.md's, which a test checks against this.
pub fn markdown_table(settings: &[Setting]) -> String {
    let mut table = String::from("| variable | values | default | effect |\n|---|---|---|---|\n");
    for s in settings {
        let default = match s.default {
            DefaultValue::Written(value) => format!("`{value}`"),
            DefaultValue::Described(words) => words.to_string(),
        };
        table.push_str(&format!(
            "| `{}` | {} | {default} | {} |\n",
            s.name,
            s.values.replace('|', "\\|"),
            s.help.replace('|', "\\|")
        ));
    }
    table
}

impl Setting {
    /// The one error line for a refused value.
    fn refusal(&self, value: &OsStr, refused: Refused) -> String {
        let reason = match refused {
            Refused::NotOneOf => format!("`{}` is not {}", shown(&text(value)), self.values),
            Refused::Because(reason) => reason,
        };
        match self.if_bad {
            Some(instead) => format!("{}: {reason}; {instead}", self.name),
            None => format!(
                "{}: {reason}; using the default, {}",
                self.name, self.default
            ),
        }
    }
}

/// Where the store `tune` reads and writes is ([`ENV_CACHE`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorePath {
    pub path: PathBuf,
    /// The default location (its folder is created when missing), not one
    /// the user named.
    pub default: bool,
}

/// The per-user store, `$XDG_CACHE_HOME/gridsel/tune.json` (else
/// `$HOME/.cache/...`), where CUDA's and MIOpen's caches live too; `None`
/// when neither variable is an absolute path.
pub fn default_store(path: impl Fn(&str) -> Option<PathBuf>) -> Option<PathBuf> {
    let base = path("XDG_CACHE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| Some(path("HOME").filter(|p| p.is_absolute())?.join(".cache")))?;
    Some(base.join("gridsel").join("tune.json"))
}

/// Settings for one process.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub policy: Policy,
    /// A device forced by `GRIDSEL_DEVICE`; `None` reads the GPU.
    pub device: Option<DeviceDesc>,
    /// `GRIDSEL_THREADS_PER_BLOCK`, applied over any device description.
    pub threads_per_block: Option<u32>,
    /// What the user allows beyond open launches with a loop:
    /// `GRIDSEL_OVERRIDE_CLAUSES` and `GRIDSEL_TEAMS_REGIONS`
    /// ([`gridsel_core::clauses::may_change`]).
    pub opt_in: OptIn,
    pub profile: Option<PathBuf>,
    /// Where `tune` keeps its searches across runs: `GRIDSEL_CACHE`, else
    /// [`default_store`]; `None` with `GRIDSEL_CACHE=off`.
    pub store: Option<StorePath>,
    /// `GRIDSEL_SITE_CACHE`: a store only read, for its learned grids.
    pub site_store: Option<PathBuf>,
    /// `GRIDSEL_MODEL`: the `forest` model file; `None` uses the embedded one.
    pub model: Option<PathBuf>,
    /// `GRIDSEL_SAFE_RANGE=off` lets `fixed:T,B` leave the launch's safe
    /// range (kernels that may nest parallel regions; see
    /// [`gridsel_core::policy::limits`]), to measure that range itself. Every other
    /// policy stays inside it.
    pub safe_range: bool,
    /// `GRIDSEL_TUNE_OVERHEAD`: the share of a process's kernel time that
    /// `tune`'s exploring may add, every exploring launch charged in advance
    /// (a percentage in the variable, a fraction here; `off`: unbounded). See
    /// `gridsel_core::tune::Allowance`.
    pub tune_overhead: f64,
    /// `GRIDSEL_TUNE_BOUND`: whether that share holds in every run or over
    /// the runs on average (`gridsel_core::tune::Bound`).
    pub tune_bound: Bound,
    /// `GRIDSEL_TUNE_SESSION_RUNS`: the tuning runs of the `gridsel tune`
    /// session this process is one of, which size its searches' warm plans
    /// (`gridsel_core::tune::search::Params::session_warm`); `None` outside
    /// a session.
    pub tune_session_runs: Option<u32>,
    /// `GRIDSEL_LEARNED_ALTERNATE`: the default policy launches learned
    /// grids only at these launches of a search
    /// (`gridsel_core::tune::LearnedPolicy::alternating`), for the
    /// confirmation runs of a `gridsel tune` session.
    pub learned_alternate: Option<LearnedLaunches>,
    /// `GRIDSEL_TUNE_WAIT`: launches of `nowait` regions wait for their
    /// kernel (a `gridsel tune` session's runs), so that they are timed.
    pub tune_wait: bool,
    /// `GRIDSEL_TUNE_CLOCK`: what `tune` times launches with, where the
    /// process can ([`Clock`]).
    pub tune_clock: Clock,
    /// `GRIDSEL_LOG`: the level of gridsel's own logger ([`crate::logging`]).
    pub log: LevelFilter,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            policy: DEFAULT_POLICY,
            device: None,
            threads_per_block: None,
            opt_in: OptIn::default(),
            profile: None,
            store: None,
            site_store: None,
            model: None,
            safe_range: true,
            tune_overhead: gridsel_core::tune::DEFAULT_OVERHEAD,
            tune_bound: Bound::default(),
            tune_session_runs: None,
            learned_alternate: None,
            tune_wait: false,
            tune_clock: Clock::Host,
            log: crate::logging::DEFAULT_LEVEL,
        }
    }
}

impl Config {
    /// The process's settings, with one message per rejected value.
    pub fn from_env() -> (Self, Vec<String>) {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Reads the settings through `lookup` (the process environment in
    /// production), each as [`SETTINGS`] defines it; returns them with one
    /// message per rejected value. An empty or blank value is no value
    /// ([`given`]).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> (Self, Vec<String>) {
        let path = |name: &str| given(lookup(name)).map(PathBuf::from);
        let mut config = Self {
            store: default_store(path).map(|path| StorePath {
                path,
                default: true,
            }),
            ..Self::default()
        };
        let mut errors = Vec::new();
        for setting in every_variable() {
            if let Some(value) = given(lookup(setting.name))
                && let Err(refused) = (setting.read)(&mut config, &value)
            {
                errors.push(setting.refusal(&value, refused));
            }
        }
        (config, errors)
    }

    /// Applies the settings that refine a device description.
    pub fn refine(&self, mut device: DeviceDesc) -> DeviceDesc {
        if let Some(tpb) = self.threads_per_block {
            device.threads_per_block = tpb.min(device.max_threads_per_block);
        }
        device
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsel_core::clauses::TeamsRegions;
    use gridsel_core::geometry::Geometry;
    use std::collections::HashMap;
    use std::path::Path;

    fn parse(vars: &[(&str, &str)]) -> (Config, Vec<String>) {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).map(OsString::from))
    }

    fn setting(name: &str) -> &'static Setting {
        every_variable().find(|s| s.name == name).unwrap()
    }

    #[test]
    fn non_utf8_values_are_one_error_each_and_paths_any_bytes() {
        use std::os::unix::ffi::OsStringExt;
        let raw = |b: &[u8]| OsString::from_vec(b.to_vec());
        let (c, errors) = Config::from_lookup(|k| match k {
            ENV_POLICY => Some(raw(b"tu\xffne")),
            ENV_SAFE_RANGE => Some(raw(b"\xfe")),
            ENV_PROFILE => Some(raw(b"/tmp/p\xff.csv")),
            _ => None,
        });
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with(ENV_POLICY) && errors[0].contains("`tu\u{fffd}ne`"));
        assert!(errors[1].starts_with(ENV_SAFE_RANGE), "{errors:?}");
        // A bad policy passes every launch through, as for any other bad name.
        assert_eq!(c.policy, Policy::Llvm);
        assert!(c.safe_range);
        assert_eq!(c.profile, Some(PathBuf::from(raw(b"/tmp/p\xff.csv"))));
    }

    /// A value echoed in an error line keeps it one line: control
    /// characters escaped, a long value cut (a device file's path only past
    /// `PATH_MAX`), for every setting that echoes its value (one that takes
    /// any path has no bad value).
    #[test]
    fn a_bad_value_is_escaped_and_cut_in_its_line() {
        let long = "x".repeat(120_000);
        for value in [
            "\u{1b}[2J\r\nfake: line\n".to_string(),
            format!("fixed:{long}"),
        ] {
            for s in SETTINGS {
                let (_, errors) = parse(&[(s.name, &value)]);
                for line in &errors {
                    assert!(
                        !line.contains(['\n', '\r', '\u{1b}'])
                            && line.len() < gridsel_core::text::SHOWN_PATH_CHARS + 300,
                        "{}: {line:?}",
                        s.name
                    );
                }
                if s.name == ENV_POLICY || s.name == ENV_LOG {
                    assert_eq!(errors.len(), 1, "{}: {errors:?}", s.name);
                }
            }
        }
        let (_, errors) = parse(&[(ENV_LOG, "loud\nfake")]);
        assert_eq!(
            errors,
            [
                r"GRIDSEL_LOG: `loud\nfake` is not off, error, warn, info, debug or trace; using the default, `warn`"
            ]
        );
        let (_, errors) = parse(&[(ENV_POLICY, &long)]);
        assert!(
            errors[0].starts_with(&format!(
                "GRIDSEL_POLICY: unknown policy `{}…(120000 bytes)`",
                &long[..80]
            )),
            "{errors:?}"
        );
    }

    #[test]
    fn a_fixed_grid_no_gpu_can_launch_is_one_error_and_pass_through() {
        for bad in ["fixed:99999,1", "fixed:1024,2147483648", "fixed:0,1"] {
            let (c, errors) = parse(&[(ENV_POLICY, bad)]);
            assert_eq!(c.policy, Policy::Llvm, "{bad}");
            assert_eq!(errors.len(), 1, "{bad}: {errors:?}");
            assert!(
                errors[0].starts_with(&format!("{ENV_POLICY}: `{bad}`: fixed:T,B needs 1..=1024 threads per block and 1..=2147483647 blocks"))
                    && errors[0].ends_with("; passing every launch through unchanged"),
                "{errors:?}"
            );
        }
        let (c, errors) = parse(&[(ENV_POLICY, "fixed:1024,2147483647")]);
        assert_eq!(c.policy, Policy::Fixed(Geometry::new(1024, 2147483647)));
        assert!(errors.is_empty());
    }

    #[test]
    fn the_safe_range_switches_off_only_when_asked() {
        assert!(parse(&[]).0.safe_range);
        assert!(!parse(&[(ENV_SAFE_RANGE, "off")]).0.safe_range);
        let (c, errors) = parse(&[(ENV_SAFE_RANGE, "please")]);
        assert!(c.safe_range);
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn every_on_off_setting_takes_the_same_words_in_any_case() {
        let read = |name: &str, word: &str| {
            let (c, errors) = parse(&[(name, word)]);
            let value = match name {
                ENV_SAFE_RANGE => c.safe_range,
                ENV_TUNE_WAIT => c.tune_wait,
                _ => c.opt_in.override_clauses,
            };
            errors.is_empty().then_some(value)
        };
        for name in [ENV_OVERRIDE_CLAUSES, ENV_SAFE_RANGE, ENV_TUNE_WAIT] {
            for on in ["on", "1", "true", "yes", " ON ", "True", "YES"] {
                assert_eq!(read(name, on), Some(true), "{name}={on}");
            }
            for off in ["off", "0", "false", "no", "OFF", " False ", "No"] {
                assert_eq!(read(name, off), Some(false), "{name}={off}");
            }
            // The words help shows are the words taken.
            for word in ON_OFF.split([' ', '(', ')', '/', ',']) {
                if !["", "or", "also"].contains(&word) {
                    assert!(read(name, word).is_some(), "{name}={word}");
                }
            }
            for bad in ["2", "y", "enable", "onn", "-1"] {
                assert_eq!(read(name, bad), None, "{name}={bad}");
            }
        }
    }

    #[test]
    fn tunes_overhead_is_a_percentage_or_off() {
        let overhead = |v: &str| {
            let (c, errors) = parse(&[(ENV_TUNE_OVERHEAD, v)]);
            (c.tune_overhead, errors.len())
        };
        assert_eq!(
            parse(&[]).0.tune_overhead,
            gridsel_core::tune::DEFAULT_OVERHEAD
        );
        assert_eq!(overhead("10"), (0.10, 0));
        assert_eq!(overhead(" 0 "), (0.0, 0));
        assert_eq!(overhead("off"), (f64::INFINITY, 0));
        for bad in ["-1", "5%", "1e9", "NaN", "lots"] {
            assert_eq!(
                overhead(bad),
                (gridsel_core::tune::DEFAULT_OVERHEAD, 1),
                "{bad}"
            );
        }
    }

    #[test]
    fn tunes_bound_is_per_run_unless_average() {
        let bound = |v: &str| {
            let (c, errors) = parse(&[(ENV_TUNE_BOUND, v)]);
            (c.tune_bound, errors)
        };
        assert_eq!(parse(&[]).0.tune_bound, Bound::Run);
        assert_eq!(bound("run"), (Bound::Run, vec![]));
        assert_eq!(bound(" Average "), (Bound::Average, vec![]));
        for bad in ["bank", "runs", "1", "on"] {
            let (b, errors) = bound(bad);
            assert_eq!(b, Bound::Run, "{bad}");
            assert_eq!(
                errors,
                [format!(
                    "GRIDSEL_TUNE_BOUND: `{bad}` is not run or average; using the default, `run`"
                )]
            );
        }
    }

    #[test]
    fn a_sessions_run_count_is_a_count_or_ignored() {
        let runs = |v: &str| {
            let (c, errors) = parse(&[(ENV_TUNE_SESSION_RUNS, v)]);
            (c.tune_session_runs, errors.len())
        };
        assert_eq!(parse(&[]).0.tune_session_runs, None);
        assert_eq!(runs("3"), (Some(3), 0));
        assert_eq!(runs(" 1000 "), (Some(1000), 0));
        for bad in ["0", "-1", "1001", "3.5", "three"] {
            assert_eq!(runs(bad), (None, 1), "{bad}");
        }
    }

    #[test]
    fn alternating_learned_grids_is_odd_even_or_off() {
        let alternate = |v: &str| {
            let (c, errors) = parse(&[(ENV_LEARNED_ALTERNATE, v)]);
            (c.learned_alternate, errors.len())
        };
        assert_eq!(parse(&[]).0.learned_alternate, None);
        assert_eq!(alternate("odd"), (Some(LearnedLaunches::Odd), 0));
        assert_eq!(alternate(" Even "), (Some(LearnedLaunches::Even), 0));
        assert_eq!(alternate("off"), (None, 0));
        // Which side is not a yes or a no: the old on is refused.
        assert_eq!(alternate("on"), (None, 1));
        assert_eq!(alternate("1"), (None, 1));
    }

    #[test]
    fn the_store_defaults_to_the_user_cache_folder_and_switches_off() {
        let store = |vars: &[(&str, &str)]| parse(vars).0.store.map(|s| (s.path, s.default));
        assert_eq!(
            store(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]),
            Some((PathBuf::from("/x/gridsel/tune.json"), true))
        );
        assert_eq!(
            store(&[("XDG_CACHE_HOME", "relative"), ("HOME", "/h")]),
            Some((PathBuf::from("/h/.cache/gridsel/tune.json"), true))
        );
        assert_eq!(store(&[("HOME", "")]), None);
        assert_eq!(store(&[(ENV_CACHE, "off"), ("HOME", "/h")]), None);
        assert_eq!(
            store(&[(ENV_CACHE, "/s.json"), ("HOME", "/h")]),
            Some((PathBuf::from("/s.json"), false))
        );
    }

    #[test]
    fn an_empty_or_blank_value_is_no_value_for_every_variable() {
        for empty in ["", " ", "\t\n"] {
            let vars: Vec<(&str, &str)> = every_variable().map(|s| (s.name, empty)).collect();
            let (c, errors) = parse(&vars);
            assert_eq!((c, errors), (Config::default(), vec![]), "{empty:?}");
        }
        assert_eq!(given(Some(" x ".into())), Some(" x ".into()));
        assert_eq!(given(None), None);
    }

    #[test]
    fn defaults_without_environment() {
        assert_eq!(parse(&[]), (Config::default(), vec![]));
        assert_eq!(Config::default().policy, Policy::Auto);
    }

    /// A default the user could write reads as the default it claims to be,
    /// so help and the README cannot show one that is not in force.
    #[test]
    fn a_written_default_reads_as_the_default() {
        let mut written = 0;
        for s in every_variable() {
            if let DefaultValue::Written(value) = s.default {
                assert_eq!(
                    parse(&[(s.name, value)]),
                    (Config::default(), vec![]),
                    "{}={value}",
                    s.name
                );
                written += 1;
            }
        }
        assert_eq!(written, 10);
        let threads = setting(ENV_THREADS_PER_BLOCK).values;
        assert!(threads.ends_with(&format!("1-{MAX_THREADS_PER_BLOCK}")));
        let devices = setting(ENV_DEVICE).values;
        assert!(
            gridsel_core::device::PRESETS
                .iter()
                .all(|p| devices.contains(p))
        );
    }

    /// Every bad value is one line that names the variable, the value, what
    /// the variable takes and what holds instead: its default, or for the
    /// policy pass-through. Variables that take any path have no bad value.
    #[test]
    fn a_bad_value_is_one_line_naming_the_variable_value_syntax_and_default() {
        let bad = [
            (ENV_POLICY, "fastest", POLICY_NAMES),
            (ENV_DEVICE, "gtx9000", "titanx-pascal, v100, a100, h100"),
            (ENV_THREADS_PER_BLOCK, "-3", "a thread count in 1-1024"),
            (ENV_OVERRIDE_CLAUSES, "maybe", ON_OFF),
            (ENV_TEAMS_REGIONS, "sometimes", "keep or change"),
            (ENV_TUNE_OVERHEAD, "5%", "a percentage in 0-1000, or off"),
            (ENV_TUNE_BOUND, "bank", "run or average"),
            (ENV_TUNE_SESSION_RUNS, "0", "a run count in 1-1000"),
            (ENV_LEARNED_ALTERNATE, "sometimes", "odd, even or off"),
            (ENV_TUNE_WAIT, "maybe", ON_OFF),
            (ENV_TUNE_CLOCK, "wall", "gpu or host"),
            (ENV_SAFE_RANGE, "please", ON_OFF),
            (ENV_LOG, "loud", "off, error, warn, info, debug or trace"),
        ];
        for s in every_variable() {
            let Some(&(_, value, takes)) = bad.iter().find(|b| b.0 == s.name) else {
                let (_, errors) = parse(&[(s.name, "any thing\u{fffd}")]);
                assert_eq!(errors, Vec::<String>::new(), "{} takes any path", s.name);
                continue;
            };
            let (_, errors) = parse(&[(s.name, value)]);
            let [line] = &errors[..] else {
                panic!("{}={value}: {errors:?}", s.name);
            };
            let instead = match s.if_bad {
                Some(instead) => format!("; {instead}"),
                None => format!("; using the default, {}", s.default),
            };
            assert!(
                line.starts_with(&format!("{}: ", s.name))
                    && line.contains(&format!("`{value}`"))
                    && line.contains(takes)
                    && line.ends_with(&instead),
                "{line}"
            );
        }
        assert_eq!(
            parse(&[(ENV_THREADS_PER_BLOCK, "abc")]).1,
            [
                "GRIDSEL_THREADS_PER_BLOCK: `abc` is not a thread count in 1-1024; using the default, the device's"
            ]
        );
    }

    #[test]
    fn reads_every_variable() {
        let (c, errors) = parse(&[
            (ENV_POLICY, "fixed:64,8"),
            (ENV_DEVICE, "titanx-pascal"),
            (ENV_THREADS_PER_BLOCK, "64"),
            (ENV_OVERRIDE_CLAUSES, "1"),
            (ENV_TEAMS_REGIONS, "change"),
            (ENV_PROFILE, "/tmp/p.csv"),
            (ENV_CACHE, "/tmp/c.json"),
            (ENV_SITE_CACHE, "/site/tune.json"),
            (ENV_MODEL, "/tmp/m.json"),
            (ENV_LOG, "INFO"),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(c.policy, Policy::Fixed(Geometry::new(64, 8)));
        assert_eq!(c.device.as_ref().unwrap().sm_count, 28);
        assert_eq!(c.refine(c.device.clone().unwrap()).threads_per_block, 64);
        assert_eq!(
            c.opt_in,
            OptIn {
                override_clauses: true,
                teams_regions: TeamsRegions::Change
            }
        );
        assert_eq!(c.profile, Some(PathBuf::from("/tmp/p.csv")));
        assert_eq!(
            c.store,
            Some(StorePath {
                path: PathBuf::from("/tmp/c.json"),
                default: false
            })
        );
        assert_eq!(c.site_store, Some(PathBuf::from("/site/tune.json")));
        assert_eq!(c.model, Some(PathBuf::from("/tmp/m.json")));
        assert_eq!(c.log, LevelFilter::Info);
    }

    #[test]
    fn garbage_gives_one_error_each_and_safe_defaults() {
        let (c, errors) = parse(&[
            (ENV_POLICY, "fastest"),
            (ENV_DEVICE, "gtx9000"),
            (ENV_THREADS_PER_BLOCK, "-3"),
            (ENV_OVERRIDE_CLAUSES, "maybe"),
            (ENV_TEAMS_REGIONS, "sometimes"),
        ]);
        assert_eq!(errors.len(), 5, "{errors:?}");
        assert!(errors[0].contains("llvm, lloyd"));
        assert_eq!(c.policy, Policy::Llvm);
        assert_eq!(c.device, None);
        assert_eq!(c.threads_per_block, None);
        assert_eq!(c.opt_in, OptIn::default());
    }

    #[test]
    fn teams_regions_change_only_when_asked() {
        let teams = |v: &str| {
            let (c, errors) = parse(&[(ENV_TEAMS_REGIONS, v)]);
            (c.opt_in.teams_regions, errors)
        };
        assert_eq!(parse(&[]).0.opt_in.teams_regions, TeamsRegions::Keep);
        assert_eq!(teams("change"), (TeamsRegions::Change, vec![]));
        assert_eq!(teams(" change "), (TeamsRegions::Change, vec![]));
        assert_eq!(teams("keep"), (TeamsRegions::Keep, vec![]));
        // Empty means unset, as for every variable.
        assert_eq!(teams(""), (TeamsRegions::Keep, vec![]));
        for bad in ["1", "yes", "CHANGE", "changed"] {
            let (v, errors) = teams(bad);
            assert_eq!(v, TeamsRegions::Keep, "{bad}");
            assert_eq!(
                errors,
                [format!(
                    "{ENV_TEAMS_REGIONS}: `{bad}` is not keep or change; using the default, `keep`"
                )]
            );
        }
        // Independent of the clauses' opt-in.
        let (c, _) = parse(&[(ENV_TEAMS_REGIONS, "change")]);
        assert!(!c.opt_in.override_clauses);
    }

    /// The table between `start` and `end` in the file at `path` (from
    /// the repository root).
    fn marked_block(path: &str, start: &str, end: &str) -> String {
        let path = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let from = text
            .find(start)
            .unwrap_or_else(|| panic!("{path} has no line {start}"));
        let block = &text[from + start.len()..];
        let to = block
            .find(end)
            .unwrap_or_else(|| panic!("{path} has no line {end} after {start}"));
        block[..to].trim().to_string()
    }

    /// docs/usage.md's tables of the settings and of the session's
    /// protocol are [`markdown_table`]'s (the README links there): each
    /// setting's values, default and help are written once, in the table
    /// above. A failure shows the block to paste.
    #[test]
    fn the_usage_shows_the_settings_tables_generated_here() {
        let settings = (
            "<!-- settings: generated from SETTINGS in crates/gridsel-host/src/config.rs; a test checks it -->",
            "<!-- end of settings -->",
            markdown_table(SETTINGS),
        );
        let protocol = (
            "<!-- protocol: generated from PROTOCOL in crates/gridsel-host/src/config.rs; a test checks it -->",
            "<!-- end of protocol -->",
            markdown_table(PROTOCOL),
        );
        for (path, (start, end, expected)) in
            [("docs/usage.md", &settings), ("docs/usage.md", &protocol)]
        {
            let block = marked_block(path, start, end);
            assert!(
                block == expected.trim(),
                "{path}: the table after {start} should be\n{expected}\nbut is\n{block}"
            );
        }
    }

    /// docs/usage.md explains every variable in full after its table, one
    /// item each, `- \`NAME\`: ...`, in the table's order: a variable
    /// added to the table is documented there too.
    #[test]
    fn the_usage_explains_every_variable_in_the_tables_order() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/usage.md");
        let usage = std::fs::read_to_string(path).unwrap();
        let explained: Vec<&str> = usage
            .lines()
            .filter_map(|l| l.strip_prefix("- `GRIDSEL_")?.split_once("`:"))
            .map(|(name, _)| name)
            .collect();
        let expected: Vec<&str> = every_variable()
            .map(|s| s.name.strip_prefix("GRIDSEL_").unwrap())
            .collect();
        assert_eq!(
            explained, expected,
            "docs/usage.md's items `- `GRIDSEL_NAME`: ...`"
        );
    }

    /// Messages name the variables through their constants ([`ENV_POLICY`]
    /// and the others, the names [`SETTINGS`] gives), never spelt out by
    /// hand: a string literal of code outside the tests that says
    /// `GRIDSEL_` is a defect, but in the constants themselves.
    #[test]
    fn no_message_spells_a_variable_by_hand() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        // The session's messages are being rewritten apart (a helper of
        // issue 39); they come off this list then.
        let exempt = [
            "crates/gridsel-core/src/env.rs",
            "crates/gridsel-cli/src/session/mod.rs",
            "crates/gridsel-cli/src/session/report.rs",
        ];
        let mut folders = vec![root.join("src")];
        for c in std::fs::read_dir(root.join("crates")).unwrap() {
            let c = c.unwrap().path();
            // The tests' own helpers set the variables they test.
            if !c.ends_with("gridsel-test-support") {
                folders.push(c.join("src"));
            }
        }
        let mut spelt = Vec::new();
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                    continue;
                }
                let relative = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if path.extension().is_none_or(|e| e != "rs") || exempt.contains(&relative.as_str())
                {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text
                    .find("#[cfg(test)]\nmod tests {")
                    .map_or(&text[..], |at| &text[..at]);
                for literal in string_literals(code) {
                    if literal.contains("GRIDSEL_") {
                        spelt.push(format!("{relative}: {literal}"));
                    }
                }
            }
        }
        assert!(spelt.is_empty(), "{spelt:#?}");
        assert_eq!(
            string_literals("// \"A\"\nlet x = \"b\\\"c\"; /* \"d\" */ r#\"e\"#"),
            ["b\\\"c", "e"]
        );
    }

    /// The string literals of Rust `code`, outside comments (plain and raw).
    fn string_literals(code: &str) -> Vec<String> {
        let bytes = code.as_bytes();
        let (mut out, mut i) = (Vec::new(), 0);
        while i < bytes.len() {
            let rest = &code[i..];
            if rest.starts_with("//") {
                i += rest.find('\n').unwrap_or(rest.len());
            } else if rest.starts_with("/*") {
                i += rest.find("*/").map_or(rest.len(), |end| end + 2);
            } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
                let hashes = rest[1..].find('"').unwrap();
                let close = format!("\"{}", "#".repeat(hashes));
                let body = &rest[2 + hashes..];
                let end = body.find(&close).unwrap_or(body.len());
                out.push(body[..end].to_string());
                i += 2 + hashes + end + close.len();
            } else if rest.starts_with('"') {
                let mut j = 1;
                while j < rest.len() && rest.as_bytes()[j] != b'"' {
                    j += if rest.as_bytes()[j] == b'\\' { 2 } else { 1 };
                }
                out.push(rest[1..j.min(rest.len())].to_string());
                i += j + 1;
            } else if rest.starts_with('\'')
                && rest[1..].starts_with(|c: char| c != '\\')
                && rest[2..].starts_with('\'')
            {
                // A char literal such as '"'.
                i += 3;
            } else {
                i += rest.chars().next().map_or(1, char::len_utf8);
            }
        }
        out
    }
}
