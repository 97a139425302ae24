//! The files the environment names, read and written only through
//! [`crate::ffi::fs`]: regular files, never through a symbolic link, never a
//! device or a FIFO, read up to a cap per kind of file.

use crate::device::{DeviceDesc, DeviceError};
use crate::ffi::fs;
use crate::forest::{Forest, ForestError};
use crate::tune::Store;
use crate::tune::cache::{self, CacheError, Contents, Table, Update};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The largest device profile read: a few dozen lines of TOML.
pub const MAX_PROFILE_BYTES: u64 = 64 << 10;

/// The largest model file read: the embedded one is under 100 KiB, and a
/// forest of 32 trees of depth 10 (the largest `train.py` was tried with)
/// a few MiB.
pub const MAX_MODEL_BYTES: u64 = 16 << 20;

/// A preset name or the path of a TOML profile (a regular file of at most
/// [`MAX_PROFILE_BYTES`]).
pub fn device(spec: &str) -> Result<DeviceDesc, DeviceError> {
    if let Some(desc) = DeviceDesc::preset(spec) {
        return Ok(desc);
    }
    let path = Path::new(spec);
    let text = fs::read_capped(path, MAX_PROFILE_BYTES).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => DeviceError::UnknownPreset(spec.to_string()),
        _ => DeviceError::Io(format!("{}: {e}", path.display())),
    })?;
    DeviceDesc::from_toml(&text).map_err(|e| e.in_file(path))
}

/// Reads and validates a model file (a regular file of at most
/// [`MAX_MODEL_BYTES`]).
pub fn model(path: &Path) -> Result<Forest, ForestError> {
    let text = fs::read_capped(path, MAX_MODEL_BYTES)
        .map_err(|e| ForestError::Io(format!("{}: {e}", path.display())))?;
    Forest::from_json(&text).map_err(|e| match e {
        ForestError::Io(m) => ForestError::Io(m),
        ForestError::Syntax(m) => ForestError::Syntax(format!("{}: {m}", path.display())),
        ForestError::Version(m) => ForestError::Version(format!("{}: {m}", path.display())),
        ForestError::Invalid(m) => ForestError::Invalid(format!("{}: {m}", path.display())),
    })
}

/// `GRIDSEL_MODEL`'s file when given, else the embedded model.
pub fn model_or_embedded(path: Option<&Path>) -> Result<Arc<Forest>, ForestError> {
    match path {
        Some(p) => model(p).map(Arc::new),
        None => Forest::embedded(),
    }
}

/// `GRIDSEL_CACHE`: `tune`'s searches in a file ([`cache`] is the format).
/// Updates are merged in under an advisory lock on `<file>.lock` (flock)
/// and the file is replaced atomically ([`fs::replace_atomically`]), so
/// readers never see half a file and concurrent processes never lose each
/// other's samples.
pub struct CacheFile {
    path: PathBuf,
    /// Create the folder if missing (the default store under
    /// `$XDG_CACHE_HOME`); a folder the user named must exist.
    create_folder: bool,
}

impl CacheFile {
    pub fn new(path: PathBuf, create_folder: bool) -> Self {
        Self {
            path,
            create_folder,
        }
    }
}

impl Store for CacheFile {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn load(&self) -> Result<Contents, CacheError> {
        load_cache(&self.path)
    }

    fn store(&self, updates: &[Update], patience: Duration) -> Result<(), CacheError> {
        if self.create_folder
            && let Some(folder) = self.path.parent()
        {
            // Private to the user, as XDG asks of the cache folder.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(folder)
                .map_err(CacheError::Io)?;
        }
        store_cache(&self.path, updates, patience)
    }
}

/// Reads a store ([`cache::parse`]): its records that validate and what
/// was left out; a missing file is an empty store.
pub fn load_cache(path: &Path) -> Result<Contents, CacheError> {
    read_cache(path).map(|(contents, _)| contents)
}

/// [`load_cache`], and the file's text (`None` when missing).
fn read_cache(path: &Path) -> Result<(Contents, Option<String>), CacheError> {
    match fs::read_capped(path, cache::MAX_BYTES) {
        Ok(text) => Ok((cache::parse(&text)?, Some(text))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((Contents::default(), None)),
        Err(e) => Err(CacheError::Io(e)),
    }
}

/// Merges `updates` into the store at `path` (created if missing), under
/// the lock, waiting for it at most `patience` (then [`CacheError::Busy`]);
/// records that do not validate are set aside ([`OnInvalid::SetAside`]).
pub fn store_cache(path: &Path, updates: &[Update], patience: Duration) -> Result<(), CacheError> {
    edit_cache(path, patience, OnInvalid::SetAside, |table| {
        for u in updates {
            table.apply(u);
        }
    })
}

/// What [`edit_cache`] does with a store some of whose records do not
/// validate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnInvalid {
    /// Keeps the file as it is as `<store>.bad`, then drops them. A `.bad`
    /// already there is never replaced: it may hold the only copy of
    /// records dropped before, so the store is then left as it is
    /// ([`CacheError::CopyNotKept`]) until the user moves that file away.
    SetAside,
    /// Changes nothing ([`CacheError::Invalid`]): for an edit the user
    /// asked for, who can then look at the file first.
    Refuse,
}

/// Changes the store at `path` with `edit`, under its lock (waiting at
/// most `patience`), drops the least recently used records past
/// [`cache::MAX_BYTES`] and replaces the file atomically, keeping its mode
/// and owner. A missing file starts empty; one that cannot be read, that
/// is not a gridsel store, that a newer gridsel wrote or that is read-only
/// is left as it is (an error); records that do not validate go as
/// `on_invalid` says.
pub fn edit_cache(
    path: &Path,
    patience: Duration,
    on_invalid: OnInvalid,
    edit: impl FnOnce(&mut Table),
) -> Result<(), CacheError> {
    let _lock = fs::lock(&sibling(path, ".lock"), patience).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => CacheError::Busy,
        _ => CacheError::Io(e),
    })?;
    let (Contents { mut table, dropped }, text) = read_cache(path)?;
    if !dropped.is_empty() {
        match (on_invalid, text) {
            (OnInvalid::Refuse, _) => return Err(CacheError::Invalid(dropped)),
            (OnInvalid::SetAside, Some(text)) => set_aside(path, &text)?,
            (OnInvalid::SetAside, None) => {}
        }
    }
    edit(&mut table);
    let evicted = table.evict_to(cache::MAX_BYTES, crate::tune::unix_seconds());
    if evicted > 0 {
        log::info!(
            "store {}: {evicted} least recently used searches dropped to stay under {} bytes",
            path.display(),
            cache::MAX_BYTES
        );
    }
    fs::replace_atomically(path, table.render().as_bytes()).map_err(CacheError::Io)
}

/// Keeps `text`, the store at `path` as read, as `<path>.bad`, which must
/// not exist yet ([`OnInvalid::SetAside`]), with the store's mode and owner.
fn set_aside(path: &Path, text: &str) -> Result<(), CacheError> {
    let bad = sibling(path, ".bad");
    match fs::write_new(&bad, text.as_bytes(), path) {
        Ok(()) => {
            log::info!(
                "store {}: kept as it was as {} before leaving out what does not validate",
                path.display(),
                bad.display()
            );
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            Err(CacheError::CopyNotKept(format!(
                "has records that do not validate, and {} from before is in the way of keeping a copy: left as it is until that file is moved away",
                bad.display()
            )))
        }
        Err(e) => Err(CacheError::CopyNotKept(format!(
            "has records that do not validate, and no copy can be kept as {} ({e}): left as it is",
            bad.display()
        ))),
    }
}

/// `<path><suffix>`, next to the file.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::PRESETS;

    #[test]
    fn a_device_is_a_preset_or_a_profile_file() {
        for name in PRESETS {
            assert_eq!(device(name).unwrap(), DeviceDesc::preset(name).unwrap());
        }
        assert!(matches!(
            device("/nonexistent/profile.toml"),
            Err(DeviceError::UnknownPreset(_))
        ));
    }
}
