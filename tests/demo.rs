//! `examples/demo-sm_90`, the program `scripts/demo.sh` runs where there is
//! no GPU: committed so that the demo shows each kernel's compiled facts
//! without installing the CUDA toolchain. It must be the sm_90 build of
//! `examples/demo.c` (tests/fixtures/regen-images.sh rebuilds it), and run
//! under gridsel as the demo shows it.

use gridsel::image::{ImageInfo, images_in_file};
use gridsel_test_support as support;

use std::path::{Path, PathBuf};
use support::*;

/// The committed build.
fn committed() -> PathBuf {
    repo().join("examples/demo-sm_90")
}

/// The device images of the executable at `path`, each kernel named by its
/// function and line (`main_l17`): the rest of its name is the source
/// file's device and inode, which differ from build to build.
fn images(path: &Path) -> Vec<ImageInfo> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut images = images_in_file(&bytes).unwrap();
    for kernel in images.iter_mut().flat_map(|i| i.kernels.iter_mut()) {
        let at = kernel
            .name
            .find("_main_l")
            .unwrap_or_else(|| panic!("{}", kernel.name));
        kernel.name = kernel.name[at + 1..].to_string();
    }
    images
}

#[test]
fn the_committed_demo_program_is_the_sm90_build_of_examples_demo_c() {
    let source = repo().join("examples/demo.c");
    let Some(built) = sm90_build("demo-sm90", &source, &["-lm"]) else {
        return;
    };
    let committed = images(&committed());
    assert_eq!(committed.len(), 1, "{committed:?}");
    assert_eq!(committed[0].arch.as_deref(), Some("sm_90"));
    assert_eq!(
        committed,
        images(&built),
        "examples/demo-sm_90 is not the build of examples/demo.c: run tests/fixtures/regen-images.sh"
    );
}

#[test]
fn the_committed_demo_program_shows_its_kernels_facts_without_a_gpu() {
    if !clang19_available() {
        return;
    }
    // As the demo runs it: the default policy, an H100 forced.
    let env = [
        ("GRIDSEL_POLICY", ""),
        ("GRIDSEL_DEVICE", "h100"),
        ("GRIDSEL_LOG", "info"),
    ];
    let run = run_gridsel(&committed(), &[], &env).ok();
    // libomptarget finds no GPU and runs the regions on the host.
    assert_eq!(run.stdout, "demo: results correct\n");
    run.assert_one_gridsel_line_with("registered 4 offload entries from 1 device images");
    // One decision per loop class, each with the cubin's facts; the plain
    // `target` region (line 31) is left alone.
    for (line, decision) in [
        (
            "main_l17 ",
            "auto launches 1 block x 128 threads instead of LLVM's 4 blocks x 32 threads",
        ),
        (
            "main_l23 ",
            "auto launches 157 blocks x 128 threads instead of LLVM's 625 blocks x 32 threads",
        ),
        (
            "main_l29 ",
            "auto keeps LLVM's grid, 3200 blocks x 128 threads",
        ),
    ] {
        let logged = run.assert_one_gridsel_line_with(line);
        assert_contains_all(
            logged,
            &[decision, "; kernel: SPMD, ", " regs, ", "cap 128"],
        );
    }
    run.assert_no_gridsel_line_with("main_l31");
}
