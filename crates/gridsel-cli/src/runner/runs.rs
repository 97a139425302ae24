//! One run of a program under gridsel: the environment it gets, its log
//! and profile files, its wall time and how it ended.

use super::manifest::Program;
use super::output;
use gridsel_host::config::ENV_PROFILE;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

const LD_PRELOAD: &str = "LD_PRELOAD";

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Exit(i32),
    Signal(i32),
    /// Killed after running this many seconds (`--timeout`).
    TimedOut(u64),
    NotStarted(String),
}

impl Status {
    fn of(status: ExitStatus) -> Self {
        match status.code() {
            Some(0) => Self::Ok,
            Some(code) => Self::Exit(code),
            None => Self::Signal(status.signal().unwrap_or_default()),
        }
    }

    pub fn ok(&self) -> bool {
        *self == Self::Ok
    }

    /// The exit code, for `runs.csv`; empty unless the program exited.
    pub fn exit_code(&self) -> String {
        match self {
            Self::Ok => "0".into(),
            Self::Exit(code) => code.to_string(),
            Self::Signal(_) | Self::TimedOut(_) | Self::NotStarted(_) => String::new(),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ok => f.write_str("ok"),
            Self::Exit(code) => write!(f, "exit {code}"),
            Self::Signal(signal) => write!(f, "killed by signal {signal}"),
            Self::TimedOut(secs) => write!(f, "timed out after {secs} s (--timeout), killed"),
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

/// What one run may take.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// From start to exit; past it the run's process group is killed.
    pub timeout: Duration,
    /// Bytes of output (stdout and stderr together) kept in the log; the
    /// rest is read and dropped, so the program never blocks on a full pipe.
    pub max_output: u64,
}

/// How long a killed run's output may take to close before gridsel moves
/// on without it (a process that left the run's process group can hold
/// the pipe open indefinitely).
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Runs `program` once with `lib` preloaded and gridsel's `settings`
/// (variables such as `GRIDSEL_POLICY`) over its environment, its stdout and
/// stderr into `files.log` (up to `limits.max_output`), its launches into
/// `files.profile`; both are new files. The program leads a process group
/// of its own, killed whole when it outlives `limits.timeout`. Returns the
/// status and the wall seconds from start to exit.
pub fn run(
    program: &Program,
    settings: &[(&str, &OsStr)],
    lib: &Path,
    files: &RunFiles,
    limits: Limits,
) -> (Status, f64) {
    let start = Instant::now();
    match spawn_and_wait(program, settings, lib, files, limits, start) {
        Ok((status, end)) => (status, (end - start).as_secs_f64()),
        Err(e) => (Status::NotStarted(e), start.elapsed().as_secs_f64()),
    }
}

/// What the threads watching a run report: the program's exit, and the
/// end of its output (stdout and stderr share one pipe).
enum Event {
    Exited(std::io::Result<ExitStatus>, Instant),
    OutputClosed,
}

fn spawn_and_wait(
    program: &Program,
    settings: &[(&str, &OsStr)],
    lib: &Path,
    files: &RunFiles,
    limits: Limits,
    start: Instant,
) -> Result<(Status, Instant), String> {
    let log = output::create_file(&files.log)?;
    let theirs = program
        .env
        .get(LD_PRELOAD)
        .map(OsString::from)
        .or_else(|| std::env::var_os(LD_PRELOAD));
    let show = |e: std::io::Error| format!("{}: {e}", program.command[0].to_string_lossy());
    let (output, output_end) = gridsel_host::ffi::process::pipe().map_err(show)?;
    let output_end_too = output_end.try_clone().map_err(show)?;
    let mut child = Command::new(&program.command[0])
        .args(&program.command[1..])
        .current_dir(&program.cwd)
        .envs(&program.env)
        .envs(settings.iter().copied())
        .env(ENV_PROFILE, &files.profile)
        .env(LD_PRELOAD, preload_list(lib, theirs.as_deref()))
        // Every run would read the same input: none gets any.
        .stdin(Stdio::null())
        .stdout(output_end)
        .stderr(output_end_too)
        .process_group(0)
        .spawn()
        .map_err(show)?;
    // The Command, and with it this process's writing ends, is gone: the
    // output closes when the run and whatever inherited it have.
    let group = child.id();
    let (events, received) = mpsc::channel();
    let output_events = events.clone();
    std::thread::spawn(move || {
        copy_capped(output, &mut CappedLog::new(log, limits.max_output));
        let _ = output_events.send(Event::OutputClosed);
    });
    std::thread::spawn(move || {
        let status = child.wait();
        let _ = events.send(Event::Exited(status, Instant::now()));
    });

    let mut deadline = start + limits.timeout;
    let (mut exited, mut killed, mut open) = (None, false, true);
    while exited.is_none() || open {
        match received.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Event::Exited(status, at)) => exited = Some((status, at)),
            Ok(Event::OutputClosed) => open = false,
            // Past the deadline: the program, or something it started that
            // still holds its output, is killed with its group.
            Err(RecvTimeoutError::Timeout) if !killed => {
                let _ = gridsel_host::ffi::process::kill_group(group);
                killed = true;
                deadline = Instant::now() + CLOSE_GRACE;
            }
            Err(_) => break,
        }
    }
    let timed_out = Status::TimedOut(limits.timeout.as_secs());
    match exited {
        // Exited before the kill: its own status, whatever it left behind.
        Some((Ok(status), at)) if !killed || at < start + limits.timeout => {
            Ok((Status::of(status), at))
        }
        Some((Ok(_), at)) => Ok((timed_out, at)),
        Some((Err(e), _)) => Err(format!("waiting for it: {e}")),
        None => Ok((timed_out, Instant::now())),
    }
}

/// A run's log: the first `max` bytes of its output, then one note.
struct CappedLog {
    file: File,
    left: u64,
    max: u64,
    dropped: bool,
}

impl CappedLog {
    fn new(file: File, max: u64) -> Self {
        Self {
            file,
            left: max,
            max,
            dropped: false,
        }
    }

    /// Keeps what fits. A failed write (a full disk) loses log text only:
    /// the output is still read, so the program goes on.
    fn write(&mut self, bytes: &[u8]) {
        let kept = usize::try_from(self.left).map_or(bytes.len(), |left| left.min(bytes.len()));
        let _ = self.file.write_all(&bytes[..kept]);
        self.left -= kept as u64;
        if kept < bytes.len() && !self.dropped {
            self.dropped = true;
            let _ = writeln!(
                self.file,
                "\n[gridsel: output past {} MiB dropped (--max-output)]",
                self.max >> 20
            );
        }
    }
}

/// Reads `output` to its end into `log`.
fn copy_capped(mut output: impl Read, log: &mut CappedLog) {
    let mut buffer = vec![0; 64 << 10];
    loop {
        match output.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => log.write(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
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
