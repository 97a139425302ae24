//! `gridsel tune` end to end: real host-offload programs from tests/c/ run
//! under the real libomptarget with libgridsel.so preloaded, an H100 forced
//! (`GRIDSEL_DEVICE=h100`) so that grids are chosen and searched without a
//! GPU. Checks what reaches the store (only after every run verified, its
//! mode kept), the early stop, and how outputs are verified.

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use support::*;

const GRIDSEL: &str = env!("CARGO_BIN_EXE_gridsel");

/// tests/c/repeat.c: one open loop launched LAUNCHES times per run; it
/// prints a checksum that does not depend on the grid.
fn repeat() -> PathBuf {
    host_offload("repeat", "repeat.c", &[])
}

/// Runs `gridsel` with only PATH, an H100 forced, two host threads per team
/// and `env` in its environment.
fn gridsel(args: &[&str], env: &[(&str, &str)]) -> Run {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    run_gridsel_cli(GRIDSEL, &args, env, &repo())
}

/// `gridsel tune --out OUT --store STORE ARGS -- COMMAND`.
fn tune(out: &Path, store: &Path, args: &[&str], command: &[&str]) -> Run {
    let (out, store) = (out.to_string_lossy(), store.to_string_lossy());
    let mut all = vec!["tune", "--out", &out, "--store", &store];
    all.extend(args);
    all.push("--");
    all.extend(command);
    gridsel(&all, &[])
}

/// The searches in the store at `path` as (kernel, settled).
fn searches(path: &Path) -> Vec<(String, bool)> {
    let contents = gridsel::files::load_cache(path).unwrap();
    assert!(contents.dropped.is_empty(), "{:?}", contents.dropped);
    contents
        .table
        .records()
        .map(|r| (r.key.kernel.clone(), r.search.finished(r.kind())))
        .collect()
}

/// An existing, empty store at `path` of mode `mode`.
fn empty_store(path: &Path, mode: u32) {
    let patience = std::time::Duration::from_secs(5);
    gridsel::files::edit_cache(path, patience, gridsel::files::OnInvalid::Refuse, |_| {}).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The progress lines of a session, from `[tune NAME] ` on.
fn progress<'a>(run: &'a Run, name: &str) -> Vec<&'a str> {
    let prefix = format!("[tune {name}] ");
    run.stderr
        .lines()
        .filter_map(|l| l.strip_prefix(prefix.as_str()))
        .collect()
}

#[test]
fn a_verified_session_stops_once_searches_settle_and_writes_them_keeping_the_stores_mode() {
    if !clang19_available() {
        return;
    }
    let program = repeat();
    let dir = temp_dir("tune-session");
    let (out, store) = (dir.join("out"), dir.join("tune.json"));
    empty_store(&store, 0o640);
    let run = tune(
        &out,
        &store,
        &["--runs", "3"],
        &[&program.to_string_lossy(), "100", "1000"],
    )
    .ok();

    // 100 launches settle the kernel's search within the first tuning run
    // (exploring unbounded): the session stops there, one line per run.
    let lines = progress(&run, "repeat");
    assert_eq!(lines.len(), 3, "{}", run.stderr);
    assert!(lines[0].starts_with("before: ") && lines[0].ends_with(", ok, verified"));
    assert!(
        lines[1].starts_with("tuning run 1/3: ")
            && lines[1].ends_with(", ok, verified; 1 of 1 searches settled"),
        "{}",
        lines[1]
    );
    assert!(lines[2].starts_with("after: ") && lines[2].ends_with(", ok, verified"));
    assert!(out.join("repeat/tune-1.log").is_file());
    assert!(!out.join("repeat/tune-2.log").exists());

    // The learned search is in the store, which kept its mode; it is the
    // scratch store's, the one the tuning run wrote.
    let stored = searches(&store);
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(stored[0].0.contains("_step_l") && stored[0].1, "{stored:?}");
    assert_eq!(searches(&out.join("store.json")), stored);
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert!(
        run.stdout
            .contains(&format!("store: 1 search written to {}", store.display())),
        "{}",
        run.stdout
    );

    // Per kernel: auto's grid before (auto's 8 x 128 at 1000 iterations,
    // as `compare` shows), the search's leader, settled after run 1.
    let row: Vec<&str> = run
        .stdout
        .lines()
        .find(|l| l.contains("_step_l"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        (row[1], row[2], row[4]),
        ("1000", "8x128", "settled(run1)"),
        "{row:?}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| tuning run 1/3 | ok |"), "{md}");
    let svg = std::fs::read_to_string(out.join("report.svg")).unwrap();
    assert_eq!(svg.matches("class=\"bar\"").count(), 1, "{svg}");
}

#[test]
fn a_run_whose_output_changes_or_fails_the_check_writes_nothing() {
    if !clang19_available() {
        return;
    }
    let program = repeat();
    let dir = temp_dir("tune-unverified");
    let store = dir.join("tune.json");
    empty_store(&store, 0o600);
    let before = std::fs::read(&store).unwrap();
    // A line that depends on how the run was tuned: the tuning runs' output
    // differs from the untuned run's.
    let script = r#"echo "tuned by $GRIDSEL_POLICY"; exec "$0" "$@""#;
    let out = dir.join("changed");
    let run = tune(
        &out,
        &store,
        &[],
        &["sh", "-c", script, &program.to_string_lossy(), "20", "1000"],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let log = out.join("sh/tune-1.log");
    let expected = format!(
        "gridsel: sh, tuning run 1/3: the output differs from the untuned run's at its line 1 (lines of gridsel and those --ignore matches left out): `tuned by tune` instead of `tuned by auto` (log: {}); nothing written to {}",
        log.display(),
        store.display()
    );
    assert!(run.stderr.contains(&expected), "{}", run.stderr);
    // The session stopped at the failed run.
    assert_eq!(progress(&run, "sh").len(), 2, "{}", run.stderr);
    assert_eq!(std::fs::read(&store).unwrap(), before);
    assert!(
        run.stdout.contains("store: nothing written"),
        "{}",
        run.stdout
    );

    // A --check the output does not match: the untuned run fails already.
    let out = dir.join("check");
    let run = tune(
        &out,
        &store,
        &["--check", "^repeat 20 x 1000: 0$"],
        &[&program.to_string_lossy(), "20", "1000"],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "gridsel: repeat, before: the output does not match --check `^repeat 20 x 1000: 0$`"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read(&store).unwrap(), before);
    // One that matches verifies every run.
    let run = tune(
        &dir.join("check-ok"),
        &store,
        &["--check", "^repeat 20 x 1000: [0-9]+$"],
        &[&program.to_string_lossy(), "20", "1000"],
    )
    .ok();
    assert!(run.stdout.contains("written to"), "{}", run.stdout);
    assert_eq!(searches(&store).len(), 1);
}

#[test]
fn ignore_leaves_timing_lines_out_and_the_default_store_is_the_users() {
    if !clang19_available() {
        return;
    }
    let program = repeat();
    let dir = temp_dir("tune-ignore");
    // A timing line that differs from run to run.
    let script = r#"echo "time: $(date +%s%N) ns"; exec "$0" "$@""#;
    let command = [
        "sh",
        "-c",
        script,
        &program.to_string_lossy(),
        "100",
        "1000",
    ]
    .map(String::from);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let store = dir.join("tune.json");
    let run = tune(&dir.join("strict"), &store, &[], &command);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("`time: "), "{}", run.stderr);
    assert!(!store.exists());

    // With --ignore and no --store: the store where programs read it,
    // under XDG_CACHE_HOME, its folder created private to the user.
    let xdg = dir.join("xdg");
    let out = dir.join("ignoring").to_string_lossy().into_owned();
    let mut args = vec!["tune", "--ignore", "^time: ", "--out", &out, "--"];
    args.extend(&command);
    let run = gridsel(&args, &[("XDG_CACHE_HOME", &xdg.to_string_lossy())]).ok();
    assert_eq!(progress(&run, "sh").len(), 3, "{}", run.stderr);
    let default = xdg.join("gridsel/tune.json");
    assert_eq!(searches(&default).len(), 1);
    let mode = std::fs::metadata(default.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
}
