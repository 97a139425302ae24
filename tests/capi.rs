//! The C API of `include/gridsel.h`, called from C (tests/c/capi.c) linked
//! against the cdylib.

use gridsel_test_support as support;

use std::collections::HashMap;
use std::path::PathBuf;
use support::*;

/// Builds tests/c/capi.c with gcc against libgridsel.so.
fn capi() -> PathBuf {
    cached("capi", |out| {
        let lib_dir = lib().parent().unwrap().to_string_lossy().into_owned();
        let include = repo().join("include").to_string_lossy().into_owned();
        let src = c_source("capi.c").to_string_lossy().into_owned();
        let args = [
            "-std=c11",
            "-Wall",
            "-Werror",
            "-I",
            &include,
            &src,
            "-L",
            &lib_dir,
            "-lgridsel",
            &format!("-Wl,-rpath,{lib_dir}"),
        ];
        build(out, "gcc", &args)
    })
}

/// tests/c/kernels.c for the host plugin, built plain and linked with
/// `-lgridsel` (as a program that uses the C API is).
fn kernels(linked: bool) -> PathBuf {
    if !linked {
        return host_offload("kernels", "kernels.c", &[]);
    }
    let lib_dir = lib().parent().unwrap().to_string_lossy().into_owned();
    let rpath = format!("-Wl,-rpath,{lib_dir}");
    host_offload(
        "kernels-linked",
        "kernels.c",
        &["-L", &lib_dir, "-lgridsel", &rpath],
    )
}

/// The program's output as `name -> [fields after the name]`.
fn results() -> HashMap<String, Vec<String>> {
    let run = run_plain(&capi(), &[], &[]).ok();
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    run.stdout
        .lines()
        .map(|l| {
            let mut words = l.split_whitespace().map(String::from);
            (words.next().unwrap(), words.collect())
        })
        .collect()
}

fn get<'a>(r: &'a HashMap<String, Vec<String>>, name: &str) -> Vec<&'a str> {
    r.get(name)
        .unwrap_or_else(|| panic!("no `{name}` line"))
        .iter()
        .map(String::as_str)
        .collect()
}

/// `rc threads T blocks B llvm_threads LT llvm_blocks LB class C` as numbers.
fn grid(r: &HashMap<String, Vec<String>>, name: &str) -> (i32, [u32; 5]) {
    let f = get(r, name);
    assert_eq!(f.len(), 11, "{name}: {f:?}");
    let n = |i: usize| f[i].parse::<u32>().unwrap();
    (f[0].parse().unwrap(), [n(2), n(4), n(6), n(8), n(10)])
}

#[test]
fn version_is_the_crate_version() {
    assert_eq!(get(&results(), "version"), [env!("CARGO_PKG_VERSION")]);
}

#[test]
fn header_version_macros_are_the_crate_version() {
    assert_eq!(
        get(&results(), "header_version"),
        [
            env!("CARGO_PKG_VERSION"),
            env!("CARGO_PKG_VERSION_MAJOR"),
            env!("CARGO_PKG_VERSION_MINOR"),
            env!("CARGO_PKG_VERSION_PATCH"),
        ],
        "update the GRIDSEL_VERSION_* macros of include/gridsel.h"
    );
}

#[test]
fn titan_x_pascal_short_and_long_loops() {
    let r = results();
    assert_eq!(
        get(&r, "preset_titan"),
        ["0", "sm_count", "28", "sm_arch", "61"]
    );
    // Short loop: one thread per block, one block per iteration.
    let (rc, [threads, blocks, .., class]) = grid(&r, "titan_trip10");
    assert_eq!((rc, threads, blocks, class), (0, 1, 10, 1));
    // Long loop at 64 threads and 64 registers: 16 resident blocks per SM x 28 SMs.
    let (rc, [threads, blocks, .., class]) = grid(&r, "titan_trip131072");
    assert_eq!((rc, threads, blocks, class), (0, 64, 448, 3));
}

/// Lloyd et al.'s Fig. 7: 10 one-thread blocks for 10 iterations, unless the
/// kernel may nest, which keeps LLVM's one block.
#[test]
fn titan_x_pascal_fig7_and_its_nesting_twin() {
    let r = results();
    assert_eq!(grid(&r, "titan_fig7"), (0, [1, 10, 32, 1, 1]));
    assert_eq!(grid(&r, "titan_fig7_nested"), (0, [1, 1, 32, 1, 1]));
}

#[test]
fn h100_lloyd_next_to_llvm() {
    let r = results();
    assert_eq!(get(&r, "preset_h100"), ["0", "sm_count", "132"]);
    assert_eq!(grid(&r, "h100_lloyd_1000"), (0, [96, 11, 32, 32, 2]));
    let (rc, [threads, blocks, llvm_threads, llvm_blocks, _]) = grid(&r, "h100_fixed");
    assert_eq!(
        (rc, threads, blocks, llvm_threads, llvm_blocks),
        (0, 64, 7, 32, 32)
    );
}

/// Trip count 0 (a `target teams` region without a distribute loop): the
/// static policies give LLVM's grid, a fixed grid is what it says.
#[test]
fn trip_count_0_gets_llvms_grid_but_from_fixed() {
    let r = results();
    let (rc, [threads, blocks, llvm_threads, llvm_blocks, _]) = grid(&r, "h100_auto_trip0");
    assert_eq!(rc, 0);
    assert_eq!((threads, blocks), (llvm_threads, llvm_blocks));
    assert_eq!((threads, blocks), (128, 3200));
    let (rc, [threads, blocks, ..]) = grid(&r, "h100_fixed_trip0");
    assert_eq!((rc, threads, blocks), (0, 64, 7));
}

#[test]
fn kernels_that_may_nest_stay_within_llvms_grid() {
    let r = results();
    // Nesting unknown: at most LLVM's 32 threads and 32 blocks, whatever the policy.
    assert_eq!(
        grid(&r, "h100_unknown_lloyd_1000"),
        (0, [32, 11, 32, 32, 2])
    );
    assert_eq!(grid(&r, "h100_unknown_fixed").1[..2], [32, 7]);
}

#[test]
fn forest_is_accepted_and_matches_the_rust_decision() {
    use gridsel::device::DeviceDesc;
    use gridsel::geometry::LaunchDesc;
    use gridsel::kernel::{ExecMode, KernelDesc, KernelEnvironment};
    use gridsel::policy::{self, Policy};
    // The kernel of capi.c's `h100_forest` line.
    let kernel = KernelDesc {
        registers: Some(32),
        max_threads: Some(128),
        exec_mode: Some(ExecMode::Spmd),
        environment: Some(KernelEnvironment {
            may_use_nested_parallelism: Some(false),
            exec_mode: 2,
            max_threads: Some(128),
            ..KernelEnvironment::default()
        }),
        ..KernelDesc::named("C API kernel")
    };
    let device = DeviceDesc::preset("h100").unwrap();
    let launch = LaunchDesc::open(1 << 20);
    let ours = policy::decide(&Policy::Forest, &device, &kernel, &launch).unwrap();
    let llvm = policy::llvm::grid(&device, &kernel, &launch);
    let g = ours.geometry;
    assert_eq!(
        grid(&results(), "h100_forest"),
        (0, [g.threads, g.blocks, llvm.threads, llvm.blocks, 3])
    );
}

#[test]
fn errors_are_codes() {
    let r = results();
    for name in [
        "null_device",
        "null_kernel",
        "null_policy",
        "null_out",
        "null_preset_name",
        "null_preset_out",
    ] {
        assert_eq!(get(&r, name), ["-1"], "{name}");
    }
    assert_eq!(get(&r, "policy_nope"), ["-2"]);
    assert_eq!(get(&r, "policy_sweep"), ["-2"]);
    assert_eq!(get(&r, "preset_unknown"), ["-3"]);
    assert_eq!(get(&r, "sm_count_0"), ["-3"]);
}

#[test]
fn linking_the_library_interposes_the_programs_own_launches() {
    let env = [
        ("GRIDSEL_DEVICE", "h100"),
        ("GRIDSEL_LOG", "info"),
        ("LIBOMPTARGET_INFO", "16"),
    ];
    // No LD_PRELOAD and no GRIDSEL_POLICY: linking alone brings gridsel in,
    // with the default policy.
    let linked = run_plain(&kernels(true), &["all"], &env).ok();
    assert!(
        !linked.gridsel_lines_with("registered").is_empty(),
        "{}",
        linked.stderr
    );
    let preloaded = run_gridsel(
        &kernels(false),
        &["all"],
        &[env.as_slice(), &[("GRIDSEL_POLICY", "")]].concat(),
    )
    .ok();
    assert!(!preloaded.launches().is_empty(), "{}", preloaded.stderr);
    let grids = |run: &Run| -> Vec<(u32, u32)> {
        run.launches().into_iter().map(|(_, b, t)| (b, t)).collect()
    };
    assert_eq!(grids(&linked), grids(&preloaded), "{}", linked.stderr);
    assert_eq!(linked.stdout, preloaded.stdout);
}
