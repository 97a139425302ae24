//! `gridsel cache`: what `tune` keeps across runs in `GRIDSEL_CACHE`, listed,
//! explained and cleared. Reads and writes go through the preload library's
//! checked files (regular files only, capped, merged under the file's lock),
//! so clearing never loses what a running program saves at the same time.

use clap::{Args, Subcommand};
use gridsel::config::ENV_CACHE;
use gridsel::files;
use gridsel::tune::cache::Entry;
use std::path::PathBuf;
use std::time::Duration;

/// `gridsel cache`'s arguments.
#[derive(Args)]
pub struct CacheArgs {
    /// The cache file (default: $GRIDSEL_CACHE).
    #[arg(long)]
    path: Option<PathBuf>,
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Every tuned grid: kernel, device, trip count, grid, measured median, launches spent.
    List,
    /// Why the kernels whose name contains KERNEL get the grids they get.
    Explain {
        /// A part of the kernel's name (e.g. its source line, `_l42`).
        kernel: String,
    },
    /// Forget tuned grids, so the next run tunes them again.
    Clear {
        /// Only the kernels whose name contains this.
        #[arg(long)]
        kernel: Option<String>,
    },
}

/// How long `clear` waits for a program that is saving to the cache.
const PATIENCE: Duration = Duration::from_secs(5);

/// Runs `gridsel cache`.
pub fn run(args: &CacheArgs) -> Result<(), String> {
    let path = match &args.path {
        Some(p) => p.clone(),
        None => std::env::var_os(ENV_CACHE)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| format!("no cache file: give --path or set {ENV_CACHE}"))?,
    };
    let shown = path.display();
    match &args.action {
        Action::List => {
            let table = files::load_cache(&path).map_err(|e| format!("{shown}: {e}"))?;
            println!("kernel,device,sm_arch,trip_count,threads,blocks,ns,launches");
            for e in table.entries() {
                println!(
                    "{},{},{},{},{},{},{},{}",
                    e.kernel,
                    e.device,
                    e.sm_arch,
                    e.trip_count,
                    e.threads,
                    e.blocks,
                    e.ns,
                    e.launches
                );
            }
        }
        Action::Explain { kernel } => {
            let table = files::load_cache(&path).map_err(|e| format!("{shown}: {e}"))?;
            let found: Vec<&Entry> = table
                .entries()
                .filter(|e| e.kernel.contains(kernel.as_str()))
                .collect();
            if found.is_empty() {
                return Err(format!("{shown}: no tuned kernel matches `{kernel}`"));
            }
            for e in found {
                println!("{}", explain(e));
            }
        }
        Action::Clear { kernel } => {
            let mut removed = 0;
            files::edit_cache(&path, PATIENCE, |table| {
                removed = table.retain(|e| {
                    kernel
                        .as_ref()
                        .is_some_and(|k| !e.kernel.contains(k.as_str()))
                });
            })
            .map_err(|e| format!("{shown}: {e}"))?;
            println!("{shown}: {removed} tuned grids cleared");
        }
    }
    Ok(())
}

/// One entry in words: what runs get, and why.
fn explain(e: &Entry) -> String {
    format!(
        "{} on {} (sm_{}), trip count {}: every launch gets {} blocks x {} threads (cut to the launch's limits). \
         tune's search found it fastest of its candidates in {} exploring launches, at a median of {} ns \
         per launch, and saved it; later runs start from it and explore no more. \
         `gridsel cache clear --kernel {}` makes the next run search again.",
        e.kernel,
        e.device,
        e.sm_arch,
        e.trip_count,
        e.blocks,
        e.threads,
        e.launches,
        e.ns,
        e.kernel
    )
}
