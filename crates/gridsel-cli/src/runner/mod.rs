//! Running someone's program under gridsel, as `gridsel compare` and
//! `gridsel tune` do: the programs ([`manifest`]), a fresh output folder and
//! the files in it ([`output`]), one run with its environment, time limit,
//! output cap and process group ([`runs`]), stopped with gridsel
//! ([`stop`]); the profile it leaves is read
//! by the library's [`gridsel_cli::profile_rows`]. The flags that say how
//! programs run are defined once, in [`RunnerArgs`].

pub mod manifest;
pub mod output;
pub mod runs;
pub mod stop;

use manifest::Program;
use runs::RunLimits;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The longest `--timeout`, a week: longer is no limit at all.
const MAX_TIMEOUT_S: u64 = 7 * 24 * 3600;

/// The most `--max-output`, 1 TiB.
const MAX_OUTPUT_MIB: u64 = 1 << 20;

/// How the programs of a command run: the flags `compare` and `tune`
/// share.
#[derive(clap::Args)]
pub struct RunnerArgs {
    /// Seconds a run may take: one still going then is killed, with every
    /// process it started in its process group, and reported as failed.
    #[arg(long, value_name = "SECS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT_S))]
    pub timeout: u64,
    /// MiB of a run's output (stdout and stderr together) kept in its log;
    /// the rest is read and dropped, with one note in the log (a `tune`
    /// run whose output is cut does not verify).
    #[arg(long, value_name = "MIB", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=MAX_OUTPUT_MIB))]
    pub max_output: u64,
    /// The library to preload (default: libgridsel.so next to this
    /// executable).
    #[arg(long)]
    pub lib: Option<PathBuf>,
    /// Folder for the logs, profiles and reports: a new folder, or an empty
    /// one (not a symbolic link); default: a new folder of a random name
    /// under the system's temporary folder, readable by you alone.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A TOML suite of programs (`[[program]]` with name, command and
    /// optionally env and cwd) instead of one command.
    #[arg(long, conflicts_with = "command")]
    pub manifest: Option<PathBuf>,
    /// The program and its arguments (after `--`); any bytes.
    #[arg(
        value_name = "PROGRAM",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required_unless_present = "manifest",
        value_parser = clap::value_parser!(OsString)
    )]
    pub command: Vec<OsString>,
}

impl RunnerArgs {
    /// What each run may take.
    pub fn limits(&self) -> RunLimits {
        RunLimits {
            timeout: Duration::from_secs(self.timeout),
            max_output: self.max_output << 20,
        }
    }

    /// The programs to run, from the manifest or the command line, and what
    /// the report says was run.
    pub fn programs(&self) -> Result<(Vec<Program>, String), String> {
        let cwd = std::env::current_dir().map_err(|e| format!("current folder: {e}"))?;
        let Some(path) = &self.manifest else {
            let program = manifest::single(self.command.clone(), &cwd)?;
            let source = format!("command {}", shell_words(&program.command));
            return Ok((vec![program], source));
        };
        let path = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let folder = path.parent().unwrap_or(&cwd);
        let programs =
            manifest::parse(&text, folder).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok((programs, format!("manifest {}", path.display())))
    }

    /// The library to preload, absolute: `--lib`, or libgridsel.so next to
    /// the running executable.
    pub fn library(&self) -> Result<PathBuf, String> {
        library(self.lib.as_deref())
    }
}

fn library(given: Option<&Path>) -> Result<PathBuf, String> {
    let path = match given {
        Some(path) => std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?,
        None => {
            let exe = std::env::current_exe().map_err(|e| format!("this executable: {e}"))?;
            exe.with_file_name("libgridsel.so")
        }
    };
    if !path.is_file() {
        let whence = if given.is_some() {
            "given with --lib"
        } else {
            "expected next to the gridsel executable; pass --lib PATH"
        };
        return Err(format!("no library at {} ({whence})", path.display()));
    }
    let text = path.to_string_lossy();
    if text.contains([' ', ':']) {
        return Err(format!(
            "{text}: LD_PRELOAD cannot name a path with a space or a colon; copy or link the library elsewhere"
        ));
    }
    Ok(path)
}

/// A name as part of a file name (`fixed:64,8` -> `fixed_64_8`).
pub fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A command line as a shell would take it back: arguments holding anything
/// but letters, digits and `-_./=:,+@%` in single quotes, and those that are
/// not UTF-8 as bash's `$'...'` with their bytes escaped.
pub fn shell_words(command: &[OsString]) -> String {
    use std::os::unix::ffi::OsStrExt;
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    command
        .iter()
        .map(|word| match word.to_str() {
            Some(word) if !word.is_empty() && word.chars().all(plain) => word.to_string(),
            Some(word) => format!("'{}'", word.replace('\'', r"'\''")),
            None => {
                let bytes = word.as_bytes().iter();
                let escaped: String = bytes
                    .map(|&b| match b {
                        b'\'' | b'\\' => format!("\\{}", b as char),
                        b' '..=b'~' => (b as char).to_string(),
                        _ => format!("\\x{b:02x}"),
                    })
                    .collect();
                format!("$'{escaped}'")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_for_policies() {
        assert_eq!(file_safe("fixed:64,8"), "fixed_64_8");
        assert_eq!(file_safe("auto"), "auto");
    }

    #[test]
    fn a_missing_library_is_named() {
        let err = library(Some(Path::new("/nonexistent/libgridsel.so"))).unwrap_err();
        assert!(
            err.contains("/nonexistent/libgridsel.so") && err.contains("--lib"),
            "{err}"
        );
    }

    #[test]
    fn shell_words_quote_what_needs_it() {
        use std::os::unix::ffi::OsStringExt;
        let words = ["./gemm", "1024", "a b", "it's", ""].map(OsString::from);
        assert_eq!(shell_words(&words), r"./gemm 1024 'a b' 'it'\''s' ''");
        let raw = OsString::from_vec(b"a\xff'\\ b".to_vec());
        assert_eq!(shell_words(&[raw]), r"$'a\xff\'\\ b'");
    }
}
