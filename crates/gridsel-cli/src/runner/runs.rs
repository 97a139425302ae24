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

/// How a program ended.
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
pub struct RunLimits {
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

/// How long a run's output may stay open once the program exited: a
/// process it left behind (a daemon, `cmd &`) holding it would otherwise
/// hold the run until `--timeout`; past this it is killed with the run's
/// process group.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Which of the caller's `GRIDSEL_*` variables a run keeps besides the
/// settings it is given.
#[derive(Clone, Copy, Debug)]
pub enum Inherit {
    /// Every one (`compare`: the rest of the user's environment is part of
    /// what is compared).
    Every,
    /// Only these; the others are removed, so that a run gets exactly the
    /// gridsel environment its caller intends (`tune`).
    Only(&'static [&'static str]),
}

impl Inherit {
    /// Of the variables named `names`, the `GRIDSEL_*` ones a run must not
    /// inherit.
    pub fn removed<'a>(
        self,
        names: impl IntoIterator<Item = &'a OsStr>,
    ) -> impl Iterator<Item = &'a OsStr> {
        names.into_iter().filter(move |name| match self {
            Self::Every => false,
            Self::Only(kept) => {
                name.as_encoded_bytes()
                    .starts_with(gridsel_core::env::ENV_PREFIX.as_bytes())
                    && !kept.iter().any(|k| OsStr::new(k) == *name)
            }
        })
    }
}

/// How a run ended.
pub struct Ended {
    pub status: Status,
    /// From start to exit.
    pub wall_s: f64,
    /// Output past `--max-output` was dropped: the log holds its start only.
    pub output_cut: bool,
    /// The program exited, but processes it left held its output open past
    /// [`EXIT_GRACE`]: they were killed with the run's process group.
    pub output_held: bool,
    /// The output was still open when gridsel moved on (held by a process
    /// that left the run's process group): the log may lack its end.
    pub output_open: bool,
}

impl Ended {
    /// The line that says the output was held open, if it was.
    pub fn held_note(&self) -> Option<String> {
        self.output_held.then(|| {
            format!(
                "the program exited, but processes it started kept its output open: killed with \
                 its process group after {} s",
                EXIT_GRACE.as_secs()
            )
        })
    }
}

/// Runs `program` once with `lib` preloaded and gridsel's `settings`
/// (variables such as `GRIDSEL_POLICY`) over its environment, less the
/// caller's `GRIDSEL_*` variables `inherit` leaves out, its stdout and
/// stderr into `files.log` (up to `limits.max_output`), its launches into
/// `files.profile`; both are new files. The program leads a process group
/// of its own, killed whole when it outlives `limits.timeout`, when its
/// output outlives it by [`EXIT_GRACE`], or when gridsel is stopped
/// ([`super::stop`]); it is killed if the calling thread ends first, which
/// cannot happen here: this waits on that thread until the program and its
/// group have ended (a session's runs on several GPUs each on a thread of
/// their own).
pub fn run(
    program: &Program,
    settings: &[(&str, &OsStr)],
    inherit: Inherit,
    lib: &Path,
    files: &RunFiles,
    limits: RunLimits,
) -> Ended {
    let start = Instant::now();
    let environment = (settings, inherit);
    match spawn_and_wait(program, environment, lib, files, limits, start) {
        Ok(ended) => ended,
        Err(e) => Ended {
            status: Status::NotStarted(e),
            wall_s: start.elapsed().as_secs_f64(),
            output_cut: false,
            output_held: false,
            output_open: false,
        },
    }
}

/// What the threads watching a run report: the program's exit, and the
/// end of its output (stdout and stderr share one pipe), with whether it
/// was cut.
enum Event {
    Exited(std::io::Result<ExitStatus>, Instant),
    OutputClosed { cut: bool },
}

fn spawn_and_wait(
    program: &Program,
    (settings, inherit): (&[(&str, &OsStr)], Inherit),
    lib: &Path,
    files: &RunFiles,
    limits: RunLimits,
    start: Instant,
) -> Result<Ended, String> {
    let log = output::create_file(&files.log)?;
    let theirs = program
        .env
        .get(LD_PRELOAD)
        .map(OsString::from)
        .or_else(|| std::env::var_os(LD_PRELOAD));
    let show = |e: std::io::Error| format!("{}: {e}", program.command[0].to_string_lossy());
    let (output, output_end) = gridsel_host::ffi::process::pipe().map_err(show)?;
    let output_end_too = output_end.try_clone().map_err(show)?;
    let mut command = Command::new(&program.command[0]);
    let inherited: Vec<OsString> = std::env::vars_os().map(|(name, _)| name).collect();
    for name in inherit.removed(inherited.iter().map(OsString::as_os_str)) {
        command.env_remove(name);
    }
    command
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
        .process_group(0);
    // Safe against an early kill: the parent-death signal fires when the
    // thread that forks ends, and this thread waits below for the program
    // and its group to end before it returns (a session's runs on several
    // GPUs each start and wait on a thread of their own).
    gridsel_host::ffi::process::kill_with_parent(&mut command);
    // A stop (SIGINT, SIGTERM, SIGHUP) waits for the group to be known.
    let mut running = super::stop::running();
    let mut child = command.spawn().map_err(show)?;
    let group = child.id();
    running.insert(group);
    drop(running);
    // The Command, and with it this process's writing ends, is gone: the
    // output closes when the run and whatever inherited it have.
    drop(command);
    let (events, received) = mpsc::channel();
    let output_events = events.clone();
    std::thread::spawn(move || {
        let mut log = CappedLog::new(log, limits.max_output);
        copy_capped(output, &mut log);
        let _ = output_events.send(Event::OutputClosed { cut: log.dropped });
    });
    std::thread::spawn(move || {
        let status = child.wait();
        let _ = events.send(Event::Exited(status, Instant::now()));
    });

    let mut deadline = start + limits.timeout;
    let (mut exited, mut killed, mut open, mut cut) = (None, false, true, false);
    while exited.is_none() || open {
        match received.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Event::Exited(status, at)) => {
                exited = Some((status, at));
                // What it left behind has a short while to close its
                // output, not the rest of the timeout.
                if !killed {
                    deadline = deadline.min(at + EXIT_GRACE);
                }
            }
            Ok(Event::OutputClosed { cut: was_cut }) => (open, cut) = (false, was_cut),
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
    super::stop::running().remove(&group);
    let timed_out = Status::TimedOut(limits.timeout.as_secs());
    let (status, end) = match exited {
        // Exited before the kill: its own status, whatever it left behind.
        Some((Ok(status), at)) if !killed || at < start + limits.timeout => {
            (Status::of(status), at)
        }
        Some((Ok(_), at)) => (timed_out, at),
        Some((Err(e), _)) => return Err(format!("waiting for it: {e}")),
        None => (timed_out, Instant::now()),
    };
    Ok(Ended {
        output_held: killed && !matches!(status, Status::TimedOut(_)),
        status,
        wall_s: (end - start).as_secs_f64(),
        output_cut: cut,
        output_open: open,
    })
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
    fn a_run_keeps_only_the_callers_gridsel_variables_asked() {
        let names = [
            "PATH",
            "GRIDSEL_SITE_CACHE",
            "GRIDSEL_DEVICE",
            "GRIDSEL_X",
            "MY_GRIDSEL_Y",
        ]
        .map(OsStr::new);
        let removed: Vec<&OsStr> = Inherit::Only(&["GRIDSEL_DEVICE"]).removed(names).collect();
        assert_eq!(removed, ["GRIDSEL_SITE_CACHE", "GRIDSEL_X"]);
        assert_eq!(Inherit::Every.removed(names).count(), 0);
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
