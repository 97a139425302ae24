//! The research commands the benchmark tools call instead of recomputing
//! the library's facts: `gridsel-research features` (bench/forest/train.py),
//! `gridsel-research chunks` (the harness's `ceiling`),
//! `gridsel-research cache-entries` (the harness's `best-cache`) and
//! `gridsel-research costs` (how the pruning threshold is judged), run as
//! those tools run them on
//! tests/fixtures/research/points.csv, a small points.csv of the kernels of
//! the committed sm_90 image tests/fixtures/images/kernels.sm_90.offload.

use gridsel_test_support as support;

use gridsel_cli::csv;
use gridsel_core::device::DeviceDesc;
use gridsel_core::forest_model::{self, FEATURES};
use gridsel_core::geometry::{Geometry, LaunchDesc};
use gridsel_core::image;
use gridsel_core::kernel::KernelDesc;
use gridsel_core::policy;
use gridsel_core::tune::search::{Candidate, Kind, Step};
use gridsel_core::tune::store::{Key, Table, class};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const K: &str = "__omp_offloading_fe00_98e137";

fn points() -> PathBuf {
    support::repo().join("tests/fixtures/research/points.csv")
}

/// A folder holding the sm_90 image as the binary of the program `kernels`.
fn binaries(test: &str) -> PathBuf {
    let dir = support::temp_dir(test);
    let image = support::repo().join("tests/fixtures/images/kernels.sm_90.offload");
    std::fs::copy(image, dir.join("kernels")).unwrap();
    dir
}

/// Runs `gridsel-research ARGS` with `stdin`; asserts success; (stdout,
/// stderr).
fn research(args: &[&str], stdin: &str) -> (String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gridsel-research"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running gridsel-research");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        out.status.success(),
        "gridsel-research {args:?} failed: {stderr}"
    );
    (String::from_utf8(out.stdout).unwrap(), stderr)
}

/// CSV text as one map per row, by header name.
fn rows(text: &str) -> Vec<HashMap<String, String>> {
    let mut lines = text.lines();
    let header = csv::split(lines.next().unwrap()).unwrap();
    lines
        .map(|l| {
            header
                .iter()
                .zip(csv::split(l).unwrap())
                .map(|(h, v)| (h.to_string(), v.into_owned()))
                .collect()
        })
        .collect()
}

fn kernels(dir: &Path) -> HashMap<String, KernelDesc> {
    let bytes = std::fs::read(dir.join("kernels")).unwrap();
    image::images_in_file(&bytes)
        .unwrap()
        .into_iter()
        .flat_map(|i| i.kernels)
        .map(|k| (k.name.clone(), k))
        .collect()
}

/// A row's feature vector, as the f32 values the model compares.
fn x(row: &HashMap<String, String>) -> Vec<f32> {
    FEATURES
        .iter()
        .map(|f| row[&format!("x.{f}")].parse::<f64>().unwrap() as f32)
        .collect()
}

fn grid(row: &HashMap<String, String>) -> Geometry {
    Geometry::new(
        row["threads"].parse().unwrap(),
        row["blocks"].parse().unwrap(),
    )
}

#[test]
fn features_are_the_forests_own_for_every_point_and_candidate() {
    let dir = binaries("features_are_the_forests_own");
    let (out, stderr) = research(
        &[
            "features",
            "--candidates",
            "--points",
            points().to_str().unwrap(),
            "--binaries",
            dir.to_str().unwrap(),
        ],
        "",
    );
    let header = out.lines().next().unwrap();
    let names: Vec<String> = FEATURES.iter().map(|f| format!("x.{f}")).collect();
    assert_eq!(
        header,
        format!(
            "program,kernel,trip_count,label,threads,blocks,median_ms,{}",
            names.join(",")
        )
    );
    // The kernel the binaries do not describe is left out, and said so.
    assert!(
        stderr.contains("1 of 4 measured kernels have no descriptor")
            && stderr.contains("other_kernel_l1"),
        "{stderr}"
    );
    let rows = rows(&out);
    let measured: Vec<_> = rows.iter().filter(|r| r["label"] != "candidate").collect();
    // Every described point, in file order, its columns as in points.csv.
    let labels: Vec<(&str, &str, &str)> = measured
        .iter()
        .map(|r| {
            (
                r["label"].as_str(),
                r["threads"].as_str(),
                r["median_ms"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        labels,
        [
            ("llvm", "128", "0.050000"),
            ("grid", "32", "0.061000"),
            ("grid", "128", "0.049500"),
            ("llvm", "128", "0.120000"),
            ("grid", "256", "0.110000"),
            ("llvm", "128", "0.030000"),
        ]
    );
    // Each row is what the runtime's forest computes for that grid.
    let device = DeviceDesc::preset("h100").unwrap();
    let descs = kernels(&dir);
    for r in &rows {
        let trip: u64 = r["trip_count"].parse().unwrap();
        let expected = forest_model::features(&device, &descs[&r["kernel"]], trip, grid(r));
        assert_eq!(x(r), expected.to_vec(), "{r:?}");
    }
    // And the candidates are the grids the forest searches, in its order.
    for (name, trip) in [
        (format!("{K}_local_array_l57"), 100_000),
        (format!("{K}_limit256_l27"), 1_000_000),
        (format!("{K}_generic_spmd_l18"), 5000),
    ] {
        let candidates: Vec<Geometry> = rows
            .iter()
            .filter(|r| r["label"] == "candidate" && r["kernel"] == name)
            .map(grid)
            .collect();
        let searched = policy::forest::candidates(&device, &descs[&name], &LaunchDesc::open(trip));
        assert!(!searched.is_empty());
        assert_eq!(candidates, searched, "{name}");
    }
}

#[test]
fn features_of_a_point_worked_out_by_hand() {
    let dir = binaries("features_worked_out_by_hand");
    let (out, _) = research(
        &[
            "features",
            "--points",
            points().to_str().unwrap(),
            "--binaries",
            dir.to_str().unwrap(),
        ],
        "",
    );
    assert!(!out.contains("candidate"));
    let rows = rows(&out);
    let row = rows
        .iter()
        .find(|r| r["kernel"].ends_with("_local_array_l57") && r["threads"] == "32")
        .unwrap();
    // local_array_l57: SPMD, 112 registers, 36 B shared, 512 B stack, 5504 B
    // of code, cap 128 (so 128-iteration chunks); trip 100000, 32 x 1000.
    // Resident 32-thread blocks on an H100 SM: 112 x 32 = 3584 registers a
    // warp, 65536 / 3584 = 18 warps, 16 in whole allocation units of 4
    // warps: 16 blocks of one warp, 16 x 132 on the GPU, 16 of 64 warp slots.
    let expected: [f64; 16] = [
        100_000.0,                   // trip_count
        112.0,                       // registers
        36.0,                        // shared_mem
        512.0,                       // local_mem
        5504.0,                      // code_size
        5504.0 * 100_000.0,          // total_work
        2.0,                         // exec_mode: SPMD
        128.0,                       // thread_cap
        128.0,                       // chunk
        32.0,                        // threads
        1000.0,                      // blocks
        100_000.0 / (32.0 * 1000.0), // iters_per_thread
        782.0 / 1000.0,              // chunks_per_block: ceil(100000 / 128) = 782
        32.0 / 128.0,                // threads_per_chunk
        1000.0 / (16.0 * 132.0),     // waves
        16.0 / 64.0,                 // occupancy
    ];
    assert_eq!(x(row), expected.map(|v| v as f32).to_vec());
}

#[test]
fn chunks_follow_each_kernels_distribute_chunk() {
    let dir = binaries("chunks_follow_each_kernels");
    let (out, stderr) = research(
        &[
            "chunks",
            "--points",
            points().to_str().unwrap(),
            "--binaries",
            dir.to_str().unwrap(),
        ],
        "",
    );
    assert!(stderr.contains("1 of 4 measured kernels"), "{stderr}");
    let got: Vec<String> = out.lines().map(str::to_string).collect();
    assert_eq!(
        got,
        [
            "program,kernel,trip_count,chunk,chunks,max_blocks".to_string(),
            // Generic-SPMD: one iteration per team per round.
            format!("kernels,{K}_generic_spmd_l18,5000,1,5000,65536"),
            // thread_limit(256) raises the cap and with it the chunk.
            format!("kernels,{K}_limit256_l27,1000000,256,3907,65536"),
            format!("kernels,{K}_local_array_l57,100000,128,782,65536"),
        ]
    );
}

/// `costs` beside a cross-team reduction (the committed LLVM 23 object of
/// tests/fixtures/images/reduction.c) and a kernel without one: the sweep's
/// 32 x 65 536 of a reduction at 2^24 iterations, 4.8x `auto`'s time on
/// the H100, is predicted above `PRUNE_ABOVE` times `auto`'s, and the rows
/// say which kernel reduces.
#[test]
fn costs_count_a_reductions_teams() {
    let dir = binaries("costs_count_a_reductions_teams");
    let object = support::repo().join("tests/fixtures/images/reduction.llvm23.sm_90.o");
    std::fs::copy(object, dir.join("reduction")).unwrap();
    let sum = "__omp_offloading_fe00_9980a5_sum_l5";
    let sweep = support::temp_dir("costs_count_a_reductions_teams_points").join("points.csv");
    let fixture = std::fs::read_to_string(points()).unwrap();
    std::fs::write(
        &sweep,
        format!(
            "{fixture}\
             reduction,{sum},16777216,auto,32,4224,5,0.273,0.270,0.276\n\
             reduction,{sum},16777216,grid,32,65536,5,1.316,1.300,1.330\n"
        ),
    )
    .unwrap();
    let (out, _) = research(
        &[
            "costs",
            "--points",
            sweep.to_str().unwrap(),
            "--binaries",
            dir.to_str().unwrap(),
        ],
        "",
    );
    let rows = rows(&out);
    let predicted = |kernel: &str, g: Geometry| {
        let r = rows
            .iter()
            .find(|r| r["kernel"] == kernel && grid(r) == g)
            .unwrap_or_else(|| panic!("no row for {kernel} {g} in {out}"));
        (
            r["reduction"].clone(),
            r["predicted"].parse::<f64>().unwrap(),
        )
    };
    let (reduces, many) = predicted(sum, Geometry::new(32, 65_536));
    assert_eq!(reduces, "yes");
    assert!(many > gridsel_core::tune::PRUNE_ABOVE, "{many}");
    assert_eq!(predicted(sum, Geometry::new(32, 4224)), ("yes".into(), 1.0));
    let local_array = format!("{K}_local_array_l57");
    let (reduces, _) = predicted(&local_array, Geometry::new(128, 782));
    assert_eq!(reduces, "no");
}

#[test]
fn cache_entries_writes_tunes_own_format() {
    let csv = format!(
        "kernel,device,sm_arch,trip_count,threads,blocks,ns,launches\n\
         {K}_spmd_l12,NVIDIA H100 80GB HBM3,90,4096,64,32,51200,0\n\
         {K}_heavy_l39,NVIDIA H100 80GB HBM3,90,100,1,100,7000,61\n"
    );
    let dir = support::temp_dir("cache_entries_writes_tunes_own_format");
    let out = dir.join("cache.json");
    research(
        &["cache-entries", "-", "--out", out.to_str().unwrap()],
        &csv,
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let table = Table::parse(&text).unwrap();
    assert_eq!(table.len(), 2);
    let r = table
        .get(&Key {
            kernel: format!("{K}_spmd_l12"),
            device: "NVIDIA H100 80GB HBM3".into(),
            sm_arch: 90,
            class: class(4096),
            // No build: it pins every build of the kernel.
            build: String::new(),
        })
        .unwrap();
    // Pinned: every launch of the class gets the grid, with no search.
    let grid = Candidate::Grid(Geometry::new(64, 32));
    assert_eq!(r.pinned, Some(grid));
    assert_eq!(r.tally.trips, (4096, 4096));
    assert_eq!(r.search.candidates, [grid]);
    assert_eq!(r.search.samples[0].warm, [51200]);
    assert_eq!(r.search.step(Kind::Warm, 0), Step::Settled(0));
    // Byte for byte what tune itself writes for these entries.
    assert_eq!(text, table.render());
    // Without --out, the same text on stdout.
    let (stdout, _) = research(&["cache-entries", "-"], &csv);
    assert_eq!(stdout, text);
}

#[test]
fn cache_entries_refuses_what_tune_would_not_read() {
    for (csv, error) in [
        (
            "kernel,device,sm_arch,trip_count,threads,blocks,ns\nk,d,90,1,1,1,1\n",
            "lacks column launches",
        ),
        (
            "kernel,device,sm_arch,trip_count,threads,blocks,ns,launches\nk,d,90,-1,1,1,1,0\n",
            "stdin line 2: trip_count `-1` is not a whole number",
        ),
        (
            "kernel,device,sm_arch,trip_count,threads,blocks,ns,launches\nk,d,90,1,1,1,1,0\nk,d,90,1,2,2,2,0\n",
            "stdin line 3: a second grid for kernel k, device d, sm_90, trip-count class 1 (trip counts 1 and 1)",
        ),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gridsel-research"))
            .args(["cache-entries", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(csv.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success(), "{csv}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(error), "{stderr}");
    }
}

#[test]
fn sides_splits_an_alternating_runs_profile_as_the_session_does() {
    // A run alternating at odd launches: k_step's learned 264x128 (70 µs)
    // at launches 1 and 3, auto's 32x128 (100 µs) at 2 and 4, the cold
    // first (900 µs) on neither side; k_init once.
    let dir = support::temp_dir("sides_splits_an_alternating_runs_profile");
    let profile = dir.join("run.csv");
    let mut text = format!(
        "{}\nk_init,100,auto,1,128,5000\n",
        gridsel_host::profile::HEADER
    );
    for (policy, blocks, ns) in [
        ("auto", 32, 900_000),
        ("learned", 264, 70_000),
        ("auto", 32, 100_000),
        ("learned", 264, 70_000),
        ("auto", 32, 110_000),
    ] {
        text += &format!("k_step,4096,{policy},{blocks},128,{ns}\n");
    }
    std::fs::write(&profile, text).unwrap();
    let (stdout, stderr) = research(
        &["sides", profile.to_str().unwrap(), "--learned", "odd"],
        "",
    );
    assert_eq!(stderr, "");
    let rows = rows(&stdout);
    assert_eq!(rows.len(), 2);
    let step = &rows[1];
    let cell = |c: &str| step[c].as_str();
    assert_eq!(
        (cell("kernel"), cell("class"), cell("launches")),
        ("k_step", "25", "5")
    );
    assert_eq!(
        (cell("auto_grids"), cell("learned_grids")),
        ("32x128", "264x128")
    );
    assert_eq!(
        (cell("auto_median_ns"), cell("learned_median_ns")),
        ("105000", "70000")
    );
    // Weighed as the run's 5 launches: median x 5, and the side's sum x 5/2.
    assert_eq!(
        (cell("auto_median_sum_ns"), cell("auto_sum_ns")),
        ("525000", "525000")
    );
    assert_eq!(cell("learned_median_sum_ns"), "350000");
    assert_eq!(
        (
            rows[0]["kernel"].as_str(),
            rows[0]["auto_launches"].as_str()
        ),
        ("k_init", "")
    );

    // A link to the profile, a missing file and a bad side: one line each,
    // and a failing exit.
    let link = dir.join("link.csv");
    std::os::unix::fs::symlink(&profile, &link).unwrap();
    for (args, error) in [
        (
            vec![link.to_str().unwrap(), "--learned", "odd"],
            "a symbolic link, not a regular file",
        ),
        (
            vec!["/nonexistent/run.csv", "--learned", "even"],
            "/nonexistent/run.csv: No such file",
        ),
        (
            vec![profile.to_str().unwrap(), "--learned", "both"],
            "\"both\": odd or even",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_gridsel-research"))
            .arg("sides")
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && out.stdout.is_empty(), "{args:?}");
        assert!(stderr.contains(error), "{stderr}");
    }
}
