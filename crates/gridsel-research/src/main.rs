//! `gridsel-research`: the commands over the benchmark harness's sweep
//! results (points.csv) and the measured binaries, apart from a user's
//! `gridsel`. They evaluate and calibrate the policies ([`decisions`],
//! [`calibrate`]), replay `tune` ([`tune_sim`]), give the benchmark tools
//! the library's facts ([`facts`]), check the cubin parser against the
//! driver ([`check_driver`]), dump every decision, and split an
//! alternating run's profile into its two sides as `gridsel tune` does
//! ([`sides`]). bench/harness,
//! bench/forest/train.py and bench/gpu call them; a user of gridsel needs
//! none.
#![forbid(unsafe_code)]

mod calibrate;
mod check_driver;
mod decisions;
mod facts;
mod sides;
mod sweep;
mod tune_sim;

use clap::{Parser, Subcommand};
use decisions::{ReductionArg, parse_reduction_grid};
use gridsel_cli::args::{Target, policy_help};
use gridsel_core::policy::Policy;
use std::path::PathBuf;
use std::process::ExitCode;
use sweep::Measured;

#[derive(Parser)]
#[command(
    name = "gridsel-research",
    version,
    about = "Research commands of gridsel over benchmark sweep results"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate a stateless policy offline: its grid for every measured case of
    /// points.csv and that grid's measured median (CSV for `add-policy`).
    Evaluate {
        #[command(flatten)]
        sweep: Measured,
        #[arg(long, help = policy_help())]
        policy: Policy,
        /// With `--policy auto`: rule 6's constants instead of the shipped
        /// ones, as THREADS,WAVES,MIN_TRIP, or `off` for no rule 6 (to judge
        /// the rule leave-one-program-out, bench/harness/auto_patterns.py).
        #[arg(long, value_parser = parse_reduction_grid)]
        reduction_grid: Option<ReductionArg>,
    },
    /// Check the cubin parser and the occupancy model against the CUDA driver:
    /// load each binary's cubin and compare attributes and resident blocks.
    CheckDriver {
        /// Offload binaries whose cubins to load.
        binaries: Vec<PathBuf>,
        /// CUDA device ordinal of the GPU to ask.
        #[arg(long, default_value_t = 0)]
        ordinal: i32,
    },
    /// Derive a device description (ThreadsPerBlock, waves) from sweep results,
    /// leave-one-out, and write it as TOML.
    Calibrate {
        #[command(flatten)]
        sweep: Measured,
        /// Where to write the description (stdout when absent).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Where to write auto's leave-one-out grid and time per case (CSV).
        #[arg(long)]
        loo_csv: Option<PathBuf>,
    },
    /// Every policy's decision, tune's candidates and the sweep space for every
    /// kernel of the binaries in a folder over a ladder of trip counts (CSV):
    /// a change that should leave decisions alone must leave this identical.
    DumpDecisions {
        /// Folder of offload binaries (e.g. bench/build/sm_90).
        binaries: PathBuf,
        /// Preset or TOML description of the device decided for.
        #[arg(long, default_value = "h100")]
        device: String,
    },
    /// Replay `tune`'s search on sweep results, 10 runs in a row (--runs)
    /// through the store's format, for a kernel launched once and one launched 20 times
    /// per run: the stand-in timer of each (kernel, trip count) is its
    /// measured median per grid, exploration unbounded unless --overhead
    /// says (as with GRIDSEL_TUNE_OVERHEAD=off). Prints CSV; the summary
    /// goes to stderr.
    TuneSim(tune_sim::Args),
    /// The forest's feature row of every point of points.csv (CSV: the
    /// point's columns, then one `x.<feature>` column per feature in model
    /// order), computed as the `forest` policy computes it at run time: what
    /// bench/forest/train.py trains on.
    Features {
        #[command(flatten)]
        sweep: Measured,
        /// Also a row per grid the `forest` policy searches for each case
        /// (label `candidate`, no median).
        #[arg(long)]
        candidates: bool,
    },
    /// The distribute chunk of every measured case of points.csv (CSV):
    /// iterations per team per round, the trip count's chunks, and the most
    /// blocks the sweep space tries.
    Chunks {
        #[command(flatten)]
        sweep: Measured,
    },
    /// `tune`'s predicted cost of every measured grid of points.csv over
    /// `auto`'s grid, beside the measured medians (CSV), and the grid's place
    /// in the prior's order before pruning, and whether the kernel has a
    /// cross-team reduction: what the pruning threshold is judged on.
    Costs {
        #[command(flatten)]
        sweep: Measured,
        /// The prior's order of a tuning session (exploring unbounded,
        /// GRIDSEL_TUNE_OVERHEAD=off) instead of online `tune`'s.
        #[arg(long)]
        session: bool,
    },
    /// Write a GRIDSEL_CACHE store (tune's format) that pins grids, from a
    /// CSV with columns kernel,device,sm_arch,trip_count,threads,blocks,ns,launches:
    /// every launch of the kernel in that trip count's class gets the grid,
    /// with no search, whatever the build of the program (e.g. a sweep's best
    /// grids, for live runs).
    CacheEntries {
        /// The CSV file, or `-` for standard input.
        csv: PathBuf,
        /// Where to write the cache file (stdout when absent).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// One alternating run's two sides per search (CSV), split as `gridsel
    /// tune`'s confirmation splits them: each search's launches after its
    /// first, the learned grid's (`--learned`) against auto's, with each
    /// side's grids, median launch time, that median times the run's
    /// launches (median-sum) and its launch times summed, both scaled to the
    /// run's launches of the search.
    Sides(sides::SidesArgs),
    /// The sweep space of one launch (CSV): the grid points the `sweep`
    /// policy launches in turn, which the benchmark harness measures.
    Space {
        #[command(flatten)]
        target: Target,
    },
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Evaluate {
            sweep,
            policy,
            reduction_grid,
        } => decisions::evaluate(&sweep, &policy, reduction_grid),
        Command::CheckDriver { binaries, ordinal } => {
            let mismatches = check_driver::check(&binaries, ordinal)?;
            eprintln!("check-driver: {mismatches} disagreements");
            if mismatches > 0 {
                return Err(format!("{mismatches} disagreements with the driver"));
            }
            Ok(())
        }
        Command::Calibrate {
            sweep,
            out,
            loo_csv,
        } => calibrate::run(&sweep, out.as_deref(), loo_csv.as_deref()),
        Command::DumpDecisions { binaries, device } => decisions::dump(&binaries, &device),
        Command::TuneSim(args) => tune_sim::run(&args),
        Command::Features { sweep, candidates } => facts::features(&sweep, candidates),
        Command::Chunks { sweep } => facts::chunks(&sweep),
        Command::Costs { sweep, session } => facts::costs(&sweep, session),
        Command::CacheEntries { csv, out } => facts::cache_entries(&csv, out.as_deref()),
        Command::Sides(args) => sides::run(&args),
        Command::Space { target } => decisions::space(&target),
    }
}

fn main() -> ExitCode {
    gridsel_host::ffi::process::default_sigpipe();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gridsel-research: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use gridsel_core::policy::POLICY_NAMES;

    #[test]
    fn every_argument_has_help() {
        let missing = gridsel_cli::args::arguments_without_help(&Cli::command());
        assert!(missing.is_empty(), "arguments without help: {missing:?}");
    }

    #[test]
    fn policy_help_lists_the_accepted_names() {
        let cli = Cli::command();
        let evaluate = cli.find_subcommand("evaluate").unwrap();
        let policy = evaluate
            .get_arguments()
            .find(|a| a.get_id() == "policy")
            .unwrap();
        let help = policy.get_help().unwrap().to_string();
        assert!(help.contains(POLICY_NAMES), "{help}");
    }
}
