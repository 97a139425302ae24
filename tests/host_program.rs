//! gridsel inside a C or C++ program leaves the program's own mechanisms
//! alone: its log lines never raise SIGPIPE when nobody reads stderr, and
//! a C++ exception thrown by libomptarget reaches the program's handler.

use gridsel_test_support as support;

use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use support::*;

// ---- SIGPIPE --------------------------------------------------------------------

/// tests/c/sigpipe.c, without libomptarget.
fn sigpipe_program() -> PathBuf {
    cached("sigpipe", |out| {
        let src = c_source("sigpipe.c");
        build(out, "gcc", &["-O2", "-Wall", &src.to_string_lossy()])
    })
}

/// gridsel errors the program's launch makes it log: the policy and the
/// missing libomptarget.
const BAD_POLICY: (&str, &str) = ("GRIDSEL_POLICY", "nonsense");

#[derive(Clone, Copy, Debug)]
enum Unread {
    Pipe,
    Socket,
}

/// Runs tests/c/sigpipe.c `mode` under gridsel with stderr a pipe or socket
/// whose reading end is closed before gridsel writes to it; returns how it
/// ended and its stdout.
fn run_with_unread_stderr(mode: &str, unread: Unread) -> (std::process::ExitStatus, String) {
    let mut cmd = Command::new(sigpipe_program());
    cmd.arg(mode)
        .env_clear()
        .env("LD_PRELOAD", lib())
        .env(BAD_POLICY.0, BAD_POLICY.1)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut socket_reader = None;
    match unread {
        Unread::Pipe => {
            cmd.stderr(Stdio::piped());
        }
        Unread::Socket => {
            let (writer, reader) = UnixStream::pair().unwrap();
            cmd.stderr(Stdio::from(OwnedFd::from(writer)));
            socket_reader = Some(reader);
        }
    }
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    drop(child.stderr.take());
    drop(socket_reader);
    // The program waits for the end of its stdin before it calls gridsel.
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    (out.status, String::from_utf8(out.stdout).unwrap())
}

#[test]
fn the_sigpipe_program_makes_gridsel_log() {
    let run = run_gridsel(&sigpipe_program(), &["default"], &[BAD_POLICY]).ok();
    assert_eq!(run.stdout, "default: start\ndefault: ok\n");
    run.assert_one_gridsel_line_with("GRIDSEL_POLICY");
    run.assert_one_gridsel_line_with("not found");
}

#[test]
fn logging_to_an_unread_stderr_leaves_sigpipe_to_the_program() {
    for unread in [Unread::Pipe, Unread::Socket] {
        for mode in ["default", "ignore", "handler", "blocked", "pending"] {
            let (status, stdout) = run_with_unread_stderr(mode, unread);
            assert_eq!(
                (status.code(), status.signal()),
                (Some(0), None),
                "{mode} with an unread {unread:?}; stdout:\n{stdout}"
            );
            assert_eq!(stdout, format!("{mode}: start\n{mode}: ok\n"), "{unread:?}");
        }
    }
}

// ---- panics ---------------------------------------------------------------------

/// tests/c/kernels.c, a host-offload program: libomptarget's host plugin.
fn kernels() -> PathBuf {
    host_offload("kernels", "kernels.c", &[])
}

/// Runs kernels.c under the fault-injecting library, every launch making
/// gridsel panic, with stderr a pipe that is `read`, or closed right after
/// the start (long before the first launch, after libomptarget's start).
/// Returns how it ended, its stdout and what stderr got.
fn run_panicking(read: bool) -> (std::process::ExitStatus, String, String) {
    // One loop: `all` makes libomp warn on stderr, itself raising SIGPIPE.
    let mut child = Command::new(kernels())
        .args(["loop", "1000"])
        .env_clear()
        .env("LD_PRELOAD", fault_injection_lib())
        .env("GRIDSEL_DEVICE", "h100")
        .env("GRIDSEL_INJECT_PANIC", "1")
        .env("OMP_NUM_THREADS", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if read {
            stderr.read_to_string(&mut text).unwrap();
        }
        text
    });
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    (out.status, stdout, reader.join().unwrap())
}

#[test]
fn a_panic_inside_gridsel_is_one_line_through_its_writer_and_the_program_goes_on() {
    let expected = run_plain(&kernels(), &["loop", "1000"], &[]).ok().stdout;
    // Every launch panics and is forwarded as it came: the same results.
    let (status, stdout, stderr) = run_panicking(true);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, expected);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("gridsel: "))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        lines[0].starts_with("gridsel: error: internal error (panic at ")
            && lines[0]
                .contains(": injected by GRIDSEL_INJECT_PANIC); the call is forwarded unchanged"),
        "{stderr}"
    );
    // std's own report would have raised SIGPIPE and ended the program.
    let (status, stdout, _) = run_panicking(false);
    assert_eq!((status.code(), status.signal()), (Some(0), None));
    assert_eq!(stdout, expected);
}

// ---- C++ exceptions ---------------------------------------------------------------

/// tests/c/unwind.cpp linked against tests/c/throwing_omptarget.cpp.
fn unwind_program() -> PathBuf {
    let stand_in = cached("libthrowing_omptarget.so", |out| {
        let src = c_source("throwing_omptarget.cpp");
        build(
            out,
            "clang++-19",
            &[
                "-O2",
                "-shared",
                "-fPIC",
                "-Wl,-soname,libthrowing_omptarget.so",
                &src.to_string_lossy(),
            ],
        )
    });
    let dir = stand_in.parent().unwrap().to_string_lossy().into_owned();
    cached("unwind", |out| {
        let src = c_source("unwind.cpp");
        build(
            out,
            "clang++-19",
            &[
                "-O2",
                "-Wall",
                &src.to_string_lossy(),
                &format!("-L{dir}"),
                "-lthrowing_omptarget",
                &format!("-Wl,-rpath,{dir}"),
            ],
        )
    })
}

#[test]
fn a_cpp_exception_from_libomptarget_reaches_the_program() {
    let expected = "caught from __tgt_register_lib\n\
                    caught from __tgt_target_kernel\n\
                    caught from __tgt_unregister_lib\n";
    let plain = run_plain(&unwind_program(), &[], &[]).ok();
    assert_eq!(plain.stdout, expected);
    let run = run_gridsel(&unwind_program(), &[], &[]).ok();
    assert_eq!(run.stdout, expected);
}
