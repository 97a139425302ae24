//! Shared helpers for the integration tests that run real programs under
//! `LD_PRELOAD=libgridsel.so`: locating the library, compiling the C programs
//! in `tests/c/` once per test binary, running them with a clean environment,
//! and reading what gridsel and libomptarget print.
//!
//! A dev-dependency of the preload library (`tests/`), `gridsel-cli` and
//! `gridsel-research`; each test binary links its own copy, so the builds
//! and caches below are per test binary.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex, Once, OnceLock};

/// The repository root (the workspace's, above this crate's folder).
pub fn repo() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").exists())
        .unwrap_or(&manifest)
        .to_path_buf()
}

/// `tests/c/<name>`.
pub fn c_source(name: &str) -> PathBuf {
    repo().join("tests/c").join(name)
}

/// The profile directory this test executable was built into
/// (`target/<profile>`; the executable lives in `target/<profile>/deps`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("deps dir");
    deps.parent().expect("profile dir").to_path_buf()
}

/// `libgridsel.so` of the same profile as the test, rebuilt once per test
/// executable: `cargo test` builds the library's rlib for the tests but does
/// not always relink the cdylib, and a stale one would test old code. It is
/// the benchmark harness's build, with the `sweep` feature, so that the
/// tests also run its research policy; every other policy is the same as in
/// a user's build.
pub fn lib() -> PathBuf {
    static BUILD: Once = Once::new();
    let path = profile_dir().join("libgridsel.so");
    BUILD.call_once(|| {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.args(["build", "--lib", "--features", "sweep"])
            .current_dir(repo());
        if profile_dir().file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("running cargo build --lib");
        assert!(status.success(), "cargo build --lib failed");
    });
    assert!(
        path.exists(),
        "{} missing after cargo build --lib",
        path.display()
    );
    path
}

/// A `libgridsel.so` built with the `fault-injection` feature, which no
/// shipped library has (GRIDSEL_INJECT_PANIC makes launches panic inside
/// gridsel), in a target folder of its own so that it never replaces
/// [`lib`]. Built once per test executable.
pub fn fault_injection_lib() -> PathBuf {
    static BUILD: Once = Once::new();
    let target = repo().join("target/fault-injection");
    BUILD.call_once(|| {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args([
                "build",
                "--lib",
                "--features",
                "fault-injection",
                "--target-dir",
            ])
            .arg(&target)
            .current_dir(repo())
            .status()
            .expect("running cargo build --lib --features fault-injection");
        assert!(
            status.success(),
            "cargo build --features fault-injection failed"
        );
    });
    target.join("debug/libgridsel.so")
}

/// Whether a test that needs something this machine may lack should run.
/// Outside CI a missing prerequisite skips the test with a printed reason;
/// with `CI` set it is a failure, since CI installs everything.
pub fn require(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    assert!(!ci, "{what} is missing, and CI is set: CI must provide it");
    eprintln!("SKIPPED: {what} is missing (set CI=true to make this a failure)");
    false
}

/// Whether the tests that build clang-19 offload programs can run (a
/// failure in CI).
pub fn clang19_available() -> bool {
    require(
        "clang-19 with OpenMP offload",
        Path::new("/usr/bin/clang-19").exists(),
    )
}

/// Runs the `gridsel` executable `exe` (a test's `CARGO_BIN_EXE_gridsel`)
/// with only PATH, an H100 forced, two host threads per team and `env` in
/// its environment, in `cwd`. Its commands that run programs preload the
/// libgridsel.so next to it: checked to be the one these tests built.
pub fn run_gridsel_cli(
    exe: &str,
    args: &[&std::ffi::OsStr],
    env: &[(&str, &str)],
    cwd: &Path,
) -> Run {
    let out = gridsel_cli_command(exe, args, env, cwd)
        .output()
        .expect("running gridsel");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    }
}

/// The command [`run_gridsel_cli`] runs, to start it without waiting.
pub fn gridsel_cli_command(
    exe: &str,
    args: &[&std::ffi::OsStr],
    env: &[(&str, &str)],
    cwd: &Path,
) -> Command {
    assert_eq!(lib().parent(), Path::new(exe).parent());
    let mut command = Command::new(exe);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GRIDSEL_DEVICE", "h100")
        .env("OMP_NUM_THREADS", "2")
        .envs(env.iter().copied())
        .current_dir(cwd);
    command
}

/// The processes of process group `group` that have not ended (a zombie,
/// dead but not yet reaped, has), read from `/proc`.
pub fn live_processes_of_group(group: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // `pid (comm) state ppid pgrp ...`; comm may hold anything.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == group.to_string()
        })
        .collect()
}

/// Waits up to `patience` for `done`, polling; whether it came true.
pub fn wait_for(patience: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < patience {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done()
}

/// A per-test-binary build folder under `target/`.
fn build_root() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let stem = exe.file_stem().unwrap().to_string_lossy().to_string();
    // `preload-0123abcd` -> `preload`: one folder per test file.
    let name = stem
        .rsplit_once('-')
        .map_or(stem.as_str(), |(n, _)| n)
        .to_string();
    let dir = repo().join("target/gridsel-tests").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh, empty folder for one test's files.
pub fn temp_dir(test: &str) -> PathBuf {
    let dir = build_root().join("tmp").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a build command and returns `out`, panicking with the compiler's
/// output when it fails.
pub fn build(out: &Path, program: &str, args: &[&str]) -> PathBuf {
    let mut cmd = Command::new(program);
    cmd.args(args).arg("-o").arg(out);
    run_build(cmd, out)
}

/// Runs `cmd`, a build writing `out`, and returns `out`, panicking with the
/// compiler's output when it fails.
fn run_build(mut cmd: Command, out: &Path) -> PathBuf {
    let result = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        result.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    out.to_path_buf()
}

/// Builds `key` once per test binary with `make`, which gets the output path;
/// concurrent callers wait for the first.
pub fn cached(key: &str, make: impl FnOnce(&Path) -> PathBuf) -> PathBuf {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<OnceLock<PathBuf>>>>> = OnceLock::new();
    let cell = CACHE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap()
        .entry(key.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let dir = build_root().join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        make(&dir.join(key))
    })
    .clone()
}

pub const LLVM19_LIB: &str = "/usr/lib/llvm-19/lib";

/// Flags for a clang-19 host-offload build.
pub fn host_offload_flags() -> Vec<String> {
    [
        "-O2",
        "-fopenmp",
        "-fopenmp-targets=x86_64-pc-linux-gnu",
        &format!("-Wl,-rpath,{LLVM19_LIB}"),
    ]
    .map(String::from)
    .to_vec()
}

/// Compiles `tests/c/<source>` with clang-19 for the host plugin.
pub fn host_offload(key: &str, source: &str, extra: &[&str]) -> PathBuf {
    cached(key, |out| {
        let src = c_source(source);
        let mut args: Vec<String> = host_offload_flags();
        args.push(src.to_string_lossy().into());
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        build(out, "clang-19", &args)
    })
}

/// `source` built for sm_90 with clang 19 and the CUDA 12 tools that
/// bench/toolchain/setup.sh puts in .toolchain/cuda, with `extra` arguments
/// after the source, cached as `key`; `None` (the test says it was skipped)
/// without those tools.
pub fn sm90_build(key: &str, source: &Path, extra: &[&str]) -> Option<PathBuf> {
    let cuda = repo().join(".toolchain/cuda");
    if !require(
        &format!(
            "the CUDA toolchain in {} (bench/toolchain/setup.sh)",
            cuda.display()
        ),
        cuda.join("bin/ptxas").exists(),
    ) {
        return None;
    }
    Some(cached(key, |out| {
        let mut args = vec![
            "-O3".to_string(),
            "-fopenmp".into(),
            "--offload-arch=sm_90".into(),
            format!("--cuda-path={}", cuda.display()),
            "--libomptarget-nvptx-bc-path=/usr/lib/llvm-19/lib/".into(),
            format!("-Wl,-rpath,{LLVM19_LIB}"),
            source.to_string_lossy().into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        build(out, "clang-19", &args)
    }))
}

/// The result of one run.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
}

impl Run {
    /// gridsel's own lines (`gridsel: <level>: ...`).
    pub fn gridsel_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("gridsel: "))
            .collect()
    }

    /// gridsel's lines containing `needle`.
    pub fn gridsel_lines_with(&self, needle: &str) -> Vec<&str> {
        self.gridsel_lines()
            .into_iter()
            .filter(|l| l.contains(needle))
            .collect()
    }

    /// gridsel's one line containing `needle`; panics, showing stderr, unless
    /// there is exactly one.
    pub fn assert_one_gridsel_line_with(&self, needle: &str) -> &str {
        let lines = self.gridsel_lines_with(needle);
        assert_eq!(
            lines.len(),
            1,
            "gridsel lines with `{needle}`:\n{}",
            self.stderr
        );
        lines[0]
    }

    /// Panics, showing stderr, if gridsel printed a line containing `needle`.
    pub fn assert_no_gridsel_line_with(&self, needle: &str) {
        assert!(
            self.gridsel_lines_with(needle).is_empty(),
            "gridsel lines with `{needle}`:\n{}",
            self.stderr
        );
    }

    /// gridsel's lines, after checking that there are as many as `prefixes`
    /// and that each starts with its own.
    pub fn assert_gridsel_lines_start_with(&self, prefixes: &[&str]) -> Vec<&str> {
        let lines = self.gridsel_lines();
        assert_eq!(lines.len(), prefixes.len(), "{lines:?}");
        for (line, prefix) in lines.iter().zip(prefixes) {
            assert!(
                line.starts_with(prefix),
                "{line}\ndoes not start with\n{prefix}"
            );
        }
        lines
    }

    /// Panics, showing stderr, unless the kernels whose name contains `part`
    /// were launched with `grids` (blocks, threads), in that order.
    pub fn assert_launches_of(&self, part: &str, grids: &[(u32, u32)]) {
        assert_eq!(self.launches_of(part), grids, "{}", self.stderr);
    }

    /// `(kernel, blocks, threads)` from libomptarget's `LIBOMPTARGET_INFO=16`
    /// lines, in launch order.
    pub fn launches(&self) -> Vec<(String, u32, u32)> {
        self.stderr.lines().filter_map(parse_launch).collect()
    }

    /// The launches of kernels whose name contains `part`, as (blocks, threads).
    pub fn launches_of(&self, part: &str) -> Vec<(u32, u32)> {
        self.launches()
            .into_iter()
            .filter(|(k, _, _)| k.contains(part))
            .map(|(_, b, t)| (b, t))
            .collect()
    }

    /// The `spy flags:` lines of `tests/c/spy.c`: each v2+ launch's
    /// `KernelArgs` flags as gridsel forwarded them.
    pub fn spied_flags(&self) -> Vec<u64> {
        let lines = self.stderr.lines();
        let flags = lines.filter_map(|l| l.strip_prefix("spy flags: ")?.trim().parse().ok());
        flags.collect()
    }

    /// The `spy:` lines of `tests/c/spy.c`: (version, trip, teams, limit,
    /// struct teams, struct limit).
    pub fn spied(&self) -> Vec<[i64; 6]> {
        self.stderr
            .lines()
            .filter_map(|l| {
                let nums: Vec<i64> = l
                    .strip_prefix("spy: ")?
                    .split_whitespace()
                    .filter_map(|w| w.parse().ok())
                    .collect();
                nums.try_into().ok()
            })
            .collect()
    }

    /// Panics unless the program exited with 0.
    pub fn ok(self) -> Self {
        assert_eq!(
            self.code,
            Some(0),
            "exit status\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Panics, showing `text`, unless it contains every one of `parts`.
pub fn assert_contains_all(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{text}\ndoes not contain\n{part}");
    }
}

/// `... Launching kernel <name> with <B> blocks and <T> threads in <mode> mode`,
/// or, from LLVM 21 on, `[<B>,1,1] blocks and [<T>,1,1] threads` (the x
/// dimension is taken).
fn parse_launch(line: &str) -> Option<(String, u32, u32)> {
    let rest = &line[line.find("Launching kernel ")? + "Launching kernel ".len()..];
    let words: Vec<&str> = rest.split_whitespace().collect();
    let x = |word: &str| -> Option<u32> {
        let dims = word.strip_prefix('[').and_then(|w| w.strip_suffix(']'));
        dims.map_or(word, |d| d.split(',').next().unwrap_or(d))
            .parse()
            .ok()
    };
    match words.as_slice() {
        [name, "with", b, "blocks", "and", t, "threads", ..] => {
            Some((name.to_string(), x(b)?, x(t)?))
        }
        _ => None,
    }
}

/// Variables the tests control; any value inherited from the caller's
/// environment is removed so that runs are reproducible.
const CONTROLLED: &[&str] = &[
    "GRIDSEL_POLICY",
    "GRIDSEL_DEVICE",
    "GRIDSEL_THREADS_PER_BLOCK",
    "GRIDSEL_OVERRIDE_CLAUSES",
    "GRIDSEL_TEAMS_REGIONS",
    "GRIDSEL_PROFILE",
    "GRIDSEL_CACHE",
    "GRIDSEL_MODEL",
    "GRIDSEL_LOG",
    "LIBOMPTARGET_INFO",
    "LIBOMPTARGET_DEBUG",
    "LIBOMPTARGET_NEXTGEN_PLUGINS",
    "OMP_TARGET_OFFLOAD",
    "OMP_NUM_TEAMS",
    "OMP_TEAMS_THREAD_LIMIT",
    "OMP_NUM_THREADS",
    "LD_PRELOAD",
];

/// Runs `program args` with `env`, preloading `preload` (a list of libraries;
/// empty runs without gridsel).
pub fn run_with(program: &Path, args: &[&str], env: &[(&str, &str)], preload: &[&Path]) -> Run {
    run_command(Launch::Here(program), args, env, preload)
}

/// Where a program runs.
enum Launch<'a> {
    /// On this machine.
    Here(&'a Path),
    /// Inside the root of scripts/llvm-toolchains.sh, through `env` there so
    /// that only the program, not the commands that enter the root, gets
    /// `LD_PRELOAD`.
    InLlvmRoot(&'a Path),
}

/// Runs a program as `run_with` describes.
fn run_command(launch: Launch, args: &[&str], env: &[(&str, &str)], preload: &[&Path]) -> Run {
    let mut cmd = match launch {
        Launch::Here(program) => Command::new(program),
        Launch::InLlvmRoot(_) => {
            let mut cmd = llvm_root_command();
            cmd.arg("env");
            cmd
        }
    };
    for var in CONTROLLED {
        cmd.env_remove(var);
    }
    // Two host threads per team keeps the host plugin quiet and fast.
    cmd.env("OMP_NUM_THREADS", "2");
    // `tune`'s default store lives under the user's cache folder: the tests
    // keep theirs in the build folder, never in the home of whoever runs them.
    cmd.env("XDG_CACHE_HOME", build_root().join("xdg-cache"));
    // The tests pin the paper's policy, whose grids they spell out; a test
    // that needs another (or the default, `auto`) sets GRIDSEL_POLICY itself,
    // or removes it with an empty value.
    if !preload.is_empty() {
        cmd.env("GRIDSEL_POLICY", "lloyd");
    }
    cmd.envs(env.iter().copied());
    let list: Vec<String> = preload
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    match launch {
        Launch::Here(_) => {
            if !list.is_empty() {
                cmd.env("LD_PRELOAD", list.join(" "));
            }
        }
        Launch::InLlvmRoot(program) => {
            if !list.is_empty() {
                cmd.arg(format!("LD_PRELOAD={}", list.join(" ")));
            }
            cmd.arg(program);
        }
    }
    cmd.args(args);
    let out: Output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    }
}

/// Runs under gridsel.
pub fn run_gridsel(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    run_with(program, args, env, &[&lib()])
}

/// Runs without gridsel.
pub fn run_plain(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    run_with(program, args, env, &[])
}

/// tests/c/spy.c as a preloadable library: loaded after gridsel, it prints
/// the grid gridsel forwards to libomptarget.
pub fn spy_library() -> PathBuf {
    cached("libspy.so", |out| {
        let src = c_source("spy.c");
        build(
            out,
            "gcc",
            &["-O2", "-shared", "-fPIC", &src.to_string_lossy(), "-ldl"],
        )
    })
}

// ---- LLVM 21-23 in Debian unstable's root ------------------------------------

/// The Debian unstable root of scripts/llvm-toolchains.sh, which holds clang
/// 21-23 and their runtimes (they need unstable's glibc).
pub fn llvm_root() -> PathBuf {
    std::env::var_os("GRIDSEL_LLVM_ROOT")
        .map_or_else(|| repo().join("target/llvm-toolchains/sid"), PathBuf::from)
}

/// `scripts/llvm-root.sh`, which runs a command in that root with the
/// repository at its own path.
fn llvm_root_command() -> Command {
    let mut cmd = Command::new(repo().join("scripts/llvm-root.sh"));
    cmd.env("GRIDSEL_LLVM_ROOT", llvm_root());
    cmd
}

/// Whether clang-`version` and its offload runtime are in the root (see
/// `require`: a skip with the reason here, a failure in CI).
pub fn require_llvm(version: u32) -> bool {
    let lib = llvm_root().join(format!("usr/lib/llvm-{version}/lib"));
    let bin = llvm_root().join(format!("usr/lib/llvm-{version}/bin/clang"));
    require(
        &format!(
            "clang-{version} and its runtime in {} (scripts/llvm-toolchains.sh)",
            llvm_root().display()
        ),
        bin.exists() && lib.join("libomptarget.so").exists(),
    )
}

/// Builds `out` with clang-`version` inside the root, linked against that
/// release's own runtime; paths in `args` must lie in the repository.
///
/// The root holds the runtimes of several releases, and the linker's
/// default search path finds only one `libomptarget.so` (21's): without
/// the release's own folder first, clang 22 and 23 programs ran on LLVM
/// 21's libomptarget, where clang 23's KernelArgs (version 5) crash it.
pub fn build_in_llvm_root(out: &Path, version: u32, args: &[&str]) -> PathBuf {
    let lib = format!("/usr/lib/llvm-{version}/lib");
    let mut cmd = llvm_root_command();
    cmd.arg(format!("clang-{version}"))
        .arg(format!("-L{lib}"))
        .arg(format!("-Wl,-rpath,{lib}"))
        .args(args)
        .arg("-o")
        .arg(out);
    run_build(cmd, out)
}

/// `run_with` for a program built by `build_in_llvm_root`, run inside the root.
pub fn run_in_llvm_root(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    preload: &[&Path],
) -> Run {
    run_command(Launch::InLlvmRoot(program), args, env, preload)
}
