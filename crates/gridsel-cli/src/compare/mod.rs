//! `gridsel compare`: runs someone's program, or a suite of them, under
//! several policies and compares kernel times and wall times with `llvm`'s.
//! Part of the `gridsel` executable, not of the preloaded library.
//!
//! Each round runs every program once under every policy, the order of
//! policies rotating by one each round, so that drift (clocks, heat, other
//! load) hits every policy alike. Every run gets `LD_PRELOAD=libgridsel.so`,
//! `GRIDSEL_POLICY` and a fresh `GRIDSEL_PROFILE`; `llvm` (gridsel forwards
//! LLVM's grid) is the baseline and always runs, so every policy pays the
//! same interception and profiling cost.

pub(crate) mod report;
pub(crate) mod results;
pub(crate) mod svg;

use crate::runner::manifest::Program;
use crate::runner::runs::{self, Inherit, RunFiles, RunLimits, RunRecord};
use crate::runner::{RunnerArgs, file_safe, output};
use gridsel_cli::profile_rows;
use gridsel_core::policy::Policy;
use gridsel_host::config::ENV_POLICY;
use results::{ProgramResult, Samples};
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

/// The policy every comparison is against.
const BASELINE_POLICY: &str = "llvm";

/// The most rounds `--runs` takes. The medians and p10-p90 spreads need
/// tens of samples per policy; past a thousand, a round more moves a median
/// by far less than its spread, while every round still costs a run per
/// program and policy, two files in the output folder each, and the
/// launch times kept in memory (`--runs 4294967295` would never end).
const MAX_ROUNDS: u32 = 1000;

/// `gridsel compare`'s arguments.
#[derive(clap::Args)]
#[command(after_help = "Example: gridsel compare --policies auto,lloyd --runs 5 -- ./gemm 1024")]
pub struct Args {
    /// Policies to compare, comma-separated (`fixed:T,B` included); llvm,
    /// the baseline, always runs.
    #[arg(long, default_value = "llvm,auto", value_parser = parse_policies)]
    policies: Policies,
    /// Rounds (at most 1000): each runs every program once under every
    /// policy; after the first, the time the rest will take is printed.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=MAX_ROUNDS as i64))]
    runs: u32,
    #[command(flatten)]
    run: RunnerArgs,
}

/// The policies in run order, `llvm` first.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Policies(Vec<String>);

/// Parses `llvm,auto,fixed:64,8`: a number right after `fixed:T` is its
/// `B`. Names are checked and written as gridsel writes them; repeats go.
fn parse_policies(text: &str) -> Result<Policies, String> {
    let mut names: Vec<String> = Vec::new();
    for part in text.split(',').map(str::trim) {
        let completes_fixed = names
            .last()
            .is_some_and(|n| n.starts_with("fixed:") && !n.contains(','));
        match names.last_mut() {
            Some(last) if completes_fixed => *last = format!("{last},{part}"),
            _ => names.push(part.to_string()),
        }
    }
    let mut policies = vec![BASELINE_POLICY.to_string()];
    for name in names {
        let policy = name.parse::<Policy>()?.to_string();
        if !policies.contains(&policy) {
            policies.push(policy);
        }
    }
    Ok(Policies(policies))
}

/// The order of `count` policies in 1-based `round`: rotated by one per round.
fn round_order(count: usize, round: u32) -> impl Iterator<Item = usize> {
    (0..count).map(move |i| (i + round as usize - 1) % count)
}

/// Runs the comparison, prints the tables and writes the reports; an error
/// when anything could not run or a run failed (after all the others ran).
pub fn run(args: &Args) -> Result<(), String> {
    crate::runner::stop::on_stop_signals("compare")?;
    let lib = args.run.library()?;
    let (programs, source) = args.run.programs()?;
    crate::runner::manifest::check_programs(&programs)?;
    let out = output::create_folder(args.run.out.as_deref(), "gridsel-compare")?;
    let policies = &args.policies.0;
    eprintln!(
        "gridsel compare: {} x {} x {}; logs, profiles and reports in {}",
        report::counted(programs.len(), "program", "programs"),
        report::counted(policies.len(), "policy", "policies"),
        report::counted(args.runs as usize, "round", "rounds"),
        out.display()
    );
    let (records, results) = run_rounds(
        &programs,
        policies,
        args.runs,
        &lib,
        &out,
        args.run.limits(),
    )?;
    let study = report::Study {
        programs: &programs,
        policies,
        rounds: args.runs,
        results: &results,
        runs: &records,
        source,
        lib: &lib,
    };
    print!("{}", report::text(&study));
    report::write_all(&study, &out)?;
    eprintln!(
        "gridsel compare: report in {}",
        out.join("report.md").display()
    );
    let failed: Vec<&RunRecord> = records.iter().filter(|r| !r.status.ok()).collect();
    if failed.is_empty() {
        return Ok(());
    }
    for r in &failed {
        eprintln!(
            "gridsel compare: failed: {} under {}, round {}/{}: {} (log: {})",
            programs[r.program].name,
            policies[r.policy],
            r.round,
            args.runs,
            r.status,
            r.files.log.display()
        );
    }
    Err(format!(
        "{} of {} runs failed; their times are left out",
        failed.len(),
        records.len()
    ))
}

/// Every round: every program under every policy, in the round's order,
/// with a progress line per run on stderr. Returns the runs and, per
/// program, its comparison.
fn run_rounds(
    programs: &[Program],
    policies: &[String],
    rounds: u32,
    lib: &Path,
    out: &Path,
    limits: RunLimits,
) -> Result<(Vec<RunRecord>, Vec<ProgramResult>), String> {
    let mut samples: Vec<Samples> = programs
        .iter()
        .map(|_| Samples::new(policies.len()))
        .collect();
    let mut records = Vec::new();
    let digits = rounds.to_string().len();
    let folders = programs
        .iter()
        .map(|program| output::create_subfolder(out, &program.name))
        .collect::<Result<Vec<_>, _>>()?;
    let start = Instant::now();
    for round in 1..=rounds {
        if round == 2 {
            eprintln!("{}", estimate(start.elapsed(), rounds));
        }
        for (p, (program, folder)) in programs.iter().zip(&folders).enumerate() {
            for (position, policy) in round_order(policies.len(), round).enumerate() {
                let stem = format!("r{round:0digits$}-{}", file_safe(&policies[policy]));
                let files = RunFiles {
                    profile: folder.join(format!("{stem}.csv")),
                    log: folder.join(format!("{stem}.log")),
                };
                let settings = [(ENV_POLICY, OsStr::new(&policies[policy]))];
                let ended = runs::run(program, &settings, Inherit::Every, lib, &files, limits);
                let mut record = RunRecord {
                    program: p,
                    round,
                    position: position + 1,
                    policy,
                    status: ended.status.clone(),
                    wall_s: ended.wall_s,
                    launches: None,
                    bad_rows: 0,
                    files,
                };
                let log = if record.status.ok() {
                    read_profile(&mut record, &mut samples[p]);
                    String::new()
                } else {
                    format!(" (log: {})", record.files.log.display())
                };
                eprintln!(
                    "[round {round}/{rounds}] {} {}: {:.3} s, {}{log}",
                    program.name, policies[policy], record.wall_s, record.status
                );
                if let Some(note) = ended.held_note() {
                    eprintln!(
                        "[round {round}/{rounds}] {} {}: {note}",
                        program.name, policies[policy]
                    );
                }
                records.push(record);
            }
        }
    }
    let results = samples.into_iter().map(Samples::finish).collect();
    Ok((records, results))
}

/// Feeds a successful run's profile to its program's samples. A missing
/// profile means no launch reached gridsel (no offload kernel, or gridsel
/// not loaded): zero launches.
fn read_profile(record: &mut RunRecord, samples: &mut Samples) {
    samples.add_wall(record.policy, record.wall_s);
    let bytes = std::fs::read(&record.files.profile).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let mut launches = 0;
    record.bad_rows = profile_rows::parse(&text, |launch| {
        launches += 1;
        samples.add_launch(record.policy, launch);
    });
    record.launches = Some(launches);
}

/// What the rounds after the first will take, from the first's time.
fn estimate(first: Duration, rounds: u32) -> String {
    let rest = first.as_secs_f64() * f64::from(rounds - 1);
    let minutes = (rest / 60.0).round() as u64;
    let left = if minutes < 2 {
        format!("{rest:.0} s")
    } else if minutes < 120 {
        format!("{minutes} min")
    } else {
        format!("{} h {:02} min", minutes / 60, minutes % 60)
    };
    format!(
        "gridsel compare: round 1 took {:.1} s; the other {} should take about {left}",
        first.as_secs_f64(),
        report::counted(rounds as usize - 1, "round", "rounds")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        parse_policies(text).unwrap().0
    }

    #[test]
    fn policy_lists_start_with_llvm_and_keep_fixed_grids_whole() {
        assert_eq!(names("llvm,auto"), ["llvm", "auto"]);
        assert_eq!(names("auto, lloyd"), ["llvm", "auto", "lloyd"]);
        assert_eq!(names("auto,llvm,auto"), ["llvm", "auto"]);
        assert_eq!(
            names("fixed:64,8,auto,fixed: 128 , 2"),
            ["llvm", "fixed:64,8", "auto", "fixed:128,2"]
        );
        for bad in ["auto,fast", "fixed:64", "fixed:64,auto", "auto,,lloyd", ""] {
            assert!(parse_policies(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn each_round_rotates_the_order() {
        let order = |round| round_order(3, round).collect::<Vec<_>>();
        assert_eq!(
            [order(1), order(2), order(3), order(4)],
            [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2]]
        );
        // Over `count` rounds every policy takes every place once.
        for policy in 0..3 {
            let mut places: Vec<usize> = (1..=3)
                .map(|round| order(round).iter().position(|&p| p == policy).unwrap())
                .collect();
            places.sort();
            assert_eq!(places, [0, 1, 2]);
        }
    }
}
