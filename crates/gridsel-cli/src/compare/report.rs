//! What `compare` prints and writes: the plain tables on stdout, and in the
//! output folder `report.md`, `report.svg`, `summary.csv` (one row per
//! program, kernel, trip count and policy) and `runs.csv` (one row per run).

use super::results::{BASELINE, Grid, KernelRow, ProgramResult, geomean_of};
use super::svg;
use crate::runner::manifest::Program;
use crate::runner::output;
use crate::runner::runs::RunRecord;
use crate::runner::shell_words;
use gridsel_cli::csv;
use gridsel_cli::launches::grid_label;
use gridsel_core::env::{ENV_DEVICE, ENV_POLICY, ENV_PROFILE};
use std::ffi::OsString;
use std::fmt::Write;
use std::path::Path;

/// Why a program can have no rows.
fn no_launches() -> String {
    format!(
        "no kernel launch recorded: the program launched no offload kernel, \
         or gridsel chose no grid (no CUDA driver in the process and no {ENV_DEVICE}; the runs' \
         logs say so)"
    )
}

/// Everything a report says.
pub struct Study<'a> {
    pub programs: &'a [Program],
    /// `llvm` first.
    pub policies: &'a [String],
    pub rounds: u32,
    /// Per program.
    pub results: &'a [ProgramResult],
    pub runs: &'a [RunRecord],
    /// What was run: the command or the manifest.
    pub source: String,
    pub lib: &'a Path,
}

impl Study<'_> {
    fn bad_rows(&self) -> usize {
        self.runs.iter().map(|r| r.bad_rows).sum()
    }

    fn runs_ok(&self, program: usize, policy: usize) -> usize {
        self.runs
            .iter()
            .filter(|r| r.program == program && r.policy == policy && r.status.ok())
            .count()
    }

    /// The policies other than the baseline, with their indices.
    fn compared(&self) -> impl Iterator<Item = (usize, &String)> {
        self.policies.iter().enumerate().skip(BASELINE + 1)
    }
}

/// The plain tables for the terminal: per program its kernels, its wall
/// times and its geomeans; over all programs the geomeans when there are
/// several.
pub fn text(study: &Study) -> String {
    let mut out = String::new();
    for (p, (program, result)) in study.programs.iter().zip(study.results).enumerate() {
        let _ = writeln!(
            out,
            "== {}: {} ({}, policies interleaved) ==",
            program.name,
            shell_words(&program.command),
            counted(study.rounds as usize, "round", "rounds")
        );
        let mut table = vec![KERNEL_COLUMNS.map(String::from).to_vec()];
        table.extend(result.rows.iter().map(|row| kernel_cells(study, row)));
        out.push_str(&aligned(&table));
        if result.rows.is_empty() {
            let _ = writeln!(out, "({})", no_launches());
        }
        out.push('\n');
        let mut table = vec![WALL_COLUMNS.map(String::from).to_vec()];
        table.extend(wall_cells(study, p));
        out.push_str(&aligned(&table));
        out.push('\n');
        out.push_str(&geomean_text(study, [result]));
        out.push('\n');
    }
    if study.programs.len() > 1 {
        out.push_str("== all programs ==\n");
        out.push_str(&geomean_text(study, study.results));
    }
    let bad_rows = study.bad_rows();
    if bad_rows > 0 {
        let _ = writeln!(out, "malformed profile rows skipped: {bad_rows}");
    }
    out
}

/// The geomeans as a table.
fn geomean_text<'a>(
    study: &Study,
    results: impl IntoIterator<Item = &'a ProgramResult> + Clone,
) -> String {
    let mut table = vec![GEOMEAN_COLUMNS.map(String::from).to_vec()];
    table.extend(geomean_cells(study, results));
    aligned(&table)
}

fn kernel_cells(study: &Study, row: &KernelRow) -> Vec<String> {
    vec![
        row.kernel.clone(),
        row.trip_count.to_string(),
        study.policies[row.policy].clone(),
        grids_label(&row.grids),
        row.time.count.to_string(),
        format!("{:.1}", row.time.median / 1e3),
        format!("{:.1}%", row.time.spread_pct()),
        format!("{:.3}", row.time.total / 1e6),
        row.speedup.map_or("-".into(), |s| format!("{s:.3}")),
    ]
}

fn wall_cells(study: &Study, program: usize) -> Vec<Vec<String>> {
    let result = &study.results[program];
    study
        .policies
        .iter()
        .enumerate()
        .map(|(policy, name)| {
            let wall = result.walls[policy];
            let runs_ok = study.runs_ok(program, policy);
            let kernel_per_run = result
                .kernel_total(policy)
                .filter(|_| runs_ok > 0)
                .map(|ns| ns / 1e9 / runs_ok as f64);
            vec![
                name.clone(),
                format!("{runs_ok}/{}", study.rounds),
                wall.map_or("-".into(), |w| format!("{:.3}", w.median)),
                wall.map_or("-".into(), |w| format!("{:.3}-{:.3}", w.min, w.max)),
                kernel_per_run.map_or("-".into(), |s| format!("{s:.6}")),
                result
                    .wall_speedup(policy)
                    .map_or("-".into(), |s| format!("{s:.3}")),
            ]
        })
        .collect()
}

/// Per compared policy its geomean speedup over the cases of `results`,
/// and over those whose grid it changed.
fn geomean_cells<'a>(
    study: &Study,
    results: impl IntoIterator<Item = &'a ProgramResult> + Clone,
) -> Vec<Vec<String>> {
    study
        .compared()
        .map(|(policy, name)| {
            let g = geomean_of(results.clone(), policy);
            vec![
                name.clone(),
                g.cases.to_string(),
                show(g.all),
                g.changed_cases.to_string(),
                show(g.changed),
            ]
        })
        .collect()
}

const KERNEL_COLUMNS: [&str; 9] = [
    "kernel",
    "trip",
    "policy",
    "grid(BxT)",
    "launches",
    "median_us",
    "p10-p90",
    "total_ms",
    "speedup",
];

const WALL_COLUMNS: [&str; 6] = [
    "policy",
    "runs_ok",
    "wall_median_s",
    "wall_min-max_s",
    "kernel_s_per_run",
    "speedup",
];

const GEOMEAN_COLUMNS: [&str; 5] = [
    "policy",
    "cases",
    "geomean_speedup",
    "cases_changed",
    "geomean_where_changed",
];

pub(crate) fn show(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:.3}"))
}

/// Up to three grids, most used first, then how many more:
/// `8x128,4x256,2x512,+17`.
pub(crate) fn grids_label(grids: &[(Grid, usize)]) -> String {
    const SHOWN: usize = 3;
    let mut parts: Vec<String> = grids
        .iter()
        .take(SHOWN)
        .map(|(grid, _)| grid_label(*grid))
        .collect();
    if grids.len() > SHOWN {
        parts.push(format!("+{}", grids.len() - SHOWN));
    }
    parts.join(",")
}

/// Left-aligned columns two spaces apart; no cell holds a space, so the
/// table splits on whitespace.
pub(crate) fn aligned(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, &width)| format!("{cell:width$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// `1 round`, `3 rounds`.
pub fn counted(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Writes report.md, report.svg, summary.csv and runs.csv into `out`.
pub fn write_all(study: &Study, out: &Path) -> Result<(), String> {
    let files = [
        ("report.md", markdown(study, &now_utc(), &devices())),
        (
            "report.svg",
            svg::chart(study.programs, study.policies, study.results),
        ),
        ("summary.csv", summary_csv(study)),
        ("runs.csv", runs_csv(study)),
    ];
    for (name, text) in files {
        output::write_file(&out.join(name), &text)?;
    }
    Ok(())
}

fn markdown(study: &Study, date: &str, devices: &str) -> String {
    let mut md = String::from("# gridsel compare\n\n");
    let others: Vec<&str> = study.compared().map(|(_, n)| n.as_str()).collect();
    let forced = gridsel_host::config::given(std::env::var_os(gridsel_host::config::ENV_DEVICE))
        .map(|v| v.to_string_lossy().into_owned());
    let _ = writeln!(md, "- Date: {date}");
    let _ = writeln!(
        md,
        "- gridsel {}, library `{}`",
        gridsel_host::VERSION,
        study.lib.display()
    );
    let _ = writeln!(md, "- Device: {devices}");
    if let Some(device) = forced {
        let _ = writeln!(
            md,
            "- `{ENV_DEVICE}={device}` in the environment: grids chosen for that device"
        );
    }
    let _ = writeln!(md, "- Ran: {}", escape_cell(&study.source));
    let _ = writeln!(
        md,
        "- {}; policies: llvm (baseline), {}; {}\n",
        counted(study.programs.len(), "program", "programs"),
        others.join(", "),
        counted(study.rounds as usize, "round", "rounds")
    );
    md.push_str(&method(study));

    let _ = writeln!(md, "## Geomean speedup over llvm, all programs\n");
    md.push_str(&geomean_table(study, study.results));

    for (p, (program, result)) in study.programs.iter().zip(study.results).enumerate() {
        let _ = writeln!(md, "## {}\n", program.name);
        let _ = writeln!(
            md,
            "`{}` in `{}`{}\n",
            escape_cell(&shell_words(&program.command)),
            program.cwd.display(),
            if program.env.is_empty() {
                String::new()
            } else {
                let env: Vec<OsString> = program
                    .env
                    .iter()
                    .map(|(k, v)| format!("{k}={v}").into())
                    .collect();
                format!(", with `{}`", escape_cell(&shell_words(&env)))
            }
        );
        md.push_str(&md_header(&WALL_COLUMNS));
        for cells in wall_cells(study, p) {
            md.push_str(&md_row(&cells));
        }
        md.push('\n');
        md.push_str(&geomean_table(study, [result]));
        md.push_str(&md_header(&KERNEL_COLUMNS));
        for row in &result.rows {
            let mut cells = kernel_cells(study, row);
            cells[0] = format!("`{}`", cells[0]);
            md.push_str(&md_row(&cells));
        }
        if result.rows.is_empty() {
            let _ = writeln!(md, "\n{}.", no_launches());
        }
        md.push('\n');
    }

    md.push_str("## Failed runs\n\n");
    let failed: Vec<&RunRecord> = study.runs.iter().filter(|r| !r.status.ok()).collect();
    if failed.is_empty() {
        md.push_str("None.\n");
    } else {
        md.push_str("| program | round | policy | status | log |\n|---|---|---|---|---|\n");
        for r in failed {
            md.push_str(&md_row(&[
                study.programs[r.program].name.clone(),
                r.round.to_string(),
                study.policies[r.policy].clone(),
                r.status.to_string(),
                format!("`{}`", r.files.log.display()),
            ]));
        }
    }
    md
}

fn method(study: &Study) -> String {
    format!(
        "## Method\n\n\
         {rounds}; in each, every program ran once under every policy, the order of \
         policies rotating by one from round to round, so that drift (clocks, heat, other load) \
         reaches every policy alike. Each run: `LD_PRELOAD` = the library above (then the \
         caller's own entries), `{ENV_POLICY}` = the policy, `{ENV_PROFILE}` = a fresh file; \
         `llvm` runs through gridsel too (LLVM's grids, forwarded), so every policy pays the same \
         interception and profiling cost.\n\n\
         Kernel time: the profile's `ns`, the wall time of the forwarded `__tgt_target_kernel` \
         (launch and wait, launch overhead included). Per (kernel, trip count) and policy: the \
         median over every launch of every successful run; noise: the p10-p90 range of those \
         launches as a percentage of the median (percentiles interpolated linearly). Speedup: \
         llvm's median / the policy's median. Total: the sum over those launches, so \
         that a few slow ones (a search exploring) show where the median hides them; per run, \
         beside the wall times: the sum over every launch of the policy's successful runs \
         divided by their number. Geomeans are over the cases, (kernel, trip count) \
         pairs, with launches under both; \"changed\": the cases where the policy launched other \
         grids than llvm (in the others its speedup is run-to-run noise). Wall time: from start to exit of each run, \
         median and range over the successful rounds.\n\n\
         Failed runs (non-zero exit) are left out of every number. Malformed profile rows \
         skipped: {bad_rows}.\n\n",
        rounds = counted(study.rounds as usize, "round", "rounds"),
        bad_rows = study.bad_rows()
    )
}

fn geomean_table<'a>(
    study: &Study,
    results: impl IntoIterator<Item = &'a ProgramResult> + Clone,
) -> String {
    let mut md = md_header(&GEOMEAN_COLUMNS);
    for cells in geomean_cells(study, results) {
        md.push_str(&md_row(&cells));
    }
    md.push('\n');
    md
}

/// A table's header row and rule, the terminal's column names spaced.
pub(crate) fn md_header(columns: &[&str]) -> String {
    let names: Vec<String> = columns.iter().map(|c| c.replace('_', " ")).collect();
    format!("{}|{}\n", md_row(&names), "---|".repeat(columns.len()))
}

pub(crate) fn md_row(cells: &[String]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| escape_cell(c)).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// A `|` would end a table cell.
pub(crate) fn escape_cell(text: &str) -> String {
    text.replace('|', r"\|")
}

fn summary_csv(study: &Study) -> String {
    let mut csv = String::from(
        "program,kernel,trip_count,policy,blocks,threads,grids,launches,median_ns,p10_ns,p90_ns,spread_pct,total_ns,speedup,same_grid_as_llvm\n",
    );
    for (program, result) in study.programs.iter().zip(study.results) {
        for row in &result.rows {
            let ((blocks, threads), _) = row.grids[0];
            let grids: Vec<String> = row
                .grids
                .iter()
                .map(|((b, t), n)| format!("{b}x{t}:{n}"))
                .collect();
            let _ = writeln!(
                csv,
                "{},{},{},{},{blocks},{threads},{},{},{},{},{},{},{},{},{}",
                csv::field(&program.name),
                csv::field(&row.kernel),
                row.trip_count,
                csv::field(&study.policies[row.policy]),
                grids.join(";"),
                row.time.count,
                row.time.median,
                row.time.p10,
                row.time.p90,
                row.time.spread_pct(),
                row.time.total,
                row.speedup.map_or(String::new(), |s| s.to_string()),
                u8::from(row.same_grid_as_llvm)
            );
        }
    }
    csv
}

fn runs_csv(study: &Study) -> String {
    let mut csv = String::from(
        "program,round,position,policy,status,exit_code,wall_s,launches,bad_rows,profile,log\n",
    );
    for r in study.runs {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{},{}",
            csv::field(&study.programs[r.program].name),
            r.round,
            r.position,
            csv::field(&study.policies[r.policy]),
            csv::field(&r.status.to_string()),
            r.status.exit_code(),
            r.wall_s,
            r.launches.map_or(String::new(), |n| n.to_string()),
            r.bad_rows,
            csv::field(&r.files.profile.to_string_lossy()),
            csv::field(&r.files.log.to_string_lossy())
        );
    }
    csv
}

/// The GPUs `nvidia-smi -L` lists, or why there are none.
pub(crate) fn devices() -> String {
    match std::process::Command::new("nvidia-smi").arg("-L").output() {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let gpus: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            if gpus.is_empty() {
                "none listed by `nvidia-smi -L`".into()
            } else {
                format!("{} (`nvidia-smi -L`)", gpus.join("; "))
            }
        }
        Ok(out) => format!("unknown (`nvidia-smi -L` exited with {})", out.status),
        Err(e) => format!("unknown (`nvidia-smi -L`: {e})"),
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC`.
pub(crate) fn now_utc() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_from_unix(seconds)
}

fn utc_from_unix(seconds: u64) -> String {
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_from_unix(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_from_unix(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_from_unix(1_767_225_599), "2025-12-31 23:59:59 UTC");
        assert_eq!(utc_from_unix(4_107_542_400), "2100-03-01 00:00:00 UTC");
    }

    #[test]
    fn counted_nouns() {
        assert_eq!(
            [
                counted(1, "policy", "policies"),
                counted(3, "policy", "policies")
            ],
            ["1 policy", "3 policies"]
        );
    }

    #[test]
    fn grid_labels() {
        assert_eq!(grids_label(&[((8, 128), 3)]), "8x128");
        let many: Vec<(Grid, usize)> = (1..=5).map(|b| ((b, 32), 1)).collect();
        assert_eq!(grids_label(&many), "1x32,2x32,3x32,+2");
    }

    #[test]
    fn aligned_columns_split_on_whitespace() {
        let rows = [
            vec!["a".to_string(), "long".into()],
            vec!["wider".into(), "b".into()],
        ];
        assert_eq!(aligned(&rows), "a      long\nwider  b\n");
    }
}
