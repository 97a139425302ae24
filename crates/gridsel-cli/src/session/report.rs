//! What `gridsel tune` prints and writes: per program and kernel, auto's
//! grid before tuning, what the search learned and how sure it is, the
//! grid launched after, the kernel times before and after, whether the
//! confirmation pairs kept it; the programs' wall times before and after
//! and what the session cost. On stdout as plain tables, in the output
//! folder as `report.md` and `report.svg` (each kernel's speedup after
//! tuning over before, as `compare` draws), and for scripts `runs.csv` (a
//! row per run) and `kernels.csv` (a row per search the pairs decided).
//! Before is every run without the store (the untuned run and the pairs'
//! runs under `auto`) and the launches of alternating runs that got auto's
//! grids, after the pairs' runs reading it and the launches of alternating
//! runs that got the learned grids (odd launches in odd runs, even ones in
//! even runs).

use super::confirm::{self, Confirmed};
use super::{AFTER, BEFORE, ProgramSession, RunKind};
use crate::cache::Verdict;
use crate::compare::report::{
    aligned, devices, escape_cell, grids_label, md_header, md_row, now_utc, show,
};
use crate::compare::svg;
use crate::runner::manifest::Program;
use crate::runner::{output, shell_words};
use gridsel_cli::csv::field;
use gridsel_cli::launches::grid_label;
use gridsel_core::tune::Clock;
use gridsel_core::tune::search::Candidate;
use gridsel_core::tune::store::{self, Record};
use std::fmt::Write;
use std::path::Path;

pub use crate::compare::report::counted;

/// Everything the report says.
pub struct Summary<'a> {
    pub programs: &'a [Program],
    /// Per program tuned, in order: a session stops at the first program
    /// with a run that did not verify.
    pub sessions: &'a [ProgramSession],
    /// What was run: the command or the manifest.
    pub source: String,
    pub lib: &'a Path,
    /// The store the learned searches go into.
    pub store: &'a Path,
    /// How many searches were written there and how many an earlier
    /// session had written were removed as refused, or why nothing was: a
    /// run that did not verify, or the store refusing.
    pub written: Result<(usize, usize), &'a str>,
}

const KERNEL_COLUMNS: [&str; 12] = [
    "kernel",
    "trip",
    "auto_grid",
    "learned",
    "state",
    "after_grid",
    "before_us",
    "after_us",
    "speedup",
    "search_gain",
    "margin",
    "kept",
];

const WALL_COLUMNS: [&str; 7] = [
    "wall_before_s",
    "wall_after_s",
    "speedup",
    "tuning_runs",
    "tuning_wall_s",
    "confirm_runs",
    "confirm_wall_s",
];

/// The plain tables for the terminal, then where the learned searches went.
pub fn text(summary: &Summary) -> String {
    let mut out = String::new();
    for (program, session) in summary.programs.iter().zip(summary.sessions) {
        let _ = writeln!(
            out,
            "== {}: {} ==",
            program.name,
            shell_words(&program.command)
        );
        let mut table = vec![KERNEL_COLUMNS.map(String::from).to_vec()];
        table.extend(kernel_cells(session));
        out.push_str(&aligned(&table));
        out.push('\n');
        let table = [WALL_COLUMNS.map(String::from).to_vec(), wall_cells(session)];
        out.push_str(&aligned(&table));
        out.push('\n');
        for line in decision_lines(session) {
            let _ = writeln!(out, "{line}");
        }
    }
    let _ = writeln!(out, "{}", store_line(summary));
    out
}

/// Where the learned searches went, in a line.
fn store_line(summary: &Summary) -> String {
    match summary.written {
        Ok((n, removed)) => {
            let dropped: usize = summary
                .sessions
                .iter()
                .map(|s| s.searches.len() - s.with_action(confirm::Action::Write).count())
                .sum();
            let removed = match removed {
                0 => String::new(),
                n => format!("; {n} removed from the store, an earlier session's copy"),
            };
            format!(
                "store: {} written to {}{}{}",
                counted(n, "search", "searches"),
                summary.store.display(),
                if dropped > 0 {
                    format!(" ({dropped} left out: not confirmed in production{removed})")
                } else {
                    String::new()
                },
                timed_by(summary)
            )
        }
        Err(why) => format!(
            "store: nothing written to {}: {why}",
            summary.store.display()
        ),
    }
}

/// What timed the sessions' searches, for the store's line: the GPU
/// (`GRIDSEL_TUNE_CLOCK=gpu` with CUPTI there), or the host where a run
/// could not load CUPTI or the device was forced, which the user should
/// know: host-timed samples hide short kernels' differences.
fn timed_by(summary: &Summary) -> &'static str {
    let searches = summary.sessions.iter().flat_map(|s| &s.searches);
    let (gpu, host) = searches.fold((0, 0), |(g, h), r| match r.clock {
        Clock::Gpu => (g + 1, h),
        Clock::Host => (g, h + 1),
    });
    match (gpu, host) {
        (0, 0) => "",
        (_, 0) => "; timed on the GPU (CUPTI)",
        (0, _) => "; timed on the host (the launch call's wall time: no CUPTI, or a forced device)",
        _ => "; some timed on the GPU (CUPTI), some on the host (the launch call's wall time)",
    }
}

/// What the confirmation pairs measured of the program, then what they
/// dropped, a line each: the program's searches, or a search's.
fn decision_lines(session: &ProgramSession) -> Vec<String> {
    let Some(verdict) = &session.verdict else {
        return Vec::new();
    };
    let ratio = |r: Option<f64>| r.map_or("-".into(), |r| format!("{:.1} %", r * 100.0));
    let learned = verdict.by.sides().0;
    let faster = match verdict.by {
        Confirmed::Alternating => {
            " (each search's odd launches in odd runs, its even ones in even runs, the first \
             left out) faster than auto's"
        }
        Confirmed::Pairs => " faster",
    };
    let mut lines = vec![format!(
        "confirmation: {}, {learned}{faster} in {}; their GPU time against \
         auto's in {}: {} as the sum over kernels of median launch time x launches \
         (decided on: one slow launch does not move it), {} as the sum of every launch",
        verdict.by.counted(verdict.pairs),
        verdict.faster_pairs,
        verdict.by.median(),
        ratio(verdict.gpu_ratio),
        ratio(verdict.plain_ratio),
    )];
    let exploring: Vec<String> = session
        .searches
        .iter()
        .filter(|r| still_exploring(r).is_some())
        .map(|r| format!("{} (class {})", r.key.kernel, r.key.class))
        .collect();
    if !exploring.is_empty() {
        lines.push(format!(
            "still exploring when the tuning runs were spent, so auto's grid stays (more time, \
             --time, would let them settle; the session's stderr says how much): {}",
            exploring.join(", ")
        ));
    }
    if let Some(why) = verdict.program_refused() {
        lines.push(format!("nothing kept: {why}"));
        lines.extend(session.alone.iter().map(|(key, alone)| {
            let said = match (alone.program_refused(), session.action_of(key)) {
                (None, confirm::Action::Write) => "kept".to_string(),
                (Some(why), _) => format!("refused: {why}"),
                (None, _) => {
                    let d = alone.searches.iter().find(|d| d.key == *key);
                    format!("refused: {}", d.map_or("-", |d| d.reason.as_str()))
                }
            };
            let with = alone.searches.iter().filter(|d| d.changed).count();
            let how = match with {
                0 | 1 => "alone".to_string(),
                n => format!("together, one of the {n} searches launched often enough to alternate"),
            };
            format!(
                "{} (class {}) confirmed {how}, the program's other searches at auto's grids: {said}",
                key.0, key.1
            )
        }));
        return lines;
    }
    lines.extend(
        verdict
            .searches
            .iter()
            .filter(|d| !d.kept)
            .map(|d| format!("{} (class {}): {}", d.key.0, d.key.1, d.reason)),
    );
    lines
}

/// The decision of the pairs for a search, if they made one.
fn decision<'a>(
    session: &'a ProgramSession,
    kernel: &str,
    class: u32,
) -> Option<&'a confirm::SearchVerdict> {
    let verdict = session.verdict.as_ref()?;
    verdict
        .searches
        .iter()
        .find(|d| d.key.0 == kernel && d.key.1 == class)
}

/// Per (kernel, trip count) launched before tuning: its row.
fn kernel_cells(session: &ProgramSession) -> Vec<Vec<String>> {
    let rows = &session.result.rows;
    rows.iter()
        .filter(|r| r.policy == BEFORE)
        .map(|before| {
            let after = rows.iter().find(|r| {
                r.policy == AFTER && r.kernel == before.kernel && r.trip_count == before.trip_count
            });
            let search = session.searches.iter().find(|s| {
                s.key.kernel == before.kernel && s.key.class == store::class(before.trip_count)
            });
            let verdict = search.map(Verdict::of);
            let state = match (search, &verdict) {
                (Some(s), Some(v)) if v.state == "exploring" => format!(
                    "exploring({})",
                    counted(s.tally.runs as usize, "run", "runs")
                ),
                (Some(s), Some(v)) => {
                    let key = (s.key.kernel.clone(), s.key.class);
                    match session.settled_after.get(&key) {
                        Some(run) => format!("{}(run{run})", v.state),
                        None => v.state.to_string(),
                    }
                }
                _ => "no-search".into(),
            };
            vec![
                before.kernel.clone(),
                before.trip_count.to_string(),
                grids_label(&before.grids),
                verdict
                    .as_ref()
                    .map_or("-".into(), |v| v.candidate.to_string()),
                state,
                after.map_or("-".into(), |a| grids_label(&a.grids)),
                format!("{:.1}", before.time.median / 1e3),
                after.map_or("-".into(), |a| format!("{:.1}", a.time.median / 1e3)),
                show(after.and_then(|a| a.speedup)),
                show(search.and_then(search_gain)),
                verdict
                    .as_ref()
                    .and_then(|v| v.margin)
                    .map_or("-".into(), |m| format!("{:+.1}%", (m - 1.0) * 100.0)),
                {
                    let key = (before.kernel.clone(), store::class(before.trip_count));
                    match decision(session, &key.0, key.1) {
                        None => "-".into(),
                        Some(_) => kept_cell(session.action_of(&key)).into(),
                    }
                },
            ]
        })
        .collect()
}

/// The runs of a search that is still exploring (production reads nothing
/// of it); `None` once settled or pinned.
fn still_exploring(record: &Record) -> Option<u32> {
    (Verdict::of(record).state == "exploring").then_some(record.tally.runs)
}

/// Why the pairs' decision `d` went as it did, in kernels.csv: a search
/// still exploring learned nothing, though production ran auto's grid for
/// it as for one that settled there.
fn reason(session: &ProgramSession, d: &confirm::SearchVerdict) -> String {
    let record =
        (session.searches.iter()).find(|r| (&r.key.kernel, r.key.class) == (&d.key.0, d.key.1));
    match record.and_then(still_exploring) {
        Some(runs) if !d.changed => format!(
            "still exploring after {}: auto's grid stays",
            counted(runs as usize, "run", "runs")
        ),
        _ => d.reason.clone(),
    }
}

/// What the search measured its leader to gain over auto's grid: auto's
/// median over the leader's, on the samples it ranks by.
fn search_gain(record: &Record) -> Option<f64> {
    let kind = record.kind();
    let search = &record.search;
    let auto = search
        .candidates
        .iter()
        .position(|c| *c == Candidate::Auto)?;
    let auto_median = search.samples[auto].median(kind)?;
    let leader = Verdict::of(record).median?;
    Some(auto_median as f64 / leader.max(1) as f64)
}

fn wall_cells(session: &ProgramSession) -> Vec<String> {
    let walls = &session.result.walls;
    let spent = |kinds: &[RunKind]| {
        let walls: Vec<f64> = session
            .runs
            .iter()
            .filter(|r| kinds.contains(&r.kind))
            .map(|r| r.wall_s)
            .collect();
        [
            walls.len().to_string(),
            format!("{:.3}", walls.iter().sum::<f64>()),
        ]
    };
    let [tuning_runs, tuning_wall] = spent(&[RunKind::Tuning]);
    let [confirm_runs, confirm_wall] = spent(&[
        RunKind::ConfirmAuto,
        RunKind::ConfirmLearned,
        RunKind::ConfirmAlternating,
    ]);
    vec![
        show(walls[BEFORE].map(|w| w.median)),
        show(walls[AFTER].map(|w| w.median)),
        show(session.result.wall_speedup(AFTER)),
        tuning_runs,
        tuning_wall,
        confirm_runs,
        confirm_wall,
    ]
}

/// runs.csv: a row per run of every program.
fn runs_csv(summary: &Summary) -> String {
    let mut csv = String::from("program,kind,index,status,verified,wall_s\n");
    for (program, session) in summary.programs.iter().zip(summary.sessions) {
        for run in &session.runs {
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{:.3}",
                field(&program.name),
                run.kind.name(),
                run.index,
                field(&run.status.to_string()),
                if run.verified.is_ok() { "yes" } else { "no" },
                run.wall_s
            );
        }
    }
    csv
}

/// Whether a decided search was written.
fn kept_cell(action: confirm::Action) -> &'static str {
    if action == confirm::Action::Write {
        "yes"
    } else {
        "no"
    }
}

/// kernels.csv: a row per search the confirmation pairs decided; `kept`
/// says whether it was written (not when its program's were refused).
fn kernels_csv(summary: &Summary) -> String {
    let mut csv =
        String::from("program,kernel,class,auto_grid,learned_grid,kept,ratio,confirmed,reason\n");
    for (program, session) in summary.programs.iter().zip(summary.sessions) {
        let Some(verdict) = &session.verdict else {
            continue;
        };
        for d in &verdict.searches {
            let alone = session.alone.iter().find(|(k, _)| *k == d.key);
            let reason = match (&verdict.program_refused(), alone) {
                (Some(why), Some((_, alone))) => format!(
                    "{}; the set was not kept: {why}; confirmed alone ({}): {}",
                    reason(session, d),
                    alone.by.name(),
                    alone.program_refused().unwrap_or_else(|| "faster".into())
                ),
                (Some(why), None) => {
                    format!("{}; nothing of the program kept: {why}", reason(session, d))
                }
                (None, _) => reason(session, d),
            };
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{}",
                field(&program.name),
                field(&d.key.0),
                d.key.1,
                grid_label(d.auto_grid),
                grid_label(d.learned_grid),
                kept_cell(session.action_of(&d.key)),
                d.ratio.map_or("-".into(), |r| format!("{r:.4}")),
                verdict.by.name(),
                field(&reason)
            );
        }
    }
    csv
}

/// Writes report.md, report.svg, runs.csv and kernels.csv into `out`.
pub fn write_all(summary: &Summary, out: &Path) -> Result<(), String> {
    let tuned = &summary.programs[..summary.sessions.len()];
    let results: Vec<_> = summary.sessions.iter().map(|s| s.result.clone()).collect();
    let names = ["before".to_string(), "after".to_string()];
    let files = [
        ("report.md", markdown(summary)),
        ("report.svg", svg::chart(tuned, &names, &results)),
        ("runs.csv", runs_csv(summary)),
        ("kernels.csv", kernels_csv(summary)),
    ];
    for (name, text) in files {
        output::write_file(&out.join(name), &text)?;
    }
    Ok(())
}

fn markdown(summary: &Summary) -> String {
    let mut md = String::from("# gridsel tune\n\n");
    let _ = writeln!(md, "- Date: {}", now_utc());
    let _ = writeln!(
        md,
        "- gridsel {}, library `{}`",
        gridsel_host::VERSION,
        summary.lib.display()
    );
    let _ = writeln!(md, "- Device: {}", devices());
    let _ = writeln!(md, "- Ran: {}", escape_cell(&summary.source));
    let _ = writeln!(md, "- {}\n", escape_cell(&store_line(summary)));
    md.push_str(METHOD);
    for (program, session) in summary.programs.iter().zip(summary.sessions) {
        let _ = writeln!(md, "## {}\n", program.name);
        let _ = writeln!(
            md,
            "`{}` in `{}`\n",
            escape_cell(&shell_words(&program.command)),
            program.cwd.display()
        );
        md.push_str(&md_header(&WALL_COLUMNS));
        md.push_str(&md_row(&wall_cells(session)));
        md.push('\n');
        md.push_str(&md_header(&KERNEL_COLUMNS));
        for mut cells in kernel_cells(session) {
            cells[0] = format!("`{}`", cells[0]);
            md.push_str(&md_row(&cells));
        }
        md.push('\n');
        for line in decision_lines(session) {
            let _ = writeln!(md, "- {}", escape_cell(&line));
        }
        md.push_str("\n| run | status | wall s | verified | log |\n|---|---|---|---|---|\n");
        for run in &session.runs {
            md.push_str(&md_row(&[
                run.label.clone(),
                run.status.to_string(),
                format!("{:.3}", run.wall_s),
                match &run.verified {
                    Ok(()) => "yes".into(),
                    Err(why) => format!("no: {why}"),
                },
                format!("`{}`", run.files.log.display()),
            ]));
        }
        md.push('\n');
    }
    md
}

/// The method the session's README states (its rule's numbers are
/// `confirm.rs`'s).
pub(super) const METHOD: &str = "## Method\n\n\
    Per program: one run under `auto` with no store (before), the tuning runs its searches \
    need (planned from the before run's launches, within --time and --runs) under `tune` exploring freely (`GRIDSEL_TUNE_OVERHEAD=off`) on a copy of the \
    store in this folder, each search measuring as many grids as its launches in those runs can \
    settle, stopping once every search of the program's kernels has settled, \
    then pairs of confirmation runs under `auto`, one without a store and one reading that \
    copy (after), taking turns at running first, and more pairs while they disagree (up to \
    3 times as many). Where every search whose grid the copy changes is launched at least 3 \
    times a run, a pair is one alternating run instead, reading the copy with \
    `GRIDSEL_LEARNED_ALTERNATE=odd` in odd runs and `even` in even ones: each search's odd \
    launches (even ones) got the learned grid and are the after side, the others auto's and \
    the before side (the first, cold launch, always auto's, left out), so that a program doing \
    different work at odd and even steps favours each side in turn; \
    each side's median weighed as all of the run's launches. A program's GPU time is the sum over its kernels of median launch time \
    times launches (an outlier launch does not move it; the plain sum is shown beside). Its \
    learned grids are kept when that GPU time reading the copy is below auto's in the median \
    pair and in so many pairs that chance, over every look at the pairs, would keep a set no \
    better than auto's at most 1 time in 8 (at 3 pairs asked: 4 of 4, 5 of 5, 6 of 6, 6 of 7, \
    7 of 8, 8 of 9); refused when it is as surely not below, or still undecided after the extra pairs; \
    then, where pairs of runs were needed for a kernel launched too rarely to alternate, the \
    searches launched often enough are confirmed together in alternating runs, and the \
    searches that gained most (up to 3) on their own, each read from a store of those \
    searches alone (the program's other kernels at auto's grids, in `alone-N/`), and one \
    kept so is written. \
    In a kept set, a search (kernel and trip-count class) whose grid differs from auto's is \
    refused only when its median launch time is over 3 % above auto's in the median pair \
    (over 1 % above auto's in the median alternating run, where both sides ran in one process) \
    and above it in most pairs. Refused searches are removed from the store, an earlier \
    session's copy included. \
    Every run must exit with status 0 \
    and its output match `--check`, or else equal the before run's output but for gridsel's \
    lines and those `--ignore` matches; the searches are written into the store only when \
    every run verified, and of those only the ones kept.\n\n\
    Kernel columns: auto_grid and after_grid, the grids the untuned run and the runs \
    reading the copy launched \
    (most used first); learned, what the search's leader is (`grid:T,B`: T threads and B \
    blocks; `move:T,S`: T threads and auto's blocks times 2^S); state, settled (after the \
    tuning run named) or exploring (the runs were spent first: production keeps auto's grid \
    for it, and kernels.csv says so); before_us and after_us, the median launch time of those \
    runs (the profile's `ns`, launch and wait); speedup, before over after. How sure: \
    search_gain is auto's median over the leader's on the samples the search ranks by (warm \
    launches, or each run's first when the kernel runs once per run); margin, how much \
    slower the runner-up's median is than the leader's (a negative margin: a faster \
    candidate that does not beat the leader beyond the noise); kept, whether the \
    confirmation pairs kept a search whose grid differs from auto's. Wall times: start to \
    exit of the runs without and with the copy (an alternating run's is of both: in neither); tuning_wall_s and confirm_wall_s, the tuning \
    and confirmation runs' wall times in all: the session's cost.\n\n";
