//! What a tuning session reads and writes of the store: the only part of
//! `gridsel tune` that knows the store's records. Reads and writes go
//! through gridsel-host's checked files (regular files only, capped,
//! under the store's lock, its mode and owner kept, never through a link).

use gridsel_core::tune::learned;
use gridsel_core::tune::search::Candidate;
use gridsel_core::tune::store::{Record, Table};
use gridsel_host::config;
use gridsel_host::files::{self, OnInvalid};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// How long writing the store waits for a program saving to it.
const PATIENCE: Duration = Duration::from_secs(10);

/// Copies the store at `from` (its journal applied; missing: empty) as a
/// new file `to`, where the session's runs tune. Returns what it holds.
pub fn copy(from: &Path, to: &Path) -> Result<Table, String> {
    let contents = files::load_cache(from).map_err(|e| format!("{}: {e}", from.display()))?;
    if !contents.dropped.is_empty() {
        eprintln!(
            "gridsel tune: {}: left out of the copy: {}",
            from.display(),
            contents.dropped.join("; ")
        );
    }
    crate::runner::output::write_file(to, &contents.table.render())?;
    Ok(contents.table)
}

/// Copies the store at `from` as a new file `to` without the records of
/// `kernels` but those of the search `key`: production runs reading it
/// launch the search's learned grid and auto's for the program's others,
/// so that the search is confirmed on its own.
pub fn alone(
    from: &Path,
    to: &Path,
    key: &(String, u32),
    kernels: &BTreeSet<String>,
) -> Result<(), String> {
    let mut contents = files::load_cache(from).map_err(|e| format!("{}: {e}", from.display()))?;
    contents.table.retain(|r| {
        !kernels.contains(&r.key.kernel) || (&r.key.kernel, r.key.class) == (&key.0, key.1)
    });
    crate::runner::output::write_file(to, &contents.table.render())
}

/// Merges into the store at `path` what each of the stores `copies`
/// (copies of it that one process each tuned on) added to it, as the store
/// merges a process's additions ([`super::gpus::additions`],
/// `Table::apply`).
pub fn absorb(path: &Path, copies: &[std::path::PathBuf]) -> Result<(), String> {
    let load = |p: &Path| files::load_cache(p).map_err(|e| format!("{}: {e}", p.display()));
    let start = load(path)?.table;
    let mut updates = Vec::new();
    for copy in copies {
        let contents = load(copy)?;
        let records = contents.table.records();
        updates.extend(records.map(|r| super::gpus::additions(start.get(&r.key), r)));
    }
    files::edit_cache(path, PATIENCE, OnInvalid::Refuse, |table| {
        for u in updates.iter().filter(|u| !u.is_empty()) {
            table.apply(u);
        }
    })
    .map_err(|e| format!("{}: {e}", path.display()))
}

/// The searches of `kernels` in the store at `path` that the session's
/// runs added to: new since `initial` (the store as the session copied it)
/// or changed. Others of the same kernels (another GPU's, another build's,
/// one the runs did not reach) are not the session's to write or remove,
/// nor is a pinned search (a grid set by hand or from a sweep).
pub fn searches(
    path: &Path,
    kernels: &BTreeSet<String>,
    initial: &Table,
) -> Result<Vec<Record>, String> {
    let contents = files::load_cache(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(contents
        .table
        .records()
        .filter(|r| kernels.contains(&r.key.kernel) && r.pinned.is_none())
        .filter(|r| initial.get(&r.key) != Some(*r))
        .cloned()
        .collect())
}

/// The searches (kernel, trip-count class) of `kernels` for which the
/// store at `path` gives production runs another grid than auto's: a
/// settled or pinned record whose grid is not auto's. Any GPU's or build's
/// counts, which can only make the set larger than what a run launches.
pub fn changed(path: &Path, kernels: &BTreeSet<String>) -> Result<BTreeSet<(String, u32)>, String> {
    let contents = files::load_cache(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(contents
        .table
        .records()
        .filter(|r| kernels.contains(&r.key.kernel))
        .filter(|r| learned(r).is_some_and(|c| c != Candidate::Auto))
        .map(|r| (r.key.kernel.clone(), r.key.class))
        .collect())
}

/// Puts `records` into the store `to`, each in place of the store's own
/// search of its key: they hold that search as the session began (the
/// session tuned a copy), with what the session added. Removes the store's
/// searches of the keys of `refused`, which the session found no better
/// than auto's grids in production: an earlier session's copy of one would
/// go on being launched. Returns how many it removed.
pub fn merge(to: &config::Store, records: &[Record], refused: &[Record]) -> Result<usize, String> {
    let shown = to.path.display();
    if to.default {
        files::create_store_folder(&to.path).map_err(|e| format!("{shown}: {e}"))?;
    }
    let mut removed = 0;
    files::edit_cache(&to.path, PATIENCE, OnInvalid::Refuse, |table| {
        removed = table.retain(|r| !refused.iter().any(|x| x.key == r.key));
        for r in records {
            table.insert(r.clone());
        }
    })
    .map_err(|e| format!("{shown}: {e}"))?;
    Ok(removed)
}
