//! `gridsel tune` end to end: real host-offload programs from tests/c/ run
//! under the real libomptarget with libgridsel.so preloaded, an H100 forced
//! (`GRIDSEL_DEVICE=h100`) so that grids are chosen and searched without a
//! GPU. Checks what reaches the store (only after every run verified, its
//! mode kept, only the searches the confirmation pairs kept), the early
//! stop, how outputs are verified, and runs.csv and kernels.csv.
//!
//! Host launch times are noise, so the tests that need a decision force it:
//! a wrapper gives the runs of one side of the pairs (or the launches of one
//! side of an alternating run) 100 000 to 1 000 000 times the work per
//! iteration (same kernel, same trip count, hence the same search).

use gridsel_test_support as support;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use support::*;

const GRIDSEL: &str = env!("CARGO_BIN_EXE_gridsel");

/// tests/c/repeat.c: one open loop launched LAUNCHES times per run; it
/// prints a checksum that does not depend on the grid (but on ROUNDS).
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

/// The searches in the store at `path` as (kernel, marked settled in its
/// kind: what production runs read).
fn searches(path: &Path) -> Vec<(String, bool)> {
    let contents = gridsel_host::files::load_cache(path).unwrap();
    assert!(contents.dropped.is_empty(), "{:?}", contents.dropped);
    contents
        .table
        .records()
        .map(|r| (r.key.kernel.clone(), r.search.settled(r.kind())))
        .collect()
}

/// An existing, empty store at `path` of mode `mode`.
fn empty_store(path: &Path, mode: u32) {
    let patience = std::time::Duration::from_secs(5);
    gridsel_host::files::edit_cache(
        path,
        patience,
        gridsel_host::files::OnInvalid::Refuse,
        |_| {},
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `repeat LAUNCHES TRIPS` through a shell that gives the runs of `heavy`
/// 1 000 000 rounds of work per iteration (a tenth of a second a launch,
/// against the µs to tens of ms a light one, cold, takes on a loaded
/// machine): `auto`, the runs without a store (the untuned one and the
/// pairs' under auto), or `learned`, the pairs' runs reading the store. The runs under `auto`
/// launch once, too seldom for the confirmation to alternate within a run
/// (it is done in pairs of runs), the tuning runs LAUNCHES times. Verify it
/// with [`CHECK`].
fn weighted(program: &Path, heavy: &str, launches: &str, trips: &str) -> Vec<String> {
    let script = r#"n=$2 r=1
case "$GRIDSEL_POLICY,$GRIDSEL_CACHE" in
  auto,off) n=1; [ "$1" = auto ] && r=1000000 ;;
  auto,*) n=1; [ "$1" = learned ] && r=1000000 ;;
esac
exec "$0" "$n" "$3" "$r""#;
    let program = program.to_string_lossy();
    ["sh", "-c", script, &program, heavy, launches, trips]
        .map(String::from)
        .to_vec()
}

/// `repeat LAUNCHES TRIPS` through a shell whose alternating confirmation
/// runs (`GRIDSEL_LEARNED_ALTERNATE` odd or even) launch 10 times, the
/// `heavy` side of them (`learned`: those given the learned grid, the odd
/// launches in a run under `odd`, the even ones under `even`; `auto`: the
/// others) with 100 000 rounds of work per iteration (tens of ms a launch,
/// against the µs to ms a light one takes on a loaded machine); the
/// untuned run launches 10 times, the tuning runs 100. Verify it with
/// [`CHECK`].
fn alternating(program: &Path, heavy: &str, trips: &str) -> Vec<String> {
    let script = r#"n=100 r=1 o=1
case "$GRIDSEL_POLICY,$GRIDSEL_CACHE,$GRIDSEL_LEARNED_ALTERNATE" in
  auto,off,*) n=10 ;;
  auto,*,odd|auto,*,even) n=10
    case "$1,$GRIDSEL_LEARNED_ALTERNATE" in
      learned,odd|auto,even) o=100000 ;;
      *) r=100000 ;;
    esac ;;
esac
exec "$0" "$n" "$2" "$r" "$o""#;
    let program = program.to_string_lossy();
    ["sh", "-c", script, &program, heavy, trips]
        .map(String::from)
        .to_vec()
}

/// A check any round count passes.
const CHECK: &str = "^repeat [0-9]+ x [0-9]+: [0-9]+$";

/// kernels.csv's rows of a session as (class, auto_grid, learned_grid,
/// kept, reason), each confirmed as `confirmed` says (`pairs` or
/// `alternating`).
fn decisions_confirmed(out: &Path, confirmed: &str) -> Vec<[String; 5]> {
    let text = std::fs::read_to_string(out.join("kernels.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("program,kernel,class,auto_grid,learned_grid,kept,ratio,confirmed,reason")
    );
    lines
        .map(|line| {
            let f = gridsel_cli::csv::split(line).unwrap();
            assert!(f[1].contains("_step_l"), "{line}");
            assert!(f[6].parse::<f64>().unwrap() > 0.0, "{line}");
            assert_eq!(f[7], confirmed, "{line}");
            [2, 3, 4, 5, 8].map(|i| f[i].to_string())
        })
        .collect()
}

/// kernels.csv's rows of a session confirmed in pairs of runs.
fn decisions(out: &Path) -> Vec<[String; 5]> {
    decisions_confirmed(out, "pairs")
}

/// runs.csv's rows of a session as (kind, index, status, verified).
fn runs(out: &Path) -> Vec<[String; 4]> {
    let text = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("program,kind,index,status,verified,wall_s")
    );
    lines
        .map(|line| {
            let f = gridsel_cli::csv::split(line).unwrap();
            assert!(f[5].parse::<f64>().unwrap() > 0.0, "{line}");
            [1, 2, 3, 4].map(|i| f[i].to_string())
        })
        .collect()
}

fn row(kind: &str, index: u32, status: &str, verified: &str) -> [String; 4] {
    [kind, &index.to_string(), status, verified].map(String::from)
}

/// The trip-count classes of the searches in the store at `path`.
fn classes(path: &Path) -> Vec<u32> {
    let contents = gridsel_host::files::load_cache(path).unwrap();
    contents.table.records().map(|r| r.key.class).collect()
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
    // The runs without the store do 1 000 000 times the work: the learned grid
    // (or auto's, if the search kept it) is faster in every pair.
    let command = weighted(&program, "auto", "100", "1000");
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let run = tune(
        &out,
        &store,
        &["--runs", "3", "--confirm", "4", "--check", CHECK],
        &command,
    )
    .ok();

    // 100 launches settle the kernel's search within the first tuning run
    // (exploring unbounded): the session stops there and confirms in four
    // pairs, taking turns at running first, which agree (4 of 4 is beyond
    // chance at the first look when up to 12 may follow), or have nothing
    // to confirm; one line per run.
    let lines = progress(&run, "sh");
    let labels: Vec<&str> = lines.iter().map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "before",
            "tuning run 1/3",
            "confirmation 1/4, auto",
            "confirmation 1/4, learned",
            "confirmation 2/4, learned",
            "confirmation 2/4, auto",
            "confirmation 3/4, auto",
            "confirmation 3/4, learned",
            "confirmation 4/4, learned",
            "confirmation 4/4, auto"
        ],
        "{}",
        run.stderr
    );
    assert!(
        lines.iter().all(|l| l.contains(", ok, verified")),
        "{lines:?}"
    );
    assert!(
        lines[1].ends_with("; 1 of 1 searches settled"),
        "{}",
        lines[1]
    );
    assert!(out.join("sh/tune-1.log").is_file());
    assert!(!out.join("sh/tune-2.log").exists());
    assert!(out.join("sh/confirm-learned-04.csv").is_file());
    assert_eq!(
        runs(&out),
        [
            row("before", 1, "ok", "yes"),
            row("tuning", 1, "ok", "yes"),
            row("confirm-auto", 1, "ok", "yes"),
            row("confirm-learned", 1, "ok", "yes"),
            row("confirm-learned", 2, "ok", "yes"),
            row("confirm-auto", 2, "ok", "yes"),
            row("confirm-auto", 3, "ok", "yes"),
            row("confirm-learned", 3, "ok", "yes"),
            row("confirm-learned", 4, "ok", "yes"),
            row("confirm-auto", 4, "ok", "yes"),
        ]
    );
    let kept = decisions(&out);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!((&*kept[0][0], &*kept[0][3]), ("20", "yes"), "{kept:?}");

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
            .contains(&format!("store: 1 search written to {}\n", store.display())),
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
        (row[1], row[2], row[4], row[11]),
        ("1000", "8x128", "settled(run1)", kept[0][3].as_str()),
        "{row:?}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| tuning run 1/3 | ok |"), "{md}");
    assert!(md.contains("| confirmation 4/4, auto | ok |"), "{md}");
    let svg = std::fs::read_to_string(out.join("report.svg")).unwrap();
    assert_eq!(svg.matches("class=\"bar\"").count(), 1, "{svg}");
}

/// A kernel launched five times per run gives a session four warm
/// launches per tuning run. One run is not enough to settle its search: the
/// session says so on stderr and in kernels.csv, where it learned nothing
/// (it used to say "learned auto's grid"). Three runs are twelve warm
/// launches, and the search's plan fits them: it settles within the
/// session and the store's record says settled (a plan of sixteen grids,
/// up to 64 launches, was still exploring after three runs).
#[test]
fn a_kernel_launched_five_times_per_run_settles_within_three_tuning_runs() {
    if !clang19_available() {
        return;
    }
    let program = repeat();
    let dir = temp_dir("tune-five-per-run");
    let command = weighted(&program, "neither", "5", "1000");
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let session = |runs: &str| {
        let (out, store) = (
            dir.join(format!("out-{runs}")),
            dir.join(format!("{runs}.json")),
        );
        let args = ["--runs", runs, "--confirm", "1", "--check", CHECK];
        let run = tune(&out, &store, &args, &command).ok();
        (out, run)
    };

    let (out, run) = session("1");
    let settled = |out: &Path| -> Vec<bool> {
        let searches = searches(&out.join("store.json"));
        searches.into_iter().map(|(_, settled)| settled).collect()
    };
    assert_eq!(settled(&out), [false]);
    let lines = progress(&run, "sh");
    assert!(
        lines.contains(
            &"the tuning runs are spent with 1 search still exploring: auto's grid stays for \
              them (more --runs would let them settle)"
        ),
        "{lines:?}"
    );
    let decided = decisions(&out);
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0][1], decided[0][2], "auto's grid ran: {decided:?}");
    assert_eq!(
        decided[0][4], "still exploring after 1 run: auto's grid stays",
        "{decided:?}"
    );

    let (out, run) = session("3");
    assert_eq!(settled(&out), [true], "{}", run.stderr);
    let lines = progress(&run, "sh");
    let tuning: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("tuning run"))
        .collect();
    assert!(
        tuning
            .last()
            .is_some_and(|l| l.ends_with("; 1 of 1 searches settled")),
        "{lines:?}"
    );
    assert!(!run.stderr.contains("still exploring"), "{}", run.stderr);
    let decided = decisions(&out);
    assert!(!decided[0][4].contains("exploring"), "{decided:?}");
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
    // Host launch times decide whether the confirmation (alternating: 20
    // launches a run) keeps the learned grid: the store holds the search
    // exactly when it did.
    let kept = decisions_confirmed(&dir.join("check-ok"), "alternating");
    let written = kept.iter().filter(|d| d[3] == "yes").count();
    assert_eq!(searches(&store).len(), written, "{kept:?}");
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
    // Before, one tuning run, three confirmation runs by default, each
    // alternating (100 launches a run), and up to six more where host
    // launch times make them disagree.
    let runs = progress(&run, "sh").len() - 2;
    assert!((3..=9).contains(&runs), "{}", run.stderr);
    let said = format!("confirmation: {runs} alternating runs, the learned grids' launches ");
    assert!(run.stdout.contains(&said), "{}", run.stdout);
    let default = xdg.join("gridsel/tune.json");
    let kept = decisions_confirmed(Path::new(&out), "alternating");
    let written = kept.iter().filter(|d| d[3] == "yes").count();
    assert_eq!(searches(&default).len(), written, "{kept:?}");
    let mode = std::fs::metadata(default.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
}

/// A session of `weighted(repeat, heavy, 100, trips)` into `store`, in
/// `out`, with `args`: its run and the decision kernels.csv holds, or
/// `None` when its search kept auto's grid (no decision to make).
fn decided(
    out: &Path,
    store: &Path,
    args: &[&str],
    heavy: &str,
    trips: &str,
) -> Option<(Run, [String; 5])> {
    let command = weighted(&repeat(), heavy, "100", trips);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let args = [args, &["--check", CHECK]].concat();
    let run = tune(out, store, &args, &command).ok();
    let decided = decisions(out);
    assert_eq!(decided.len(), 1, "{decided:?}");
    (decided[0][1] != decided[0][2]).then(|| (run, decided[0].clone()))
}

#[test]
fn a_learned_grid_faster_in_production_is_kept_and_removed_once_refused() {
    if !clang19_available() {
        return;
    }
    // The host's searches mostly settle away from auto's grid (its first
    // launches are measured cold), but not always on a loaded machine: then
    // the sessions are tried again, afresh.
    for attempt in 1..=5 {
        let dir = temp_dir(&format!("tune-confirm-{attempt}"));
        let store = dir.join("tune.json");
        empty_store(&store, 0o600);

        // 300 iterations (class 17), the runs without the store heavier:
        // the learned grid is faster in every pair. One pair asked cannot
        // tell that from chance: the session adds pairs, up to 3, and
        // keeps the learned grid at 3 of 3.
        let Some((run, [class, _, _, kept, reason])) = decided(
            &dir.join("kept"),
            &store,
            &["--confirm", "1"],
            "auto",
            "300",
        ) else {
            continue;
        };
        assert_eq!((&*class, &*kept), ("17", "yes"), "{reason}");
        assert!(
            reason.starts_with("the learned grid was not slower in production (ratios "),
            "{reason}"
        );
        let labels: Vec<&str> = progress(&run, "sh")
            .into_iter()
            .filter_map(|l| l.split(':').next()?.strip_prefix("confirmation "))
            .collect();
        assert_eq!(
            labels,
            [
                "1/1, auto",
                "1/1, learned",
                "2 (more pairs, up to 3), learned",
                "2 (more pairs, up to 3), auto",
                "3 (more pairs, up to 3), auto",
                "3 (more pairs, up to 3), learned"
            ],
            "{}",
            run.stderr
        );
        assert!(
            run.stdout
                .contains("confirmation: 3 pairs, the runs reading the store faster in 3;"),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains("store: 1 search written to"),
            "{}",
            run.stdout
        );
        assert_eq!(classes(&store), [17]);

        // 1000 iterations (class 20), the runs reading the store heavier:
        // the learned grid is slower in every pair; the session verified,
        // but the search is not written, nor anything else of the program.
        let Some((run, [class, _, _, kept, reason])) =
            decided(&dir.join("dropped"), &store, &[], "learned", "1000")
        else {
            continue;
        };
        assert_eq!((&*class, &*kept), ("20", "no"), "{reason}");
        assert!(
            reason.starts_with("kept: auto's grid, the learned ")
                && reason.contains(" was slower in production (ratios ")
                && reason
                    .contains("; nothing of the program kept: the runs reading the store took "),
            "{reason}"
        );
        assert!(
            run.stdout.contains(&format!(
                // The store's search of class 17, which these runs did not
                // reach, is not this session's: left as it is.
                "store: 0 searches written to {} (1 left out: not confirmed in production)",
                store.display()
            )),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout
                .contains("nothing kept: the runs reading the store took "),
            "{}",
            run.stdout
        );
        assert_eq!(classes(&store), [17]);
        // The scratch store learned it all the same.
        let mut scratch = classes(&dir.join("dropped/store.json"));
        scratch.sort();
        assert_eq!(scratch, [17, 20]);

        // Another GPU's copy of that search, and a search pinned by hand:
        // not the session's to write or remove, whatever it decides.
        let ours = gridsel_host::files::load_cache(&store).unwrap().table;
        let ours = ours.records().next().unwrap().clone();
        let mut other_gpu = ours.clone();
        other_gpu.key.device = "A100".to_string();
        let mut pinned = ours.clone();
        pinned.key.class = 25;
        pinned.pinned = Some(gridsel_core::tune::search::Candidate::Auto);
        let patience = std::time::Duration::from_secs(5);
        let on_invalid = gridsel_host::files::OnInvalid::Refuse;
        gridsel_host::files::edit_cache(&store, patience, on_invalid, |table| {
            table.insert(other_gpu.clone());
            table.insert(pinned.clone());
        })
        .unwrap();

        // 300 iterations again, the runs reading the store heavier now: the
        // pairs refuse the search the first session wrote, and the store
        // must not go on launching it: it is removed, the store's mode kept.
        let Some((run, [class, _, _, kept, _])) =
            decided(&dir.join("refused"), &store, &[], "learned", "300")
        else {
            panic!("the store's settled search of class 17 launched auto's grid");
        };
        assert_eq!((&*class, &*kept), ("17", "no"));
        assert!(
            run.stdout.contains(&format!(
                "store: 0 searches written to {} (1 left out: not confirmed in production; \
                 1 removed from the store, an earlier session's copy)",
                store.display()
            )),
            "{}",
            run.stdout
        );
        let left = gridsel_host::files::load_cache(&store).unwrap().table;
        let left: Vec<_> = left.records().cloned().collect();
        assert_eq!(
            left,
            [other_gpu, pinned],
            "only the H100's search of class 17 removed"
        );
        let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        return;
    }
    panic!("in every attempt a search kept auto's grid");
}

/// A session of `alternating(repeat, heavy, 100, trips)` into a fresh
/// store: the first of up to 5 whose search settled away from auto's grid
/// (the host's searches mostly do; on a loaded machine not always), as its
/// output folder, store, run and the decision kernels.csv holds.
fn alternated(dir: &Path, heavy: &str, trips: &str) -> (PathBuf, PathBuf, Run, [String; 5]) {
    for attempt in 1..=5 {
        let out = dir.join(format!("{heavy}-{attempt}"));
        let store = dir.join(format!("{heavy}-{attempt}.json"));
        empty_store(&store, 0o600);
        let command = alternating(&repeat(), heavy, trips);
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        let run = tune(
            &out,
            &store,
            &["--confirm", "1", "--check", CHECK],
            &command,
        )
        .ok();
        let decided = decisions_confirmed(&out, "alternating");
        assert_eq!(decided.len(), 1, "{decided:?}");
        if decided[0][1] != decided[0][2] {
            return (out, store, run, decided[0].clone());
        }
    }
    panic!("in every attempt the search kept auto's grid");
}

#[test]
fn searches_launched_every_step_are_confirmed_by_alternating_launches_within_runs() {
    if !clang19_available() {
        return;
    }
    let dir = temp_dir("tune-alternating");
    // 300 iterations (class 17), the launches given auto's grid heavier:
    // the learned grid's launches are faster in each run, which one run
    // asked cannot tell from chance: 3 of 3 keep it.
    let (out, store, run, [class, _, _, kept, _]) = alternated(&dir, "auto", "300");
    assert_eq!((&*class, &*kept), ("17", "yes"), "{}", run.stdout);
    let labels: Vec<&str> = progress(&run, "sh")
        .into_iter()
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "before",
            "tuning run 1/3",
            "confirmation 1/1, learned and auto alternating",
            "confirmation 2 (more runs, up to 3), learned and auto alternating",
            "confirmation 3 (more runs, up to 3), learned and auto alternating",
        ],
        "{}",
        run.stderr
    );
    assert_eq!(
        runs(&out),
        [
            row("before", 1, "ok", "yes"),
            row("tuning", 1, "ok", "yes"),
            row("confirm-alternating", 1, "ok", "yes"),
            row("confirm-alternating", 2, "ok", "yes"),
            row("confirm-alternating", 3, "ok", "yes"),
        ]
    );
    assert!(
        run.stdout.contains(
            "confirmation: 3 alternating runs, the learned grids' launches (each search's \
             odd launches in odd runs, its even ones in even runs, the first left out) faster \
             than auto's in 3;"
        ),
        "{}",
        run.stdout
    );
    assert_eq!(classes(&store), [17]);
    // The odd runs launched the learned grid at the odd launches only, the
    // even run at the even ones but the first.
    for i in 1..=3 {
        let csv = format!("sh/confirm-alternating-{i}.csv");
        let profile = std::fs::read_to_string(out.join(csv)).unwrap();
        let policies: Vec<&str> = profile
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(2).unwrap())
            .collect();
        assert_eq!(policies.len(), 10, "{profile}");
        for (j, policy) in policies.iter().enumerate() {
            let learned = j > 0 && j % 2 == i % 2;
            assert_eq!(
                *policy == "learned",
                learned,
                "run {i}, launch {j}: {profile}"
            );
        }
    }

    // 1000 iterations (class 20), the learned grid's launches heavier:
    // refused, and not written.
    let (_, store, run, [class, _, _, kept, _]) = alternated(&dir, "learned", "1000");
    assert_eq!((&*class, &*kept), ("20", "no"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("nothing kept: the learned grids' launches took "),
        "{}",
        run.stdout
    );
    assert_eq!(classes(&store), Vec::<u32>::new());
}
