//! The environment variables gridsel reads, parsed once.
//!
//! Parsing never fails: a bad value is reported as one error line and the
//! setting falls back to its safe default (for the policy: pass-through).

use crate::device::DeviceDesc;
use crate::plan::{OptIn, TeamsRegions};
use crate::policy::{DEFAULT_POLICY, MAX_THREADS_PER_BLOCK, POLICY_NAMES, Policy};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

pub const ENV_POLICY: &str = "GRIDSEL_POLICY";
pub const ENV_DEVICE: &str = "GRIDSEL_DEVICE";
pub const ENV_THREADS_PER_BLOCK: &str = "GRIDSEL_THREADS_PER_BLOCK";
pub const ENV_OVERRIDE_CLAUSES: &str = "GRIDSEL_OVERRIDE_CLAUSES";
pub const ENV_TEAMS_REGIONS: &str = "GRIDSEL_TEAMS_REGIONS";
pub const ENV_PROFILE: &str = "GRIDSEL_PROFILE";
pub const ENV_LOG: &str = "GRIDSEL_LOG";
pub const ENV_CACHE: &str = "GRIDSEL_CACHE";
pub const ENV_MODEL: &str = "GRIDSEL_MODEL";
pub const ENV_SAFE_RANGE: &str = "GRIDSEL_SAFE_RANGE";
pub const ENV_TUNE_OVERHEAD: &str = "GRIDSEL_TUNE_OVERHEAD";

/// A variable's value as gridsel takes it: `None` when unset, and also when
/// empty or blank, so `GRIDSEL_X=` means what no `GRIDSEL_X` means (the
/// Unix convention). Every variable gridsel reads goes through here.
pub fn given(value: Option<OsString>) -> Option<OsString> {
    value.filter(|v| !v.as_bytes().iter().all(u8::is_ascii_whitespace))
}

/// The store `tune` reads and writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
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
    /// ([`crate::plan::may_change`]).
    pub opt_in: OptIn,
    pub profile: Option<PathBuf>,
    /// Where `tune` keeps its searches across runs: `GRIDSEL_CACHE`, else
    /// [`default_store`]; `None` with `GRIDSEL_CACHE=off`.
    pub cache: Option<Store>,
    /// `GRIDSEL_MODEL`: the `forest` model file; `None` uses the embedded one.
    pub model: Option<PathBuf>,
    /// `GRIDSEL_SAFE_RANGE=off` lets `fixed:T,B` leave the launch's safe
    /// range (kernels that may nest parallel regions; see
    /// [`crate::policy::limits`]), to measure that range itself. Every other
    /// policy stays inside it.
    pub safe_range: bool,
    /// `GRIDSEL_TUNE_OVERHEAD`: the share of a process's kernel time that
    /// `tune`'s exploring may add beyond one candidate per search (a
    /// percentage in the variable, a fraction here; `off`: unbounded). See
    /// `gridsel_core::tune::Allowance`.
    pub tune_overhead: f64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            policy: DEFAULT_POLICY,
            device: None,
            threads_per_block: None,
            opt_in: OptIn::default(),
            profile: None,
            cache: None,
            model: None,
            safe_range: true,
            tune_overhead: crate::tune::DEFAULT_OVERHEAD,
        }
    }
}

impl Config {
    /// The process's settings, with one message per rejected value.
    pub fn from_env() -> (Self, Vec<String>) {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Reads the settings through `lookup` (the process environment in
    /// production); returns them with one message per rejected value. An
    /// empty or blank value is no value ([`given`]). Paths may be any bytes.
    /// Other values are read with invalid UTF-8 replaced (U+FFFD), which no
    /// valid value contains: a non-UTF-8 value is rejected like any other bad
    /// value, with its one message.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> (Self, Vec<String>) {
        let mut errors = Vec::new();
        let mut config = Self::default();
        let path = |name: &str| given(lookup(name)).map(PathBuf::from);
        let lookup = |name: &str| given(lookup(name)).map(|v| v.to_string_lossy().into_owned());
        if let Some(text) = lookup(ENV_POLICY) {
            match text.parse() {
                Ok(policy) => config.policy = policy,
                Err(e) => {
                    errors.push(format!(
                        "{ENV_POLICY}: {e}; passing every launch through unchanged"
                    ));
                    config.policy = Policy::Llvm;
                }
            }
        }
        if let Some(spec) = lookup(ENV_DEVICE) {
            match crate::files::device(&spec) {
                Ok(d) => config.device = Some(d),
                Err(e) => errors.push(format!(
                    "{ENV_DEVICE}: {e}; using the GPU's own description"
                )),
            }
        }
        if let Some(text) = lookup(ENV_THREADS_PER_BLOCK) {
            match text.trim().parse::<u32>() {
                Ok(n) if (1..=MAX_THREADS_PER_BLOCK).contains(&n) => {
                    config.threads_per_block = Some(n)
                }
                _ => errors.push(format!(
                    "{ENV_THREADS_PER_BLOCK}: `{text}` is not a thread count in 1..={MAX_THREADS_PER_BLOCK}; ignored"
                )),
            }
        }
        if let Some(text) = lookup(ENV_OVERRIDE_CLAUSES) {
            match text.trim() {
                "1" | "true" | "yes" => config.opt_in.override_clauses = true,
                "0" | "false" | "no" => {}
                _ => errors.push(format!(
                    "{ENV_OVERRIDE_CLAUSES}: `{text}` is not 0 or 1; clauses are kept"
                )),
            }
        }
        if let Some(text) = lookup(ENV_TEAMS_REGIONS) {
            match text.parse::<TeamsRegions>() {
                Ok(v) => config.opt_in.teams_regions = v,
                Err(e) => errors.push(format!(
                    "{ENV_TEAMS_REGIONS}: {e}; `target teams` regions without a distribute loop are kept"
                )),
            }
        }
        if let Some(text) = lookup(ENV_SAFE_RANGE) {
            match text.trim() {
                "off" | "0" => config.safe_range = false,
                "on" | "1" => {}
                _ => errors.push(format!(
                    "{ENV_SAFE_RANGE}: `{text}` is not on or off; the safe range applies"
                )),
            }
        }
        if let Some(text) = lookup(ENV_TUNE_OVERHEAD) {
            match text.trim() {
                "off" => config.tune_overhead = f64::INFINITY,
                t => match t.parse::<f64>() {
                    Ok(p) if (0.0..=1000.0).contains(&p) => config.tune_overhead = p / 100.0,
                    _ => errors.push(format!(
                        "{ENV_TUNE_OVERHEAD}: `{text}` is not a percentage in 0..=1000 or off; using {}",
                        crate::tune::DEFAULT_OVERHEAD * 100.0
                    )),
                },
            }
        }
        config.profile = path(ENV_PROFILE);
        config.cache = match path(ENV_CACHE) {
            Some(p) if p.as_os_str() == "off" => None,
            Some(p) => Some(Store {
                path: p,
                default: false,
            }),
            None => default_store(path).map(|path| Store {
                path,
                default: true,
            }),
        };
        config.model = path(ENV_MODEL);
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

/// Help text for the variables, shared by the CLI.
pub fn env_help() -> String {
    format!(
        "{ENV_POLICY}=<{POLICY_NAMES}>  {ENV_DEVICE}=<preset|profile.toml>  {ENV_THREADS_PER_BLOCK}=N  \
         {ENV_OVERRIDE_CLAUSES}=0|1  {ENV_TEAMS_REGIONS}=keep|change  {ENV_SAFE_RANGE}=on|off  {ENV_PROFILE}=<file.csv>  {ENV_CACHE}=<file.json>|off  {ENV_MODEL}=<forest.json>  {ENV_LOG}=off|error|warn|info|debug"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Geometry;
    use std::collections::HashMap;

    fn parse(vars: &[(&str, &str)]) -> (Config, Vec<String>) {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).map(OsString::from))
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
    fn tunes_overhead_is_a_percentage_or_off() {
        let overhead = |v: &str| {
            let (c, errors) = parse(&[(ENV_TUNE_OVERHEAD, v)]);
            (c.tune_overhead, errors.len())
        };
        assert_eq!(parse(&[]).0.tune_overhead, crate::tune::DEFAULT_OVERHEAD);
        assert_eq!(overhead("10"), (0.10, 0));
        assert_eq!(overhead(" 0 "), (0.0, 0));
        assert_eq!(overhead("off"), (f64::INFINITY, 0));
        for bad in ["-1", "5%", "1e9", "NaN", "lots"] {
            assert_eq!(overhead(bad), (crate::tune::DEFAULT_OVERHEAD, 1), "{bad}");
        }
    }

    #[test]
    fn the_store_defaults_to_the_user_cache_folder_and_switches_off() {
        let store = |vars: &[(&str, &str)]| parse(vars).0.cache.map(|s| (s.path, s.default));
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
        let names = [
            ENV_POLICY,
            ENV_DEVICE,
            ENV_THREADS_PER_BLOCK,
            ENV_OVERRIDE_CLAUSES,
            ENV_TEAMS_REGIONS,
            ENV_PROFILE,
            ENV_CACHE,
            ENV_MODEL,
            ENV_SAFE_RANGE,
            ENV_TUNE_OVERHEAD,
        ];
        for empty in ["", " ", "\t\n"] {
            let vars: Vec<(&str, &str)> = names.iter().map(|&n| (n, empty)).collect();
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
            (ENV_MODEL, "/tmp/m.json"),
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
            c.cache,
            Some(Store {
                path: PathBuf::from("/tmp/c.json"),
                default: false
            })
        );
        assert_eq!(c.model, Some(PathBuf::from("/tmp/m.json")));
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
                    "{ENV_TEAMS_REGIONS}: `{bad}` is not keep or change; `target teams` regions without a distribute loop are kept"
                )]
            );
        }
        // Independent of the clauses' opt-in.
        let (c, _) = parse(&[(ENV_TEAMS_REGIONS, "change")]);
        assert!(!c.opt_in.override_clauses);
    }
}
