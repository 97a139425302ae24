//! What a session checks before its first run, so that what would make it
//! fail at its end (hours later on a GPU) fails at once, in one line,
//! nothing run: the programs can start, their manifest sets no gridsel
//! variable the session sets or leaves out ([`KEPT`]), and the store can be
//! written (its folder there and writable, the store itself not read-only
//! and every record of it valid).

use crate::runner::manifest::{self, Program};
use crate::runner::runs::Inherit;
use gridsel_host::config::{
    self, ENV_DEVICE, ENV_LOG, ENV_OVERRIDE_CLAUSES, ENV_TEAMS_REGIONS, ENV_THREADS_PER_BLOCK,
};
use gridsel_host::ffi::fs;
use gridsel_host::files;
use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::path::Path;

/// The user's `GRIDSEL_*` variables a session's runs keep: what describes
/// the GPU (a forced device, its threads per block), what the user allows
/// gridsel to change in this program (the clauses, `teams` regions: the
/// same in production) and gridsel's log level (its lines are left out of
/// the outputs compared). Every other one is removed from every run:
/// the session sets the policy, the store, the exploring (unbounded, which
/// `GRIDSEL_TUNE_BOUND` has no say in) and the alternating runs itself, and
/// a site store (`GRIDSEL_SITE_CACHE`), a
/// model or anything else of the user's would change what the runs launch
/// behind its back.
pub const KEPT: &[&str] = &[
    ENV_DEVICE,
    ENV_THREADS_PER_BLOCK,
    ENV_OVERRIDE_CLAUSES,
    ENV_TEAMS_REGIONS,
    ENV_LOG,
];

/// Checks the programs and the store `destination` before any run;
/// creates the default store's folder (as writing it at the end would).
pub fn check(destination: &config::StorePath, programs: &[Program]) -> Result<(), String> {
    manifest::check_programs(programs)?;
    for program in programs {
        // What a run would remove of the caller's, the manifest must not set.
        let names = program.env.keys().map(OsStr::new);
        if let Some(name) = Inherit::Only(KEPT).removed(names).next() {
            return Err(format!(
                "program `{}`: its env sets {}, which `gridsel tune` sets or leaves out \
                 itself (a session's runs keep only {} of yours); nothing run",
                program.name,
                name.display(),
                KEPT.join(", ")
            ));
        }
    }
    let path = &destination.path;
    let refused = |why: String| {
        format!(
            "{}: {why}; nothing run (the session would fail to write it at its end)",
            path.display()
        )
    };
    if destination.default {
        files::create_store_folder(path)
            .map_err(|e| refused(format!("cannot create its folder: {e}")))?;
    }
    let Some(folder) = path.parent().filter(|f| f.is_dir()) else {
        return Err(refused("its folder does not exist".into()));
    };
    if let Some(meta) = fs::ensure_regular_or_absent(path).map_err(|e| refused(e.to_string()))? {
        fs::ensure_writable(path, &meta).map_err(|e| refused(e.to_string()))?;
    }
    let contents = files::load_store(path).map_err(|e| refused(e.to_string()))?;
    if !contents.dropped.is_empty() {
        let dropped = contents.dropped.join("; ");
        return Err(refused(format!(
            "{dropped}; fix the file or move it away first"
        )));
    }
    writable(folder, path).map_err(|e| refused(format!("its folder is not writable ({e})")))
}

/// Whether a file can be created in `folder`, as the store's atomic
/// replacement and its lock file are: a new file named as the store's
/// temporary files are (`<store>.tmp.<pid>.<hex>`, which a later write
/// removes should this process die before it does), created and removed.
fn writable(folder: &Path, store: &Path) -> std::io::Result<()> {
    let mut name = store.file_name().unwrap_or_default().to_owned();
    name.push(format!(
        ".tmp.{}.{:016x}",
        std::process::id(),
        fs::random_u64()?
    ));
    let probe = folder.join(name);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}
