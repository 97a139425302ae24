//! `gridsel cache`: what `tune` keeps across runs in `GRIDSEL_CACHE`, listed,
//! explained and cleared. Reads and writes go through gridsel-host's
//! checked files (regular files only, capped, merged under the file's lock),
//! so clearing never loses what a running program saves at the same time.
//! What is listed includes the store's journal; clearing merges it in.
//! A file that is not a store is refused; one whose records do not all
//! validate is listed without them (one line says which) and never cleared.

use clap::{Args, Subcommand};
use gridsel_cli::csv;
use gridsel_core::tune::search::{Candidate, Exploring, Kind, Params};
use gridsel_core::tune::store::{Record, StoreError, Table};
use gridsel_core::tune::{Clock, learned, ranked_for_production};
use gridsel_host::config::{Config, ENV_CACHE};
use gridsel_host::files::{self, OnInvalid};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `gridsel cache`'s arguments.
#[derive(Args)]
pub struct CacheArgs {
    /// The store (default: $GRIDSEL_CACHE, else $XDG_CACHE_HOME/gridsel/tune.json).
    #[arg(long)]
    path: Option<PathBuf>,
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Every search (CSV): kernel, device, the program's build and LLVM that measured it,
    /// trip counts, settled/exploring/pinned, the leading candidate, its median and
    /// samples, runs, exploring launches.
    List,
    /// Why the kernels whose name contains KERNEL get the grids they get.
    Explain {
        /// A part of the kernel's name (e.g. its source line, `_l42`).
        kernel: String,
    },
    /// Forget searches, so the next run searches again.
    Clear {
        /// Only the kernels whose name contains this.
        #[arg(long)]
        kernel: Option<String>,
    },
}

/// How long `clear` waits for a program that is saving to the cache.
const PATIENCE: Duration = Duration::from_secs(5);

/// Runs `gridsel cache`.
pub fn run(args: &CacheArgs) -> Result<(), String> {
    let path = match &args.path {
        Some(p) => p.clone(),
        None => {
            let (config, _) = Config::from_env();
            config.store.map(|s| s.path).ok_or_else(|| {
                format!("no store: give --path, or set {ENV_CACHE} (it is off, or HOME is unset)")
            })?
        }
    };
    let shown = path.display();
    match &args.action {
        Action::List => {
            let table = readable(&path)?;
            println!(
                "kernel,device,sm_arch,build,llvm,trip_min,trip_max,state,candidate,median_ns,samples,kind,runs,explored"
            );
            for r in table.records() {
                let v = Verdict::of(r);
                println!(
                    "{},{},{},{},{},{},{},{},{},{},{},{:?},{},{}",
                    csv::field(&r.key.kernel),
                    csv::field(&r.key.device),
                    r.key.sm_arch,
                    csv::field(&r.key.build),
                    r.llvm_release,
                    r.tally.trips.0,
                    r.tally.trips.1,
                    v.state,
                    csv::field(&v.candidate.to_string()),
                    v.median.map_or_else(String::new, |m| m.to_string()),
                    v.samples,
                    v.kind,
                    r.tally.runs,
                    r.search.explored(v.kind)
                );
            }
        }
        Action::Explain { kernel } => {
            let table = readable(&path)?;
            let found: Vec<&Record> = table
                .records()
                .filter(|r| r.key.kernel.contains(kernel.as_str()))
                .collect();
            if found.is_empty() {
                let kernel = gridsel_core::text::shown(kernel);
                return Err(format!("{shown}: no kernel matches `{kernel}`"));
            }
            for r in found {
                println!("{}\n", explain(r));
            }
        }
        Action::Clear { kernel } => {
            let mut removed = 0;
            files::edit_store(&path, PATIENCE, OnInvalid::Refuse, |table| {
                removed = table.retain(|r| {
                    kernel
                        .as_ref()
                        .is_some_and(|k| !r.key.kernel.contains(k.as_str()))
                });
            })
            .map_err(|e| match e {
                StoreError::Invalid(_) => format!(
                    "{shown}: {e}; nothing cleared (`gridsel cache list` shows the records that validate; fix or move the file first)"
                ),
                e => format!("{shown}: {e}; nothing cleared"),
            })?;
            println!(
                "{shown}: {} cleared",
                crate::compare::report::counted(removed, "search", "searches")
            );
        }
    }
    Ok(())
}

/// The records of the store at `path` that validate; what was left out is
/// one line on stderr.
fn readable(path: &Path) -> Result<Table, String> {
    let shown = path.display();
    let contents = files::load_store(path).map_err(|e| format!("{shown}: {e}"))?;
    if !contents.dropped.is_empty() {
        eprintln!(
            "gridsel: {shown}: left out: {}",
            contents.dropped.join("; ")
        );
    }
    Ok(contents.table)
}

/// Where one record's search stands.
pub(crate) struct Verdict {
    /// settled, exploring or pinned.
    pub state: &'static str,
    /// What runs get: the pinned grid, else what production launches for a
    /// settled search ([`learned`]), else the search's leader so far.
    pub candidate: Candidate,
    pub median: Option<u64>,
    pub samples: usize,
    pub kind: Kind,
    /// The runner-up's median over the leader's, ranked as `candidate` was.
    pub margin: Option<f64>,
}

impl Verdict {
    pub fn of(r: &Record) -> Self {
        let kind = r.kind();
        let settled = r.search.settled(kind);
        let ranked = settled.then(|| ranked_for_production(r));
        let search = ranked.as_ref().unwrap_or(&r.search);
        let (state, candidate) = match r.pinned {
            Some(p) => ("pinned", p),
            None if settled => ("settled", learned(r).unwrap_or(Candidate::Auto)),
            None => {
                let leader = search.candidates.get(search.leader(kind)).copied();
                ("exploring", leader.unwrap_or(Candidate::Auto))
            }
        };
        let samples = search
            .candidates
            .iter()
            .position(|c| *c == candidate)
            .map(|i| &search.samples[i]);
        Self {
            state,
            candidate,
            median: samples.and_then(|s| s.median(kind)),
            samples: samples.map_or(0, |s| s.of(kind).len()),
            kind,
            margin: search.margin(kind),
        }
    }
}

/// Which build of the program, and which LLVM, measured a record: the
/// default policy launches its grid only for the same.
fn built(r: &Record) -> String {
    let build = if r.key.build.is_empty() {
        "any build".to_string()
    } else {
        format!("build {}", r.key.build)
    };
    match r.llvm_release {
        0 => format!("{build}, LLVM unknown"),
        llvm => format!("{build}, LLVM {llvm}"),
    }
}

/// One record in words: what runs get, why, and how sure the search is.
fn explain(r: &Record) -> String {
    let v = Verdict::of(r);
    let kind = v.kind;
    let mut out = format!(
        "{} on {} (sm_{}), {}, trip counts {}-{} (class {}), {} runs, up to {} launches per run:\n",
        r.key.kernel,
        r.key.device,
        r.key.sm_arch,
        built(r),
        r.tally.trips.0,
        r.tally.trips.1,
        r.key.class,
        r.tally.runs,
        r.tally.launches_per_run
    );
    let which = match kind {
        Kind::Cold => "cold samples (the first launch of each run: the kernel runs once per run)",
        Kind::Warm => "warm samples (launches after a run's first)",
    };
    out += &match v.state {
        "pinned" => format!(
            "  pinned to {}: every launch gets it, no search.\n",
            v.candidate
        ),
        "settled" => format!(
            "  settled on {}: auto's grid unless another beats it beyond the noise, else the fastest that none beats and that was measured enough to tell, by {which}; later launches get it (re-checked now and then).\n",
            v.candidate
        ),
        _ => format!(
            "  still exploring ({} exploring launches spent, {}); the leader so far is {}, ranked by {which}.\n",
            r.search.explored(kind),
            budgets(kind),
            v.candidate
        ),
    };
    if let Some(m) = v.margin {
        out += &format!(
            "  how sure: the runner-up's median is {:+.1} % from the leader's (a search stops early when it is over {:.0} %); samples vary by at least {:.1} % (upper-quartile deviation in median-deviation units, pooled), so a later candidate must win by twice the standard error that gives, on two samples at least (1.5 times between warm candidates of four samples or more in a settled search or a tuning session's; once between cold ones of four).\n",
            (m - 1.0) * 100.0,
            Params::of(kind).clear * 100.0,
            r.search.spread(kind) * 100.0
        );
    }
    out += match r.clock {
        Clock::Host => {
            "  candidate: median ns (samples), timed on the host (the launch call's wall time)\n"
        }
        Clock::Gpu => {
            "  candidate: median ns (samples), timed on the GPU (the kernel's own time, CUPTI)\n"
        }
    };
    for (i, m) in r.search.ranked(kind) {
        out += &format!(
            "    {}: {m} ({})\n",
            r.search.candidates[i],
            r.search.samples[i].of(kind).len()
        );
    }
    out += &format!(
        "  `gridsel cache clear --kernel {}` makes the next run search again.",
        r.key.kernel
    );
    out
}

/// The exploring launches a search of `kind` may spend, in the user's
/// terms: the store does not say whether online `tune` or a tuning session
/// (`gridsel tune`, which explores more) ran it.
fn budgets(kind: Kind) -> String {
    let online = Params::for_search(kind, Exploring::Bounded).budget;
    let session = Params::for_search(kind, Exploring::UNBOUNDED).budget;
    if online == session {
        format!("of {online}")
    } else {
        format!("of {online} under online tune, up to {session} in a tuning session")
    }
}
