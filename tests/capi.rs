//! The C API of `include/gridsel.h`, called from C (tests/c/capi.c) linked
//! against the cdylib.

mod support;

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
