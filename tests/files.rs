//! End-to-end tests of the files the environment names (`GRIDSEL_DEVICE`,
//! `GRIDSEL_MODEL`, `GRIDSEL_CACHE`, `GRIDSEL_PROFILE`): programs under
//! `LD_PRELOAD=libgridsel.so` on libomptarget's host plugin, given files that
//! are not plain files, files over their caps and a store shared by many
//! processes at once. Each program runs under `timeout`, so a read that
//! blocks fails the test instead of hanging it.

use gridsel_test_support as support;

use gridsel::Geometry;
use gridsel::files;
use gridsel::tune::search::{Candidate, Kind};
use gridsel::tune::store::{self, Key, Table, Update, class};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::*;

const H100: (&str, &str) = ("GRIDSEL_DEVICE", "h100");
const TUNE: (&str, &str) = ("GRIDSEL_POLICY", "tune");

/// Launches per trip count: enough for `tune` to converge (61 with the
/// default plan).
const LAUNCHES: &str = "64";

/// The longest a launch may take in these tests. Launches that wait out a
/// lock held by another process took over a second (the old lock timeout),
/// and one that rewrote a store at its cap about a second in a debug build;
/// a store write that waits for nobody takes milliseconds, and many
/// processes on few cores add scheduling delays (with 32 processes on a
/// store at its cap on a 2-core VM: 88 ms, 476 ms while other builds
/// loaded it).
const MAX_STALL: Duration = Duration::from_millis(750);

/// tests/c/trips.c for the host plugin.
fn trips() -> PathBuf {
    host_offload("trips", "trips.c", &[])
}

/// Runs `trips LAUNCHES first count` under gridsel, killed after 60 s.
fn run_trips(first: u32, count: u32, env: &[(&str, &str)]) -> Run {
    let program = trips();
    let (first, count) = (first.to_string(), count.to_string());
    let args = [
        "60",
        program.to_str().unwrap(),
        LAUNCHES,
        first.as_str(),
        count.as_str(),
    ];
    run_gridsel(Path::new("timeout"), &args, env)
}

/// The program's checksum line for the same arguments without gridsel.
fn plain_stdout(first: u32, count: u32) -> String {
    let (first, count) = (first.to_string(), count.to_string());
    run_plain(&trips(), &[LAUNCHES, &first, &count], &[])
        .ok()
        .stdout
}

/// The program's longest launch (its first excepted), from its stderr.
fn longest_launch(run: &Run) -> Duration {
    let us = run
        .stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("trips: longest launch ")?
                .strip_suffix(" us")
        })
        .unwrap_or_else(|| panic!("no longest launch in\n{}", run.stderr));
    Duration::from_micros(us.parse().unwrap())
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

fn path_str(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

// ---- files that are not plain files ------------------------------------------------

/// Each variable with a FIFO, a device and a link: the program ends with its
/// own results, and gridsel says once what the path is.
#[test]
fn fifos_devices_and_links_are_refused_with_one_line_and_never_block() {
    let dir = temp_dir("not_plain_files");
    // One FIFO per case: a reader and a writer of the same FIFO would
    // unblock each other.
    let fifo = |name: &str| {
        let path = dir.join(name);
        mkfifo(&path);
        path_str(&path)
    };
    let toml = dir.join("h100.toml");
    std::fs::write(&toml, "base = \"h100\"\n").unwrap();
    let model = dir.join("model.json");
    std::fs::write(&model, gridsel::forest_model::EMBEDDED_H100).unwrap();
    let empty_cache = dir.join("empty.json");
    std::fs::write(&empty_cache, "{\"version\": 1, \"entries\": []}").unwrap();
    let csv = dir.join("profile.csv");
    std::fs::write(&csv, "").unwrap();
    let link_to = |target: &Path, name: &str| {
        let link = dir.join(name);
        std::os::unix::fs::symlink(target, &link).unwrap();
        path_str(&link)
    };
    let forest = [H100, ("GRIDSEL_POLICY", "forest")];
    let tune = [H100, TUNE];
    // (variable, other settings, the start of its line, a link to a good file).
    let variables = [
        (
            "GRIDSEL_DEVICE",
            &[][..],
            "gridsel: error: GRIDSEL_DEVICE: cannot read device description: ",
            link_to(&toml, "device-link"),
        ),
        (
            "GRIDSEL_MODEL",
            &forest[..],
            "gridsel: error: GRIDSEL_POLICY=forest: cannot read forest model: ",
            link_to(&model, "model-link"),
        ),
        (
            "GRIDSEL_CACHE",
            &tune[..],
            "gridsel: warn: tune: store ",
            link_to(&empty_cache, "cache-link"),
        ),
        (
            "GRIDSEL_PROFILE",
            &[H100][..],
            "gridsel: error: GRIDSEL_PROFILE: cannot open ",
            link_to(&csv, "profile-link"),
        ),
    ];
    let mut cases = Vec::new();
    for (var, other, line, link) in &variables {
        cases.push((*var, *other, *line, fifo(&format!("{var}-fifo")), "a FIFO"));
        cases.push((*var, *other, *line, link.clone(), "a symbolic link"));
        // Never a cache at the real /dev/null: a gridsel with the old bug
        // replaced it (tests/tune.rs checks a copy made with mknod).
        if *var != "GRIDSEL_CACHE" {
            let null = "/dev/null".to_string();
            cases.push((*var, *other, *line, null, "a character device"));
        }
    }
    let expected = plain_stdout(100, 2);
    let runs: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .map(|(var, other, _, value, _)| {
                s.spawn(move || {
                    let mut env = other.to_vec();
                    env.push((var, value.as_str()));
                    run_trips(100, 2, &env)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (run, (var, _, line, value, what)) in runs.into_iter().zip(&cases) {
        let run = run.ok();
        assert_eq!(run.stdout, expected, "{var}={value}");
        let cause = format!("{value}: {what}, not a regular file; ");
        let lines = run.gridsel_lines_with(&cause);
        assert_eq!(lines.len(), 1, "{var}={value}:\n{}", run.stderr);
        assert!(lines[0].starts_with(line), "{}", lines[0]);
        if *var != "GRIDSEL_DEVICE" {
            // Without a GPU a refused device also reports the missing driver.
            assert_eq!(
                run.gridsel_lines().len(),
                1,
                "{var}={value}:\n{}",
                run.stderr
            );
        }
    }
    // Nothing was written through a link or created beside them.
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "");
    assert_eq!(
        std::fs::read_to_string(&empty_cache).unwrap(),
        "{\"version\": 1, \"entries\": []}"
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "GRIDSEL_CACHE-fifo",
            "GRIDSEL_DEVICE-fifo",
            "GRIDSEL_MODEL-fifo",
            "GRIDSEL_PROFILE-fifo",
            "cache-link",
            "device-link",
            "empty.json",
            "h100.toml",
            "model-link",
            "model.json",
            "profile-link",
            "profile.csv",
        ]
    );
}

/// A device description or model over its cap is one error, never a partial
/// parse, even when what fits under the cap would parse.
#[test]
fn files_over_their_caps_are_one_error() {
    let dir = temp_dir("over_caps");
    let toml = dir.join("padded.toml");
    let padding = "#".repeat(gridsel::files::MAX_DEVICE_BYTES as usize);
    std::fs::write(&toml, format!("base = \"h100\"\n{padding}\n")).unwrap();
    let model = dir.join("padded.json");
    let mut text = gridsel::forest_model::EMBEDDED_H100.to_string();
    text.push_str(&" ".repeat(gridsel::files::MAX_MODEL_BYTES as usize));
    std::fs::write(&model, text).unwrap();
    let expected = plain_stdout(100, 2);
    for (env, line) in [
        (
            vec![("GRIDSEL_DEVICE", path_str(&toml))],
            format!(
                "gridsel: error: GRIDSEL_DEVICE: cannot read device description: {}: larger than 64 KiB, the most gridsel reads of it; ",
                toml.display()
            ),
        ),
        (
            vec![
                ("GRIDSEL_MODEL", path_str(&model)),
                ("GRIDSEL_POLICY", "forest".into()),
                ("GRIDSEL_DEVICE", "h100".into()),
            ],
            format!(
                "gridsel: error: GRIDSEL_POLICY=forest: cannot read forest model: {}: larger than 16 MiB, the most gridsel reads of it; ",
                model.display()
            ),
        ),
    ] {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let run = run_trips(100, 2, &env).ok();
        assert_eq!(run.stdout, expected);
        let lines = run.gridsel_lines_with(": larger than ");
        assert_eq!(lines.len(), 1, "{}", run.stderr);
        assert!(lines[0].starts_with(&line), "{}", lines[0]);
    }
}

// ---- the store ---------------------------------------------------------------------

/// A store that cannot be written is one warning per process, not one per
/// converged (kernel, trip count).
#[test]
fn an_unwritable_store_is_one_warning() {
    let dir = temp_dir("unwritable_cache");
    let cache = dir.join("no-such-folder/tune.json");
    let cache_s = path_str(&cache);
    let run = run_trips(100, 4, &[H100, TUNE, ("GRIDSEL_CACHE", &cache_s)]).ok();
    assert_eq!(run.stdout, plain_stdout(100, 4));
    let lines = run.gridsel_lines();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with(&format!(
            "gridsel: warn: tune: cannot save to the store {cache_s}: No such file or directory"
        )),
        "{}",
        lines[0]
    );
}

/// While another process holds the cache's lock, launches go on and the
/// winners are saved at exit, once the lock is free.
#[test]
fn winners_wait_in_memory_while_the_store_is_locked_and_are_saved_at_exit() {
    let dir = temp_dir("locked_cache");
    let cache_path = dir.join("tune.json");
    let cache_s = path_str(&cache_path);
    let lock = gridsel_host::ffi::fs::lock(&dir.join("tune.json.lock"), Duration::ZERO).unwrap();
    // Longer than the program's launches take (well under a second), shorter
    // than the flush at exit waits (5 s).
    let held_for = Duration::from_secs(3);
    let start = Instant::now();
    let run = std::thread::scope(|s| {
        let program = s.spawn(|| {
            run_trips(
                100,
                4,
                &[
                    H100,
                    TUNE,
                    ("GRIDSEL_CACHE", &cache_s),
                    ("GRIDSEL_LOG", "info"),
                    // Settles within the run: exploring unbounded, and 256
                    // launches, past the most a session's warm plan takes
                    // (137), however noisy the host's timings.
                    ("GRIDSEL_TUNE_OVERHEAD", "off"),
                ],
            )
        });
        std::thread::sleep(held_for);
        drop(lock);
        program.join().unwrap()
    })
    .ok();
    assert!(start.elapsed() >= held_for);
    // Trip counts 100 to 103 share a class: one search.
    let settled = run.gridsel_lines_with("settled on");
    assert_eq!(settled.len(), 1, "{}", run.stderr);
    assert!(
        settled[0].ends_with(&format!("; queued for {cache_s}")),
        "{settled:#?}"
    );
    assert!(longest_launch(&run) < MAX_STALL, "{}", run.stderr);
    assert!(
        run.gridsel_lines_with("gridsel: warn").is_empty(),
        "{}",
        run.stderr
    );
    let table = files::load_store(&cache_path).unwrap().table;
    let trips: Vec<(u64, u64)> = table.records().map(|r| r.tally.trips).collect();
    assert_eq!(trips, [(100, 103)]);
}

/// Fills the store at `path` to about `bytes` with searches of kernels of
/// another device, written by gridsel, each with 12 candidates of 8 cold
/// and 8 warm samples, and all last used at the epoch's first second: the
/// least recently used, so that eviction near the cap drops them before any
/// record a test's processes write. Returns how many.
fn prefill(path: &Path, bytes: u64) -> usize {
    let update = |i: usize| {
        let mut u = Update::new(Key::for_trip(
            format!("prefill_{i}"),
            "other",
            90,
            1 << 20,
            "",
        ));
        (u.tally.used, u.tally.runs, u.tally.launches_per_run) = (1, 1, 20);
        u.tally.trips = (1 << 20, 1 << 20);
        for c in 0..12u32 {
            let grid = Candidate::Grid(Geometry::new(32 << (c % 4), 132 << (c / 4)));
            for kind in [Kind::Cold, Kind::Warm] {
                for s in 0..8u64 {
                    u.samples
                        .push((grid, kind, 100_000 + 1_000 * s + u64::from(c)));
                }
            }
        }
        u
    };
    let mut sample = Table::default();
    for i in 0..100 {
        sample.apply(&update(i));
    }
    let count = (bytes * 100 / sample.render().len() as u64) as usize;
    let mut table = Table::default();
    for i in 0..count {
        table.apply(&update(i));
    }
    files::edit_store(path, Duration::ZERO, files::OnInvalid::Refuse, |t| {
        *t = table
    })
    .unwrap();
    count
}

/// 32 processes tuning at once, 3 rounds, into one store filled near its
/// cap (4 MiB) with other searches, as an MPI job's ranks ending together
/// on a shared store: every process's update is in the store at the end
/// (each counts one run of every search it fed; the store's journal read
/// over the file, as every reader does), the other searches stay but for
/// those evicted to make room, no process gives up on the store's lock at
/// exit (that would be a warning), and no launch waits for a write.
///
/// Merging an update into the file re-reads, re-parses and rewrites all
/// of it under the lock: about a second in this debug build on a 2-core
/// VM, so 32 processes ending together needed far more than the exit's
/// patience (5 s) and most lost their runs. An update is a line appended
/// to the store's journal instead.
#[test]
fn thirty_two_processes_on_a_store_at_its_cap_lose_nothing_and_stall_no_launch() {
    const PROCESSES: u32 = 32;
    const ROUNDS: u32 = 3;
    const TRIPS: u32 = 4;
    let dir = temp_dir("cache_at_cap");
    let cache_path = dir.join("tune.json");
    let cache_s = path_str(&cache_path);
    let prefilled = prefill(&cache_path, store::MAX_BYTES * 15 / 16);
    let start = Instant::now();
    let (mut longest, mut slowest) = (Duration::ZERO, Duration::ZERO);
    // The runs each search of the program should count: one per process
    // that launched a trip count of its class.
    let mut expected: BTreeMap<u32, u32> = BTreeMap::new();
    for round in 0..ROUNDS {
        let firsts: Vec<u32> = (0..PROCESSES)
            .map(|p| 1000 + (round * PROCESSES + p) * TRIPS)
            .collect();
        for &first in &firsts {
            let classes: BTreeSet<u32> = (first..first + TRIPS)
                .map(|t| class(u64::from(t)))
                .collect();
            for c in classes {
                *expected.entry(c).or_default() += 1;
            }
        }
        let runs: Vec<(Run, Duration)> = std::thread::scope(|s| {
            let handles: Vec<_> = firsts
                .iter()
                .map(|&first| {
                    let cache_s = &cache_s;
                    s.spawn(move || {
                        // One host thread per team: half the work of two.
                        let env = [
                            H100,
                            TUNE,
                            ("GRIDSEL_CACHE", cache_s),
                            ("OMP_NUM_THREADS", "1"),
                        ];
                        let start = Instant::now();
                        let run = run_trips(first, TRIPS, &env);
                        (run, start.elapsed())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (run, took) in runs {
            let run = run.ok();
            assert!(run.gridsel_lines().is_empty(), "{}", run.stderr);
            longest = longest.max(longest_launch(&run));
            slowest = slowest.max(took);
        }
    }
    let table = files::load_store(&cache_path).unwrap().table;
    let (others, ours): (Vec<_>, Vec<_>) = table
        .records()
        .partition(|r| r.key.kernel.starts_with("prefill_"));
    let saved: BTreeMap<u32, u32> = ours.iter().map(|r| (r.key.class, r.tally.runs)).collect();
    let size = std::fs::metadata(&cache_path).unwrap().len();
    eprintln!(
        "{PROCESSES} processes x {ROUNDS} rounds on a store of {size} bytes ({} of {prefilled} other searches kept): runs per class {saved:?}, expected {expected:?}, longest launch {longest:?}, slowest process {slowest:?}, {:?} in all",
        others.len(),
        start.elapsed()
    );
    assert_eq!(saved, expected);
    assert!(
        others
            .iter()
            .all(|r| r.tally.runs == 1 && r.tally.used == 1)
    );
    assert!(
        others.len() + 50 >= prefilled,
        "{} of {prefilled}",
        others.len()
    );
    assert!(size > store::MAX_BYTES * 7 / 8 && size <= store::MAX_BYTES);
    let lowest = ours.iter().map(|r| r.tally.trips.0).min();
    let highest = ours.iter().map(|r| r.tally.trips.1).max();
    assert_eq!(
        (lowest, highest),
        (
            Some(1000),
            Some(u64::from(1000 + ROUNDS * PROCESSES * TRIPS - 1))
        )
    );
    assert!(longest < MAX_STALL, "{longest:?}");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| {
            !["tune.json", "tune.json.lock", "tune.json.journal"].contains(&n.to_str().unwrap())
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A store streamed a line at a time (a production run's reading) gets
/// every line whole, those across the reader's 64 KiB buffer and longer
/// than it included, and the cap holds as for a whole read.
#[test]
fn a_file_read_a_line_at_a_time_gives_every_line_whole_and_keeps_the_cap() {
    let dir = temp_dir("read_lines_capped");
    let path = dir.join("lines.txt");
    let mut text = Vec::new();
    for i in 0..400usize {
        // Lengths from 1 to past 64 KiB, so lines straddle every boundary.
        let len = if i % 97 == 0 {
            70_000 + i
        } else {
            1 + (i * 7919) % 3000
        };
        text.extend((0..len).map(|j| b'a' + ((i + j) % 26) as u8));
        text.push(b'\n');
    }
    text.extend_from_slice(b"no newline at the end");
    std::fs::write(&path, &text).unwrap();
    let mut lines = Vec::new();
    gridsel_host::ffi::fs::read_lines_capped(&path, text.len() as u64, |l| lines.push(l.to_vec()))
        .unwrap();
    let expected: Vec<Vec<u8>> = text
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    assert_eq!(lines.len(), expected.len());
    assert!(lines == expected, "a line came apart");
    let err =
        gridsel_host::ffi::fs::read_lines_capped(&path, text.len() as u64 - 1, |_| {}).unwrap_err();
    assert_eq!(
        err.to_string(),
        gridsel_host::ffi::fs::too_large(text.len() as u64 - 1).to_string()
    );
    // Never through a link, like every read of a store.
    let link = dir.join("link.txt");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let err = gridsel_host::ffi::fs::read_lines_capped(&link, 1 << 30, |_| {}).unwrap_err();
    assert_eq!(err.to_string(), "a symbolic link, not a regular file");
}
