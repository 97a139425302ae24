//! What `gridsel tune` prints and writes: per program and kernel, auto's
//! grid before tuning, what the search learned and how sure it is, the
//! grid launched after, the kernel times before and after; the programs'
//! wall times before and after and what the session cost. On stdout as
//! plain tables, in the output folder as `report.md` and `report.svg`
//! (each kernel's speedup after tuning over before, as `compare` draws).

use super::{AFTER, BEFORE, ProgramSession};
use crate::cache::Verdict;
use crate::compare::report::{
    aligned, devices, escape_cell, grids_label, md_header, md_row, now_utc, show,
};
use crate::compare::svg;
use crate::runner::manifest::Program;
use crate::runner::{output, shell_words};
use gridsel::tune::cache::{self, Record};
use gridsel::tune::search::Candidate;
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
    /// How many searches were written there, or why none were: a run
    /// that did not verify, or the store refusing.
    pub written: Result<usize, &'a str>,
}

const KERNEL_COLUMNS: [&str; 11] = [
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
];

const WALL_COLUMNS: [&str; 5] = [
    "wall_before_s",
    "wall_after_s",
    "speedup",
    "tuning_runs",
    "tuning_wall_s",
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
    }
    let _ = writeln!(out, "{}", store_line(summary));
    out
}

/// Where the learned searches went, in a line.
fn store_line(summary: &Summary) -> String {
    match summary.written {
        Ok(n) => format!(
            "store: {} written to {}",
            counted(n, "search", "searches"),
            summary.store.display()
        ),
        Err(why) => format!(
            "store: nothing written to {}: {why}",
            summary.store.display()
        ),
    }
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
                s.key.kernel == before.kernel && s.key.class == cache::class(before.trip_count)
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
                verdict.map_or("-".into(), |v| v.candidate.to_string()),
                state,
                after.map_or("-".into(), |a| grids_label(&a.grids)),
                format!("{:.1}", before.time.median / 1e3),
                after.map_or("-".into(), |a| format!("{:.1}", a.time.median / 1e3)),
                show(after.and_then(|a| a.speedup)),
                show(search.and_then(search_gain)),
                search
                    .and_then(|s| s.search.margin(s.kind()))
                    .map_or("-".into(), |m| format!("{:+.1}%", (m - 1.0) * 100.0)),
            ]
        })
        .collect()
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
    let tuning: Vec<f64> = session.tuning_runs().map(|r| r.wall_s).collect();
    vec![
        show(walls[BEFORE].map(|w| w.median)),
        show(walls[AFTER].map(|w| w.median)),
        show(session.result.wall_speedup(AFTER)),
        tuning.len().to_string(),
        format!("{:.3}", tuning.iter().sum::<f64>()),
    ]
}

/// Writes report.md and report.svg into `out`.
pub fn write_all(summary: &Summary, out: &Path) -> Result<(), String> {
    let tuned = &summary.programs[..summary.sessions.len()];
    let results: Vec<_> = summary.sessions.iter().map(|s| s.result.clone()).collect();
    let names = ["before".to_string(), "after".to_string()];
    let files = [
        ("report.md", markdown(summary)),
        ("report.svg", svg::chart(tuned, &names, &results)),
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
        gridsel::VERSION,
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

const METHOD: &str = "## Method\n\n\
    Per program: one run under `auto` with no store (before), up to the given number of \
    tuning runs under `tune` exploring freely (`GRIDSEL_TUNE_OVERHEAD=off`) on a copy of the \
    store in this folder, stopping once every search of the program's kernels has settled, \
    then one run under `auto` reading that copy (after). Every run must exit with status 0 \
    and its output match `--check`, or else equal the before run's output but for gridsel's \
    lines and those `--ignore` matches; the searches are written into the store only when \
    every run verified.\n\n\
    Kernel columns: auto_grid and after_grid, the grids the before and after runs launched \
    (most used first); learned, what the search's leader is (`grid:T,B`: T threads and B \
    blocks; `move:T,S`: T threads and auto's blocks times 2^S); state, settled (after the \
    tuning run named) or exploring; before_us and after_us, the median launch time of those \
    runs (the profile's `ns`, launch and wait); speedup, before over after. How sure: \
    search_gain is auto's median over the leader's on the samples the search ranks by (warm \
    launches, or each run's first when the kernel runs once per run); margin, how much \
    slower the runner-up's median is than the leader's (a negative margin: a faster \
    candidate that does not beat the leader beyond the noise). Wall times: start to exit of \
    the before and after runs; tuning_wall_s, the tuning runs' wall times in all: the \
    session's cost.\n\n";
