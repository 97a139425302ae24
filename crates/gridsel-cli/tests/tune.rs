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
    let contents = gridsel_host::files::load_store(path).unwrap();
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
    gridsel_host::files::edit_store(
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
/// untuned run launches 10 times, the tuning runs 150 (a session's whole
/// warm plan, 137 launches, fits the first). Verify it with
/// [`CHECK`].
fn alternating(program: &Path, heavy: &str, trips: &str) -> Vec<String> {
    let script = r#"n=150 r=1 o=1
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
    let contents = gridsel_host::files::load_store(path).unwrap();
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
    let command = weighted(&program, "auto", "150", "1000");
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let run = tune(
        &out,
        &store,
        &["--runs", "3", "--confirm", "4", "--check", CHECK],
        &command,
    )
    .ok();

    // 150 launches settle the kernel's search within the first tuning run
    // (exploring unbounded: the whole plan's 137 warm launches fit): the session stops there and confirms in four
    // pairs, taking turns at running first, which agree (4 of 4 is beyond
    // chance at the first look when up to 12 may follow), or have nothing
    // to confirm; one line per run.
    let lines = progress(&run, "sh");
    let labels: Vec<&str> = lines.iter().map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "before",
            "plan",
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
    // The before run launched the kernel once: the plan is what a kernel
    // launched once a run needs, cut to --runs.
    assert_eq!(
        lines[1],
        "plan: 3 tuning runs, as --runs 3 allows; its searches need 13 (1 search, 1 launched \
         once a run)"
    );
    let mut ran = lines.iter().filter(|l| !l.starts_with("plan: "));
    assert!(ran.all(|l| l.contains(", ok, verified")), "{lines:?}");
    assert!(
        lines[2].ends_with("; 1 of 1 searches settled"),
        "{}",
        lines[2]
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
            .contains(&format!(
                "store: 1 search written to {}; timed on the host (the launch call's wall time: no CUPTI, or a forced device)\n",
                store.display()
            )),
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
    // The plan: what the before run's one launch needs, cut to --runs; at
    // the end, what a session of the 35 runs the search launched 5 times a
    // run by the tuning runs needs would take.
    let lines = progress(&run, "sh");
    assert!(
        lines.contains(
            &"plan: 1 tuning run, as --runs 1 allows; its searches need 13 (1 search, 1 \
              launched once a run)"
        ),
        "{lines:?}"
    );
    let end = lines
        .iter()
        .find(|l| l.starts_with("after 1 tuning run, "))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        end.starts_with(
            "after 1 tuning run, --runs 1 is reached: 1 search still exploring, auto's grid \
             stays for them: __omp_offloading_"
        ) && end.contains("_step_l16 at class 20 (launched 5 times a run: 35 tuning runs settle it); a session of 35 tuning runs would take about ")
            && end.ends_with(" --runs 35)"),
        "{end}"
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
        "gridsel: sh, tuning run 1/8: the output differs from the untuned run's at its line 1, column 10 (lines of gridsel and those --ignore matches left out): `tuned by tune` instead of `tuned by auto` (log: {}); nothing written to {}",
        log.display(),
        store.display()
    );
    assert!(run.stderr.contains(&expected), "{}", run.stderr);
    // The session stopped at the failed run, the first of eight planned: 20
    // launches a run give 19 warm ones, 8 runs the 137 a whole plan takes.
    assert_eq!(progress(&run, "sh").len(), 3, "{}", run.stderr);
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
    // Three confirmation runs by default, each alternating (100 launches a
    // run), and up to six more where host launch times make them disagree
    // (then the search is confirmed alone, in runs of its own).
    let lines = progress(&run, "sh");
    let runs = lines
        .iter()
        .filter(|l| l.starts_with("confirmation "))
        .count();
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

/// A session of `weighted(repeat, heavy, 150, trips)` into `store`, in
/// `out`, with `args`: its run and the decision kernels.csv holds, or
/// `None` when its search kept auto's grid (no decision to make).
fn decided(
    out: &Path,
    store: &Path,
    args: &[&str],
    heavy: &str,
    trips: &str,
) -> Option<(Run, [String; 5])> {
    let command = weighted(&repeat(), heavy, "150", trips);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let args = [args, &["--check", CHECK]].concat();
    let run = tune(out, store, &args, &command).ok();
    let decided = decisions(out);
    assert_eq!(decided.len(), 1, "{decided:?}");
    (decided[0][1] != decided[0][2]).then(|| (run, decided[0].clone()))
}

/// Runs `repeat 20 TRIPS` once under online `tune` on `store`, then marks
/// `auto`'s grid measured far slower in the search it began: on host
/// offload the grids run alike, and a session must settle away from
/// `auto`'s grid for there to be a learned grid to confirm. (Before
/// sessions measured `auto`'s grid again before leaving it, the slow first
/// warm launch of a host process did that by chance.)
fn autos_grid_measured_slow(store: &Path, trips: &str) {
    use gridsel_core::tune::search::{Candidate, KEEP, Samples};
    let path = store.to_string_lossy();
    let env = [
        ("GRIDSEL_DEVICE", "h100"),
        ("GRIDSEL_POLICY", "tune"),
        ("GRIDSEL_CACHE", &*path),
    ];
    run_gridsel(&repeat(), &["20", trips, "1"], &env).ok();
    let patience = std::time::Duration::from_secs(5);
    let on_invalid = gridsel_host::files::OnInvalid::Refuse;
    gridsel_host::files::edit_store(store, patience, on_invalid, |table| {
        let class = gridsel_core::tune::store::class(trips.parse().unwrap());
        let mut begun: Vec<_> = (table.records())
            .filter(|r| r.key.class == class)
            .cloned()
            .collect();
        assert_eq!(begun.len(), 1, "{begun:?}");
        let mut r = begun.remove(0);
        let auto = r.search.index_of(Candidate::Auto);
        let slow = vec![1 << 40; KEEP];
        r.search.samples[auto] = Samples {
            cold: slow.clone(),
            warm: slow,
        };
        table.insert(r);
    })
    .unwrap();
}

#[test]
fn a_learned_grid_faster_in_production_is_kept_and_removed_once_refused() {
    if !clang19_available() {
        return;
    }
    // With `auto`'s grid measured slow, the searches settle away from it
    // (`autos_grid_measured_slow`); should one not (a loaded machine), the
    // sessions are tried again, afresh.
    for attempt in 1..=5 {
        let dir = temp_dir(&format!("tune-confirm-{attempt}"));
        let store = dir.join("tune.json");
        empty_store(&store, 0o600);
        autos_grid_measured_slow(&store, "300");

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
        // but the search is not written, nor anything else of the program,
        // and the search it began from leaves the store with it.
        autos_grid_measured_slow(&store, "1000");
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
                // reach, is not this session's: left as it is. Its own
                // class 20, begun before it and unchanged since, goes.
                "store: 0 searches written to {} (1 left out: not confirmed in production; \
                 1 removed from the store, an earlier session's copy)",
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
        let ours = gridsel_host::files::load_store(&store).unwrap().table;
        let ours = ours.records().next().unwrap().clone();
        let mut other_gpu = ours.clone();
        other_gpu.key.device = "A100".to_string();
        let mut pinned = ours.clone();
        pinned.key.class = 25;
        pinned.pinned = Some(gridsel_core::tune::search::Candidate::Auto);
        let patience = std::time::Duration::from_secs(5);
        let on_invalid = gridsel_host::files::OnInvalid::Refuse;
        gridsel_host::files::edit_store(&store, patience, on_invalid, |table| {
            table.insert(other_gpu.clone());
            table.insert(pinned.clone());
        })
        .unwrap();

        // 300 iterations again, the runs reading the store heavier now: the
        // pairs refuse the search the first session wrote, and the store
        // must not go on launching it: it is removed, the store's mode kept.
        // Its tuning run goes on sampling the settled search, which host
        // noise can move back to auto's grid: then afresh, as above.
        let Some((run, [class, _, _, kept, _])) =
            decided(&dir.join("refused"), &store, &[], "learned", "300")
        else {
            continue;
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
        let left = gridsel_host::files::load_store(&store).unwrap().table;
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

/// A session of `alternating(repeat, heavy, trips)` into a fresh
/// store where `auto`'s grid is measured slow (`autos_grid_measured_slow`):
/// the first of up to 5 whose search settled away from it, as its output
/// folder, store, run and the decision kernels.csv holds.
fn alternated(dir: &Path, heavy: &str, trips: &str) -> (PathBuf, PathBuf, Run, [String; 5]) {
    for attempt in 1..=5 {
        let out = dir.join(format!("{heavy}-{attempt}"));
        let store = dir.join(format!("{heavy}-{attempt}.json"));
        empty_store(&store, 0o600);
        autos_grid_measured_slow(&store, trips);
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
            "plan",
            "tuning run 1/16",
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

/// `weighted(repeat, "auto", "150", "300")` (the learned grid faster in
/// production) whose tuning runs each first run the program once more
/// under `GRIDSEL_POLICY=tune` on the session's destination `store`
/// itself, as a user's program would while the session runs, and count
/// it in `marks/counted`, twice. With `clear`, the first tuning run runs
/// `gridsel cache clear` on that store after its program (that run is not
/// counted: its samples are cleared) and marks `marks/cleared`; without,
/// each tuning run waits for that mark first, so that every counted run
/// came after the clear.
fn racing(store: &Path, marks: &Path, clear: bool) -> Vec<String> {
    let side = r#"
if [ "$GRIDSEL_POLICY" = tune ]; then
  side() { env -u GRIDSEL_TUNE_SESSION_RUNS GRIDSEL_CACHE="$S" "$0" 100 300 1 >/dev/null 2>&1; }
  if [ "$C" = clear ] && [ ! -e "$M/cleared" ]; then
    side
    for i in 1 2 3 4 5 6 7 8 9 10; do
      "$G" cache --path "$S" clear >/dev/null 2>&1 && { : > "$M/cleared"; break; }
    done
  else
    i=0
    while [ ! -e "$M/cleared" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
    for i in 1 2; do side && echo run >> "$M/counted"; done
  fi
fi
"#;
    let mut command = weighted(&repeat(), "auto", "150", "300");
    let script = format!(
        "S='{}' M='{}' G='{GRIDSEL}' C={}\n{side}{}",
        store.display(),
        marks.display(),
        if clear { "clear" } else { "wait" },
        command[2]
    );
    command[2] = script;
    command
}

/// Two sessions tune one kernel on one store while each of their tuning
/// runs also runs the program on that store under `GRIDSEL_POLICY=tune`
/// and one of them clears the store: every run counts once in the store's
/// search, whatever finishes last (runs after the clear, plus the tuning
/// runs of each session that wrote its search), and nothing cleared comes
/// back (four runs from before, which a session's copy holds). A session's write used to replace the store's search with its
/// copy's, losing the others' runs and bringing cleared ones back.
///
/// Which grid the search learns does not matter here, and on host offload
/// nothing decides it but noise (this loop's launches take 5-7 us or 40-50
/// us by process, whatever the grid): the test asks only that a session
/// wrote its search, in one of three attempts.
#[test]
fn two_sessions_tune_processes_and_a_clear_on_one_store_lose_nothing() {
    if !clang19_available() {
        return;
    }
    for attempt in 1..=3 {
        let dir = temp_dir(&format!("tune-race-{attempt}"));
        let (store, marks) = (dir.join("tune.json"), dir.join("marks"));
        std::fs::create_dir_all(&marks).unwrap();
        empty_store(&store, 0o600);
        // Runs from before the sessions: cleared during them.
        let store_text = store.to_string_lossy();
        for _ in 0..4 {
            let env = [
                ("GRIDSEL_DEVICE", "h100"),
                ("GRIDSEL_POLICY", "tune"),
                ("GRIDSEL_CACHE", &*store_text),
            ];
            run_gridsel(&repeat(), &["100", "300", "1"], &env).ok();
        }
        let sessions: Vec<_> = [true, false]
            .map(|clear| {
                let (store, marks, dir) = (store.clone(), marks.clone(), dir.clone());
                std::thread::spawn(move || {
                    let out = dir.join(if clear { "a" } else { "b" });
                    let command = racing(&store, &marks, clear);
                    let command: Vec<&str> = command.iter().map(String::as_str).collect();
                    let run = tune(&out, &store, &["--check", CHECK], &command);
                    (out, run)
                })
            })
            .into_iter()
            .map(|s| s.join().unwrap())
            .collect();
        assert!(marks.join("cleared").exists(), "the store was not cleared");
        let mut written_runs = 0;
        for (out, run) in sessions {
            let run = run.ok();
            let decided = decisions(&out);
            assert_eq!(decided.len(), 1, "{decided:?}");
            if decided[0][3] == "yes" {
                assert!(
                    run.stdout.contains("store: 1 search written to"),
                    "{}",
                    run.stdout
                );
                written_runs += runs(&out).iter().filter(|r| r[0] == "tuning").count() as u32;
            }
        }
        let counted = std::fs::read_to_string(marks.join("counted")).unwrap_or_default();
        let side_runs = counted.lines().count() as u32;
        let table = gridsel_host::files::load_store(&store).unwrap().table;
        let records: Vec<_> = table.records().collect();
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(
            records[0].tally.runs,
            side_runs + written_runs,
            "{side_runs} runs after the clear, {written_runs} tuning runs written"
        );
        if written_runs > 0 {
            return;
        }
    }
    panic!("no session wrote its search in 3 attempts");
}

/// The tuning runs of a session's progress lines.
fn tuning_lines<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let tuning = lines.iter().filter(|l| l.starts_with("tuning run "));
    tuning.copied().collect()
}

/// A kernel launched once a run measures one grid a run: the session plans
/// the 13 runs its cold plan can take (where three runs could not settle
/// it) and stops once it settled.
#[test]
fn a_kernel_launched_once_a_run_gets_the_runs_it_needs() {
    if !clang19_available() {
        return;
    }
    let program = repeat();
    let dir = temp_dir("tune-once-per-run");
    let (out, store) = (dir.join("out"), dir.join("tune.json"));
    let program = program.to_string_lossy();
    let args = ["--confirm", "1", "--check", CHECK];
    let run = tune(&out, &store, &args, &[&program, "1", "1000"]).ok();
    let lines = progress(&run, "repeat");
    assert!(
        lines.contains(
            &"plan: 13 tuning runs, what its searches need (1 search, 1 launched once a run)"
        ),
        "{lines:?}"
    );
    let tuning = tuning_lines(&lines);
    // Four candidates screened a run each, then the best again: five at
    // least; settled within the plan.
    assert!((5..=13).contains(&tuning.len()), "{lines:?}");
    assert!(tuning.iter().all(|l| l.contains("/13: ")), "{tuning:?}");
    assert!(
        tuning
            .last()
            .unwrap()
            .ends_with("; 1 of 1 searches settled")
    );
    assert!(!run.stderr.contains("still exploring"), "{}", run.stderr);
    assert_eq!(searches(&out.join("store.json")).len(), 1);
    assert!(searches(&out.join("store.json"))[0].1, "settled");
    let tuning_rows = runs(&out).iter().filter(|r| r[0] == "tuning").count();
    assert_eq!(tuning_rows, tuning.len());
}

/// `--time` bounds the plan: a program of half a second given 3 s has time
/// for a few tuning runs besides the before run and the confirmation's
/// pair, too few for a kernel launched once a run; the session says so and
/// what would settle it.
#[test]
fn a_budget_too_short_plans_fewer_runs_and_says_what_more_time_would_buy() {
    if !clang19_available() {
        return;
    }
    let program = repeat();
    let dir = temp_dir("tune-budget");
    let (out, store) = (dir.join("out"), dir.join("tune.json"));
    let program = program.to_string_lossy();
    let slow = [
        "sh",
        "-c",
        r#"sleep 0.5; exec "$0" "$@""#,
        &program,
        "1",
        "1000",
    ];
    let args = ["--time", "3s", "--confirm", "1", "--check", CHECK];
    let run = tune(&out, &store, &args, &slow).ok();
    let lines = progress(&run, "sh");
    let plan = lines
        .iter()
        .find(|l| l.starts_with("plan: "))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        plan.contains("as --time 3s allows after the before run (")
            && plan.ends_with(
                " a run, time kept for 2 confirmation runs); its searches need 13 (1 search, 1 \
                 launched once a run)"
            ),
        "{plan}"
    );
    let tuning = tuning_lines(&lines);
    assert!((1..=3).contains(&tuning.len()), "{lines:?}");
    let end = lines
        .iter()
        .find(|l| l.starts_with("after "))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        end.contains("--time 3s ")
            && end.contains(": 1 search still exploring, auto's grid stays for them: ")
            && end.contains(" (launched once a run: 13 tuning runs settle it); a session of 13 tuning runs would take about ")
            && end.ends_with("s)")
            && !end.contains("--runs"),
        "{end}"
    );
    assert_eq!(searches(&out.join("store.json")), searches(&store));
    assert!(!searches(&store)[0].1, "still exploring");
}

/// `repeat LAUNCHES 300` through a shell that counts its runs in
/// `counts/`: the tuning runs launch LAUNCHES times, the others once; the
/// runs without a store are heavy (1 000 000 rounds) but for the before
/// run and the second pair's, the runs reading the session's copy of the
/// store light but for the second pair's, and those reading a store of one
/// search alone (`alone-N/store.json`) light. With `--confirm 1` the pairs
/// of the set go faster, slower, faster: 2 of 3, which cannot tell; each
/// pair of the search alone is faster.
fn undecided_then_alone(program: &Path, counts: &Path) -> Vec<String> {
    let script = r#"n=$2 r=1
case "$GRIDSEL_POLICY,$GRIDSEL_CACHE" in
  auto,off) echo >> "$1/auto"; n=1; c=$(wc -l < "$1/auto")
    [ "$c" = 1 ] || [ "$c" = 3 ] || r=1000000 ;;
  auto,*/alone-*/store.json) n=1 ;;
  auto,*) echo >> "$1/learned"; n=1; [ "$(wc -l < "$1/learned")" = 2 ] && r=1000000 ;;
esac
exec "$0" "$n" 300 "$r""#;
    let (program, counts) = (program.to_string_lossy(), counts.to_string_lossy());
    ["sh", "-c", script, &program, &counts, "100"]
        .map(String::from)
        .to_vec()
}

/// Where the pairs cannot tell the learned set from auto's, the session
/// confirms the search that gained most on its own, keeps it when its own
/// pairs agree, and writes it.
#[test]
fn a_search_the_undecided_pairs_hide_is_confirmed_alone_and_kept() {
    if !clang19_available() {
        return;
    }
    // As above: `auto`'s grid measured slow, the search settles away from it.
    for attempt in 1..=5 {
        let dir = temp_dir(&format!("tune-alone-{attempt}"));
        let (out, store, counts) = (dir.join("out"), dir.join("tune.json"), dir.join("counts"));
        std::fs::create_dir_all(&counts).unwrap();
        empty_store(&store, 0o600);
        autos_grid_measured_slow(&store, "300");
        let command = undecided_then_alone(&repeat(), &counts);
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        let args = ["--confirm", "1", "--check", CHECK];
        let run = tune(&out, &store, &args, &command).ok();
        let decided = decisions(&out);
        assert_eq!(decided.len(), 1, "{decided:?}");
        if decided[0][1] == decided[0][2] {
            continue;
        }
        let lines = progress(&run, "sh");
        let labels: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.split(": ").next())
            .filter(|l| l.contains("confirmation "))
            .collect();
        let alone = |label: &str| lines.iter().find(|l| l.contains(label)).is_some();
        assert_eq!(labels.len(), 12, "3 pairs of the set, 3 alone: {lines:?}");
        assert!(
            labels[..6].iter().all(|l| l.starts_with("confirmation ")),
            "{labels:?}"
        );
        assert!(
            labels[6..]
                .iter()
                .all(|l| l.contains(" (class 17) alone, confirmation ")),
            "{labels:?}"
        );
        assert!(alone(" (class 17) alone: kept"), "{lines:?}");
        assert!(out.join("sh/alone-1/store.json").is_file());
        assert!(out.join("sh/alone-1/confirm-learned-3.csv").is_file());
        // The set was not kept, the search alone was: written, and said.
        assert!(
            run.stdout.contains("nothing kept: 3 pairs could not tell the runs reading the store from the runs without it"),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains(
                " (class 17) confirmed alone, the program's other searches at auto's grids: kept"
            ),
            "{}",
            run.stdout
        );
        assert_eq!(decided[0][3], "yes", "{decided:?}");
        assert!(
            decided[0][4].contains("; confirmed alone (pairs): faster"),
            "{decided:?}"
        );
        assert_eq!(searches(&store).len(), 1);
        return;
    }
    panic!("in every attempt the search kept auto's grid");
}

/// `repeat LAUNCHES 1000` through a shell that appends each run's policy
/// and `CUDA_VISIBLE_DEVICES` (`-` when unset) to the file `seen`.
fn seeing(program: &Path, seen: &Path, launches: &str) -> Vec<String> {
    let script =
        r#"echo "$GRIDSEL_POLICY ${CUDA_VISIBLE_DEVICES:--}" >> "$1"; shift; exec "$0" "$@""#;
    let (program, seen) = (program.to_string_lossy(), seen.to_string_lossy());
    ["sh", "-c", script, &program, &seen, launches, "1000"]
        .map(String::from)
        .to_vec()
}

/// `--gpus 0,1`: the tuning runs go two at once, one on each GPU, each on a
/// copy of the scratch store merged into it after the round (host offload
/// ignores the variable; what reaches the store shows the merge); the
/// before run and the confirmation run on the first GPU.
#[test]
fn tuning_runs_go_in_rounds_over_the_gpus_named_into_one_store() {
    if !clang19_available() {
        return;
    }
    let dir = temp_dir("tune-gpus");
    let (out, store, seen) = (dir.join("out"), dir.join("tune.json"), dir.join("seen"));
    let command = seeing(&repeat(), &seen, "1");
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let args = ["--gpus", "0,1", "--confirm", "1", "--check", CHECK];
    let run = tune(&out, &store, &args, &command).ok();
    let lines = progress(&run, "sh");
    assert!(
        lines.contains(
            &"plan: 13 tuning runs on 2 GPUs, 2 at once, what its searches need (1 search, 1 \
              launched once a run)"
        ),
        "{lines:?}"
    );
    let tuning = tuning_lines(&lines);
    assert!((5..=13).contains(&tuning.len()), "{lines:?}");
    for (i, line) in (1..).zip(&tuning) {
        let gpu = (i + 1) % 2;
        let label = format!("tuning run {i}/13 on GPU {gpu}: ");
        assert!(line.starts_with(&label), "{tuning:?}");
    }
    assert!(
        tuning
            .last()
            .unwrap()
            .ends_with("; 1 of 1 searches settled")
    );
    assert!(out.join("sh/tune-01.store.json").is_file());
    // Every run of a round on its own GPU; the others on the first.
    let seen = std::fs::read_to_string(&seen).unwrap();
    let seen: Vec<&str> = seen.lines().collect();
    assert_eq!(seen[0], "auto 0", "{seen:?}");
    let tuned = &seen[1..=tuning.len()];
    for round in tuned.chunks(2) {
        let mut gpus: Vec<&str> = round.to_vec();
        gpus.sort();
        let expected = ["tune 0", "tune 1"];
        assert_eq!(gpus, expected[..round.len()], "{seen:?}");
    }
    assert!(
        seen[1 + tuning.len()..].iter().all(|l| *l == "auto 0"),
        "{seen:?}"
    );
    // One store: every tuning run's process counted in the search, its
    // one launch a cold sample.
    let contents = gridsel_host::files::load_store(&out.join("store.json")).unwrap();
    let record = contents.table.records().next().unwrap();
    assert_eq!(record.tally.runs as usize, tuning.len(), "{record:?}");
    let cold: usize = record.search.samples.iter().map(|s| s.cold.len()).sum();
    assert_eq!(cold, tuning.len(), "{record:?}");
}

/// `--gpus all` enumerates the GPUs through the driver; without one (host
/// offload here) it says so in one line and tunes on one.
#[test]
fn all_gpus_without_a_driver_is_one_line_and_one_gpu() {
    if !clang19_available() {
        return;
    }
    let dir = temp_dir("tune-gpus-all");
    let (out, store, seen) = (dir.join("out"), dir.join("tune.json"), dir.join("seen"));
    let command = seeing(&repeat(), &seen, "100");
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let args = ["--gpus", "all", "--confirm", "1", "--check", CHECK];
    let run = tune(&out, &store, &args, &command).ok();
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("--gpus all: "))
        .collect();
    let seen = std::fs::read_to_string(&seen).unwrap();
    if said.is_empty() {
        // A machine with a driver: its GPUs, named.
        assert!(run.stderr.contains("tuning run 1/"), "{}", run.stderr);
        assert!(!seen.contains(" -"), "{seen}");
    } else {
        assert_eq!(said.len(), 1, "{}", run.stderr);
        assert!(
            said[0].starts_with("gridsel tune: --gpus all: ")
                && said[0].ends_with("; tuning on one GPU")
        );
        assert!(!run.stderr.contains(" on GPU "), "{}", run.stderr);
        assert!(seen.lines().all(|l| l.ends_with(" -")), "{seen}");
    }
}

/// `--allow-teams-regions`: the session searches a `target teams` region
/// without a distribute loop (class 0, which it otherwise leaves at LLVM's
/// grid), every run's output equal to the untuned run's, and a learned grid
/// other than LLVM's is written marked verified for the build.
#[test]
fn teams_regions_are_searched_only_when_allowed_and_written_verified() {
    if !clang19_available() {
        return;
    }
    let program = host_offload("teams_region", "teams_region.c", &[]);
    let program = program.to_string_lossy();
    let dir = temp_dir("tune-teams-regions");
    let command = [&*program, "20", "100"];
    // Without the flag: no search of the region, nothing to tune.
    let (out, store) = (dir.join("kept"), dir.join("kept.json"));
    let run = tune(&out, &store, &["--confirm", "1"], &command).ok();
    assert!(
        classes(&out.join("store.json")).is_empty(),
        "{}",
        run.stderr
    );
    // With it: searched, in class 0.
    let (out, store) = (dir.join("allowed"), dir.join("allowed.json"));
    let args = ["--allow-teams-regions", "--confirm", "1"];
    let run = tune(&out, &store, &args, &command).ok();
    assert_eq!(classes(&out.join("store.json")), [0], "{}", run.stderr);
    let contents = gridsel_host::files::load_store(&store).unwrap();
    let written: Vec<_> = contents.table.records().collect();
    // Host launch times decide whether the confirmation kept a grid other
    // than LLVM's: such a one is marked verified for it, auto's is not.
    for r in &written {
        let learned = gridsel_core::tune::learned(r);
        match learned.filter(|&c| c != gridsel_core::tune::search::Candidate::Auto) {
            Some(grid) => {
                assert_eq!(r.verified, Some(grid), "{r:?}");
                assert!(run.stderr.contains(
                    "gridsel tune: 1 grid of `target teams` regions written verified for this build"
                ));
            }
            None => assert_eq!(r.verified, None, "{r:?}"),
        }
    }
    // Outputs must equal the untuned run's: not with --check.
    let refused = gridsel(
        &[
            "tune",
            "--allow-teams-regions",
            "--check",
            "pass",
            "--",
            &program,
        ],
        &[],
    );
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("cannot be used with"),
        "{}",
        refused.stderr
    );
}

/// Sends signal `name` (`TERM`) to process `pid`, with kill(1).
fn send_signal(pid: u32, name: &str) {
    let sent = std::process::Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -s {name} {pid}");
}

/// Waits for the pid a run's shell wrote to `file` (`echo $$`): the
/// leader of the run's process group.
fn wait_for_pid(file: &Path) -> u32 {
    let written = wait_for(std::time::Duration::from_secs(60), || file.is_file());
    assert!(written, "{} was never written", file.display());
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Kills what is left of process group `group` (so that a failing test
/// leaves nothing behind) and returns what was.
fn survivors(group: u32) -> Vec<u32> {
    let gone = wait_for(std::time::Duration::from_secs(10), || {
        live_processes_of_group(group).is_empty()
    });
    let left = live_processes_of_group(group);
    if !gone {
        let _ = std::process::Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{group}")])
            .status();
    }
    left
}

/// A shell that writes its pid to `file` (whole, at once), starts a
/// process in the background and waits with another: three processes in
/// the run's group for five minutes.
fn sleeper(file: &Path) -> String {
    let file = file.display();
    format!("echo $$ > {file}.new && mv {file}.new {file}; sleep 300 & sleep 300; wait")
}

/// Ctrl-C, SIGTERM or SIGHUP to a `gridsel tune` or `compare` while a run
/// goes on: the run's whole process group is killed (it leads its own, so
/// the terminal's Ctrl-C never reaches it), gridsel says so and exits with
/// the shell's status for the signal; the store is not written. It used
/// to exit at once and leave the run going, re-parented, for hours.
#[test]
fn stopping_a_session_or_a_comparison_kills_the_runs_process_group() {
    let dir = temp_dir("tune-stopped");
    for (i, (command, signal, number)) in [
        ("tune", "INT", 2),
        ("tune", "TERM", 15),
        ("tune", "HUP", 1),
        ("compare", "TERM", 15),
    ]
    .into_iter()
    .enumerate()
    {
        let (out, store, pid) = (
            dir.join(format!("out-{i}")),
            dir.join(format!("tune-{i}.json")),
            dir.join(format!("pid-{i}")),
        );
        let (out, store_arg) = (out.to_string_lossy(), store.to_string_lossy());
        let script = sleeper(&pid);
        let mut args = vec![command, "--out", &out];
        if command == "tune" {
            args.extend(["--store", &store_arg]);
        }
        args.extend(["--", "sh", "-c", &script]);
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let mut gridsel = gridsel_cli_command(GRIDSEL, &args, &[], &repo())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let group = wait_for_pid(&pid);
        assert!(
            wait_for(std::time::Duration::from_secs(10), || {
                live_processes_of_group(group).len() == 3
            }),
            "{:?}",
            live_processes_of_group(group)
        );
        // The program starts with no signal blocked, whatever gridsel blocks.
        // The shell blocks every signal for a moment around each fork of its
        // own, so the mask is read until the shell is between forks.
        let status = || std::fs::read_to_string(format!("/proc/{group}/status")).unwrap();
        let unblocked = wait_for(std::time::Duration::from_secs(10), || {
            status().lines().any(|l| l == "SigBlk:\t0000000000000000")
        });
        assert!(unblocked, "{}", status());
        send_signal(gridsel.id(), signal);
        let ended = wait_for(std::time::Duration::from_secs(30), || {
            gridsel.try_wait().unwrap().is_some()
        });
        let left = survivors(group);
        assert!(ended, "gridsel {command} did not stop on SIG{signal}");
        let output = gridsel.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(left, Vec::<u32>::new(), "{command} SIG{signal}: {stderr}");
        assert_eq!(output.status.code(), Some(128 + number), "{stderr}");
        let said = format!(
            "gridsel {command}: stopped by SIG{signal}; the running program was killed with its process group"
        );
        assert!(stderr.lines().any(|l| l == said), "{stderr}");
        assert!(!store.exists());
    }
}

/// SIGKILL, which gridsel cannot see: the program it runs dies with it
/// (its parent-death signal), instead of running on re-parented.
#[test]
fn a_program_dies_with_a_killed_session() {
    let dir = temp_dir("tune-killed");
    let pid = dir.join("pid");
    let script = format!(
        "echo $$ > {pid}.new && mv {pid}.new {pid}; exec sleep 300",
        pid = pid.display()
    );
    let (out, store) = (dir.join("out"), dir.join("tune.json"));
    let (out, store) = (out.to_string_lossy(), store.to_string_lossy());
    let args = [
        "tune", "--out", &out, "--store", &store, "--", "sh", "-c", &script,
    ];
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let mut gridsel = gridsel_cli_command(GRIDSEL, &args, &[], &repo())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let group = wait_for_pid(&pid);
    gridsel.kill().unwrap();
    gridsel.wait().unwrap();
    assert_eq!(survivors(group), Vec::<u32>::new());
}

/// A program printing past --max-output and then a line that differs
/// from run to run: the part the log keeps is the same in every run, but
/// a cut output is never verified, and nothing is written.
#[test]
fn an_output_cut_at_the_cap_does_not_verify() {
    let dir = temp_dir("tune-output-cut");
    let (out, store) = (dir.join("out"), dir.join("tune.json"));
    let script =
        r#"head -c 2000000 /dev/zero | tr '\0' x; echo; echo "last line under $GRIDSEL_POLICY""#;
    let run = tune(&out, &store, &["--max-output", "1"], &["sh", "-c", script]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let said = "gridsel: sh, before: its output passed --max-output (1 MiB) and was cut: only a \
                whole output is verified (raise --max-output)";
    assert!(run.stderr.contains(said), "{}", run.stderr);
    assert!(!store.exists());
}

/// A kernel whose every launch is a `nowait` region is searched and settles
/// in a session as any other: the session's runs wait for such launches
/// (`GRIDSEL_TUNE_WAIT`), so they are timed (without it, a `nowait` launch
/// returns before its kernel ends and `tune` leaves it at auto's grid, with
/// no search: miniWeather's eight step kernels on the H100).
#[test]
fn a_kernel_launched_nowait_is_searched_and_settles_in_a_session() {
    if !clang19_available() {
        return;
    }
    let program = repeat();
    let dir = temp_dir("tune-nowait");
    let (out, store) = (dir.join("out"), dir.join("tune.json"));
    let program = program.to_string_lossy();
    let args = ["--runs", "3", "--confirm", "1", "--check", CHECK];
    let command = [&*program, "20", "1000", "1", "1", "nowait"];
    let run = tune(&out, &store, &args, &command).ok();
    let searches = searches(&out.join("store.json"));
    assert_eq!(searches.len(), 1, "{searches:?}: {}", run.stderr);
    assert!(searches[0].0.contains("_step_nowait_l"), "{searches:?}");
    assert!(searches[0].1, "settled: {}", run.stderr);
}

/// The caller's own GRIDSEL_* variables reach a session's runs only where
/// they describe the GPU, the program's opt-ins or the log: a site store
/// would be judged as the learned set, an alternation of the caller's
/// would compare auto's grid with itself, a bound of the caller's has no
/// say in unbounded runs, and the session's runs always wait for `nowait`
/// launches.
#[test]
fn a_sessions_runs_get_only_the_gridsel_environment_it_sets() {
    if !clang19_available() {
        return;
    }
    let program = repeat();
    let dir = temp_dir("tune-environment");
    let (out, store) = (dir.join("out"), dir.join("tune.json"));
    let script = r#"env | grep '^GRIDSEL_' | sort; exec "$0" "$@""#;
    let (out_arg, store_arg) = (out.to_string_lossy(), store.to_string_lossy());
    let program = program.to_string_lossy();
    let args = [
        "tune",
        "--out",
        &out_arg,
        "--store",
        &store_arg,
        "--runs",
        "1",
        "--confirm",
        "1",
        "--check",
        CHECK,
        "--",
        "sh",
        "-c",
        script,
        &program,
        "100",
        "1000",
    ];
    let site = dir.join("site.json").to_string_lossy().into_owned();
    let run = gridsel(
        &args,
        &[
            ("GRIDSEL_SITE_CACHE", &site),
            ("GRIDSEL_LEARNED_ALTERNATE", "odd"),
            ("GRIDSEL_TUNE_OVERHEAD", "5"),
            ("GRIDSEL_TUNE_BOUND", "average"),
            ("GRIDSEL_TUNE_WAIT", "off"),
            ("GRIDSEL_MODEL", "/nonexistent/model.json"),
            ("GRIDSEL_NOT_YET_KNOWN", "1"),
            ("GRIDSEL_TEAMS_REGIONS", "keep"),
            ("GRIDSEL_LOG", "warn"),
        ],
    )
    .ok();
    let mut logs = 0;
    for entry in std::fs::read_dir(out.join("sh")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension() != Some(OsStr::new("log")) {
            continue;
        }
        logs += 1;
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let log = std::fs::read_to_string(&path).unwrap();
        let names: Vec<&str> = log
            .lines()
            .filter(|l| l.starts_with("GRIDSEL_"))
            .map(|l| l.split('=').next().unwrap())
            .collect();
        let mut expected = vec![
            "GRIDSEL_CACHE",
            "GRIDSEL_DEVICE",
            "GRIDSEL_LOG",
            "GRIDSEL_POLICY",
            "GRIDSEL_PROFILE",
            "GRIDSEL_TEAMS_REGIONS",
            "GRIDSEL_TUNE_CLOCK",
            "GRIDSEL_TUNE_WAIT",
        ];
        if stem.starts_with("tune-") {
            expected.extend(["GRIDSEL_TUNE_OVERHEAD", "GRIDSEL_TUNE_SESSION_RUNS"]);
            assert!(log.contains("GRIDSEL_TUNE_OVERHEAD=off\n"), "{log}");
        }
        if stem.starts_with("confirm-alternating-") {
            expected.insert(2, "GRIDSEL_LEARNED_ALTERNATE");
        }
        expected.sort();
        assert_eq!(names, expected, "{stem}: {}", run.stderr);
        assert!(log.contains("GRIDSEL_DEVICE=h100\n"), "{log}");
        assert!(log.contains("GRIDSEL_TUNE_WAIT=on\n"), "{log}");
        assert!(log.contains("GRIDSEL_TUNE_CLOCK=gpu\n"), "{log}");
    }
    assert!(logs >= 3, "{}", run.stderr);
}

/// What would make a session fail at its end is refused before its first
/// run, in one line, with nothing run: the store's folder missing (and a
/// default store's base: only the cache and gridsel folders are created),
/// the store read-only or holding records that do not validate, a program
/// that does not exist, a manifest setting a variable the session owns.
#[test]
fn a_session_that_could_not_write_its_store_or_start_its_programs_runs_nothing() {
    let dir = temp_dir("tune-preflight");
    let out = dir.join("out");
    let refused = |run: &Run, said: &str| {
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", run.stderr);
        assert!(
            lines[0].starts_with("gridsel: ") && lines[0].contains(said),
            "{}",
            lines[0]
        );
        assert!(!out.exists());
    };
    let nothing_run = "; nothing run (the session would fail to write it at its end)";

    let missing = dir.join("missing/tune.json");
    let run = tune(&out, &missing, &[], &["true"]);
    refused(
        &run,
        &format!(
            "{}: its folder does not exist{nothing_run}",
            missing.display()
        ),
    );

    let read_only = dir.join("read-only.json");
    empty_store(&read_only, 0o444);
    let run = tune(&out, &read_only, &[], &["true"]);
    refused(
        &run,
        &format!(
            "{}: read-only, not replaced{nothing_run}",
            read_only.display()
        ),
    );

    let invalid = dir.join("invalid.json");
    std::fs::write(
        &invalid,
        "{\"version\": 3, \"records\": [\n{\"kernel\": \"k\"}\n]}\n",
    )
    .unwrap();
    let run = tune(&out, &invalid, &[], &["true"]);
    refused(&run, "; fix the file or move it away first; nothing run");

    let store = dir.join("tune.json");
    let run = tune(&out, &store, &[], &["./no-such-program"]);
    refused(&run, "program `no-such-program`: ");
    assert!(
        run.stderr
            .contains("no-such-program is not an executable file; nothing run")
    );
    let manifest = dir.join("suite.toml");
    std::fs::write(
        &manifest,
        "[[program]]\nname = \"t\"\ncommand = [\"true\"]\nenv = { GRIDSEL_SITE_CACHE = \"/s.json\" }\n",
    )
    .unwrap();
    let (out_arg, store_arg) = (out.to_string_lossy(), store.to_string_lossy());
    let manifest_arg = manifest.to_string_lossy();
    let args = [
        "tune",
        "--out",
        &out_arg,
        "--store",
        &store_arg,
        "--manifest",
        &manifest_arg,
    ];
    refused(
        &gridsel(&args, &[]),
        "program `t`: its env sets GRIDSEL_SITE_CACHE, which",
    );
    assert!(!store.exists());

    // The default store under a HOME that does not exist: nothing created.
    let home = dir.join("nowhere/home");
    let home_arg = home.to_string_lossy();
    let run = gridsel(
        &["tune", "--out", &out_arg, "--", "true"],
        &[("HOME", &home_arg)],
    );
    refused(
        &run,
        &format!(
            "cannot create its folder: {} does not exist",
            home.display()
        ),
    );
    assert!(!dir.join("nowhere").exists());
}

/// A program that exits leaving a process that holds its output: the run
/// ends 2 s after the program, not at --timeout, and says why.
#[test]
fn a_run_whose_output_outlives_the_program_ends_soon_after_it() {
    let dir = temp_dir("tune-held-output");
    let start = std::time::Instant::now();
    let script = "sleep 100 & echo done";
    let run = tune(
        &dir.join("out"),
        &dir.join("tune.json"),
        &["--runs", "1", "--confirm", "1", "--timeout", "60"],
        &["sh", "-c", script],
    )
    .ok();
    let said = "[tune sh] before: the program exited, but processes it started kept its output \
                open: killed with its process group after 2 s";
    assert!(run.stderr.lines().any(|l| l == said), "{}", run.stderr);
    let lines = progress(&run, "sh");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("before: ") && l.ends_with(", ok, verified")),
        "{lines:?}"
    );
    assert!(
        start.elapsed() < std::time::Duration::from_secs(55),
        "{:?}",
        start.elapsed()
    );
}

/// A session stopped while its tuning runs go on two GPUs at once kills
/// both runs' process groups, not only the last one started.
#[test]
fn stopping_a_session_on_two_gpus_kills_both_runs() {
    if !clang19_available() {
        return;
    }
    let dir = temp_dir("tune-stopped-gpus");
    let (out, store) = (dir.join("out"), dir.join("tune.json"));
    // The untuned run passes; each tuning run writes its group and sleeps.
    let script = format!(
        r#"if [ "$GRIDSEL_POLICY" = tune ]; then echo $$ > '{}'/pid-$CUDA_VISIBLE_DEVICES; sleep 300; fi; exec "$0" "$@""#,
        dir.display()
    );
    let program = repeat();
    let (out_s, store_s, program_s) = (
        out.to_string_lossy(),
        store.to_string_lossy(),
        program.to_string_lossy(),
    );
    let args = [
        "tune", "--gpus", "0,1", "--out", &out_s, "--store", &store_s, "--", "sh", "-c", &script,
        &program_s, "1", "1000",
    ];
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let mut gridsel = gridsel_cli_command(GRIDSEL, &args, &[], &repo())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let groups: Vec<u32> = ["0", "1"]
        .iter()
        .map(|gpu| wait_for_pid(&dir.join(format!("pid-{gpu}"))))
        .collect();
    send_signal(gridsel.id(), "TERM");
    let ended = wait_for(std::time::Duration::from_secs(30), || {
        gridsel.try_wait().unwrap().is_some()
    });
    assert!(ended, "gridsel tune did not stop on SIGTERM");
    let output = gridsel.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    for group in groups {
        assert_eq!(survivors(group), Vec::<u32>::new(), "{stderr}");
    }
    assert_eq!(output.status.code(), Some(128 + 15), "{stderr}");
    let said = "gridsel tune: stopped by SIGTERM; the running programs were killed with their process groups";
    assert!(stderr.lines().any(|l| l == said), "{stderr}");
    assert!(!store.exists());
}
