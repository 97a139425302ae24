//! What a tuning session reads and writes of the store: the only part of
//! `gridsel tune` that knows the store's records. Reads and writes go
//! through gridsel-host's checked files (regular files only, capped,
//! under the store's lock, its mode and owner kept, never through a link).

use gridsel_core::tune::learned;
use gridsel_core::tune::search::Candidate;
use gridsel_core::tune::store::{Record, Table, Update};
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
    let contents = files::load_store(from).map_err(|e| format!("{}: {e}", from.display()))?;
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
/// `kernels` but those of the searches `keys`: production runs reading it
/// launch those searches' learned grids and auto's for the program's
/// others, so that they are confirmed on their own.
pub fn alone(
    from: &Path,
    to: &Path,
    keys: &[(String, u32)],
    kernels: &BTreeSet<String>,
) -> Result<(), String> {
    let mut contents = files::load_store(from).map_err(|e| format!("{}: {e}", from.display()))?;
    contents.table.retain(|r| {
        !kernels.contains(&r.key.kernel)
            || keys
                .iter()
                .any(|k| (&r.key.kernel, r.key.class) == (&k.0, k.1))
    });
    crate::runner::output::write_file(to, &contents.table.render())
}

/// Merges into the store at `path` what each of the stores `copies`
/// (copies of it that one process each tuned on) added to it, as the store
/// merges a process's additions ([`Update::between`], `Table::apply`).
pub fn absorb(path: &Path, copies: &[std::path::PathBuf]) -> Result<(), String> {
    let load = |p: &Path| files::load_store(p).map_err(|e| format!("{}: {e}", p.display()));
    let copies = (copies.iter().map(|copy| load(copy).map(|c| c.table)))
        .collect::<Result<Vec<Table>, String>>()?;
    files::edit_store(path, PATIENCE, OnInvalid::Refuse, |table| {
        // Every copy's additions are over the store as the round began,
        // which is `table` until the first is applied.
        let updates: Vec<Update> = (copies.iter().flat_map(Table::records))
            .map(|r| Update::between(table.get(&r.key), r))
            .filter(|u| !u.is_empty())
            .collect();
        for u in &updates {
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
    let contents = files::load_store(path).map_err(|e| format!("{}: {e}", path.display()))?;
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
    let contents = files::load_store(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(contents
        .table
        .records()
        .filter(|r| kernels.contains(&r.key.kernel))
        .filter(|r| learned(r).is_some_and(|c| c != Candidate::Auto))
        .map(|r| (r.key.kernel.clone(), r.key.class))
        .collect())
}

/// Adds to the store `to` what the session added to `records` (the
/// searches it tuned in its copy, as they ended there) over `initial`
/// (the store as it copied it): each record's delta
/// ([`Update::between`]) is applied to the store's search as it is now, as
/// a journal line is, so that what others added meanwhile (programs run
/// with `GRIDSEL_POLICY=tune`, another session, `gridsel cache clear`)
/// stays; the delta carries the verified mark where the session changed
/// it (`--allow-teams-regions`). Removes the
/// store's searches of the keys of `refused`, which the session found no
/// better than auto's grids in production (an earlier session's copy of
/// one would go on being launched), where they are still as the session
/// copied them; one that changed meanwhile is left, said in one line. Returns how many it removed.
pub fn merge(
    to: &config::StorePath,
    initial: &Table,
    records: &[Record],
    refused: &[Record],
) -> Result<usize, String> {
    let shown = to.path.display();
    if to.default {
        files::create_store_folder(&to.path).map_err(|e| format!("{shown}: {e}"))?;
    }
    let (mut removed, mut changed) = (0, Vec::new());
    files::edit_store(&to.path, PATIENCE, OnInvalid::Refuse, |table| {
        for key in refused.iter().map(|r| &r.key) {
            match (table.get(key), initial.get(key)) {
                (Some(now), Some(copied)) if now == copied => {
                    removed += table.retain(|r| r.key != *key);
                }
                (Some(_), _) => changed.push(key.kernel.clone()),
                (None, _) => {}
            }
        }
        for r in records {
            table.apply(&Update::between(initial.get(&r.key), r));
        }
    })
    .map_err(|e| format!("{shown}: {e}"))?;
    for kernel in changed {
        eprintln!(
            "gridsel tune: {shown}: the search of {kernel} that this session found no better than auto's grids was added to while it ran, so it is kept; run `gridsel tune` again to judge it"
        );
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsel_core::tune::Store;
    use gridsel_core::tune::search::Kind;
    use gridsel_core::tune::store::Key;

    /// A store at `dir`/scratch.json holding `runs`.
    fn stored(dir: &Path, runs: &[Update]) -> std::path::PathBuf {
        let scratch = dir.join("scratch.json");
        let file = files::StoreFile::new(scratch.clone(), false);
        Store::store(&file, runs, Duration::from_secs(5)).unwrap();
        scratch
    }

    /// One process's run of the search of `class`, with one sample.
    fn run_of(class: u32, ns: u64) -> Update {
        let key = Key {
            kernel: "k".into(),
            device: "H100".into(),
            sm_arch: 90,
            class,
            build: String::new(),
        };
        let mut u = Update::new(key);
        u.tally.runs = 1;
        u.samples.push((Candidate::Auto, Kind::Cold, ns));
        u
    }

    /// A refused search is removed only while it is as the session copied
    /// it: one that a program added to meanwhile is kept (the session used
    /// to remove it, and that program's run with it).
    #[test]
    fn a_refused_search_added_to_meanwhile_is_kept() {
        let dir = gridsel_test_support::temp_dir("session-store-refused");
        let to = config::StorePath {
            path: dir.join("tune.json"),
            default: false,
        };
        let patience = Duration::from_secs(5);
        let file = files::StoreFile::new(to.path.clone(), false);
        Store::store(&file, &[run_of(17, 100), run_of(20, 100)], patience).unwrap();
        let initial = files::load_store(&to.path).unwrap().table;
        let refused: Vec<Record> = initial.records().cloned().collect();
        // A program adds to the search of class 17 during the session.
        Store::store(&file, &[run_of(17, 90)], patience).unwrap();
        assert_eq!(merge(&to, &initial, &[], &refused), Ok(1));
        let left = files::load_store(&to.path).unwrap().table;
        let left: Vec<(u32, u32)> = left
            .records()
            .map(|r| (r.key.class, r.tally.runs))
            .collect();
        assert_eq!(left, [(17, 2)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The grid a session marked verified for a `target teams` region is
    /// written with its samples (the delta alone used to drop the mark).
    #[test]
    fn a_verified_mark_the_session_set_is_written() {
        let dir = gridsel_test_support::temp_dir("session-store-verified");
        let to = config::StorePath {
            path: dir.join("tune.json"),
            default: false,
        };
        let initial = Table::default();
        let grid = Candidate::Grid(gridsel_core::geometry::Geometry::new(64, 7));
        let mut learned = Record::new(run_of(0, 100).key);
        learned.merge(&run_of(0, 100));
        learned.verified = Some(grid);
        assert_eq!(merge(&to, &initial, &[learned.clone()], &[]), Ok(0));
        let written = files::load_store(&to.path).unwrap().table;
        assert_eq!(written.get(&learned.key), Some(&learned));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The store a group of searches is confirmed with holds those
    /// searches of the program's kernels and no other, and every record of
    /// other kernels (another program's, left as they are).
    #[test]
    fn a_groups_store_holds_its_searches_of_the_programs_kernels() {
        let dir = gridsel_test_support::temp_dir("session-store-alone");
        let mut other = run_of(17, 100);
        other.key.kernel = "other".into();
        let runs = [run_of(17, 100), run_of(20, 100), run_of(23, 100), other];
        let (scratch, group) = (stored(&dir, &runs), dir.join("group.json"));
        let keys = [("k".to_string(), 17), ("k".to_string(), 23)];
        let kernels = BTreeSet::from(["k".to_string()]);
        alone(&scratch, &group, &keys, &kernels).unwrap();
        let held = files::load_store(&group).unwrap().table;
        let held: Vec<(String, u32)> = (held.records())
            .map(|r| (r.key.kernel.clone(), r.key.class))
            .collect();
        assert_eq!(
            held,
            [("k".into(), 17), ("k".into(), 23), ("other".into(), 17)]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A round of `--gpus` merges each GPU's copy of the store back with
    /// its verified marks, as the session's final write does: both take a
    /// search's delta as an [`Update`], which carries the mark.
    #[test]
    fn a_copys_verified_mark_is_absorbed() {
        let dir = gridsel_test_support::temp_dir("session-store-absorb");
        let (scratch, copy) = (stored(&dir, &[run_of(0, 100)]), dir.join("copy.json"));
        let mut table = files::load_store(&scratch).unwrap().table;
        let grid = Candidate::Grid(gridsel_core::geometry::Geometry::new(64, 7));
        let mut marked = table.records().next().unwrap().clone();
        marked.merge(&run_of(0, 90));
        marked.verified = Some(grid);
        table.insert(marked.clone());
        crate::runner::output::write_file(&copy, &table.render()).unwrap();
        absorb(&scratch, &[copy]).unwrap();
        let absorbed = files::load_store(&scratch).unwrap().table;
        assert_eq!(absorbed.get(&marked.key), Some(&marked));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
