//! `gridsel`: the command line. User commands ([`user`]) decide, inspect
//! and compare; research commands ([`research`]) work on the benchmark
//! harness's sweep results. Both call the libraries: `gridsel-core` for the
//! decisions, `gridsel` (the preload library) for the CUDA driver and the
//! checked files.

mod args;
mod cache;
mod calibrate;
mod compare;
mod research;
mod user;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "gridsel", version, about = "Launch grids for OpenMP offload kernels", after_help = user::env_summary())]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    #[command(flatten)]
    User(user::Command),
    #[command(flatten)]
    Research(research::Command),
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::User(command) => user::run(command),
        Command::Research(command) => research::run(command),
    }
}

fn main() -> ExitCode {
    gridsel::ffi::dl::default_sigpipe();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gridsel: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use gridsel::policy::{DEFAULT_POLICY, POLICY_NAMES};

    #[test]
    fn every_subcommand_argument_has_help() {
        let cli = Cli::command();
        cli.clone().debug_assert();
        let mut missing = Vec::new();
        for sub in cli.get_subcommands() {
            for arg in sub.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && arg.get_help().is_none() {
                    missing.push(format!("{} --{}", sub.get_name(), arg.get_id()));
                }
            }
        }
        assert!(missing.is_empty(), "arguments without help: {missing:?}");
    }

    #[test]
    fn policy_help_lists_the_accepted_names() {
        for name in ["select", "evaluate"] {
            let cli = Cli::command();
            let sub = cli.find_subcommand(name).unwrap();
            let policy = sub
                .get_arguments()
                .find(|a| a.get_id() == "policy")
                .unwrap();
            let help = policy.get_help().unwrap().to_string();
            assert!(help.contains(POLICY_NAMES), "{name}: {help}");
        }
    }

    #[test]
    fn select_defaults_to_the_library_default_policy() {
        let cli = Cli::try_parse_from(["gridsel", "select", "--trip-count", "1000"]).unwrap();
        let Command::User(user::Command::Select { policy, .. }) = cli.command else {
            panic!("not select");
        };
        assert_eq!(policy, DEFAULT_POLICY);
    }

    #[test]
    fn unknown_policy_is_a_usage_error_naming_the_choices() {
        let err =
            Cli::try_parse_from(["gridsel", "select", "--trip-count", "1", "--policy", "nope"])
                .err()
                .unwrap();
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(err.to_string().contains(POLICY_NAMES), "{err}");
    }
}
