//! `gridsel tune`: a tuning session, apart from production runs. It runs a
//! program (or each of a suite) once untuned, then repeatedly under `tune`
//! exploring freely, then in pairs of production runs with and without what
//! was learned, verifies every run, and writes the searches it learned into
//! the store only when every run verified, and of those only the ones the
//! pairs confirmed ([`confirm`]); the ones they refused are removed from it,
//! so that no earlier session's copy of them stays in use.
//!
//! Every run is one of the runner's (`LD_PRELOAD`, a fresh profile, the
//! time limit, the output cap, its own process group), with only the
//! user's `GRIDSEL_*` variables [`preflight::KEPT`] names besides the
//! session's own, after [`preflight`] checked the programs and the store:
//! - before: `GRIDSEL_POLICY=auto GRIDSEL_CACHE=off`, the untuned run whose
//!   output the others are checked against;
//! - tuning runs: `GRIDSEL_POLICY=tune GRIDSEL_TUNE_OVERHEAD=off` on a
//!   scratch copy of the store in the output folder, so that nothing a
//!   failed session learned reaches the user's store, and
//!   `GRIDSEL_TUNE_SESSION_RUNS` the runs planned, so that each search's
//!   warm plan fits the launches they give it. The plan ([`plan`]) is the
//!   runs the before run's searches need, within the budget (`--time`)
//!   less the confirmation's pairs asked, and `--runs`; the runs stop early
//!   once every search of the program's kernels (the names in its
//!   profiles) has settled in the scratch store, or when the budget leaves
//!   no time for another, and say what more time would buy;
//! - confirmation pairs: one run `GRIDSEL_POLICY=auto GRIDSEL_CACHE=off` and
//!   one `GRIDSEL_POLICY=auto` reading the scratch store, in turns first, so
//!   that the learned grids are judged in production conditions (samples
//!   taken in tuning runs, where neighbouring kernels explore, mislead):
//!   `--confirm` pairs, and more while they disagree and the budget
//!   leaves time, up to [`PAIRS_CAP_FACTOR`] times as many;
//! - or, where every search the learned set changes is launched at least
//!   [`gridsel_cli::launches::MIN_ALTERNATING_LAUNCHES`] times in the before run,
//!   alternating runs in place of the pairs, one each: `GRIDSEL_POLICY=auto`
//!   reading the scratch store with `GRIDSEL_LEARNED_ALTERNATE=odd` in odd
//!   runs and `even` in even ones, each split by launch parity into the two
//!   sides of a pair, so that whole-run noise between processes does not
//!   enter the comparison, and the sides swapping from run to run turns an
//!   effect of launch parity itself (ping-pong buffers) into noise;
//! - where those cannot tell the learned set from auto's, the same for the
//!   set's searches launched often enough to alternate, together, where
//!   pairs of runs were needed for others ([`confirm::together`]), then
//!   for each of the searches that gained most ([`ALONE_MOST`]) on its own:
//!   reading a store of those searches alone ([`confirm::alone`]).
//!
//! With `--gpus`, the tuning runs go in rounds of one process per GPU
//! ([`gpus`]); with `--allow-teams-regions`, the runs that explore or
//! read the learned grids may change `target teams` regions without a
//! distribute loop, and their learned grids are written verified for the
//! build.
//!
//! [`tuning`] holds the tuning runs and [`confirming`] the confirmation's
//! runs; [`confirm`] the verdict on their launch times.

mod confirm;
mod confirming;
mod gpus;
mod plan;
mod preflight;
mod report;
mod store;
mod tuning;
mod verify;

use crate::compare::results::{ProgramResult, Samples};
use crate::runner::manifest::Program;
use crate::runner::runs::{self, Inherit, RunFiles, RunLimits, Status};
use crate::runner::{RunnerArgs, output};
use gridsel_cli::launches::{Launches, SearchKey};
use gridsel_core::tune::learned;
use gridsel_core::tune::search::Candidate;
use gridsel_core::tune::store::{Record, Table};
use gridsel_host::config::{
    self, Config, ENV_CACHE, ENV_POLICY, ENV_TEAMS_REGIONS, ENV_TUNE_CLOCK, ENV_TUNE_WAIT,
};
use gridsel_host::ffi::cuda;
use plan::Plan;
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use verify::Check;

/// The most tuning runs `--runs` takes per program.
const MAX_TUNING_RUNS: u32 = 100;

/// The most confirmation pairs `--confirm` takes per program.
const MAX_CONFIRM_PAIRS: u32 = 20;

/// How many times the pairs asked a session runs at most while they
/// disagree: where whole-run noise of several per cent hides a gain of a
/// few, more pairs tell it from chance (at 3 asked, 8 of 9 agreeing still
/// decides; [`confirm::Looks`]).
const PAIRS_CAP_FACTOR: u32 = 3;

/// The most searches a session confirms on their own where the pairs could
/// not tell the learned set from auto's ([`confirm::alone`]): each costs
/// as many runs as the set's confirmation.
const ALONE_MOST: usize = 3;

/// Where the runs' samples go in a [`Samples`]: the runs without the store
/// (the before run and the confirmation runs under `auto`) and the launches
/// of alternating runs that got auto's grid are the baseline the speedups
/// of the runs reading it and of the launches that got the learned grids
/// (after) are over.
const BEFORE: usize = 0;
const AFTER: usize = 1;

/// `gridsel tune`'s arguments.
#[derive(clap::Args)]
#[command(
    after_help = "Example: gridsel tune --time 10m --ignore '^time' -- ./gemm 1024\n\n\
    Each run gets LD_PRELOAD=libgridsel.so, a fresh GRIDSEL_PROFILE, GRIDSEL_TUNE_WAIT=on \
    (launches of nowait regions wait for their kernel, so that they are timed) and \
    GRIDSEL_TUNE_CLOCK=gpu (launches timed by their kernel's time on the GPU, where CUPTI is \
    there); the untuned run \
    GRIDSEL_POLICY=auto GRIDSEL_CACHE=off; the tuning runs GRIDSEL_POLICY=tune \
    GRIDSEL_TUNE_OVERHEAD=off, GRIDSEL_TUNE_SESSION_RUNS=the tuning runs planned and GRIDSEL_CACHE=a copy of the \
    store in the output folder; then --confirm pairs of runs under GRIDSEL_POLICY=auto, one \
    with GRIDSEL_CACHE=off and one reading that copy, and more pairs (up to 3 times as many) \
    while they disagree. Where every search whose grid the copy changes is launched 3 times a \
    run or more, a pair is one run reading the copy with GRIDSEL_LEARNED_ALTERNATE=odd (odd \
    runs) or even (even runs), its launches alternating between the learned grids and auto's \
    (each search's odd launches against its even ones, the sides swapping from run to run, \
    the first launch auto's and left out): one process compares them, free of the \
    differences between processes. A program's \
    learned grids are written when its GPU time reading the copy was lower in the median pair \
    and in enough pairs to tell from noise, less any grid slower than auto's by over 3 % in the \
    median pair (over 1 % in the median alternating run); where the pairs cannot tell, the searches launched 3 times a run or more \
    are confirmed together in alternating runs (where a rarer kernel made them pairs of runs), and \
    the searches that gained most (up to 3) alone, each reading a store of those searches alone, \
    and kept so if faster; searches \
    refused are removed from the store."
)]
pub struct Args {
    /// Tuning runs at most (1 to 100). The session plans the
    /// runs its searches need from the before run's launches (a kernel
    /// launched once a run: 13; 5 times: 35; 138 times or more: 1), as far as
    /// --time allows, and stops early once every search of the program's
    /// kernels has settled.
    #[arg(long, default_value_t = MAX_TUNING_RUNS, value_parser = clap::value_parser!(u32).range(1..=MAX_TUNING_RUNS as i64))]
    runs: u32,
    /// The wall time each program's session may take, its before run and
    /// confirmation included: 90s, 10m, 2h (a bare number is seconds).
    /// Default: 30 times the before run's wall time, at least 1m. The
    /// tuning runs planned leave time for the confirmation's pairs asked;
    /// more pairs, while they disagree, run only while time is left. A
    /// session that ends with searches still exploring says which, and the
    /// --time that would settle them.
    #[arg(long, value_name = "DURATION", value_parser = plan::parse_duration)]
    time: Option<Duration>,
    /// The GPUs of this node to tune on at once: a list (0,1,3: values of
    /// CUDA_VISIBLE_DEVICES) or `all` (those the driver reports, as
    /// CUDA_VISIBLE_DEVICES already limits them; without a driver, one
    /// line and one GPU). The tuning runs go in rounds of one process per
    /// GPU, each on a copy of the scratch store merged into it after the
    /// round; the before run and the confirmation run on the first.
    #[arg(long, value_name = "LIST|all", value_parser = gpus::parse)]
    gpus: Option<gpus::Gpus>,
    /// Let the session try grids for `target teams` regions without a
    /// distribute loop, which gridsel otherwise keeps at LLVM's grid (their
    /// team-level code runs once per team): its tuning runs and the
    /// confirmation's runs reading the store get GRIDSEL_TEAMS_REGIONS=change.
    /// Every run's output must equal the untuned run's (so not with
    /// --check); a region's learned grid is written marked verified for
    /// this build of the program, which production launches under
    /// GRIDSEL_TEAMS_REGIONS=keep while it stays the search's grid.
    #[arg(long, conflicts_with = "check")]
    allow_teams_regions: bool,
    /// Confirmation pairs (1 to 20): production runs under `auto`, one
    /// without what was learned and one reading it (or one run alternating
    /// the two, where the searches it changes are launched 3 times a run or
    /// more), whose GPU and launch times decide which learned grids are
    /// kept; while the pairs disagree on the program's GPU time, more are
    /// run, up to 3 times as many.
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=MAX_CONFIRM_PAIRS as i64))]
    confirm: u32,
    /// A pattern every run's output (stdout and stderr) must match, e.g. the
    /// line a self-checking program prints when its results are right;
    /// without it, each run's output must equal the untuned run's.
    #[arg(long, value_name = "REGEX", value_parser = verify::pattern)]
    check: Option<Regex>,
    /// Lines of output left out when comparing outputs: the ones this
    /// pattern matches, e.g. timings (`^time:`). gridsel's own lines
    /// (`gridsel: ...`) are always left out.
    #[arg(long, value_name = "REGEX", value_parser = verify::pattern, conflicts_with = "check")]
    ignore: Option<Regex>,
    /// The store the learned searches are written into once every run
    /// verified (default: $GRIDSEL_CACHE, else
    /// $XDG_CACHE_HOME/gridsel/tune.json, where programs read them).
    #[arg(long, value_name = "PATH")]
    store: Option<PathBuf>,
    #[command(flatten)]
    run: RunnerArgs,
}

/// What a run of a session is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Untuned: the output the others are checked against.
    Before,
    Tuning,
    /// A confirmation run under `auto` without the store.
    ConfirmAuto,
    /// A confirmation run under `auto` reading the scratch store.
    ConfirmLearned,
    /// A confirmation run under `auto` reading the scratch store, its
    /// launches alternating between the learned grids and auto's.
    ConfirmAlternating,
}

impl RunKind {
    /// The kind as runs.csv names it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Before => "before",
            Self::Tuning => "tuning",
            Self::ConfirmAuto => "confirm-auto",
            Self::ConfirmLearned => "confirm-learned",
            Self::ConfirmAlternating => "confirm-alternating",
        }
    }
}

/// One run of a session and how it ended.
pub struct SessionRun {
    /// `before`, `tuning run 2/3` or `confirmation 1/3 under auto`.
    pub label: String,
    pub kind: RunKind,
    /// Its number among the runs of its kind, from 1.
    pub index: u32,
    pub status: Status,
    pub wall_s: f64,
    pub files: RunFiles,
    /// `Err` with the reason when the run did not verify.
    pub verified: Result<(), String>,
}

/// One program's session.
pub struct ProgramSession {
    /// In the order they ran; a session stops at the first that fails.
    pub runs: Vec<SessionRun>,
    /// The kernels the runs' profiles name.
    pub kernels: BTreeSet<String>,
    /// The searches of those kernels in the scratch store, at the end.
    pub searches: Vec<Record>,
    /// Per search (kernel, trip-count class), the tuning run after which it
    /// had settled.
    pub settled_after: BTreeMap<(String, u32), u32>,
    /// The runs' kernel times and wall times: before (the runs without the
    /// store) and after (the confirmation runs reading it), an alternating
    /// run's launches split between the two.
    pub result: ProgramResult,
    /// What the confirmation pairs decided; `None` until they all verified.
    pub verdict: Option<confirm::Verdict>,
    /// Where they could not tell, what the searches confirmed on their own
    /// decided, per search.
    pub alone: Vec<(SearchKey, confirm::Verdict)>,
}

impl ProgramSession {
    /// The first run that did not verify, and why.
    pub fn failure(&self) -> Option<(&SessionRun, &str)> {
        self.runs
            .iter()
            .find_map(|r| r.verified.as_ref().err().map(|why| (r, why.as_str())))
    }

    /// What the store gets of the search `record`: only what the
    /// confirmation pairs decided; nothing without them.
    pub fn action(&self, record: &Record) -> confirm::Action {
        self.action_of(&(record.key.kernel.clone(), record.key.class))
    }

    /// What the store gets of the search `key`: what its confirmation on
    /// its own decided, else what the set's did.
    pub fn action_of(&self, key: &SearchKey) -> confirm::Action {
        let alone = self.alone.iter().find(|(k, _)| k == key);
        match (alone, &self.verdict) {
            (Some((_, verdict)), _) | (None, Some(verdict)) => verdict.action(key),
            (None, None) => confirm::Action::Leave,
        }
    }

    /// The searches whose action is `action`.
    pub fn with_action(&self, action: confirm::Action) -> impl Iterator<Item = &Record> {
        self.searches
            .iter()
            .filter(move |r| self.action(r) == action)
    }
}

/// What every run of a session shares.
struct Runner<'a> {
    lib: &'a Path,
    limits: RunLimits,
    check: Check,
    scratch: &'a Path,
    /// The store as the session copied it: what its runs add is theirs.
    initial: &'a Table,
    /// `--gpus`: the `CUDA_VISIBLE_DEVICES` of each process of a round of
    /// tuning runs; empty: one process, the variable as the caller has it.
    gpus: Vec<String>,
    /// `--allow-teams-regions`.
    teams_regions: bool,
    /// `--runs`: the most tuning runs a program's plan may take.
    most_runs: u32,
    /// `--time`; `None`: [`plan::budget`]'s default.
    budget: Option<Duration>,
    confirm_pairs: u32,
}

/// Runs the session, prints the summary and writes the report; writes the
/// store when every run verified, else an error saying which failed.
pub fn run(args: &Args) -> Result<(), String> {
    crate::runner::stop::on_stop_signals("tune")?;
    let destination = match &args.store {
        Some(path) => config::StorePath {
            path: std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?,
            default: false,
        },
        None => Config::from_env().0.store.ok_or_else(|| {
            format!("no store to write: give --store PATH, or set {ENV_CACHE} (it is off, or HOME is unset)")
        })?,
    };
    let lib = args.run.library()?;
    let gpus = match &args.gpus {
        None => Vec::new(),
        Some(gpus::Gpus::List(list)) => list.clone(),
        Some(gpus::Gpus::All) => {
            let count = cuda::devices_on_machine().map(|d| d.len());
            let visible = std::env::var(gpus::VISIBLE).ok();
            gpus::all(count, visible.as_deref()).unwrap_or_else(|why| {
                eprintln!("gridsel tune: --gpus all: {why}; tuning on one GPU");
                Vec::new()
            })
        }
    };
    let (programs, source) = args.run.programs()?;
    preflight::check(&destination, &programs)?;
    let out = output::create_folder(args.run.out.as_deref(), "gridsel-tune")?;
    let scratch = out.join("store.json");
    let initial = store::copy(&destination.path, &scratch)?;
    let copied = initial.len();
    let budget = match args.time {
        Some(time) => format!("--time {}", plan::duration_label(time.as_secs_f64())),
        None => format!(
            "{} times its before run's wall time (at least {})",
            plan::DEFAULT_BUDGET_RUNS,
            plan::duration_label(plan::MIN_DEFAULT_BUDGET.as_secs_f64())
        ),
    };
    eprintln!(
        "gridsel tune: {}, each within {budget} and up to {}, into a copy of {} ({copied} searches); logs, profiles and reports in {}",
        report::counted(programs.len(), "program", "programs"),
        report::counted(args.runs as usize, "tuning run", "tuning runs"),
        destination.path.display(),
        out.display()
    );
    let runner = Runner {
        lib: &lib,
        limits: args.run.limits(),
        check: match &args.check {
            Some(pattern) => Check::Pattern(pattern.clone()),
            None => Check::SameOutput {
                ignore: args.ignore.clone(),
            },
        },
        scratch: &scratch,
        initial: &initial,
        gpus,
        teams_regions: args.allow_teams_regions,
        most_runs: args.runs,
        budget: args.time,
        confirm_pairs: args.confirm,
    };
    let mut sessions = Vec::new();
    for program in &programs {
        let folder = output::create_subfolder(&out, &program.name)?;
        let session = runner.tune(program, &folder)?;
        let failed = session.failure().is_some();
        sessions.push(session);
        if failed {
            break;
        }
    }
    let written = write(
        &destination,
        &initial,
        (&programs, &sessions),
        args.allow_teams_regions,
    );
    let summary = report::Summary {
        programs: &programs,
        sessions: &sessions,
        source,
        lib: &lib,
        store: &destination.path,
        written: written.as_ref().map(|n| *n).map_err(String::as_str),
    };
    print!("{}", report::text(&summary));
    report::write_all(&summary, &out)?;
    eprintln!(
        "gridsel tune: report in {}",
        out.join("report.md").display()
    );
    written
        .map(|_| ())
        .map_err(|why| format!("{why}; nothing written to {}", destination.path.display()))
}

/// What the before run gives the rest of a session: the output the others
/// are checked against, and its launches per search.
struct Before {
    reference: String,
    per_run: BTreeMap<SearchKey, usize>,
    wall_s: f64,
}

/// A program's session's time: when it began and how long it may take.
struct Clock {
    started: Instant,
    budget: Duration,
}

impl Clock {
    /// Seconds of the budget left.
    fn left_s(&self) -> f64 {
        self.budget.as_secs_f64() - self.started.elapsed().as_secs_f64()
    }
}

/// Writes what the sessions confirmed into the store `destination` when
/// every run verified: how many searches it wrote and how many refused
/// ones it removed; else which run failed and why.
fn write(
    destination: &config::StorePath,
    initial: &Table,
    (programs, sessions): (&[Program], &[ProgramSession]),
    teams_regions: bool,
) -> Result<(usize, usize), String> {
    let failure = programs
        .iter()
        .zip(sessions)
        .find_map(|(p, s)| Some((p, s.failure()?)));
    if let Some((program, (run, why))) = failure {
        return Err(format!(
            "{}, {}: {why} (log: {})",
            program.name,
            run.label,
            run.files.log.display()
        ));
    }
    let of = |action| -> Vec<Record> {
        let each = |s: &ProgramSession| s.with_action(action).cloned().collect::<Vec<_>>();
        sessions.iter().flat_map(each).collect()
    };
    let (mut learned, refused) = (of(confirm::Action::Write), of(confirm::Action::Remove));
    if teams_regions {
        let verified = mark_verified(&mut learned);
        if verified > 0 {
            eprintln!(
                "gridsel tune: {} of `target teams` regions written verified for this build \
                 (--allow-teams-regions)",
                report::counted(verified, "grid", "grids")
            );
        }
    }
    store::merge(destination, initial, &learned, &refused).map(|removed| (learned.len(), removed))
}

/// Marks each search of a `target teams` region without a distribute loop
/// (class 0) of a known build in `records` verified for its learned grid,
/// when that is not auto's (LLVM's there): a session whose every run
/// verified with the output unchanged (`--allow-teams-regions`) writes
/// them. Returns how many it marked.
fn mark_verified(records: &mut [Record]) -> usize {
    let regions = records
        .iter_mut()
        .filter(|r| r.key.class == 0 && !r.key.build.is_empty());
    let mut marked = 0;
    for r in regions {
        r.verified = learned(r).filter(|&c| c != Candidate::Auto);
        marked += usize::from(r.verified.is_some());
    }
    marked
}

impl Runner<'_> {
    /// One program's session: before, the tuning runs, the confirmation
    /// pairs; it stops at the first run that does not verify. One progress
    /// line per run.
    fn tune(&self, program: &Program, folder: &Path) -> Result<ProgramSession, String> {
        let mut session = ProgramSession {
            runs: Vec::new(),
            kernels: BTreeSet::new(),
            searches: Vec::new(),
            settled_after: BTreeMap::new(),
            result: Samples::new(2).finish(),
            verdict: None,
            alone: Vec::new(),
        };
        let mut samples = Samples::new(2);
        let started = Instant::now();
        let Some(before) = self.before_run(program, folder, &mut session, &mut samples) else {
            return Ok(session);
        };
        let clock = Clock {
            started,
            budget: plan::budget(self.budget, before.wall_s),
        };
        let plan = self.plan(program, &before, &clock);
        if self.tuning_runs(program, folder, (&before, &clock, plan), &mut session)? {
            self.confirmation(
                program,
                folder,
                (&before, &clock),
                &mut session,
                &mut samples,
            )?;
            session.result = samples.finish();
        }
        Ok(session)
    }

    /// The untuned run: what the others are checked against, and the
    /// first of the baseline's samples. `None` when it did not verify.
    fn before_run(
        &self,
        program: &Program,
        folder: &Path,
        session: &mut ProgramSession,
        samples: &mut Samples,
    ) -> Option<Before> {
        let kind = (RunKind::Before, 1, "before".to_string());
        let (run, reference) = self.run(program, folder, "before", kind, &untuned(), None);
        progress(program, &run, "");
        let Some(reference) = reference else {
            session.runs.push(run);
            return None;
        };
        let per_run = read_launches(&run, &mut session.kernels, samples, |_| Some(BEFORE)).counts();
        samples.add_wall(BEFORE, run.wall_s);
        let wall_s = run.wall_s;
        session.runs.push(run);
        Some(Before {
            reference,
            per_run,
            wall_s,
        })
    }

    /// The tuning runs the program's searches need, as far as the budget
    /// and `--runs` allow ([`plan::plan`]), in a line.
    fn plan(&self, program: &Program, before: &Before, clock: &Clock) -> Plan {
        let launches = before.per_run.values().map(|&n| n as u32);
        let budget_s = clock.budget.as_secs_f64();
        let confirm_runs = self.confirm_runs();
        let plan = plan::plan(
            launches,
            (budget_s, before.wall_s),
            self.most_runs,
            confirm_runs,
            self.gpus.len().max(1) as u32,
        );
        let once = before.per_run.values().filter(|&&n| n == 1).count();
        let searches = match once {
            0 => report::counted(before.per_run.len(), "search", "searches"),
            n => format!(
                "{}, {n} launched once a run",
                report::counted(before.per_run.len(), "search", "searches")
            ),
        };
        let limit = match plan.limit() {
            plan::Limit::Needed => "what its searches need".to_string(),
            plan::Limit::Cap => format!(
                "as --runs {} allows; its searches need {}",
                plan.cap, plan.needed
            ),
            plan::Limit::Budget => format!(
                "as {} allows after the before run ({:.3} s a run, time kept for {} confirmation \
                 runs); its searches need {}",
                self.budget_label(clock),
                before.wall_s,
                confirm_runs,
                plan.needed
            ),
        };
        let at_once = match self.gpus.len() {
            0 | 1 => String::new(),
            n => format!(" on {n} GPUs, {n} at once"),
        };
        eprintln!(
            "[tune {}] plan: {}{at_once}, {limit} ({searches})",
            program.name,
            report::counted(plan.runs as usize, "tuning run", "tuning runs"),
        );
        plan
    }

    /// What the runs that launch learned or explored grids get of
    /// `--allow-teams-regions`.
    fn teams_regions(&self) -> Option<(&'static str, &'static OsStr)> {
        self.teams_regions
            .then_some((ENV_TEAMS_REGIONS, OsStr::new("change")))
    }

    /// The budget of `clock` as the messages name it: `--time 5m`, or the
    /// default's value.
    fn budget_label(&self, clock: &Clock) -> String {
        let budget = plan::duration_label(clock.budget.as_secs_f64());
        match self.budget {
            Some(_) => format!("--time {budget}"),
            None => format!("the default budget ({budget})"),
        }
    }

    /// The confirmation runs a session leaves time for: the pairs asked, of
    /// two runs each.
    fn confirm_runs(&self) -> u32 {
        2 * self.confirm_pairs
    }

    /// [`Self::run_on`] the first GPU of `--gpus` (the driver's choice
    /// without it).
    fn run(
        &self,
        program: &Program,
        folder: &Path,
        stem: &str,
        place: (RunKind, u32, String),
        settings: &[(&str, &OsStr)],
        reference: Option<&str>,
    ) -> (SessionRun, Option<String>) {
        let gpu = self.gpus.first().map(String::as_str);
        self.run_on(gpu, (program, folder), stem, place, settings, reference)
    }

    /// Runs `program` with `settings` (and `CUDA_VISIBLE_DEVICES` naming
    /// `gpu`, if one) into `<stem>.csv` and `<stem>.log` and verifies it
    /// (against `reference`, the untuned run's output, unless this is that
    /// run). Returns the run and, when it verified, its output.
    fn run_on(
        &self,
        gpu: Option<&str>,
        (program, folder): (&Program, &Path),
        stem: &str,
        (kind, index, label): (RunKind, u32, String),
        settings: &[(&str, &OsStr)],
        reference: Option<&str>,
    ) -> (SessionRun, Option<String>) {
        let files = RunFiles {
            profile: folder.join(format!("{stem}.csv")),
            log: folder.join(format!("{stem}.log")),
        };
        let mut settings = settings.to_vec();
        // Every run of a session times its `nowait` launches as the others,
        // and on the GPU where CUPTI is there (the before run's kernel
        // times and the tuning runs' samples are then of one clock).
        settings.push((ENV_TUNE_WAIT, OsStr::new("on")));
        settings.push((
            ENV_TUNE_CLOCK,
            OsStr::new(gridsel_core::tune::Clock::Gpu.name()),
        ));
        settings.extend(gpu.map(|gpu| (gpus::VISIBLE, OsStr::new(gpu))));
        let inherit = Inherit::Only(preflight::KEPT);
        let ended = runs::run(program, &settings, inherit, self.lib, &files, self.limits);
        let (status, wall_s) = (ended.status.clone(), ended.wall_s);
        let mut output = None;
        let verified = if !status.ok() {
            Err(format!("the run ended: {status}"))
        } else if ended.output_cut {
            // A check of the log's start would pass whatever the program
            // printed past it.
            Err(format!(
                "its output passed --max-output ({} MiB) and was cut: only a whole output is verified (raise --max-output)",
                self.limits.max_output >> 20
            ))
        } else if ended.output_open {
            Err("its output stayed open after its process group was killed (a process that left the group holds it): only a whole output is verified".into())
        } else {
            let bytes = std::fs::read(&files.log).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let checked = match (&self.check, reference) {
                // The untuned run is what the others are compared with.
                (Check::SameOutput { .. }, None) => Ok(()),
                (check, reference) => check.verify(&text, reference.unwrap_or_default()),
            };
            output = checked.is_ok().then_some(text);
            checked
        };
        if let Some(note) = ended.held_note() {
            eprintln!("[tune {}] {label}: {note}", program.name);
        }
        let run = SessionRun {
            label,
            kind,
            index,
            status,
            wall_s,
            files,
            verified,
        };
        (run, output)
    }
}

/// The settings of a run without the store: the before run and the
/// confirmation's runs under auto.
fn untuned() -> [(&'static str, &'static OsStr); 2] {
    [
        (ENV_POLICY, OsStr::new("auto")),
        (ENV_CACHE, OsStr::new("off")),
    ]
}

/// A run's progress line: how it ended and whether it verified, `more`
/// after that.
fn progress(program: &Program, run: &SessionRun, more: &str) {
    let shown = match &run.verified {
        Ok(()) => format!("verified{more}"),
        Err(why) => format!("FAILED: {why} (log: {})", run.files.log.display()),
    };
    eprintln!(
        "[tune {}] {}: {:.3} s, {}, {shown}",
        program.name, run.label, run.wall_s, run.status
    );
}

/// A confirmation run's launches, per search in launch order
/// ([`Launches::read`]). Each launch goes into `samples` under the policy
/// `policy(j)` gives its place `j` among its search's launches (`None`:
/// into none).
fn read_launches(
    run: &SessionRun,
    kernels: &mut BTreeSet<String>,
    samples: &mut Samples,
    policy: impl Fn(usize) -> Option<usize>,
) -> Launches {
    let bytes = std::fs::read(&run.files.profile).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let (launches, _) = Launches::read(&text, |l, j| {
        if !kernels.contains(&*l.kernel) {
            kernels.insert(l.kernel.to_string());
        }
        if let Some(policy) = policy(j) {
            samples.add_launch(policy, l);
        }
    });
    launches
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsel_core::geometry::Geometry;
    use gridsel_core::tune::search::Kind;
    use gridsel_core::tune::store::{Key, Table, Update};

    /// A settled record of `kernel` at `class` of `build` whose leader is
    /// `leader`, against auto's grid twice as slow.
    fn settled(class: u32, build: &str, leader: Candidate) -> Record {
        let trip = gridsel_core::tune::store::class_floor(class);
        let key = Key::for_trip("k", "NVIDIA H100", 90, trip, build);
        let mut u = Update::new(key.clone());
        (u.tally.runs, u.tally.launches_per_run) = (3, 20);
        u.settled = [false, true];
        for ns in [50_000, 50_100, 49_900] {
            u.samples.push((Candidate::Auto, Kind::Warm, ns));
            u.samples.push((leader, Kind::Warm, ns / 2));
        }
        let mut table = Table::default();
        table.apply(&u);
        table.get(&key).unwrap().clone()
    }

    #[test]
    fn only_teams_regions_of_a_known_build_are_marked_verified_for_their_learned_grid() {
        let grid = Candidate::Grid(Geometry::new(64, 7));
        let mut records = [
            settled(0, "9c1e0f5a7b2d4e68", grid),
            // A loop's search, a region of no known build, one at auto's.
            settled(20, "9c1e0f5a7b2d4e68", grid),
            settled(0, "", grid),
            settled(0, "9c1e0f5a7b2d4e68", Candidate::Auto),
        ];
        assert_eq!(mark_verified(&mut records), 1);
        let verified: Vec<_> = records.iter().map(|r| r.verified).collect();
        assert_eq!(verified, [Some(grid), None, None, None]);
    }
}
