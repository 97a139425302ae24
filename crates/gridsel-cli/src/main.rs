//! `gridsel`: the command line a user runs ([`user`]): decide, inspect,
//! compare, tune a program in a session of its own, and the store `tune`
//! keeps. It calls `gridsel-core` for the decisions and `gridsel-host` for
//! the settings, the CUDA driver and the checked files (the crates:
//! `docs/layout.md`). The research commands over the benchmark harness's
//! sweep results are `gridsel-research`'s.

#![forbid(unsafe_code)]

mod cache;
mod compare;
mod runner;
mod session;
mod user;

use clap::Parser;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "gridsel", version, about = "Launch grids for OpenMP offload kernels", after_help = user::env_summary())]
struct Cli {
    #[command(subcommand)]
    command: user::Command,
}

fn main() -> ExitCode {
    gridsel_host::ffi::process::default_sigpipe();
    match user::run(Cli::parse().command) {
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
    use gridsel_core::policy::{DEFAULT_POLICY, POLICY_NAMES};

    #[test]
    fn every_subcommand_argument_has_help() {
        let missing = gridsel_cli::args::arguments_without_help(&Cli::command());
        assert!(missing.is_empty(), "arguments without help: {missing:?}");
    }

    #[test]
    fn policy_help_lists_the_accepted_names() {
        let cli = Cli::command();
        let select = cli.find_subcommand("select").unwrap();
        let policy = select
            .get_arguments()
            .find(|a| a.get_id() == "policy")
            .unwrap();
        let help = policy.get_help().unwrap().to_string();
        assert!(help.contains(POLICY_NAMES), "{help}");
    }

    #[test]
    fn select_defaults_to_the_library_default_policy() {
        let cli = Cli::try_parse_from(["gridsel", "select", "--trip-count", "1000"]).unwrap();
        let user::Command::Select { policy, .. } = cli.command else {
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
