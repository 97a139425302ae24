//! `gridsel compare` end to end: real host-offload programs from tests/c/ run
//! under the real libomptarget with libgridsel.so preloaded, an H100 forced
//! (`GRIDSEL_DEVICE=h100`) so that every policy chooses grids without a GPU.
//! The grids the comparison reports are checked against `gridsel select`
//! and against the grids the programs fix themselves; the files of a suite
//! (report.md, report.svg, summary.csv, runs.csv) against each other.

use gridsel_test_support as support;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::*;

const GRIDSEL: &str = env!("CARGO_BIN_EXE_gridsel");

/// tests/c/kernels.c: `teams_loop` (open grid) at trip counts 1000 and 20,
/// `clause_loop` (num_teams(7) thread_limit(3)), `single_region`,
/// `parallel_for`, each launched once per run.
fn kernels() -> PathBuf {
    host_offload("kernels", "kernels.c", &[])
}

/// Runs `gridsel` with only PATH, an H100 forced, two host threads per team
/// and `env` in its environment, in `cwd`.
fn gridsel(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Run {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    gridsel_os(&args, env, cwd)
}

/// [`gridsel`] with arguments of any bytes.
fn gridsel_os(args: &[&OsStr], env: &[(&str, &str)], cwd: &Path) -> Run {
    run_gridsel_cli(GRIDSEL, args, env, cwd)
}

/// `gridsel select`'s grids for `kernel` of `binary`: (policy's, llvm's) as
/// `BxT`.
fn select(
    binary: &Path,
    kernel: &str,
    trip_count: u64,
    policy: &str,
    extra: &[&str],
) -> (String, String) {
    let trip = trip_count.to_string();
    let mut args = vec![
        "select",
        "--device",
        "h100",
        "--json",
        "--policy",
        policy,
        "--trip-count",
        &trip,
        "--kernel",
        kernel,
        "--binary",
    ];
    let binary = binary.to_string_lossy();
    args.push(&binary);
    args.extend(extra);
    let run = gridsel(&args, &[], &repo()).ok();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("select --json");
    let grid = |b: &str, t: &str| format!("{}x{}", v[b], v[t]);
    (
        grid("blocks", "threads"),
        grid("llvm_blocks", "llvm_threads"),
    )
}

/// The offload kernels of `binary`, by `gridsel inspect --json`.
fn kernel_names(binary: &Path) -> BTreeSet<String> {
    let run = gridsel(
        &["inspect", "--json", &binary.to_string_lossy()],
        &[],
        &repo(),
    )
    .ok();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("inspect --json");
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|image| image["kernels"].as_array().unwrap())
        .map(|k| k["name"].as_str().unwrap().to_string())
        .collect()
}

/// One row of compare's kernel table on stdout.
#[derive(Debug)]
struct TableRow {
    grid: String,
    launches: u32,
    total_ms: String,
    speedup: String,
}

/// Compare's kernel tables on stdout: (kernel, trip count, policy) -> row.
fn kernel_table(stdout: &str) -> BTreeMap<(String, u64, String), TableRow> {
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in stdout.lines() {
        let cells: Vec<&str> = line.split_whitespace().collect();
        if cells.first() == Some(&"kernel") {
            in_table = true;
            continue;
        }
        if cells.len() != 9 {
            in_table = false;
        }
        if in_table {
            let row = TableRow {
                grid: cells[3].into(),
                launches: cells[4].parse().unwrap(),
                total_ms: cells[7].into(),
                speedup: cells[8].into(),
            };
            let key = (
                cells[0].to_string(),
                cells[1].parse().unwrap(),
                cells[2].to_string(),
            );
            assert!(rows.insert(key, row).is_none(), "{line}");
        }
    }
    rows
}

/// The fields of a CSV line (quoted fields may hold commas).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut fields, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// A CSV file as one map per row, keyed by the header.
fn read_csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header = csv_fields(lines.next().expect("header"));
    lines
        .map(|l| {
            let fields = csv_fields(l);
            assert_eq!(fields.len(), header.len(), "{l}");
            header.iter().cloned().zip(fields).collect()
        })
        .collect()
}

#[test]
fn a_program_compared_under_three_policies_shows_each_kernel_and_the_chosen_grids() {
    if !clang19_available() {
        return;
    }
    let program = kernels();
    let out = temp_dir("compare-single");
    let run = gridsel(
        &[
            "compare",
            "--runs",
            "2",
            "--policies",
            "llvm,auto,lloyd",
            "--out",
            &out.to_string_lossy(),
            "--",
            &program.to_string_lossy(),
            "all",
        ],
        &[],
        &repo(),
    )
    .ok();

    // One progress line per run, the order rotating between rounds.
    let progress: Vec<(&str, &str)> = run
        .stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("[round ")?;
            let (round, rest) = rest.split_once("] kernels ")?;
            let (policy, status) = rest.split_once(": ")?;
            assert!(status.ends_with(" s, ok"), "{l}");
            Some((round, policy))
        })
        .collect();
    assert_eq!(
        progress,
        [
            ("1/2", "llvm"),
            ("1/2", "auto"),
            ("1/2", "lloyd"),
            ("2/2", "auto"),
            ("2/2", "lloyd"),
            ("2/2", "llvm")
        ],
        "{}",
        run.stderr
    );

    let table = kernel_table(&run.stdout);
    let names = kernel_names(&program);
    assert_eq!(names.len(), 4, "{names:?}");
    let listed: BTreeSet<String> = table.keys().map(|(k, _, _)| k.clone()).collect();
    assert_eq!(listed, names, "{}", run.stdout);
    for ((kernel, trip, policy), row) in &table {
        // Each run launches each (kernel, trip count) once; both rounds pool.
        assert_eq!(row.launches, 2, "{kernel} {trip} {policy}");
        if policy == "llvm" {
            assert_eq!(row.speedup, "1.000");
        }
    }
    let teams_loop = names.iter().find(|n| n.contains("_teams_loop_l")).unwrap();
    for trip in [1000, 20] {
        let row = |policy: &str| &table[&(teams_loop.clone(), trip, policy.to_string())];
        for policy in ["auto", "lloyd"] {
            let (chosen, llvm) = select(&program, teams_loop, trip, policy, &[]);
            assert_eq!(row(policy).grid, chosen, "{policy} at {trip}");
            assert_eq!(row("llvm").grid, llvm, "llvm at {trip}");
            assert_ne!(chosen, llvm, "{policy} keeps LLVM's grid at {trip}");
        }
    }
    // Known values (README, tests/preload.rs): at 1000 iterations auto
    // launches one 128-thread block per distribute chunk, lloyd 96-thread
    // blocks; LLVM 19's host-plugin grid is 32 x 32.
    let grid = |trip: u64, policy: &str| {
        table[&(teams_loop.clone(), trip, policy.to_string())]
            .grid
            .as_str()
    };
    assert_eq!(
        [grid(1000, "llvm"), grid(1000, "auto"), grid(1000, "lloyd")],
        ["32x32", "8x128", "11x96"]
    );
    // clause_loop's clauses fix its grid: every policy keeps it.
    let clause_loop = names.iter().find(|n| n.contains("_clause_loop_l")).unwrap();
    for policy in ["llvm", "auto", "lloyd"] {
        assert_eq!(
            table[&(clause_loop.clone(), 1000, policy.to_string())].grid,
            "7x3"
        );
    }
    // Wall times and geomeans: every policy ran both rounds; 5 cases each,
    // 2 of them (teams_loop) with a grid other than llvm's.
    for policy in ["llvm", "auto", "lloyd"] {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.starts_with(policy) && l.split_whitespace().nth(1) == Some("2/2")),
            "{policy}:\n{}",
            run.stdout
        );
    }
    for policy in ["auto", "lloyd"] {
        let line = run
            .stdout
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|c| c.len() == 5 && c[0] == policy && c[3] == "2");
        assert!(line.is_some_and(|c| c[1] == "5"), "{}", run.stdout);
    }
    for file in ["report.md", "report.svg", "summary.csv", "runs.csv"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    assert_eq!(read_csv(&out.join("runs.csv")).len(), 6);

    // Each row's total is the sum of its launches' times in the runs'
    // profiles; beside the wall times, each policy's sum over every launch
    // per run.
    let mut sums: BTreeMap<(String, u64, String), u64> = BTreeMap::new();
    for round in [1, 2] {
        for policy in ["llvm", "auto", "lloyd"] {
            let profile = out.join(format!("kernels/r{round}-{policy}.csv"));
            for row in read_csv(&profile) {
                let key = (
                    row["kernel"].clone(),
                    row["trip_count"].parse().unwrap(),
                    policy.to_string(),
                );
                *sums.entry(key).or_default() += row["ns"].parse::<u64>().unwrap();
            }
        }
    }
    assert_eq!(
        sums.keys().collect::<Vec<_>>(),
        table.keys().collect::<Vec<_>>()
    );
    for (key, row) in &table {
        assert_eq!(
            row.total_ms,
            format!("{:.3}", sums[key] as f64 / 1e6),
            "{key:?}"
        );
    }
    for policy in ["llvm", "auto", "lloyd"] {
        let per_run: u64 = sums
            .iter()
            .filter(|((_, _, p), _)| p == policy)
            .map(|(_, ns)| ns)
            .sum::<u64>()
            / 2;
        let wall_row = run
            .stdout
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|c| c.len() == 6 && c[0] == policy && c[1] == "2/2")
            .unwrap_or_else(|| panic!("{policy}: {}", run.stdout));
        assert_eq!(
            wall_row[4],
            format!("{:.6}", per_run as f64 / 1e9),
            "{policy}"
        );
    }
}

#[test]
fn failed_runs_are_reported_the_others_go_on_and_the_environment_is_as_documented() {
    if !clang19_available() {
        return;
    }
    let program = kernels();
    let spy = support::spy_library();
    let out = temp_dir("compare-failing");
    let user_profile = out.join("users-own-profile.csv");
    // The wrapper shows what each run's environment holds, then fails under
    // lloyd and runs the program under every other policy.
    let script = r#"echo "policy=$GRIDSEL_POLICY profile=$GRIDSEL_PROFILE preload=$LD_PRELOAD mark=$MARK"
        [ "$GRIDSEL_POLICY" != lloyd ] || exit 3
        exec "$0" "$@""#;
    let run = gridsel(
        &[
            "compare",
            "--runs",
            "2",
            "--policies",
            "auto,lloyd",
            "--out",
            &out.to_string_lossy(),
            "--",
            "sh",
            "-c",
            script,
            &program.to_string_lossy(),
            "loop",
            "1000",
        ],
        &[
            ("GRIDSEL_POLICY", "tune"),
            ("GRIDSEL_PROFILE", &user_profile.to_string_lossy()),
            ("LD_PRELOAD", &spy.to_string_lossy()),
            ("MARK", "kept"),
        ],
        &repo(),
    );
    assert_eq!(
        run.code,
        Some(1),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    let folder = out.join("sh");
    for round in [1, 2] {
        let log = folder.join(format!("r{round}-lloyd.log"));
        let expected = format!(
            "failed: sh under lloyd, round {round}/2: exit 3 (log: {})",
            log.display()
        );
        assert!(run.stderr.contains(&expected), "{expected}\n{}", run.stderr);
    }
    assert!(
        run.stderr.contains("gridsel: 2 of 6 runs failed"),
        "{}",
        run.stderr
    );
    let ok_runs = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("[round ") && l.ends_with(", ok"))
        .count();
    assert_eq!(ok_runs, 4, "{}", run.stderr);

    // The runs that went on were measured; the failed ones count nowhere.
    let table = kernel_table(&run.stdout);
    let policies: BTreeSet<&str> = table.keys().map(|(_, _, p)| p.as_str()).collect();
    assert_eq!(policies, BTreeSet::from(["llvm", "auto"]), "{}", run.stdout);
    let (auto_grid, _) = select(&program, &table.keys().next().unwrap().0, 1000, "auto", &[]);
    let auto_row = table.iter().find(|((_, _, p), _)| p == "auto").unwrap().1;
    assert_eq!(auto_row.grid, auto_grid);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()[..]
                == ["lloyd", "0/2", "-", "-", "-", "-"])
    );

    // Each run: its own policy and profile, gridsel first in LD_PRELOAD and
    // the caller's library after it, the caller's other variables kept.
    let lib = lib();
    for (round, policy) in [(1, "llvm"), (2, "auto"), (1, "lloyd")] {
        let stem = format!("r{round}-{policy}");
        let log = std::fs::read_to_string(folder.join(format!("{stem}.log"))).unwrap();
        let expected = format!(
            "policy={policy} profile={} preload={} {} mark=kept",
            folder.join(format!("{stem}.csv")).display(),
            lib.display(),
            spy.display()
        );
        assert_eq!(log.lines().next(), Some(expected.as_str()), "{log}");
        if policy == "auto" {
            // The caller's library, loaded after gridsel, saw auto's grid.
            let (blocks, threads) = auto_grid.split_once('x').unwrap();
            let seen = format!("trip 1000 teams {blocks} limit {threads}");
            assert!(log.contains(&seen), "{seen}\n{log}");
        }
    }
    assert!(
        !user_profile.exists(),
        "the caller's GRIDSEL_PROFILE was written"
    );

    let runs = read_csv(&out.join("runs.csv"));
    let failed: Vec<_> = runs.iter().filter(|r| r["status"] != "ok").collect();
    assert_eq!(failed.len(), 2);
    assert!(
        failed
            .iter()
            .all(|r| r["policy"] == "lloyd" && r["status"] == "exit 3" && r["exit_code"] == "3")
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let failed_section = md.split("## Failed runs").nth(1).unwrap();
    assert_eq!(
        failed_section.matches("| sh | ").count(),
        2,
        "{failed_section}"
    );
}

#[test]
fn a_missing_library_stops_compare_before_any_run() {
    let out = temp_dir("compare-nolib");
    let missing = out.join("nowhere/libgridsel.so");
    let run = gridsel(
        &[
            "compare",
            "--lib",
            &missing.to_string_lossy(),
            "--out",
            &out.join("o").to_string_lossy(),
            "--",
            "true",
        ],
        &[],
        &repo(),
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains(&format!("no library at {}", missing.display()))
            && run.stderr.contains("--lib"),
        "{}",
        run.stderr
    );
    assert!(!out.join("o").exists(), "runs were started");
    // No program and no manifest: clap refuses.
    let run = gridsel(&["compare"], &[], &repo());
    assert_eq!(run.code, Some(2), "{}", run.stderr);
}

#[test]
fn a_suite_writes_a_report_a_chart_and_a_summary_that_agree() {
    if !clang19_available() {
        return;
    }
    let kernels = kernels();
    let repeat = host_offload("repeat", "repeat.c", &[]);
    let suite = temp_dir("compare-suite");
    std::fs::create_dir_all(suite.join("bin")).unwrap();
    std::fs::copy(&repeat, suite.join("bin/repeat")).unwrap();
    // `repeat` runs in bin/ (relative to the manifest) with the paper's
    // ThreadsPerBlock set to 64 for it alone.
    let manifest = format!(
        r#"
[[program]]
name = "kernels"
command = ["{}", "all"]

[[program]]
name = "repeat"
command = ["./repeat", "20", "500"]
cwd = "bin"
env = {{ GRIDSEL_THREADS_PER_BLOCK = "64" }}
"#,
        kernels.display()
    );
    std::fs::write(suite.join("suite.toml"), manifest).unwrap();
    let out = suite.join("out");
    // Run from elsewhere: paths in the manifest are relative to it.
    let run = gridsel(
        &[
            "compare",
            "--manifest",
            &suite.join("suite.toml").to_string_lossy(),
            "--runs",
            "2",
            "--policies",
            "lloyd,fixed:64,2",
            "--out",
            &out.to_string_lossy(),
        ],
        &[],
        &repo(),
    )
    .ok();
    assert!(run.stdout.contains("== kernels: ") && run.stdout.contains("== repeat: "));
    assert!(run.stdout.contains("== all programs =="));

    // Raw files: every run ran, with its profile and log in --out.
    let runs = read_csv(&out.join("runs.csv"));
    assert_eq!(runs.len(), 2 * 2 * 3);
    for r in &runs {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert!(
            Path::new(&r["profile"]).is_file() && Path::new(&r["log"]).is_file(),
            "{r:?}"
        );
    }
    assert!(out.join("kernels/r1-fixed_64_2.csv").is_file());

    let summary = read_csv(&out.join("summary.csv"));
    let find = |program: &str, kernel_part: &str, trip: &str, policy: &str| {
        summary
            .iter()
            .find(|r| {
                r["program"] == program
                    && r["kernel"].contains(kernel_part)
                    && r["trip_count"] == trip
                    && r["policy"] == policy
            })
            .unwrap_or_else(|| panic!("{program} {kernel_part} {trip} {policy}"))
    };
    let grid = |r: &BTreeMap<String, String>| format!("{}x{}", r["blocks"], r["threads"]);
    // The program's env reached its runs only: lloyd with ThreadsPerBlock 64
    // for repeat, the default 96 for kernels.
    let step = find("repeat", "_step_l", "500", "lloyd");
    let binary = suite.join("bin/repeat");
    let (chosen, _) = select(
        &binary,
        &step["kernel"],
        500,
        "lloyd",
        &["--threads-per-block", "64"],
    );
    assert_eq!((grid(step), chosen.as_str()), ("8x64".to_string(), "8x64"));
    assert_eq!(step["launches"], "40");
    assert_eq!(
        grid(find("kernels", "_teams_loop_l", "1000", "lloyd")),
        "11x96"
    );
    // A fixed grid, named with its comma, for every open loop.
    assert_eq!(grid(find("repeat", "_step_l", "500", "fixed:64,2")), "2x64");
    assert_eq!(
        grid(find("kernels", "_teams_loop_l", "20", "fixed:64,2")),
        "2x64"
    );

    // report.md's kernel rows are summary.csv's rows.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let mut md_rows = BTreeSet::new();
    let mut program = String::new();
    for line in md.lines() {
        if let Some(name) = line.strip_prefix("## ") {
            program = name.to_string();
        }
        if line.starts_with("| `") {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            let kernel = cells[0].trim_matches('`');
            md_rows.insert(
                [
                    &program, kernel, cells[1], cells[2], cells[3], cells[4], cells[7], cells[8],
                ]
                .map(String::from),
            );
        }
    }
    let csv_rows: BTreeSet<[String; 8]> = summary
        .iter()
        .map(|r| {
            let speedup = r["speedup"]
                .parse::<f64>()
                .map_or("-".into(), |s| format!("{s:.3}"));
            let total_ms = format!("{:.3}", r["total_ns"].parse::<f64>().unwrap() / 1e6);
            [
                &r["program"],
                &r["kernel"],
                &r["trip_count"],
                &r["policy"],
                &grid(r),
                &r["launches"],
                &total_ms,
                &speedup,
            ]
            .map(String::from)
        })
        .collect();
    assert_eq!(md_rows, csv_rows);
    assert_eq!(csv_rows.len(), summary.len());
    // The overall geomeans are those of summary.csv's speedups.
    for policy in ["lloyd", "fixed:64,2"] {
        let speedups: Vec<f64> = summary
            .iter()
            .filter(|r| r["policy"] == policy)
            .map(|r| r["speedup"].parse::<f64>().unwrap())
            .collect();
        let geomean = (speedups.iter().map(|s| s.ln()).sum::<f64>() / speedups.len() as f64).exp();
        let row = format!("| {policy} | {} | {geomean:.3} |", speedups.len());
        let overall = md
            .split("## Geomean speedup over llvm, all programs")
            .nth(1)
            .unwrap();
        assert!(overall.contains(&row), "{row}\n{md}");
    }

    // report.svg: one bar per (program, kernel, trip count) and compared
    // policy, carrying summary.csv's speedup.
    let svg = std::fs::read_to_string(out.join("report.svg")).unwrap();
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    let attribute = |element: &str, name: &str| {
        let start = element.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        element[start..start + element[start..].find('"').unwrap()].to_string()
    };
    let bars: BTreeSet<[String; 5]> = svg
        .split("<rect class=\"bar\"")
        .skip(1)
        .map(|bar| {
            ["program", "kernel", "trip-count", "policy", "speedup"]
                .map(|a| attribute(bar, &format!("data-{a}")))
        })
        .collect();
    let expected: BTreeSet<[String; 5]> = summary
        .iter()
        .filter(|r| r["policy"] != "llvm")
        .map(|r| {
            [
                &r["program"],
                &r["kernel"],
                &r["trip_count"],
                &r["policy"],
                &r["speedup"],
            ]
            .map(String::from)
        })
        .collect();
    assert_eq!(svg.matches("<rect class=\"bar\"").count(), expected.len());
    assert_eq!(bars, expected);
    // 5 cases of kernels and 1 of repeat, each under 2 compared policies.
    assert_eq!(expected.len(), 12);
}

/// `compare --out out -- sh -c script sh` under llvm and auto with `extra`
/// options, one round unless they say otherwise.
fn compare_script(out: &Path, script: &str, extra: &[&str]) -> Run {
    let out = out.to_string_lossy();
    let mut args = vec!["compare", "--out", &out];
    if !extra.contains(&"--runs") {
        args.extend(["--runs", "1"]);
    }
    args.extend(extra);
    args.extend(["--", "sh", "-c", script, "sh"]);
    gridsel(&args, &[], &repo())
}

#[test]
fn the_output_folder_is_new_and_no_file_is_created_through_a_link() {
    let dir = temp_dir("compare-out-folder");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "keep me\n").unwrap();

    // A folder of an earlier run, or one holding a planted link, is
    // refused before any run: nothing is written through the link.
    let used = dir.join("used");
    std::fs::create_dir(&used).unwrap();
    std::os::unix::fs::symlink(&victim, used.join("runs.csv")).unwrap();
    let run = compare_script(&used, "echo ran", &[]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("not empty"), "{}", run.stderr);
    assert!(!run.stderr.contains("[round "), "{}", run.stderr);
    // A link to an empty folder, named with or without a trailing `/`.
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&empty, &link).unwrap();
    for named in [link.clone(), link.join("")] {
        let run = compare_script(&named, "echo ran", &[]);
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    }
    // A file.
    let run = compare_script(&victim, "echo ran", &[]);
    assert!(run.stderr.contains("not a folder"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);

    // An empty folder and a missing one are used.
    for out in [empty, dir.join("new/nested")] {
        compare_script(&out, "echo ran", &[]).ok();
        assert!(out.join("runs.csv").is_file());
    }

    // By default: a new folder of a random name under TMPDIR, for the
    // user alone, never the same twice.
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let tmp_env = [("TMPDIR", tmp.to_str().unwrap())];
    for _ in 0..2 {
        gridsel(&["compare", "--runs", "1", "--", "true"], &tmp_env, &repo()).ok();
    }
    let folders: Vec<PathBuf> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(folders.len(), 2, "{folders:?}");
    for folder in &folders {
        let name = folder.file_name().unwrap().to_str().unwrap();
        let random = name.strip_prefix("gridsel-compare-").unwrap_or_default();
        assert!(
            random.len() == 16 && random.chars().all(|c| c.is_ascii_hexdigit()),
            "{name}"
        );
        let mode = std::fs::symlink_metadata(folder)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{name}");
        assert!(folder.join("true/r1-auto.log").is_file());
    }
}

#[test]
fn a_hung_run_is_killed_with_its_process_group_and_the_others_go_on() {
    let dir = temp_dir("compare-timeout");
    let pids = dir.join("pids");
    // Under auto the program starts a helper and hangs; under llvm it ends.
    let script = format!(
        r#"[ "$GRIDSEL_POLICY" = auto ] || exit 0
        sleep 1000 & echo $! >> {pids}
        echo $$ >> {pids}
        exec sleep 1000"#,
        pids = pids.display()
    );
    let start = Instant::now();
    let run = compare_script(
        &dir.join("out"),
        &script,
        &["--runs", "2", "--timeout", "2"],
    );
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    for round in [1, 2] {
        let expected = format!("failed: sh under auto, round {round}/2: timed out after 2 s");
        assert!(run.stderr.contains(&expected), "{expected}\n{}", run.stderr);
    }
    assert!(run.stderr.contains("2 of 4 runs failed"), "{}", run.stderr);
    let ok_runs = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("[round ") && l.contains("] sh llvm: ") && l.ends_with(", ok"))
        .count();
    assert_eq!(ok_runs, 2, "{}", run.stderr);
    let runs = read_csv(&dir.join("out/runs.csv"));
    let timed_out: Vec<_> = runs.iter().filter(|r| r["policy"] == "auto").collect();
    assert_eq!(timed_out.len(), 2);
    for r in timed_out {
        assert!(r["status"].starts_with("timed out"), "{r:?}");
        let wall: f64 = r["wall_s"].parse().unwrap();
        assert!((2.0..10.0).contains(&wall), "{r:?}");
    }
    // The program and the helper it started are gone.
    let pids = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(pids.lines().count(), 4, "{pids}");
    for pid in pids.lines() {
        let stat = Path::new("/proc").join(pid).join("stat");
        let running = std::fs::read_to_string(&stat).is_ok_and(|s| {
            !s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        });
        assert!(!running, "process {pid} still runs");
    }
}

#[test]
fn a_runs_output_past_the_cap_is_dropped_and_the_run_goes_on() {
    let dir = temp_dir("compare-output-cap");
    let out = dir.join("out");
    // 50 MB on stdout, then a line on stderr.
    let script = "head -c 50000000 /dev/zero; echo end >&2";
    compare_script(&out, script, &["--max-output", "1"]).ok();
    for policy in ["llvm", "auto"] {
        let log = std::fs::read(out.join(format!("sh/r1-{policy}.log"))).unwrap();
        let note = b"\n[gridsel: output past 1 MiB dropped (--max-output)]\n";
        assert_eq!(log.len(), (1 << 20) + note.len(), "{policy}");
        assert!(log.ends_with(note), "{policy}");
        assert!(log[..1 << 20].iter().all(|&b| b == 0), "{policy}");
    }
    let runs = read_csv(&out.join("runs.csv"));
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
    // Under the cap the log is all of the output.
    let out = dir.join("small");
    compare_script(&out, "echo to-stdout; echo to-stderr >&2", &[]).ok();
    let log = std::fs::read_to_string(out.join("sh/r1-auto.log")).unwrap();
    assert_eq!(log, "to-stdout\nto-stderr\n");
}

#[test]
fn rounds_are_bounded_and_estimated_and_arguments_may_be_any_bytes() {
    let dir = temp_dir("compare-rounds");
    for runs in ["1001", "4294967295", "0"] {
        let run = compare_script(&dir.join("never"), "true", &["--runs", runs]);
        assert_eq!(run.code, Some(2), "--runs {runs}: {}", run.stderr);
        assert!(run.stderr.contains("--runs"), "{}", run.stderr);
    }
    assert!(!dir.join("never").exists());
    // After the first round: how long the others should take.
    let run = compare_script(&dir.join("three"), "true", &["--runs", "3"]).ok();
    let estimates: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("round 1 took"))
        .collect();
    assert_eq!(estimates.len(), 1, "{}", run.stderr);
    assert!(
        estimates[0].contains("the other 2 rounds should take about "),
        "{}",
        estimates[0]
    );
    let first_of_round_2 = run.stderr.find("[round 2/3]").unwrap();
    assert!(run.stderr.find("round 1 took").unwrap() < first_of_round_2);

    // A program path and arguments that are not UTF-8 reach the program.
    let folder = dir.join("bytes");
    std::fs::create_dir(&folder).unwrap();
    let program = folder.join(OsStr::from_bytes(b"echo-\xff"));
    std::fs::write(
        &program,
        "#!/bin/sh\nprintf %s \"$1\" > \"$(dirname \"$0\")/arg-$GRIDSEL_POLICY\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.join("bytes-out");
    let run = gridsel_os(
        &[
            OsStr::new("compare"),
            OsStr::new("--runs"),
            OsStr::new("1"),
            OsStr::new("--out"),
            out.as_os_str(),
            OsStr::new("--"),
            program.as_os_str(),
            OsStr::from_bytes(b"a\xfeb"),
        ],
        &[],
        &repo(),
    )
    .ok();
    for policy in ["llvm", "auto"] {
        let arg = std::fs::read(folder.join(format!("arg-{policy}"))).unwrap();
        assert_eq!(arg, b"a\xfeb");
    }
    assert!(run.stdout.contains(r"$'a\xfeb'"), "{}", run.stdout);
}
