//! `tune`: the search state machine with stand-in timers, and the cache file.

use gridsel::Geometry;
use gridsel::files;
use gridsel::tune::cache::{CacheError, Entry, Table};
use gridsel::tune::{BUDGET, Params, Tuner, replay};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the tests' stores wait for each other's lock.
const PATIENCE: Duration = Duration::from_secs(10);

/// A grid of the test space: threads in {32..1024}, blocks in {1..65536}.
fn space() -> Vec<Geometry> {
    let mut out = Vec::new();
    for t in [128, 64, 256, 32, 512, 1024] {
        for b in [1024, 512, 2048, 256, 4096, 128, 8192, 16384] {
            out.push(Geometry::new(t, b));
        }
    }
    out
}

/// A convex bowl in log2 space around `best`, in ns (>= 100 000).
fn bowl(best: Geometry) -> impl Fn(Geometry) -> f64 {
    move |g: Geometry| {
        let l = |x: u32| f64::from(x).log2();
        let dt = l(g.threads) - l(best.threads);
        let db = l(g.blocks) - l(best.blocks);
        100_000.0 * (1.0 + 0.15 * (dt * dt + db * db))
    }
}

/// A deterministic multiplicative noise in [1 - amp, 1 + amp] (xorshift).
struct Noise(u64, f64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        1.0 + self.1 * ((self.0 % 2001) as f64 / 1000.0 - 1.0)
    }
}

/// Drives a tuner to convergence with a timer; returns (winner, launches made).
fn drive(mut t: Tuner, time: impl Fn(Geometry) -> f64, noise: &mut Noise) -> (Tuner, u32) {
    let mut launches = 0;
    while t.converged().is_none() {
        let g = t.next();
        launches += 1;
        // The first launch pays for loading the image.
        let extra = if launches == 1 { 50.0 } else { 1.0 };
        t.observe(g, (time(g) * noise.next() * extra) as u64);
        assert!(launches <= 10 * BUDGET, "no convergence");
    }
    (t, launches)
}

#[test]
fn converges_to_the_true_best_within_the_budget_despite_noise() {
    let best = Geometry::new(64, 4096);
    for seed in 1..=20u64 {
        let t = Tuner::new(space(), Params::default()).unwrap();
        assert_eq!(t.candidates().len(), 20);
        let (t, launches) = drive(t, bowl(best), &mut Noise(seed * 7919, 0.04));
        assert_eq!(t.converged(), Some(best), "seed {seed}");
        assert!(t.spent() <= BUDGET && launches <= BUDGET, "seed {seed}");
        let r = t.report().unwrap();
        assert_eq!(r.first, Geometry::new(128, 1024));
        assert!(r.speedup() > 1.2, "{r:?}");
        assert_eq!(r.launches, 61);
        // After convergence: always the winner, nothing more spent.
        let mut t = t;
        for _ in 0..100 {
            assert_eq!(t.next(), best);
            t.observe(best, 1);
        }
        assert_eq!(t.spent(), 61);
    }
}

#[test]
fn is_deterministic() {
    let run = || {
        let t = Tuner::new(space(), Params::default()).unwrap();
        let mut noise = Noise(42, 0.1);
        let mut seq = Vec::new();
        let mut t = t;
        while t.converged().is_none() {
            let g = t.next();
            seq.push(g);
            t.observe(g, (bowl(Geometry::new(256, 512))(g) * noise.next()) as u64);
        }
        (seq, t.converged())
    };
    assert_eq!(run(), run());
}

#[test]
fn never_exceeds_the_budget_whatever_the_parameters() {
    for budget in [0, 1, 2, 3, 10, 33, 64, 200] {
        for repeats in [1, 2, 5] {
            let params = Params {
                budget,
                repeats,
                max_candidates: 100,
                ..Params::default()
            };
            let t = Tuner::new(space(), params).unwrap();
            let (t, _) = drive(t, bowl(Geometry::new(32, 128)), &mut Noise(9, 0.0));
            assert!(t.spent() <= budget, "budget {budget} repeats {repeats}");
            assert!(t.converged().is_some());
        }
    }
}

#[test]
fn single_candidate_converges_after_warmup_and_one_sample() {
    let g = Geometry::new(128, 8);
    let mut t = Tuner::new(vec![g, g], Params::default()).unwrap();
    assert_eq!(t.candidates(), [g]);
    assert_eq!(t.next(), g);
    t.observe(g, 1_000_000); // warm-up, discarded
    assert_eq!(t.next(), g);
    t.observe(g, 500);
    assert_eq!(t.converged(), Some(g));
    assert_eq!(t.report().unwrap().winner_ns, 500);
    assert!(Tuner::new(Vec::new(), Params::default()).is_none());
}

#[test]
fn launches_waiting_for_a_round_get_the_incumbent_and_foreign_times_are_ignored() {
    let a = Geometry::new(128, 8);
    let b = Geometry::new(64, 16);
    let mut t = Tuner::new(vec![a, b], Params::default()).unwrap();
    // Three launches in flight at once (warm-up, a, b), then a fourth.
    let issued = [t.next(), t.next(), t.next()];
    assert_eq!(issued, [a, a, b]);
    assert_eq!(t.next(), a, "nothing measured yet: the first guess");
    t.observe(Geometry::new(1, 1), 1); // not a candidate
    t.observe(a, 9_000_000); // warm-up
    t.observe(b, 100);
    assert_eq!(t.next(), b, "incumbent");
    t.observe(b, 1); // not asked for: ignored
    assert_eq!(t.converged(), None);
    t.observe(a, 200);
    assert_eq!(t.converged(), Some(b));
    assert_eq!(t.spent(), 3);
}

#[test]
fn replay_counts_launches_to_95_percent_of_best() {
    let best = Geometry::new(64, 4096);
    let time = bowl(best);
    let r = replay(space(), Params::default(), &time, time(best)).unwrap();
    assert_eq!(r.report.winner, best);
    assert_eq!(r.winner_time, r.best_time);
    let n = r.launches_to_95pct.unwrap();
    // Reached once the best grid has been measured, within the first round.
    assert!((2..=21).contains(&n), "{n}");
}

// ---- cache ---------------------------------------------------------------------

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gridsel-tune-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("cache.json")
}

/// `<cache>.lock`.
fn cache_lock(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn entry(kernel: &str, trip: u64, threads: u32) -> Entry {
    Entry {
        kernel: kernel.into(),
        device: "H100".into(),
        sm_arch: 90,
        trip_count: trip,
        threads,
        blocks: 8,
        ns: 1234,
        launches: 61,
    }
}

#[test]
fn cache_round_trip_and_merge() {
    let path = temp("round_trip");
    assert_eq!(
        files::load_cache(&path).unwrap(),
        Table::default(),
        "missing = empty"
    );
    files::store_cache(&path, &[entry("k1", 1000, 128)], PATIENCE).unwrap();
    files::store_cache(
        &path,
        &[entry("k2", 1000, 64), entry("k1", 1000, 96)],
        PATIENCE,
    )
    .unwrap();
    let t = files::load_cache(&path).unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t.get("k1", "H100", 90, 1000).unwrap().threads, 96);
    assert_eq!(t.get("k2", "H100", 90, 1000), Some(&entry("k2", 1000, 64)));
    assert!(t.get("k1", "H100", 80, 1000).is_none());
    assert!(t.get("k1", "H100", 90, 999).is_none());
    // No temporary files left behind.
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp."))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn concurrent_writers_keep_every_entry() {
    let path = temp("concurrent");
    std::thread::scope(|s| {
        for w in 0..8u64 {
            let path = &path;
            s.spawn(move || {
                for i in 0..10u64 {
                    files::store_cache(path, &[entry(&format!("k{w}"), i, 32)], PATIENCE).unwrap();
                }
            });
        }
    });
    let t = files::load_cache(&path).unwrap();
    assert_eq!(t.len(), 80);
}

#[test]
fn corrupt_files_are_reported_and_replaced_newer_ones_kept() {
    let path = temp("corrupt");
    for (text, why) in [
        ("{not json", "not a cache file"),
        ("", "not a cache file"),
        ("{\"entries\": []}", "version missing"),
        (
            "{\"version\": 1, \"entries\": [{\"kernel\": 3}]}",
            "not a cache file",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let err = files::load_cache(&path).unwrap_err();
        assert!(matches!(err, CacheError::Corrupt(_)), "{text}: {err}");
        assert!(err.to_string().contains(why), "{text}: {err}");
        files::store_cache(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
        assert_eq!(files::load_cache(&path).unwrap().len(), 1);
    }
    // A newer gridsel's file is reported and left alone, not overwritten.
    let newer = "{\"version\": 99, \"entries\": []}";
    std::fs::write(&path, newer).unwrap();
    let err = files::load_cache(&path).unwrap_err();
    assert!(matches!(err, CacheError::Newer(_)), "{err}");
    assert!(err.to_string().contains("version 99"), "{err}");
    assert!(matches!(
        files::store_cache(&path, &[entry("k", 1, 32)], PATIENCE),
        Err(CacheError::Newer(_))
    ));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), newer);
}

#[test]
fn a_failed_trial_ranks_last_and_the_search_still_finishes() {
    let space = space();
    let broken = space[0];
    let best = space[space.len() - 1];
    let mut t = Tuner::new(space.clone(), Params::default()).unwrap();
    let time = bowl(best);
    for _ in 0..BUDGET {
        if t.converged().is_some() {
            break;
        }
        let g = t.next();
        // The runtime reports a failed launch as the worst possible time.
        let ns = if g == broken {
            u64::MAX
        } else {
            time(g) as u64
        };
        t.observe(g, ns);
    }
    let winner = t.converged().expect("converges within the budget");
    assert_ne!(winner, broken);
}

#[test]
fn a_busy_lock_is_reported_not_waited_for() {
    let path = temp("busy");
    let held = gridsel::ffi::fs::lock(&cache_lock(&path), Duration::ZERO).unwrap();
    let start = std::time::Instant::now();
    // flock locks belong to the open file: a second open in the same process
    // contends like another process would.
    assert!(matches!(
        files::store_cache(&path, &[entry("k", 1, 32)], Duration::ZERO),
        Err(CacheError::Busy)
    ));
    assert!(start.elapsed() < Duration::from_millis(100));
    drop(held);
    files::store_cache(&path, &[entry("k", 1, 32)], Duration::ZERO).unwrap();
    assert_eq!(files::load_cache(&path).unwrap().len(), 1);
}

// ---- cache files that are not plain files ----------------------------------------

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

#[test]
fn planted_links_at_temporary_names_are_not_written_through() {
    let path = temp("planted");
    let dir = path.parent().unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    // Earlier gridsels named their temporary file `<cache>.tmp.<pid>.<n>`,
    // n counting from 0 in each process.
    let planted: Vec<PathBuf> = (0..1000)
        .map(|n| dir.join(format!("cache.json.tmp.{}.{n}", std::process::id())))
        .collect();
    for link in &planted {
        std::os::unix::fs::symlink(&victim, link).unwrap();
    }
    files::store_cache(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!is_symlink(&path));
    assert_eq!(files::load_cache(&path).unwrap().len(), 1);
    assert!(planted.iter().all(|l| is_symlink(l)));
}

#[test]
fn a_linked_cache_or_lock_is_refused_and_left_alone() {
    let path = temp("linked");
    let dir = path.parent().unwrap();
    let victim = dir.join("victim.json");
    files::store_cache(&victim, &[entry("k", 1, 32)], PATIENCE).unwrap();
    let before = std::fs::read_to_string(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let err = files::load_cache(&path).unwrap_err();
    assert!(matches!(err, CacheError::Io(_)), "{err:?}");
    assert_eq!(err.to_string(), "a symbolic link, not a regular file");
    let err = files::store_cache(&path, &[entry("k", 2, 32)], PATIENCE).unwrap_err();
    assert_eq!(err.to_string(), "a symbolic link, not a regular file");
    assert!(is_symlink(&path), "the link was replaced");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), before);

    // A lock planted as a link to a file that does not exist yet.
    let path = dir.join("other.json");
    let target = dir.join("created-through-the-link");
    std::os::unix::fs::symlink(&target, cache_lock(&path)).unwrap();
    let err = files::store_cache(&path, &[entry("k", 1, 32)], PATIENCE).unwrap_err();
    assert_eq!(err.to_string(), "a symbolic link, not a regular file");
    assert!(!target.exists() && !path.exists());
}

#[test]
fn a_device_node_cache_is_refused_not_replaced() {
    let path = temp("device");
    // A copy of /dev/null (needs root; skipped otherwise).
    let made = std::process::Command::new("mknod")
        .arg(&path)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("SKIPPED: mknod needs root");
        return;
    }
    let err = files::load_cache(&path).unwrap_err();
    assert_eq!(err.to_string(), "a character device, not a regular file");
    let err = files::store_cache(&path, &[entry("k", 1, 32)], PATIENCE).unwrap_err();
    assert_eq!(err.to_string(), "a character device, not a regular file");
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_char_device(), "{meta:?}");
}

#[test]
fn a_cache_over_the_cap_is_an_error_not_a_partial_parse() {
    let path = temp("huge");
    files::store_cache(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    let mut text = std::fs::read_to_string(&path).unwrap();
    // Valid JSON: padding after the object.
    text.push_str(&" ".repeat(gridsel::tune::cache::MAX_BYTES as usize));
    std::fs::write(&path, &text).unwrap();
    let err = files::load_cache(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        "larger than 4 MiB, the most gridsel reads of it"
    );
    // Not replaced either: its entries might be wanted.
    assert!(files::store_cache(&path, &[entry("k", 2, 32)], PATIENCE).is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn stale_temporary_files_of_dead_processes_go_when_the_cache_is_written() {
    let path = temp("stale");
    let dir = path.parent().unwrap();
    // Above any pid_max (at most 2^22): a process that no longer exists.
    let stale = dir.join("cache.json.tmp.2000000000.0");
    let live = dir.join(format!("cache.json.tmp.{}.0", std::process::id()));
    for f in [&stale, &live] {
        std::fs::write(f, "partial").unwrap();
    }
    files::store_cache(&path, &[entry("k", 1, 32)], PATIENCE).unwrap();
    assert!(!stale.exists());
    assert!(live.exists(), "a live process's file is kept");
}
