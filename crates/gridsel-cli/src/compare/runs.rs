//! One run of a program under one policy: the environment it gets, its log
//! and profile files, its wall time and how it ended.

use super::manifest::Program;
use gridsel::config::{ENV_POLICY, ENV_PROFILE};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const LD_PRELOAD: &str = "LD_PRELOAD";

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Exit(i32),
    Signal(i32),
    NotStarted(String),
}

impl Status {
    pub fn ok(&self) -> bool {
        *self == Self::Ok
    }

    /// The exit code, for `runs.csv`; empty unless the program exited.
    pub fn exit_code(&self) -> String {
        match self {
            Self::Ok => "0".into(),
            Self::Exit(code) => code.to_string(),
            Self::Signal(_) | Self::NotStarted(_) => String::new(),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ok => f.write_str("ok"),
            Self::Exit(code) => write!(f, "exit {code}"),
            Self::Signal(signal) => write!(f, "killed by signal {signal}"),
            Self::NotStarted(why) => write!(f, "could not start: {why}"),
        }
    }
}

/// The files of one run.
pub struct RunFiles {
    pub profile: PathBuf,
    pub log: PathBuf,
}

/// What one run did.
pub struct RunRecord {
    /// Index into the programs.
    pub program: usize,
    /// 1-based.
    pub round: u32,
    /// 1-based place in its round's order of policies.
    pub position: usize,
    /// Index into the policies.
    pub policy: usize,
    pub status: Status,
    pub wall_s: f64,
    /// Launches in the profile, for a successful run (a failed run's
    /// profile is not read).
    pub launches: Option<usize>,
    pub bad_rows: usize,
    pub files: RunFiles,
}

/// Runs `program` once under `policy` with `lib` preloaded, its stdout and
/// stderr into `files.log`, its launches into `files.profile` (both replaced
/// if present: a profile is appended to, and a stale one would mix runs).
/// Returns the status and the wall seconds from start to exit.
pub fn run(program: &Program, policy: &str, lib: &Path, files: &RunFiles) -> (Status, f64) {
    let start = Instant::now();
    let status = match spawn_and_wait(program, policy, lib, files) {
        Ok(status) => status,
        Err(e) => Status::NotStarted(e),
    };
    (status, start.elapsed().as_secs_f64())
}

fn spawn_and_wait(
    program: &Program,
    policy: &str,
    lib: &Path,
    files: &RunFiles,
) -> Result<Status, String> {
    let show = |path: &Path, e: std::io::Error| format!("{}: {e}", path.display());
    match std::fs::remove_file(&files.profile) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(show(&files.profile, e)),
        _ => {}
    }
    let log = File::create(&files.log).map_err(|e| show(&files.log, e))?;
    let log_too = log.try_clone().map_err(|e| show(&files.log, e))?;
    let theirs = program
        .env
        .get(LD_PRELOAD)
        .map(OsString::from)
        .or_else(|| std::env::var_os(LD_PRELOAD));
    let status = Command::new(&program.command[0])
        .args(&program.command[1..])
        .current_dir(&program.cwd)
        .envs(&program.env)
        .env(ENV_POLICY, policy)
        .env(ENV_PROFILE, &files.profile)
        .env(LD_PRELOAD, preload_list(lib, theirs.as_deref()))
        // Every run would read the same input: none gets any.
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_too)
        .status()
        .map_err(|e| format!("{}: {e}", program.command[0]))?;
    Ok(match status.code() {
        Some(0) => Status::Ok,
        Some(code) => Status::Exit(code),
        None => Status::Signal(status.signal().unwrap_or_default()),
    })
}

/// `LD_PRELOAD` for a run: gridsel first, then the caller's entries (the
/// loader takes spaces and colons as separators). A `libgridsel.so` among
/// theirs is dropped: loaded after ours it would choose grids again behind
/// our back, and loaded twice from one path it is only noise.
fn preload_list(lib: &Path, theirs: Option<&OsStr>) -> OsString {
    let mut list = lib.as_os_str().to_owned();
    let theirs = theirs.map(|t| t.to_string_lossy().into_owned());
    for entry in theirs
        .iter()
        .flat_map(|t| t.split([' ', ':']))
        .filter(|e| !e.is_empty())
    {
        if Path::new(entry).file_name() != Some(OsStr::new("libgridsel.so")) {
            list.push(" ");
            list.push(entry);
        }
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gridsel_goes_first_and_theirs_follow() {
        let ours = Path::new("/opt/gridsel/libgridsel.so");
        assert_eq!(preload_list(ours, None), "/opt/gridsel/libgridsel.so");
        assert_eq!(
            preload_list(ours, Some(OsStr::new("/a/libspy.so:libb.so  /c/libc.so "))),
            "/opt/gridsel/libgridsel.so /a/libspy.so libb.so /c/libc.so"
        );
        assert_eq!(
            preload_list(
                ours,
                Some(OsStr::new("/old/target/libgridsel.so /a/libx.so"))
            ),
            "/opt/gridsel/libgridsel.so /a/libx.so"
        );
    }

    #[test]
    fn statuses_read_as_words() {
        assert_eq!(Status::Exit(3).to_string(), "exit 3");
        assert_eq!(Status::Signal(9).to_string(), "killed by signal 9");
        assert_eq!(
            (Status::Ok.exit_code(), Status::Signal(9).exit_code()),
            ("0".into(), String::new())
        );
        assert!(Status::Ok.ok() && !Status::Exit(1).ok());
    }
}
