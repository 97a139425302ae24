//! The commands a user of gridsel runs: what a policy chooses for a launch,
//! what a binary's kernels are, which GPUs there are, `compare` and `tune`
//! on their own programs, the store `tune` keeps, and the environment
//! variables.

use crate::compare;
use clap::Subcommand;
use gridsel_cli::args::{Target, policy_help, read_images};
use gridsel_core::device::{DeviceDesc, PRESETS};
use gridsel_core::image::ImageKind;
use gridsel_core::policy::{self, DEFAULT_POLICY, Limits, Policy, llvm};
use gridsel_host::config::{ON_OFF, SETTINGS};
use gridsel_host::ffi::cuda;
use std::path::PathBuf;

/// The user commands.
#[derive(Subcommand)]
pub enum Command {
    /// Choose a grid for one kernel launch and show LLVM's next to it.
    Select {
        #[command(flatten)]
        target: Target,
        #[arg(long, default_value_t = DEFAULT_POLICY, help = policy_help())]
        policy: Policy,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// List the device presets and the GPUs the CUDA driver reports.
    Devices,
    /// List the offload kernels embedded in an executable or shared library.
    Inspect {
        /// Executable, shared library or object file with offload images.
        file: PathBuf,
        /// Print one JSON array: per image its format and kernels.
        #[arg(long)]
        json: bool,
    },
    /// List, explain or clear the grids `tune` saved across runs (GRIDSEL_CACHE).
    Cache(crate::cache::CacheArgs),
    /// Run a program (or a --manifest suite) under several policies,
    /// interleaved, and compare kernel and wall times with LLVM's grids.
    Compare(compare::Args),
    /// Tune a program's grids in a session of its own: run it untuned, then
    /// under `tune` until its searches settle, then with what was learned;
    /// verify every run and write the learned grids to the store.
    Tune(crate::session::Args),
    /// Describe the environment variables gridsel reads in the programs it
    /// runs under: their values, defaults and effects.
    #[command(after_long_help = env_table())]
    Env,
}

/// The width `gridsel env` wraps its help at.
const WIDTH: usize = 80;

/// The environment variables by name, for the end of `--help`.
pub fn env_summary() -> String {
    let names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
    let text = format!(
        "Environment: {} (gridsel env describes each).",
        names.join(", ")
    );
    wrap(&text, "")
}

/// Every environment variable with its values, its default and its help,
/// as the preload library reads them ([`SETTINGS`]).
fn env_table() -> String {
    let mut text = wrap(
        &format!(
            "An empty or blank value counts as unset. On/off variables take {ON_OFF}, in any case. \
             A bad value gives one error line and the default, unless its entry says otherwise.",
        ),
        "",
    );
    for s in SETTINGS {
        text.push_str(&format!("\n{}\n", s.name));
        text.push_str(&wrap(&format!("values: {}", s.values), "    "));
        text.push_str(&wrap(&format!("default: {}", s.default.text()), "    "));
        if let Some(instead) = s.if_bad {
            text.push_str(&wrap(&format!("if bad:  {instead}"), "    "));
        }
        text.push_str(&wrap(s.help, "    "));
    }
    text
}

/// `text` as lines of at most [`WIDTH`] columns (a longer word alone on its
/// line), each starting with `indent`.
fn wrap(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(indent);
    for word in text.split_whitespace() {
        if line.len() > indent.len() && line.len() + 1 + word.len() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from(indent);
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// Runs one of these commands.
pub fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Select {
            target,
            policy,
            json,
        } => {
            let (device, kernel, launch) = target.resolve()?;
            let decision = policy::decide(&policy, &device, &kernel, &launch).ok_or_else(|| {
                format!("{policy} chooses per launch at run time; pick a stateless policy")
            })?;
            let llvm = llvm::grid(&device, &kernel, &launch);
            let range = Limits::of(&device, &kernel, &launch);
            let g = decision.geometry;
            if json {
                let value = serde_json::json!({
                    "policy": policy.to_string(), "class": decision.class,
                    "threads": g.threads, "blocks": g.blocks,
                    "llvm_threads": llvm.threads, "llvm_blocks": llvm.blocks,
                    "rule": decision.rule.to_string(), "clamped": decision.clamped,
                    "narrowed": range.narrowed.map(|why| why.to_string()),
                });
                println!("{value}");
            } else {
                println!(
                    "device   {} ({} SMs, ThreadsPerBlock {})",
                    device.name, device.sm_count, device.threads_per_block
                );
                println!(
                    "class    {} loop (trip count {})",
                    decision.class, launch.trip_count
                );
                println!("llvm     {llvm}");
                println!(
                    "{policy:<8} {g}  [{}]{}",
                    decision.rule,
                    if decision.clamped { " (clamped)" } else { "" }
                );
                if decision.clamped {
                    println!("{:<8} cut to {range}", "range");
                }
            }
        }
        Command::Devices => {
            println!("presets:");
            for name in PRESETS {
                let d = DeviceDesc::preset(name).ok_or("missing preset")?;
                println!(
                    "  {name:<14} {} (sm_{}, {} SMs)",
                    d.name, d.sm_arch, d.sm_count
                );
            }
            match cuda::devices_on_machine() {
                Ok(found) if found.is_empty() => println!("detected: none"),
                Ok(found) => {
                    for (i, d) in found.iter().enumerate() {
                        println!(
                            "detected {i}: {} (sm_{}, {} SMs)",
                            d.name, d.sm_arch, d.sm_count
                        );
                        println!("{}", toml::to_string(d).map_err(|e| e.to_string())?);
                    }
                }
                Err(e) => println!("detected: none ({e})"),
            }
        }
        Command::Inspect { file, json } => {
            let images = read_images(&file)?;
            if json {
                let value: Vec<_> = images
                    .iter()
                    .map(|i| serde_json::json!({"image": i.kind, "kernels": i.kernels}))
                    .collect();
                println!("{}", serde_json::Value::Array(value));
            } else {
                if images.is_empty() {
                    println!("{}: no offload images", file.display());
                }
                for info in &images {
                    let kind = match info.kind {
                        ImageKind::Cubin { sm_arch } => format!("cubin sm_{sm_arch}"),
                        ImageKind::HostElf { machine } => format!("host ELF (machine {machine})"),
                        ImageKind::Bitcode => "LLVM bitcode (JIT)".to_string(),
                    };
                    println!("{kind}: {} kernels", info.kernels.len());
                    for k in &info.kernels {
                        println!("  {}\n    {k}", k.name);
                    }
                }
            }
        }
        Command::Compare(args) => compare::run(&args)?,
        Command::Tune(args) => crate::session::run(&args)?,
        Command::Env => print!("{}", env_table()),
        Command::Cache(args) => crate::cache::run(&args)?,
    }
    Ok(())
}
