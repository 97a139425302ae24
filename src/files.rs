//! The files the environment names, read and written only through
//! [`crate::ffi::fs`]: regular files, never through a symbolic link, never a
//! device or a FIFO, read up to a cap per kind of file.

use crate::device::{DeviceDesc, DeviceError};
use crate::ffi::fs;
use crate::forest::{Forest, ForestError};
use crate::tune::Store;
use crate::tune::cache::{self, CacheError, Table, Update};
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

    fn load(&self) -> Result<Table, CacheError> {
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

/// Reads a store; a missing file is an empty table.
pub fn load_cache(path: &Path) -> Result<Table, CacheError> {
    match fs::read_capped(path, cache::MAX_BYTES) {
        Ok(text) => cache::parse(&text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Table::default()),
        Err(e) => Err(CacheError::Io(e)),
    }
}

/// Merges `updates` into the store at `path` (created if missing; a
/// corrupt file is replaced), under the lock, waiting for it at most
/// `patience` (then [`CacheError::Busy`]).
pub fn store_cache(path: &Path, updates: &[Update], patience: Duration) -> Result<(), CacheError> {
    edit_cache(path, patience, |table| {
        for u in updates {
            table.apply(u);
        }
    })
}

/// Changes the store at `path` with `edit`, under its lock (waiting at
/// most `patience`), drops the least recently used records past
/// [`cache::MAX_BYTES`] and replaces the file atomically. A missing or
/// corrupt file starts empty; one that cannot be read or that a newer
/// gridsel wrote is left as it is (an error).
pub fn edit_cache(
    path: &Path,
    patience: Duration,
    edit: impl FnOnce(&mut Table),
) -> Result<(), CacheError> {
    let _lock = fs::lock(&sibling(path, ".lock"), patience).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => CacheError::Busy,
        _ => CacheError::Io(e),
    })?;
    let mut table = match load_cache(path) {
        Ok(table) => table,
        Err(CacheError::Corrupt(_)) => Table::default(),
        Err(e) => return Err(e),
    };
    edit(&mut table);
    let evicted = table.evict_to(cache::MAX_BYTES);
    if evicted > 0 {
        log::info!(
            "store {}: {evicted} least recently used searches dropped to stay under {} bytes",
            path.display(),
            cache::MAX_BYTES
        );
    }
    fs::replace_atomically(path, table.render().as_bytes()).map_err(CacheError::Io)
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
