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
//!   `GRIDSEL_TUNE_SESSION_RUNS` the runs asked, so that each search's
//!   warm plan fits the launches they give it; they stop early once
//!   every search of the program's kernels (the names in its profiles) has
//!   settled in the scratch store;
//! - confirmation pairs: one run `GRIDSEL_POLICY=auto GRIDSEL_CACHE=off` and
//!   one `GRIDSEL_POLICY=auto` reading the scratch store, in turns first, so
//!   that the learned grids are judged in production conditions (samples
//!   taken in tuning runs, where neighbouring kernels explore, mislead):
//!   `--confirm` pairs, and more while they disagree, up to
//!   [`PAIRS_CAP_FACTOR`] times as many;
//! - or, where every search the learned set changes is launched at least
//!   [`launches::MIN_ALTERNATING_LAUNCHES`] times in the before run,
//!   alternating runs in place of the pairs, one each: `GRIDSEL_POLICY=auto`
//!   reading the scratch store with `GRIDSEL_LEARNED_ALTERNATE=odd` in odd
//!   runs and `even` in even ones, each split by launch parity into the two
//!   sides of a pair, so that whole-run noise between processes does not
//!   enter the comparison, and the sides swapping from run to run turns an
//!   effect of launch parity itself (ping-pong buffers) into noise.

mod confirm;
mod preflight;
mod report;
mod store;
mod verify;

use crate::compare::results::{ProgramResult, Samples};
use crate::runner::manifest::Program;
use crate::runner::runs::{self, Inherit, Limits, RunFiles, Status};
use crate::runner::{RunnerArgs, output};
use confirm::Confirmed;
use gridsel_cli::launches::{self, Launches, Pair, Side};
use gridsel_core::tune::LearnedLaunches;
use gridsel_core::tune::store::{Record, Table};
use gridsel_host::config::{
    self, Config, ENV_CACHE, ENV_LEARNED_ALTERNATE, ENV_POLICY, ENV_TUNE_OVERHEAD,
    ENV_TUNE_SESSION_RUNS,
};
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
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
    after_help = "Example: gridsel tune --runs 3 --ignore '^time' -- ./gemm 1024\n\n\
    Each run gets LD_PRELOAD=libgridsel.so and a fresh GRIDSEL_PROFILE; the untuned run \
    GRIDSEL_POLICY=auto GRIDSEL_CACHE=off; the tuning runs GRIDSEL_POLICY=tune \
    GRIDSEL_TUNE_OVERHEAD=off, GRIDSEL_TUNE_SESSION_RUNS=--runs and GRIDSEL_CACHE=a copy of the \
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
    median pair; searches refused are removed from the store."
)]
pub struct Args {
    /// Tuning runs at most (1 to 100). 3 by default: a kernel launched
    /// several times per run settles within them, measuring as many grids
    /// as its launches in them can settle (4 at 5 launches per run, 16
    /// from 13, at 3 runs); fewer runs leave searches of kernels launched once per
    /// run exploring. A session stops early once every search of the
    /// program's kernels has settled.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=MAX_TUNING_RUNS as i64))]
    runs: u32,
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
        let key = (record.key.kernel.clone(), record.key.class);
        self.verdict
            .as_ref()
            .map_or(confirm::Action::Leave, |v| v.action(&key))
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
    limits: Limits,
    check: Check,
    scratch: &'a Path,
    /// The store as the session copied it: what its runs add is theirs.
    initial: &'a Table,
    tuning_runs: u32,
    confirm_pairs: u32,
}

/// Runs the session, prints the summary and writes the report; writes the
/// store when every run verified, else an error saying which failed.
pub fn run(args: &Args) -> Result<(), String> {
    crate::runner::stop::on_stop_signals("tune")?;
    let destination = match &args.store {
        Some(path) => config::Store {
            path: std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?,
            default: false,
        },
        None => Config::from_env().0.cache.ok_or_else(|| {
            format!("no store to write: give --store PATH, or set {ENV_CACHE} (it is off, or HOME is unset)")
        })?,
    };
    let lib = args.run.library()?;
    let (programs, source) = args.run.programs()?;
    preflight::check(&destination, &programs)?;
    let out = output::create_folder(args.run.out.as_deref(), "gridsel-tune")?;
    let scratch = out.join("store.json");
    let initial = store::copy(&destination.path, &scratch)?;
    let copied = initial.len();
    eprintln!(
        "gridsel tune: {}, up to {} each, into a copy of {} ({copied} searches); logs, profiles and reports in {}",
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
        tuning_runs: args.runs,
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
    let failure = programs
        .iter()
        .zip(&sessions)
        .find_map(|(p, s)| Some((p, s.failure()?)));
    let written = match failure {
        Some((program, (run, why))) => Err(format!(
            "{}, {}: {why} (log: {})",
            program.name,
            run.label,
            run.files.log.display()
        )),
        None => {
            let of = |action| -> Vec<Record> {
                let each = |s: &ProgramSession| s.with_action(action).cloned().collect::<Vec<_>>();
                sessions.iter().flat_map(each).collect()
            };
            let (learned, refused) = (of(confirm::Action::Write), of(confirm::Action::Remove));
            store::merge(&destination, &learned, &refused).map(|removed| (learned.len(), removed))
        }
    };
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
        };
        let mut samples = Samples::new(2);
        let progress = |run: &SessionRun, more: &str| {
            let shown = match &run.verified {
                Ok(()) => format!("verified{more}"),
                Err(why) => format!("FAILED: {why} (log: {})", run.files.log.display()),
            };
            eprintln!(
                "[tune {}] {}: {:.3} s, {}, {shown}",
                program.name, run.label, run.wall_s, run.status
            );
        };
        let scratch = self.scratch.as_os_str();

        let untuned = [
            (ENV_POLICY, OsStr::new("auto")),
            (ENV_CACHE, OsStr::new("off")),
        ];
        let (before, reference) = self.run(
            program,
            folder,
            "before",
            (RunKind::Before, 1),
            &untuned,
            None,
        );
        progress(&before, "");
        let Some(reference) = reference else {
            session.runs.push(before);
            return Ok(session);
        };
        let per_run = read_launches(&before, &mut session.kernels, &mut samples, |_| {
            Some(BEFORE)
        })
        .counts();
        samples.add_wall(BEFORE, before.wall_s);
        session.runs.push(before);

        let runs = self.tuning_runs.to_string();
        let tuning = [
            (ENV_POLICY, OsStr::new("tune")),
            (ENV_TUNE_OVERHEAD, OsStr::new("off")),
            (ENV_TUNE_SESSION_RUNS, OsStr::new(&runs)),
            (ENV_CACHE, scratch),
        ];
        let digits = self.tuning_runs.to_string().len();
        for i in 1..=self.tuning_runs {
            let stem = format!("tune-{i:0digits$}");
            let kind = (RunKind::Tuning, i);
            let (run, output) = self.run(program, folder, &stem, kind, &tuning, Some(&reference));
            if output.is_none() {
                progress(&run, "");
                session.runs.push(run);
                return Ok(session);
            }
            read_kernels(&run, &mut session.kernels);
            session.searches = store::searches(self.scratch, &session.kernels, self.initial)?;
            for r in &session.searches {
                if r.pinned.is_some() || r.search.settled(r.kind()) {
                    let key = (r.key.kernel.clone(), r.key.class);
                    session.settled_after.entry(key).or_insert(i);
                }
            }
            let settled = session.settled_after.len();
            let searches = session.searches.len();
            progress(&run, &format!("; {settled} of {searches} searches settled"));
            session.runs.push(run);
            if settled == searches {
                break;
            }
            if i == self.tuning_runs {
                eprintln!(
                    "[tune {}] the tuning runs are spent with {} still exploring: auto's grid \
                     stays for them (more --runs would let them settle)",
                    program.name,
                    report::counted(searches - settled, "search", "searches")
                );
            }
        }

        // Where every search the learned set changes is launched often
        // enough, a pair is one run alternating between the two sets;
        // otherwise two runs, taking turns at running first, so that
        // neither side is always the one after a warm-up. Past the pairs
        // asked, one more while they disagree.
        let changed = store::changed(self.scratch, &session.kernels)?;
        let by = match confirm::can_alternate(changed.iter(), &per_run) {
            true => Confirmed::Alternating,
            false => Confirmed::Pairs,
        };
        let learned = [(ENV_POLICY, OsStr::new("auto")), (ENV_CACHE, scratch)];
        let digits = (self.confirm_pairs * PAIRS_CAP_FACTOR).to_string().len();
        let mut pairs = Vec::new();
        let looks = confirm::Looks {
            first: self.confirm_pairs as usize,
            last: (self.confirm_pairs * PAIRS_CAP_FACTOR) as usize,
        };
        for i in 1..=self.confirm_pairs * PAIRS_CAP_FACTOR {
            if i > self.confirm_pairs && !confirm::decide(&pairs, looks, by).undecided() {
                break;
            }
            let mut pair = Pair::default();
            let order = match (by, i % 2) {
                (Confirmed::Alternating, _) => &[RunKind::ConfirmAlternating][..],
                (Confirmed::Pairs, 1) => &[RunKind::ConfirmAuto, RunKind::ConfirmLearned],
                (Confirmed::Pairs, _) => &[RunKind::ConfirmLearned, RunKind::ConfirmAuto],
            };
            // Alternating runs take the sides in turn (module doc).
            let at = LearnedLaunches::of_run(i);
            let alternate = [
                (ENV_POLICY, OsStr::new("auto")),
                (ENV_CACHE, scratch),
                (ENV_LEARNED_ALTERNATE, OsStr::new(at.name())),
            ];
            for &kind in order {
                let settings: &[(&str, &OsStr)] = match kind {
                    RunKind::ConfirmAuto => &untuned,
                    RunKind::ConfirmLearned => &learned,
                    _ => &alternate,
                };
                let stem = format!("{}-{i:0digits$}", kind.name());
                let (run, output) = self.run(
                    program,
                    folder,
                    &stem,
                    (kind, i),
                    settings,
                    Some(&reference),
                );
                progress(&run, "");
                if output.is_none() {
                    session.runs.push(run);
                    session.result = samples.finish();
                    return Ok(session);
                }
                let kernels = &mut session.kernels;
                match kind {
                    RunKind::ConfirmAuto | RunKind::ConfirmLearned => {
                        let (policy, side) = match kind {
                            RunKind::ConfirmAuto => (BEFORE, &mut pair.auto),
                            _ => (AFTER, &mut pair.learned),
                        };
                        samples.add_wall(policy, run.wall_s);
                        *side =
                            read_launches(&run, kernels, &mut samples, |_| Some(policy)).times();
                    }
                    // An alternating run's wall time is of both sets:
                    // neither side's.
                    _ => {
                        let side = |j| match launches::alternating_side(at, j)? {
                            Side::Auto => Some(BEFORE),
                            Side::Learned => Some(AFTER),
                        };
                        pair = read_launches(&run, kernels, &mut samples, side).alternating(at);
                    }
                }
                session.runs.push(run);
            }
            pairs.push(pair);
        }
        session.verdict = Some(confirm::decide(&pairs, looks, by));
        session.result = samples.finish();
        Ok(session)
    }

    /// Runs `program` with `settings` into `<stem>.csv` and `<stem>.log` and
    /// verifies it (against `reference`, the untuned run's output, unless
    /// this is that run). Returns the run and, when it verified, its output.
    fn run(
        &self,
        program: &Program,
        folder: &Path,
        stem: &str,
        (kind, index): (RunKind, u32),
        settings: &[(&str, &OsStr)],
        reference: Option<&str>,
    ) -> (SessionRun, Option<String>) {
        let files = RunFiles {
            profile: folder.join(format!("{stem}.csv")),
            log: folder.join(format!("{stem}.log")),
        };
        let inherit = Inherit::Only(preflight::KEPT);
        let ended = runs::run(program, settings, inherit, self.lib, &files, self.limits);
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
        let label = match kind {
            RunKind::Before => "before".to_string(),
            RunKind::Tuning => format!("tuning run {index}/{}", self.tuning_runs),
            RunKind::ConfirmAuto | RunKind::ConfirmLearned | RunKind::ConfirmAlternating => {
                let side = match kind {
                    RunKind::ConfirmAuto => "auto",
                    RunKind::ConfirmLearned => "learned",
                    _ => "learned and auto alternating",
                };
                if index <= self.confirm_pairs {
                    format!("confirmation {index}/{}, {side}", self.confirm_pairs)
                } else {
                    let most = self.confirm_pairs * PAIRS_CAP_FACTOR;
                    let more = match kind {
                        RunKind::ConfirmAlternating => "runs",
                        _ => "pairs",
                    };
                    format!("confirmation {index} (more {more}, up to {most}), {side}")
                }
            }
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

/// Adds the kernels a tuning run launched to `kernels`: its launches, of
/// many grids while it explores, are not compared, so none is kept.
fn read_kernels(run: &SessionRun, kernels: &mut BTreeSet<String>) {
    let bytes = std::fs::read(&run.files.profile).unwrap_or_default();
    gridsel_cli::profile_rows::parse(&String::from_utf8_lossy(&bytes), |l| {
        if !kernels.contains(&*l.kernel) {
            kernels.insert(l.kernel.to_string());
        }
    });
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
