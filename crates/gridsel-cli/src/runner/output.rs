//! The output folder of a `compare` or `tune` and the files in it, created
//! fresh.
//!
//! gridsel is often run as root and writes where it is told: a folder
//! reused from an earlier run, or a file name someone planted as a symbolic
//! link, would let it overwrite another file. So the folder is one this run
//! creates (or an empty one the user made, not a link), each program's
//! folder in it is created new, and every file is created new with
//! `O_CREAT | O_EXCL`, which fails on an existing name, a symbolic link
//! included, instead of following it.

use std::fs::{DirBuilder, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// How many unpredictable names a default folder tries before giving up
/// (each collision is a folder someone else made under that name).
const DEFAULT_FOLDER_TRIES: u32 = 16;

/// `given` (`--out`), created when missing; an existing one must be an
/// empty folder and not a symbolic link. Without `--out`, a new folder
/// `<prefix>-<unpredictable>` under the temporary folder, mode 0700. Absolute,
/// since the programs may run in other folders.
pub fn create_folder(given: Option<&Path>, prefix: &str) -> Result<PathBuf, String> {
    match given {
        Some(path) => {
            // Components rebuilt: a trailing `/` would make the checks below
            // follow a symbolic link.
            let path: PathBuf = std::path::absolute(path)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .components()
                .collect();
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("--out {}: {e}", parent.display()))?;
            }
            match DirBuilder::new().create(&path) {
                Ok(()) => Ok(path),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    check_empty_folder(&path).map(|()| path)
                }
                Err(e) => Err(format!("--out {}: {e}", path.display())),
            }
        }
        None => {
            let temp = std::path::absolute(std::env::temp_dir())
                .map_err(|e| format!("the temporary folder: {e}"))?;
            for _ in 0..DEFAULT_FOLDER_TRIES {
                let path = temp.join(format!("{prefix}-{:016x}", unpredictable()));
                match DirBuilder::new().mode(0o700).create(&path) {
                    Ok(()) => return Ok(path),
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(format!("{}: {e}", path.display())),
                }
            }
            Err(format!(
                "{}: no new folder after {DEFAULT_FOLDER_TRIES} names; pass --out DIR",
                temp.display()
            ))
        }
    }
}

/// Accepts an existing `--out` only when it is an empty folder itself.
fn check_empty_folder(path: &Path) -> Result<(), String> {
    let show = |why: &str| Err(format!("--out {}: {why}", path.display()));
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.file_type().is_symlink() {
        return show("a symbolic link; name a new folder or an empty one");
    }
    if !meta.is_dir() {
        return show("exists and is not a folder; name a new folder or an empty one");
    }
    let mut entries = std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if entries.next().is_some() {
        return show(
            "not empty; name a new folder or an empty one (files of an earlier run are never replaced)",
        );
    }
    Ok(())
}

/// A folder `name` in `out`, created new.
pub fn create_subfolder(out: &Path, name: &str) -> Result<PathBuf, String> {
    let path = out.join(name);
    DirBuilder::new()
        .create(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// A new file at `path`: an existing name, a symbolic link included, is
/// an error.
pub fn create_file(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A new file at `path` holding `text`.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    create_file(path)?
        .write_all(text.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// 64 bits another user cannot guess: std seeds each `RandomState` from
/// the OS's random source.
fn unpredictable() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}
