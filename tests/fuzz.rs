//! The fuzz targets of `fuzz/targets.rs` on stable Rust.
//!
//! Each target replays its corpus (`fuzz/corpus/<target>/`), then runs
//! `GRIDSEL_FUZZ_RUNS` (default 500) mutations of it, drawn from a PRNG
//! seeded with `GRIDSEL_FUZZ_SEED` (default below) so a run is repeatable.
//! An input fails if it panics or runs longer than
//! `GRIDSEL_FUZZ_TIMEOUT_MS` (default 5000; a hang is caught by a watchdog);
//! the failure names the target, the seed and the mutation, and gives the
//! input in hex. `scripts/fuzz.sh` runs a million inputs in release mode;
//! cargo-fuzz runs the same bodies under libFuzzer (fuzz/README.md).

#[path = "../fuzz/targets.rs"]
mod targets;

use gridsel::splitmix::SplitMix64;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const DEFAULT_RUNS: u64 = 500;
/// "gridsel" in ASCII.
const DEFAULT_SEED: u64 = 0x0067_7269_6473_656c;
const DEFAULT_TIMEOUT_MS: u64 = 5000;
/// Mutants grow no larger than this (the largest seed is 55 KB).
const MAX_INPUT: usize = 256 * 1024;

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => {
            let text = text.trim();
            let parsed = match text.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => text.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("{name}=`{text}` is not a number"))
        }
        Err(_) => default,
    }
}

/// The mutations' draws.
type Rng = SplitMix64;

/// A range of at most `max` bytes inside `0..len` (`len > 0`).
fn span(rng: &mut Rng, len: usize, max: usize) -> std::ops::Range<usize> {
    let start = rng.below(len);
    let n = 1 + rng.below(max.min(len - start));
    start..start + n
}

/// Integers at the edges parsers and limits care about.
const INTERESTING: [u64; 24] = [
    0,
    1,
    2,
    16,
    31,
    32,
    33,
    64,
    127,
    128,
    255,
    256,
    1023,
    1024,
    1025,
    4096,
    65_535,
    65_536,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    1 << 32,
    0x7fff_ffff_ffff_ffff,
    u64::MAX,
];

/// Fragments of the text formats (TOML, JSON, policy names) that random
/// bytes seldom spell.
const TOKENS: [&str; 24] = [
    "-1",
    "2147483647",
    "4294967296",
    "18446744073709551616",
    "1e308",
    "-1e309",
    "0.5",
    "nan",
    "inf",
    "\"",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    " = ",
    "\n",
    "null",
    "true",
    "base = \"h100\"\n",
    "\"version\": 1",
    "fixed:",
    "\u{0}",
];

/// One random change to `input`; `others` are the corpus, for splices.
fn mutate_once(rng: &mut Rng, input: &mut Vec<u8>, others: &[Vec<u8>]) {
    let len = input.len();
    match rng.below(10) {
        // Flip a bit.
        0 if len > 0 => {
            let at = rng.below(len);
            input[at] ^= 1 << rng.below(8);
        }
        // Set a byte.
        1 if len > 0 => {
            let at = rng.below(len);
            input[at] = rng.next_u64() as u8;
        }
        // Insert random bytes.
        2 => {
            let at = rng.below(len + 1);
            let n = 1 + rng.below(8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            input.splice(at..at, bytes);
        }
        // Delete a range.
        3 if len > 0 => {
            let span = span(rng, len, 64);
            input.drain(span);
        }
        // Duplicate a range somewhere.
        4 if len > 0 => {
            let span = span(rng, len, 256);
            let copy = input[span].to_vec();
            let at = rng.below(len + 1);
            input.splice(at..at, copy);
        }
        // An interesting integer at an aligned offset, either byte order.
        5 => {
            let width = 1 << rng.below(4);
            if len >= width {
                let at = rng.below(len / width) * width;
                let value = INTERESTING[rng.below(INTERESTING.len())];
                let bytes = if rng.below(4) == 0 {
                    value.to_be_bytes()[8 - width..].to_vec()
                } else {
                    value.to_le_bytes()[..width].to_vec()
                };
                input[at..at + width].copy_from_slice(&bytes);
            }
        }
        // Splice: this input's head, another corpus entry's tail.
        6 => {
            let other = &others[rng.below(others.len())];
            let head = rng.below(len + 1);
            let tail = rng.below(other.len() + 1);
            input.truncate(head);
            input.extend_from_slice(&other[tail..]);
        }
        // Truncate.
        7 if len > 0 => input.truncate(rng.below(len)),
        // Insert a token.
        8 => {
            let at = rng.below(len + 1);
            let token = TOKENS[rng.below(TOKENS.len())].as_bytes();
            input.splice(at..at, token.iter().copied());
        }
        // Replace a decimal number with an interesting one, or with another
        // number of the input (a node index elsewhere in a model, say).
        _ => {
            let digits: Vec<usize> = (0..len).filter(|&i| input[i].is_ascii_digit()).collect();
            if !digits.is_empty() {
                let run_at = |start: usize| {
                    let end = (start..len)
                        .find(|&i| !input[i].is_ascii_digit())
                        .unwrap_or(len);
                    start..end
                };
                let target = run_at(digits[rng.below(digits.len())]);
                let value = if rng.below(2) == 0 {
                    INTERESTING[rng.below(INTERESTING.len())]
                        .to_string()
                        .into_bytes()
                } else {
                    input[run_at(digits[rng.below(digits.len())])].to_vec()
                };
                input.splice(target, value);
            }
        }
    }
}

/// The `iteration`-th mutant of a campaign: a corpus entry changed one to
/// eight times (half the mutants once, a quarter twice, ...: stacked changes
/// seldom leave a text format parseable), from a generator seeded by the
/// campaign's seed and the iteration alone, so any one mutant can be made
/// again.
fn mutant(seed: u64, iteration: u64, corpus: &[Vec<u8>]) -> (usize, Vec<u8>) {
    let mut rng = SplitMix64(seed ^ iteration.wrapping_mul(0xd6e8_feb8_6659_fd93));
    let from = rng.below(corpus.len());
    let mut input = corpus[from].clone();
    let mut changes = 1;
    while changes < 8 && rng.below(2) == 0 {
        changes += 1;
    }
    for _ in 0..changes {
        mutate_once(&mut rng, &mut input, corpus);
        input.truncate(MAX_INPUT);
    }
    (from, input)
}

/// A target's inputs and the limits to run them under.
struct Campaign {
    target: &'static str,
    body: fn(&[u8]) -> bool,
    /// (file name, bytes), replayed first and mutated after.
    corpus: Vec<(String, Vec<u8>)>,
    runs: u64,
    seed: u64,
    timeout: Duration,
}

/// What a campaign ran.
#[derive(Debug)]
struct Outcome {
    executions: u64,
    /// Inputs the parser accepted.
    accepted: u64,
    elapsed: Duration,
    slowest: Duration,
}

/// The input a campaign's worker is running, for the watchdog.
struct InFlight {
    what: String,
    input: Vec<u8>,
    started: Instant,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn failure(target: &str, what: &str, problem: &str, input: &[u8]) -> String {
    format!(
        "fuzz target {target}: {what} {problem}; input ({} bytes, hex): {}",
        input.len(),
        hex(input)
    )
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic")
}

/// Runs a campaign on a worker thread; the calling thread watches that
/// every input finishes within the timeout.
fn run(campaign: Campaign) -> Result<Outcome, String> {
    let timeout = campaign.timeout;
    let target = campaign.target;
    let in_flight = Arc::new(Mutex::new(None::<InFlight>));
    let shared = Arc::clone(&in_flight);
    let worker = thread::spawn(move || -> Result<Outcome, String> {
        let Campaign {
            target,
            body,
            corpus,
            runs,
            seed,
            ..
        } = campaign;
        let names: Vec<String> = corpus.iter().map(|(n, _)| n.clone()).collect();
        let entries: Vec<Vec<u8>> = corpus.into_iter().map(|(_, bytes)| bytes).collect();
        let replays = entries
            .iter()
            .zip(&names)
            .map(|(input, name)| (format!("corpus file {name}"), input.clone()));
        let mutants = (0..runs).map(|i| {
            let (from, input) = mutant(seed, i, &entries);
            let what = format!(
                "mutant {i} of {} (GRIDSEL_FUZZ_SEED={seed:#x})",
                names[from]
            );
            (what, input)
        });
        let begun = Instant::now();
        let (mut executions, mut accepted, mut slowest) = (0, 0, Duration::ZERO);
        for (what, input) in replays.chain(mutants) {
            let started = Instant::now();
            *shared.lock().unwrap() = Some(InFlight {
                what: what.clone(),
                input: input.clone(),
                started,
            });
            let result = catch_unwind(AssertUnwindSafe(|| body(&input)));
            let took = started.elapsed();
            match result {
                Ok(taken) => accepted += u64::from(taken),
                Err(payload) => {
                    let problem = format!("panicked: {}", panic_message(payload.as_ref()));
                    return Err(failure(target, &what, &problem, &input));
                }
            }
            if took > timeout {
                let problem = format!("took {took:?}, over the {timeout:?} bound");
                return Err(failure(target, &what, &problem, &input));
            }
            executions += 1;
            slowest = slowest.max(took);
        }
        Ok(Outcome {
            executions,
            accepted,
            elapsed: begun.elapsed(),
            slowest,
        })
    });
    loop {
        if worker.is_finished() {
            return worker.join().expect("the fuzz worker's own code panicked");
        }
        if let Some(f) = in_flight.lock().unwrap().as_ref() {
            let running = f.started.elapsed();
            if running > timeout {
                // The worker is left running: a hung parser cannot be stopped.
                let problem = format!("still running after {running:?} (bound {timeout:?})");
                return Err(failure(target, &f.what, &problem, &f.input));
            }
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

/// A target's corpus, sorted by file name.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// Runs `target` over its corpus and mutants, with the environment's
/// settings; prints the count (scripts/fuzz.sh adds them up).
fn fuzz(target: &'static str) {
    let outcome = run(Campaign {
        target,
        body: targets::target(target),
        corpus: corpus(target),
        runs: env_u64("GRIDSEL_FUZZ_RUNS", DEFAULT_RUNS),
        seed: env_u64("GRIDSEL_FUZZ_SEED", DEFAULT_SEED),
        timeout: Duration::from_millis(env_u64("GRIDSEL_FUZZ_TIMEOUT_MS", DEFAULT_TIMEOUT_MS)),
    })
    .unwrap_or_else(|report| panic!("{report}"));
    println!(
        "fuzz {target}: {} executions ({} accepted) in {:.2} s, slowest {:.1} ms",
        outcome.executions,
        outcome.accepted,
        outcome.elapsed.as_secs_f64(),
        outcome.slowest.as_secs_f64() * 1e3
    );
}

#[test]
fn fuzz_device_image() {
    fuzz("device_image");
}

#[test]
fn fuzz_device_toml() {
    fuzz("device_toml");
}

#[test]
fn fuzz_forest_model() {
    fuzz("forest_model");
}

#[test]
fn fuzz_tune_cache() {
    fuzz("tune_cache");
}

#[test]
fn fuzz_tune_journal() {
    fuzz("tune_journal");
}

#[test]
fn fuzz_environment() {
    fuzz("environment");
}

/// cargo-fuzz and this runner see the same targets: each has a corpus, a
/// binary under fuzz/fuzz_targets/ calling its body and a `[[bin]]` in
/// fuzz/Cargo.toml, and a test above.
#[test]
fn every_target_has_a_corpus_a_libfuzzer_binary_and_a_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("fuzz/Cargo.toml")).unwrap();
    let this = std::fs::read_to_string(root.join("tests/fuzz.rs")).unwrap();
    let mut corpus_bytes = 0;
    for (name, _) in targets::TARGETS {
        let entries = corpus(name);
        assert!(!entries.is_empty(), "{name}: empty corpus");
        corpus_bytes += entries.iter().map(|(_, b)| b.len()).sum::<usize>();
        let binary = std::fs::read_to_string(root.join(format!("fuzz/fuzz_targets/{name}.rs")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            binary.contains(&format!("targets::target(\"{name}\")")),
            "{name}"
        );
        assert!(
            manifest.contains(&format!(
                "name = \"{name}\"\npath = \"fuzz_targets/{name}.rs\""
            )),
            "{name}"
        );
        assert!(this.contains(&format!("fuzz(\"{name}\");")), "{name}");
    }
    assert!(corpus_bytes < 1 << 20, "corpus of {corpus_bytes} bytes");
}

fn test_campaign(body: fn(&[u8]) -> bool, timeout_ms: u64) -> Campaign {
    Campaign {
        target: "test",
        body,
        corpus: vec![
            ("a".to_string(), b"gridsel".to_vec()),
            ("b".to_string(), vec![0; 16]),
        ],
        runs: 2000,
        seed: 7,
        timeout: Duration::from_millis(timeout_ms),
    }
}

#[test]
fn the_runner_reports_a_panicking_input_with_its_seed_and_hex() {
    let outcome = run(test_campaign(
        |input| {
            assert!(!input.starts_with(b"gridsel") || input.len() == 7, "grown");
            true
        },
        60_000,
    ));
    let report = outcome.unwrap_err();
    assert!(
        report.starts_with("fuzz target test: mutant ")
            && report.contains(" of a (GRIDSEL_FUZZ_SEED=0x7) panicked: grown; input (")
            && report.contains(" bytes, hex): 6772696473656c"),
        "{report}"
    );
}

#[test]
fn the_runner_reports_an_input_that_hangs() {
    let started = Instant::now();
    let report = run(test_campaign(
        |input| {
            if input.first() == Some(&0) {
                thread::sleep(Duration::from_secs(30));
            }
            true
        },
        200,
    ))
    .unwrap_err();
    assert!(
        report.starts_with("fuzz target test: corpus file b still running after")
            && report.ends_with("input (16 bytes, hex): 00000000000000000000000000000000"),
        "{report}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn mutants_are_repeatable_and_vary() {
    let corpus = vec![
        b"base = \"h100\"\nsm_count = 132\n".to_vec(),
        vec![0x7f; 64],
    ];
    let first: Vec<_> = (0..500).map(|i| mutant(1, i, &corpus)).collect();
    let again: Vec<_> = (0..500).map(|i| mutant(1, i, &corpus)).collect();
    assert_eq!(first, again);
    let other_seed: Vec<_> = (0..500).map(|i| mutant(2, i, &corpus)).collect();
    assert_ne!(first, other_seed);
    let unchanged = first.iter().filter(|(from, m)| *m == corpus[*from]).count();
    assert!(
        unchanged < 25,
        "{unchanged} of 500 mutants equal their seed"
    );
    let distinct: std::collections::HashSet<_> = first.iter().map(|(_, m)| m).collect();
    assert!(distinct.len() > 450, "{} distinct", distinct.len());
}
