//! The programs `compare` and `tune` run: one command line, or a suite read from a
//! TOML manifest.
//!
//! ```toml
//! [[program]]
//! name = "gemm"
//! command = ["./gemm", "1024"]
//! env = { OMP_NUM_THREADS = "8" }   # optional
//! cwd = "build"                     # optional
//! ```
//!
//! Relative paths in a manifest (`cwd`, and a `command[0]` holding a `/`)
//! are relative to the manifest's folder, as in Cargo.toml, so a suite file
//! works from wherever it is invoked; `command[0]` without a `/` is looked up
//! in `PATH`.

use gridsel_core::text::shown;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A program to run under every policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// Unique; also the name of its folder of logs and profiles.
    pub name: String,
    /// The program and its arguments (any bytes from the command line);
    /// `command[0]` is absolute when it holds a `/`.
    pub command: Vec<OsString>,
    /// Set on top of the caller's environment.
    pub env: BTreeMap<String, String>,
    /// Absolute.
    pub cwd: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    program: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    command: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
}

/// The one program of `gridsel compare -- PROGRAM ARGS...` (or `tune`), named after the
/// program's file, run in the current folder.
pub fn single(command: Vec<OsString>, cwd: &Path) -> Result<Program, String> {
    let first = command.first().ok_or("no program to run")?;
    let name = Path::new(first)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "program".into());
    Ok(Program {
        name,
        command: resolve_command(command, cwd),
        env: BTreeMap::new(),
        cwd: cwd.to_path_buf(),
    })
}

/// The programs of the manifest `text`, read from `folder`; `folder` must be
/// absolute.
pub fn parse(text: &str, folder: &Path) -> Result<Vec<Program>, String> {
    let manifest: Manifest = toml::from_str(text).map_err(|e| e.to_string())?;
    if manifest.program.is_empty() {
        return Err("no [[program]] entries".into());
    }
    let mut folders = BTreeSet::new();
    let mut programs = Vec::new();
    for entry in manifest.program {
        if entry.command.is_empty() || entry.command[0].is_empty() {
            return Err(format!("program `{}`: empty command", shown(&entry.name)));
        }
        if !is_folder_name(&entry.name) {
            return Err(format!(
                "program name `{}`: use letters, digits, `.`, `_` and `-` (it names a folder)",
                shown(&entry.name)
            ));
        }
        if !folders.insert(entry.name.clone()) {
            return Err(format!("program `{}` appears twice", shown(&entry.name)));
        }
        let cwd = entry.cwd.map_or(folder.to_path_buf(), |c| folder.join(c));
        programs.push(Program {
            name: entry.name,
            command: resolve_command(
                entry.command.into_iter().map(OsString::from).collect(),
                &cwd,
            ),
            env: entry.env,
            cwd,
        });
    }
    Ok(programs)
}

fn is_folder_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Makes a relative `command[0]` with a `/` absolute against `cwd` (`.`
/// parts dropped): where the OS resolves it once the child has changed
/// folder is not specified by `std::process::Command`.
fn resolve_command(mut command: Vec<OsString>, cwd: &Path) -> Vec<OsString> {
    if command[0].as_bytes().contains(&b'/') && Path::new(&command[0]).is_relative() {
        let path: PathBuf = cwd.join(&command[0]).components().collect();
        command[0] = path.into_os_string();
    }
    command
}

/// Refuses, in one line, the first program that could not start: its
/// folder missing, or its command not an executable file (one without a
/// `/` looked up in the `PATH` it runs with). Checked before the first
/// run, so that a suite does not fail hours in at a mistyped name.
pub fn check_programs(programs: &[Program]) -> Result<(), String> {
    for program in programs {
        let refuse = |why: String| Err(format!("program `{}`: {why}; nothing run", program.name));
        if !program.cwd.is_dir() {
            return refuse(format!(
                "its folder {} does not exist",
                program.cwd.display()
            ));
        }
        let command = &program.command[0];
        let command_shown = shown(&command.to_string_lossy());
        if command.as_bytes().contains(&b'/') {
            let path = program.cwd.join(command);
            if !is_executable(&path) {
                return refuse(format!("{command_shown} is not an executable file"));
            }
            continue;
        }
        let path = match program.env.get("PATH") {
            Some(path) => OsString::from(path),
            None => std::env::var_os("PATH").unwrap_or_default(),
        };
        let folders = std::env::split_paths(&path).map(|f| program.cwd.join(f));
        if !folders.into_iter().any(|f| is_executable(&f.join(command))) {
            return refuse(format!(
                "`{command_shown}` is not an executable file in PATH"
            ));
        }
    }
    Ok(())
}

/// Whether `path` is a file someone may execute (following links).
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_programs_with_env_and_cwd_relative_to_the_manifest() {
        let text = r#"
            [[program]]
            name = "gemm"
            command = ["./gemm", "1024"]

            [[program]]
            name = "atax-2"
            command = ["bin/atax", "-n", "40"]
            env = { OMP_NUM_THREADS = "8" }
            cwd = "build"

            [[program]]
            name = "py"
            command = ["python3", "run.py"]
            cwd = "/abs"
        "#;
        let programs = parse(text, Path::new("/suite")).unwrap();
        assert_eq!(
            programs,
            vec![
                Program {
                    name: "gemm".into(),
                    command: vec!["/suite/gemm".into(), "1024".into()],
                    env: BTreeMap::new(),
                    cwd: "/suite".into(),
                },
                Program {
                    name: "atax-2".into(),
                    command: vec!["/suite/build/bin/atax".into(), "-n".into(), "40".into()],
                    env: [("OMP_NUM_THREADS".to_string(), "8".to_string())].into(),
                    cwd: "/suite/build".into(),
                },
                Program {
                    name: "py".into(),
                    command: vec!["python3".into(), "run.py".into()],
                    env: BTreeMap::new(),
                    cwd: "/abs".into(),
                },
            ]
        );
    }

    #[test]
    fn refuses_bad_manifests() {
        let cases = [
            ("", "missing field `program`"),
            ("program = []", "no [[program]]"),
            ("[[program]]\nname = \"a\"\ncommand = []", "empty command"),
            (
                "[[program]]\nname = \"a/b\"\ncommand = [\"x\"]",
                "names a folder",
            ),
            (
                "[[program]]\nname = \"..\"\ncommand = [\"x\"]",
                "names a folder",
            ),
            (
                "[[program]]\nname = \"a\"\ncommand = [\"x\"]\n[[program]]\nname = \"a\"\ncommand = [\"y\"]",
                "appears twice",
            ),
            (
                "[[program]]\nname = \"a\"\ncommand = [\"x\"]\nargs = [\"1\"]",
                "unknown field `args`",
            ),
            (
                "[[program]]\nname = \"a\"\ncommand = \"./x 1\"",
                "invalid type",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text, Path::new("/s")).unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn programs_that_cannot_start_are_refused_before_any_run() {
        let tmp = std::env::temp_dir();
        let program = |command: &str, env: &[(&str, &str)], cwd: &Path| Program {
            name: "p".into(),
            command: vec![command.into()],
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            cwd: cwd.to_path_buf(),
        };
        assert_eq!(check_programs(&[program("sh", &[], &tmp)]), Ok(()));
        assert_eq!(check_programs(&[program("/bin/sh", &[], &tmp)]), Ok(()));
        let refused = |p: Program| check_programs(&[p]).unwrap_err();
        assert_eq!(
            refused(program("/nonexistent/gemm", &[], &tmp)),
            "program `p`: /nonexistent/gemm is not an executable file; nothing run"
        );
        // A file that is not executable, and a folder.
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        assert!(refused(program(manifest, &[], &tmp)).contains("not an executable"));
        assert!(refused(program("/bin", &[], &tmp)).contains("not an executable"));
        assert_eq!(
            refused(program("no-such-gridsel-program", &[], &tmp)),
            "program `p`: `no-such-gridsel-program` is not an executable file in PATH; nothing run"
        );
        // The PATH the program runs with is the one searched.
        assert!(refused(program("sh", &[("PATH", "/nonexistent")], &tmp)).contains("in PATH"));
        assert!(
            refused(program("sh", &[], Path::new("/nonexistent/folder")))
                .contains("its folder /nonexistent/folder does not exist")
        );
    }

    #[test]
    fn a_single_program_is_named_after_its_file() {
        let p = single(vec!["../bin/gemm".into(), "64".into()], Path::new("/w")).unwrap();
        assert_eq!(p.name, "gemm");
        assert_eq!(p.command, ["/w/../bin/gemm", "64"]);
        let p = single(vec!["gemm".into()], Path::new("/w")).unwrap();
        assert_eq!(p.command, ["gemm"]);
        assert!(single(vec![], Path::new("/w")).is_err());
        // Any bytes: the path and the arguments pass through as given.
        use std::os::unix::ffi::OsStringExt;
        let raw = |b: &[u8]| OsString::from_vec(b.to_vec());
        let p = single(vec![raw(b"./g\xffm"), raw(b"\xfe")], Path::new("/w")).unwrap();
        assert_eq!(p.name, "g\u{fffd}m");
        assert_eq!(p.command, [raw(b"/w/g\xffm"), raw(b"\xfe")]);
    }
}
