//! Production runs read what tuning learned: real clang offload programs on
//! LLVM 19's host plugin (which launches the grid it is given) under
//! `LD_PRELOAD`, the default policy `auto`, and stores written as tuning
//! writes them.

use gridsel_test_support as support;

use gridsel::Geometry;
use gridsel::tune::search::{Candidate, Kind};
use gridsel::tune::store::{Key, Table, Update};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use support::*;

const H100: (&str, &str) = ("GRIDSEL_DEVICE", "h100");
const LOG_INFO: (&str, &str) = ("GRIDSEL_LOG", "info");
/// The default policy: an empty value is no value.
const DEFAULT_POLICY: (&str, &str) = ("GRIDSEL_POLICY", "");
const ARGS: [&str; 2] = ["20", "1000"];

fn repeat() -> PathBuf {
    host_offload("repeat", "repeat.c", &[])
}

/// The same program built otherwise: the same kernel names, other code.
fn repeat_rebuilt() -> PathBuf {
    host_offload("repeat-O1", "repeat.c", &["-O1"])
}

/// The key tuning gives the launches of `program` (run once under `tune`
/// with a store of its own): its kernel, device, class and build.
fn tuned_key(program: &Path, dir: &Path) -> Key {
    let store = dir.join("scratch.json");
    let store_s = store.to_string_lossy().into_owned();
    run_gridsel(
        program,
        &ARGS,
        &[
            H100,
            ("GRIDSEL_POLICY", "tune"),
            ("GRIDSEL_CACHE", &store_s),
        ],
    )
    .ok();
    let table = gridsel::files::load_store(&store).unwrap().table;
    // The record keeps the release of the libomptarget its launches went to,
    // which each launch carried: the host offload's, LLVM 19.
    let releases: Vec<u32> = table.records().map(|r| r.llvm_release).collect();
    assert_eq!(releases, [19]);
    let keys: Vec<Key> = table.records().map(|r| r.key.clone()).collect();
    let [key] = &keys[..] else {
        panic!("one search expected: {keys:?}");
    };
    assert_eq!(key.build.len(), 16, "{key:?}");
    key.clone()
}

/// A record of `key` whose search measured `grid` well ahead of auto's grid
/// on warm samples, `settled` or not, by a process of LLVM `llvm_release`.
fn record(key: &Key, grid: Geometry, settled: bool, llvm_release: u32) -> Update {
    let mut u = Update::new(key.clone());
    (u.tally.runs, u.tally.launches_per_run, u.tally.trips) = (3, 20, (1000, 1000));
    u.llvm_release = llvm_release;
    u.settled = [false, settled];
    for ns in [50_000, 50_100, 49_900] {
        u.samples.push((Candidate::Auto, Kind::Warm, ns));
        u.samples.push((Candidate::Grid(grid), Kind::Warm, ns / 2));
    }
    u
}

fn write_store(path: &Path, updates: &[Update]) {
    let mut table = Table::default();
    for u in updates {
        table.apply(u);
    }
    std::fs::write(path, table.render()).unwrap();
}

/// Every file under `dir` and its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(snapshot(&path));
        } else {
            files.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    files
}

/// The (policy, threads, blocks) of each launch in the profile at `path`.
fn profiled(path: &Path) -> Vec<(String, u32, u32)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            (
                f[2].to_string(),
                f[4].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

/// Runs `program` under the default policy with `env`, profiled; its
/// output must be the plain run's.
fn production(program: &Path, dir: &Path, env: &[(&str, &str)]) -> (Run, Vec<(String, u32, u32)>) {
    let profile = dir.join("profile.csv");
    let _ = std::fs::remove_file(&profile);
    let profile_s = profile.to_string_lossy().into_owned();
    let mut all = vec![
        H100,
        LOG_INFO,
        DEFAULT_POLICY,
        ("GRIDSEL_PROFILE", &profile_s),
    ];
    all.extend(env);
    let run = run_gridsel(program, &ARGS, &all).ok();
    let plain = run_plain(program, &ARGS, &[]).ok();
    assert_eq!(run.stdout, plain.stdout);
    (run, profiled(&profile))
}

fn all_launches(rows: &[(String, u32, u32)], label: &str, grid: Geometry) {
    assert_eq!(rows.len(), 20, "{rows:?}");
    for row in rows {
        assert_eq!(
            row,
            &(label.to_string(), grid.threads, grid.blocks),
            "{rows:?}"
        );
    }
}

fn all_auto(rows: &[(String, u32, u32)]) {
    assert_eq!(rows.len(), 20, "{rows:?}");
    assert!(rows.iter().all(|(label, _, _)| label == "auto"), "{rows:?}");
}

#[test]
fn production_launches_a_settled_records_grid_as_learned_and_writes_nothing() {
    let dir = temp_dir("learned_settled");
    let key = tuned_key(&repeat(), &dir);
    let stores = dir.join("stores");
    std::fs::create_dir_all(&stores).unwrap();
    let store = stores.join("tune.json");
    let store_s = store.to_string_lossy().into_owned();
    let grid = Geometry::new(64, 7);
    write_store(&store, &[record(&key, grid, true, 19)]);
    let before = snapshot(&stores);

    let (run, rows) = production(&repeat(), &dir, &[("GRIDSEL_CACHE", &store_s)]);
    all_launches(&rows, "learned", grid);
    assert_contains_all(
        run.assert_one_gridsel_line_with("learned grids: "),
        &[&format!(
            "learned grids: 1 from {store_s} for this program's kernels on this GPU, "
        )],
    );
    // The decision, in the user's terms: the learned grid, and whence.
    assert_contains_all(
        run.assert_one_gridsel_line_with(", 1000 iterations: auto launches"),
        &[
            "auto launches 7 blocks x 64 threads",
            "learned: ",
            "read from the store",
        ],
    );
    run.assert_no_gridsel_line_with("gridsel: warn");
    // Read, never written: no journal, no lock, no copy, not a byte changed.
    assert_eq!(snapshot(&stores), before);

    // A store laid out otherwise (edited by hand) is read whole, the same.
    let text = std::fs::read_to_string(&store).unwrap();
    std::fs::write(&store, text.replacen("[\n", "[ ", 1)).unwrap();
    let before = snapshot(&stores);
    let (_, rows) = production(&repeat(), &dir, &[("GRIDSEL_CACHE", &store_s)]);
    all_launches(&rows, "learned", grid);
    assert_eq!(snapshot(&stores), before);

    // Switched off: auto's own grids, and nothing said of a store.
    let (run, rows) = production(&repeat(), &dir, &[("GRIDSEL_CACHE", "off")]);
    all_auto(&rows);
    run.assert_no_gridsel_line_with("learned grids");

    // No store (a folder that does not exist, or the default one under
    // XDG_CACHE_HOME): silent, and nothing created.
    let missing = dir.join("nowhere").join("tune.json");
    let missing_s = missing.to_string_lossy().into_owned();
    let xdg = dir.join("xdg");
    let xdg_s = xdg.to_string_lossy().into_owned();
    for env in [
        ("GRIDSEL_CACHE", missing_s.as_str()),
        ("XDG_CACHE_HOME", xdg_s.as_str()),
    ] {
        let (run, rows) = production(&repeat(), &dir, &[env]);
        all_auto(&rows);
        run.assert_no_gridsel_line_with("learned grids");
        run.assert_no_gridsel_line_with("gridsel: warn");
    }
    assert!(!dir.join("nowhere").exists() && !xdg.exists());
}

/// The line that says how many learned grids were read counts those for
/// the GPU launched on, and says apart how many are another GPU's (or
/// sm_arch's), which never apply: it used to count them all.
#[test]
fn the_learned_grids_line_counts_only_this_gpus_and_says_the_others_apart() {
    let dir = temp_dir("learned_other_gpu");
    let key = tuned_key(&repeat(), &dir);
    let store = dir.join("tune.json");
    let store_s = store.to_string_lossy().into_owned();
    let env = [("GRIDSEL_CACHE", store_s.as_str())];
    let grid = Geometry::new(64, 7);
    let other_gpu = Key {
        device: "NVIDIA A100-SXM4-80GB".into(),
        sm_arch: 80,
        ..key.clone()
    };
    let other_arch = Key {
        sm_arch: 89,
        ..key.clone()
    };
    write_store(
        &store,
        &[
            record(&key, grid, true, 19),
            record(&other_gpu, grid, true, 19),
            record(&other_arch, grid, true, 19),
        ],
    );
    let (run, rows) = production(&repeat(), &dir, &env);
    all_launches(&rows, "learned", grid);
    assert_contains_all(
        run.assert_one_gridsel_line_with("learned grids: "),
        &[
            &format!("learned grids: 1 from {store_s} for this program's kernels on this GPU, "),
            "(sm_90), and 2 for another GPU, not used here",
        ],
    );
    // Only another GPU's: none, said so.
    write_store(&store, &[record(&other_gpu, grid, true, 19)]);
    let (run, rows) = production(&repeat(), &dir, &env);
    all_auto(&rows);
    assert_contains_all(
        run.assert_one_gridsel_line_with("learned grids: "),
        &[
            "learned grids: none for this GPU, ",
            "the 1 read for this program's kernels were measured on another GPU",
        ],
    );
}

#[test]
fn records_of_another_build_or_llvm_are_ignored_with_one_line_and_unsettled_ones_silently() {
    let dir = temp_dir("learned_ignored");
    let key = tuned_key(&repeat(), &dir);
    let store = dir.join("tune.json");
    let store_s = store.to_string_lossy().into_owned();
    let env = [("GRIDSEL_CACHE", store_s.as_str())];
    let grid = Geometry::new(64, 7);
    write_store(&store, &[record(&key, grid, true, 19)]);

    // The program rebuilt: the same kernel, another build.
    let (run, rows) = production(&repeat_rebuilt(), &dir, &env);
    all_auto(&rows);
    assert_contains_all(
        run.assert_one_gridsel_line_with("learned grids: "),
        &[
            "1 settled searches of this program's kernels were measured on another build of it or another LLVM: ignored",
        ],
    );

    // The same build measured under another LLVM (the host offload here is
    // LLVM 19's).
    write_store(&store, &[record(&key, grid, true, 22)]);
    let (run, rows) = production(&repeat(), &dir, &env);
    all_auto(&rows);
    run.assert_one_gridsel_line_with("another build of it or another LLVM: ignored");

    // A search still exploring teaches production nothing, and says nothing.
    write_store(&store, &[record(&key, grid, false, 19)]);
    let (run, rows) = production(&repeat(), &dir, &env);
    all_auto(&rows);
    run.assert_no_gridsel_line_with("learned grids");
}

#[test]
fn a_site_store_is_read_where_the_users_has_no_grid_and_neither_is_written() {
    let dir = temp_dir("learned_site");
    let key = tuned_key(&repeat(), &dir);
    let stores = dir.join("stores");
    std::fs::create_dir_all(&stores).unwrap();
    let (site, user) = (stores.join("site.json"), stores.join("user.json"));
    let (site_s, user_s) = (
        site.to_string_lossy().into_owned(),
        user.to_string_lossy().into_owned(),
    );
    let (site_grid, user_grid) = (Geometry::new(64, 7), Geometry::new(32, 9));
    write_store(&site, &[record(&key, site_grid, true, 19)]);
    let before = snapshot(&stores);

    // No user store yet: the site's grid.
    let (run, rows) = production(
        &repeat(),
        &dir,
        &[("GRIDSEL_CACHE", &user_s), ("GRIDSEL_SITE_CACHE", &site_s)],
    );
    all_launches(&rows, "learned", site_grid);
    run.assert_one_gridsel_line_with(&format!("1 from {site_s}"));
    assert_eq!(snapshot(&stores), before);

    // The user's store has one for the same key: it wins.
    write_store(&user, &[record(&key, user_grid, true, 19)]);
    let before = snapshot(&stores);
    let (run, rows) = production(
        &repeat(),
        &dir,
        &[("GRIDSEL_CACHE", &user_s), ("GRIDSEL_SITE_CACHE", &site_s)],
    );
    all_launches(&rows, "learned", user_grid);
    run.assert_one_gridsel_line_with(&format!("1 from {user_s}"));
    assert_eq!(snapshot(&stores), before);

    // GRIDSEL_CACHE=off reads no store, the site's neither.
    let (_, rows) = production(
        &repeat(),
        &dir,
        &[("GRIDSEL_CACHE", "off"), ("GRIDSEL_SITE_CACHE", &site_s)],
    );
    all_auto(&rows);
}

#[test]
fn a_version_2_store_reads_as_empty_with_one_line_and_is_left_as_it_is() {
    let dir = temp_dir("learned_version_2");
    let key = tuned_key(&repeat(), &dir);
    let store = dir.join("tune.json");
    let store_s = store.to_string_lossy().into_owned();
    write_store(&store, &[record(&key, Geometry::new(64, 7), true, 19)]);
    // As gridsel 2 wrote it: no build, no LLVM.
    let text = std::fs::read_to_string(&store).unwrap();
    let old = text
        .replacen("{\"version\": 3,", "{\"version\": 2,", 1)
        .replace(&format!("\"build\":\"{}\",\"llvm\":19,", key.build), "");
    assert_ne!(old, text);
    std::fs::write(&store, &old).unwrap();

    let (run, rows) = production(&repeat(), &dir, &[("GRIDSEL_CACHE", &store_s)]);
    all_auto(&rows);
    assert_contains_all(
        run.assert_one_gridsel_line_with("gridsel: warn"),
        &[&format!(
            "learned grids: store {store_s}: left out: version 2, expected 3: its records are not read"
        )],
    );
    assert_eq!(std::fs::read_to_string(&store).unwrap(), old);
}

/// A `target teams` region without a distribute loop (tests/c/teams_region.c)
/// is kept at LLVM's grid under the default GRIDSEL_TEAMS_REGIONS=keep;
/// a grid a tuning session verified for its build (`Record::verified`) is
/// launched there, but only while it is the search's learned grid.
#[test]
fn a_teams_regions_grid_verified_for_its_build_is_launched_where_such_regions_are_kept() {
    let program = host_offload("teams_region", "teams_region.c", &[]);
    let dir = temp_dir("learned_teams_region");
    let args = ["20", "100"];
    let scratch = dir.join("scratch.json");
    let scratch_s = scratch.to_string_lossy().into_owned();
    let tune = [
        H100,
        ("GRIDSEL_POLICY", "tune"),
        ("GRIDSEL_CACHE", &scratch_s),
        ("GRIDSEL_TEAMS_REGIONS", "change"),
    ];
    run_gridsel(&program, &args, &tune).ok();
    let table = gridsel::files::load_store(&scratch).unwrap().table;
    let keys: Vec<Key> = table.records().map(|r| r.key.clone()).collect();
    let [key] = &keys[..] else {
        panic!("one search expected: {keys:?}");
    };
    assert_eq!((key.class, key.build.len()), (0, 16), "{key:?}");

    let grid = Geometry::new(64, 7);
    let store = dir.join("tune.json");
    let store_s = store.to_string_lossy().into_owned();
    let plain = run_plain(&program, &args, &[]).ok();
    let launched = |verified: Option<Geometry>| {
        let mut table = Table::default();
        table.apply(&record(key, grid, true, 19));
        let mut r = table.get(key).unwrap().clone();
        r.verified = verified.map(Candidate::Grid);
        table.insert(r);
        std::fs::write(&store, table.render()).unwrap();
        let profile = dir.join("profile.csv");
        let _ = std::fs::remove_file(&profile);
        let profile_s = profile.to_string_lossy().into_owned();
        let env = [
            H100,
            DEFAULT_POLICY,
            ("GRIDSEL_CACHE", store_s.as_str()),
            ("GRIDSEL_PROFILE", &profile_s),
        ];
        let run = run_gridsel(&program, &args, &env).ok();
        assert_eq!(run.stdout, plain.stdout);
        profiled(&profile)
    };
    let rows = launched(Some(grid));
    all_launches(&rows, "learned", grid);
    // Not verified, or verified for another grid than the one learned:
    // LLVM's grid, as given.
    for verified in [None, Some(Geometry::new(32, 5))] {
        let rows = launched(verified);
        assert_eq!(rows.len(), 20, "{rows:?}");
        assert!(rows.iter().all(|(label, _, _)| label == "llvm"), "{rows:?}");
    }
}
