//! The files the environment names, read and written only through
//! [`crate::ffi::fs`]: regular files, never through a symbolic link, never a
//! device or a FIFO, read up to a cap per kind of file.

use crate::ffi::fs;
use gridsel_core::device::{DeviceDesc, DeviceError};
use gridsel_core::forest_model::{Forest, ForestError};
use gridsel_core::tune::Store;
use gridsel_core::tune::store::{
    self, Contents, Journal, JournalId, Only, StoreError, Table, Update,
};
use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The largest device description read: a few dozen lines of TOML.
pub const MAX_DEVICE_BYTES: u64 = 64 << 10;

/// The largest model file read: the embedded one is under 100 KiB, and a
/// forest of 32 trees of depth 10 (the largest `train.py` was tried with)
/// a few MiB.
pub const MAX_MODEL_BYTES: u64 = 16 << 20;

/// A preset name or the path of a TOML device description (a regular file of at most
/// [`MAX_DEVICE_BYTES`]).
pub fn device(spec: &str) -> Result<DeviceDesc, DeviceError> {
    if let Some(desc) = DeviceDesc::preset(spec) {
        return Ok(desc);
    }
    let path = Path::new(spec);
    let text = fs::read_capped(path, MAX_DEVICE_BYTES).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => DeviceError::UnknownPreset(spec.to_string()),
        _ => DeviceError::Io(format!("{}: {e}", gridsel_core::text::shown_path(path))),
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

/// `GRIDSEL_CACHE`: `tune`'s searches in a file ([`store`] is the format)
/// and its journal beside it, `<file>.journal`.
///
/// Every write takes an advisory lock on `<file>.lock` (flock), so
/// concurrent processes never lose each other's samples. A process's
/// updates are lines appended to the journal ([`Store::store`]): the lock
/// is held for an append and an fsync, whatever the store's size, so that
/// dozens of processes ending together (an MPI job's ranks) each get their
/// turn within the exit's patience. Merging an update into the file
/// instead re-reads, re-parses and rewrites all of it: 112-119 ms near its
/// 4 MiB cap in a release build, about 1 s in a debug build on a 2-core
/// VM, so 32 processes ending together on it waited out the exit's 5 s and
/// lost their updates. Every reader applies the journal over the file.
///
/// The journal is merged into the file (compacted: [`edit_store`]) when a
/// process that read it long ([`store::JOURNAL_COMPACT_BYTES`]) writes
/// next, which its writer thread does right after the read (off the
/// launches and, unless the program is short, off the exit); when an
/// update would take it past [`store::MAX_JOURNAL_BYTES`]; when the file
/// is not paired with a journal yet (missing, or written by hand or by an
/// older gridsel); when records or lines do not validate (set aside first,
/// as [`OnInvalid`] says); and by `gridsel cache clear`. The file is then
/// replaced atomically ([`fs::replace_atomically`]) and paired with a new
/// journal id ([`store::JournalId`]), and the journal is removed: a
/// journal of another id is never read over the store, so one a killed
/// compaction left behind counts nothing twice.
///
/// The journal follows the store's rules: a regular file, never through a
/// link, read up to its cap, given the store's mode and owner, and
/// written only when the store would be (a gridsel store of this version,
/// not read-only, under its cap). One over its cap is not read, and the
/// next compaction keeps it as `<file>.journal.bad`. The store, journal
/// and lock are refused when another user owns them than this process's
/// or root ([`fs::ensure_owned`]).
pub struct StoreFile {
    path: PathBuf,
    /// Create the folder if missing (the default store under
    /// `$XDG_CACHE_HOME`); a folder the user named must exist.
    create_folder: bool,
    /// Set by [`Store::load`] when the store asked to be compacted (a long
    /// journal, entries that do not validate): the journal id it was
    /// paired with, so that the next write compacts it unless another
    /// process has since (which pairs it anew).
    due: Mutex<Option<JournalId>>,
}

impl StoreFile {
    pub fn new(path: PathBuf, create_folder: bool) -> Self {
        Self {
            path,
            create_folder,
            due: Mutex::new(None),
        }
    }
}

impl Store for StoreFile {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn load(&self) -> Result<Contents, StoreError> {
        let read = read_with_journal(&self.path, None)?;
        let long = read.journal_len >= store::JOURNAL_COMPACT_BYTES;
        let due = long || !read.contents.dropped.is_empty();
        *gridsel_core::lock(&self.due) = read.contents.journal.filter(|_| due);
        Ok(read.contents)
    }

    /// Reads the kernels' records alone, taking no lock and creating
    /// nothing: a production run's reading.
    fn load_only(&self, only: &Only) -> Result<Contents, StoreError> {
        read_with_journal(&self.path, Some(only)).map(|read| read.contents)
    }

    fn upkeep_due(&self) -> bool {
        gridsel_core::lock(&self.due).is_some()
    }

    fn store(&self, updates: &[Update], patience: Duration) -> Result<(), StoreError> {
        let due = gridsel_core::lock(&self.due).take();
        if updates.is_empty() && due.is_none() {
            return Ok(());
        }
        if self.create_folder {
            create_store_folder(&self.path).map_err(StoreError::Io)?;
        }
        let written = write_store(&self.path, updates, patience, due);
        if written.is_err() && due.is_some() {
            *gridsel_core::lock(&self.due) = due;
        }
        written
    }
}

/// Creates the folder of the store at `path` where missing (the default
/// store, `<cache>/gridsel/`), private to the user, as XDG asks of the
/// cache folder: gridsel's own folder and the cache folder above it
/// (`~/.cache`, missing in a new account), never more: a `HOME` or
/// `XDG_CACHE_HOME` under a folder that does not exist is a mistake
/// (`HOME=/nonexistent`), and root would create it anywhere.
pub fn create_store_folder(path: &Path) -> io::Result<()> {
    let Some(folder) = path.parent() else {
        return Ok(());
    };
    for folder in [folder.parent(), Some(folder)].into_iter().flatten() {
        if folder.is_dir() {
            continue;
        }
        if !folder.parent().is_some_and(Path::is_dir) {
            let missing = format!(
                "{} does not exist",
                folder.parent().unwrap_or(folder).display()
            );
            return Err(io::Error::new(io::ErrorKind::NotFound, missing));
        }
        match std::fs::DirBuilder::new().mode(0o700).create(folder) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Reads a store ([`store::parse`]) and its journal
/// ([`store::parse_journal`]) over it: the records that validate and what
/// was left out; a missing file is an empty store.
pub fn load_store(path: &Path) -> Result<Contents, StoreError> {
    read_with_journal(path, None).map(|read| read.contents)
}

/// A store and its journal as read.
struct Read {
    /// The store's records with the journal's updates applied (when it is
    /// the store's own).
    contents: Contents,
    /// The store's text (`None` when missing), and whether some of its
    /// records did not validate.
    store: Option<String>,
    store_invalid: bool,
    /// The journal's bytes when it is the store's own, and whether some of
    /// its lines did not validate.
    journal: Option<Vec<u8>>,
    journal_invalid: bool,
    /// The journal's length, whoever's it is.
    journal_len: u64,
    /// The journal is over [`store::MAX_JOURNAL_BYTES`]: not read, and set
    /// aside at the next write (see [`edit_store`]).
    journal_too_large: bool,
}

/// How often a reader tries again when the store was compacted between its
/// read of the store and its read of the journal.
const READ_ATTEMPTS: usize = 3;

/// Reads the store at `path` and its journal. Without the lock a
/// compaction may come between the two reads, merging the journal into a
/// newer store: a journal of another id, or none, is then read again with
/// the new store. One still of another id while the store is the same is
/// stale (a compaction was killed before removing it) and left out.
/// With `only`, only those kernels' records are read ([`load_store_only`]).
fn read_with_journal(path: &Path, only: Option<&Only>) -> Result<Read, StoreError> {
    ensure_owned(path, false)?;
    ensure_owned(&journal_path(path), true)?;
    let (mut contents, mut text) = read_store(path, only)?;
    for _ in 0..READ_ATTEMPTS {
        let (bytes, journal) = match read_journal(path, only)? {
            JournalFile::Read(bytes, journal) => (bytes, journal),
            JournalFile::Missing if store_unchanged(path, &contents)? => {
                return Ok(Read::of_store(contents, text, 0));
            }
            JournalFile::TooLarge(len) if store_unchanged(path, &contents)? => {
                let journal = journal_path(path);
                let mut read = Read {
                    journal_too_large: true,
                    ..Read::of_store(contents, text, len)
                };
                read.contents.dropped.push(format!(
                    "{}: {}: not read; the next write to the store keeps it as {} and starts \
                     a new one (`gridsel cache clear` does it now)",
                    journal.display(),
                    fs::too_large(store::MAX_JOURNAL_BYTES),
                    sibling(&journal, ".bad").display()
                ));
                return Ok(read);
            }
            JournalFile::Missing | JournalFile::TooLarge(_) => {
                (contents, text) = read_store(path, only)?;
                continue;
            }
        };
        let journal_len = bytes.len() as u64;
        let store_invalid = !contents.dropped.is_empty();
        let journal_invalid = !journal.dropped.is_empty();
        if contents.extend(journal) {
            return Ok(Read {
                contents,
                store: text,
                store_invalid,
                journal: Some(bytes),
                journal_invalid,
                journal_len,
                journal_too_large: false,
            });
        }
        if store_unchanged(path, &contents)? {
            return Ok(Read::of_store(contents, text, journal_len));
        }
        (contents, text) = read_store(path, only)?;
    }
    // Compacted at each attempt: this store, without its latest updates.
    Ok(Read::of_store(contents, text, 0))
}

impl Read {
    /// A store read without a journal of its own (a journal of `journal_len`
    /// bytes of another id, or none).
    fn of_store(contents: Contents, store: Option<String>, journal_len: u64) -> Self {
        Self {
            store_invalid: !contents.dropped.is_empty(),
            contents,
            store,
            journal: None,
            journal_invalid: false,
            journal_len,
            journal_too_large: false,
        }
    }
}

/// Whether the store at `path` is still paired with the journal
/// `contents` was read with (a compaction pairs it anew; a missing store
/// is unpaired).
fn store_unchanged(path: &Path, contents: &Contents) -> Result<bool, StoreError> {
    let head = match fs::read_head(path, store::PAIRED_HEADER_BYTES) {
        Ok(head) => head,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(StoreError::Io(e)),
    };
    Ok(store::journal_of(&head) == contents.journal)
}

/// The store at `path` alone, and its text (`None` when missing); with
/// `only`, only those kernels' records, and no text: streamed a line at a
/// time where the store is laid out as gridsel writes it
/// ([`store::OnlyLines`]), else read whole.
fn read_store(path: &Path, only: Option<&Only>) -> Result<(Contents, Option<String>), StoreError> {
    if let Some(only) = only {
        let mut lines = store::OnlyLines::new(only);
        match fs::read_lines_capped(path, store::MAX_BYTES, |line| lines.line(line)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok((Contents::default(), None));
            }
            Err(e) => return Err(StoreError::Io(e)),
        }
        if let Some(contents) = lines.finish() {
            return Ok((contents, None));
        }
    }
    match fs::read_capped(path, store::MAX_BYTES) {
        Ok(text) => {
            let contents = match only {
                Some(only) => store::parse_only(&text, only)?,
                None => store::parse(&text)?,
            };
            Ok((contents, Some(text)))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((Contents::default(), None)),
        Err(e) => Err(StoreError::Io(e)),
    }
}

/// A store's journal as [`read_journal`] finds it.
enum JournalFile {
    Missing,
    /// Over [`store::MAX_JOURNAL_BYTES`] (gridsel never makes one, but
    /// another program or an older gridsel may): its length.
    TooLarge(u64),
    /// Its bytes, and as read.
    Read(Vec<u8>, Journal),
}

/// The journal of the store at `path`; with `only`, only those kernels'
/// lines are read.
fn read_journal(path: &Path, only: Option<&Only>) -> Result<JournalFile, StoreError> {
    let journal = journal_path(path);
    let bytes = match fs::read_capped_bytes(&journal, store::MAX_JOURNAL_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(JournalFile::Missing),
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => {
            let len = fs::ensure_regular_or_absent(&journal)
                .map_err(StoreError::Io)?
                .map_or(0, |meta| meta.len());
            return Ok(JournalFile::TooLarge(len));
        }
        Err(e) => {
            let e = io::Error::new(e.kind(), format!("{}: {e}", journal.display()));
            return Err(StoreError::Io(e));
        }
    };
    let parsed = match only {
        Some(only) => store::parse_journal_only(&bytes, only)?,
        None => store::parse_journal(&bytes)?,
    };
    Ok(JournalFile::Read(bytes, parsed))
}

/// Adds `updates` to the store at `path` (created if missing), under the
/// lock, waiting for it at most `patience` (then [`StoreError::Busy`]):
/// appended to its journal, or merged into the file where the journal
/// cannot take them (see [`StoreFile`]); records that do not validate are
/// set aside ([`OnInvalid::SetAside`]). Compacts the store if it is still
/// paired with the journal `due` names (a compaction since pairs it anew).
fn write_store(
    path: &Path,
    updates: &[Update],
    patience: Duration,
    due: Option<JournalId>,
) -> Result<(), StoreError> {
    let _lock = lock_store(path, patience)?;
    ensure_owned(path, false)?;
    ensure_owned(&journal_path(path), true)?;
    if let Some(id) = paired_journal(path)?.filter(|&id| Some(id) != due)
        && (updates.is_empty() || append_journal(path, id, updates)?)
    {
        return Ok(());
    }
    edit_locked(path, OnInvalid::SetAside, |table| {
        for u in updates {
            table.apply(u);
        }
    })
}

/// Refuses the store's file at `path` (the store, or with `named` its
/// journal or lock, named in the message) when another user owns it
/// ([`fs::ensure_owned`]): checked before it is read, appended to or
/// waited on, so that a planted lock that another user holds costs no
/// wait. What is not a regular file is left to the read that follows to
/// refuse, in its words.
fn ensure_owned(path: &Path, named: bool) -> Result<(), StoreError> {
    let Ok(Some(meta)) = fs::ensure_regular_or_absent(path) else {
        return Ok(());
    };
    fs::ensure_owned(&meta).map_err(|e| {
        let e = match named {
            true => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
            false => e,
        };
        StoreError::Io(e)
    })
}

/// Takes the store's lock, waiting at most `patience`.
fn lock_store(path: &Path, patience: Duration) -> Result<fs::FileLock, StoreError> {
    let lock = sibling(path, ".lock");
    ensure_owned(&lock, true)?;
    fs::lock(&lock, patience).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => StoreError::Busy,
        _ => StoreError::Io(e),
    })
}

/// The journal the store at `path` is paired with, from its first line;
/// `None` when it is not paired (see [`store::journal_of`]), missing, over
/// its cap, or read-only (refused when it is rewritten).
fn paired_journal(path: &Path) -> Result<Option<JournalId>, StoreError> {
    let Some(meta) = fs::ensure_regular_or_absent(path).map_err(StoreError::Io)? else {
        return Ok(None);
    };
    if meta.len() > store::MAX_BYTES || fs::ensure_writable(path, &meta).is_err() {
        return Ok(None);
    }
    let head = fs::read_head(path, store::PAIRED_HEADER_BYTES).map_err(StoreError::Io)?;
    Ok(store::journal_of(&head))
}

/// Appends `updates` to the journal of the store at `path`, paired with
/// `id`, under the store's lock, and syncs it; creates the journal (with
/// the store's mode and owner) if there is none. Returns false, changing
/// nothing, where the store must be compacted instead: a journal of
/// another id (stale) or one the updates would take past its cap. An
/// unterminated last line (left by a process killed while appending) is
/// cut off first; an append that fails is undone, so that a write that
/// failed never counts when it is tried again.
fn append_journal(path: &Path, id: JournalId, updates: &[Update]) -> Result<bool, StoreError> {
    let journal = journal_path(path);
    let lines: String = updates.iter().map(store::journal_line).collect();
    let file = match fs::open_read_append(&journal) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let text = store::journal_header(id) + &lines;
            if text.len() as u64 > store::MAX_JOURNAL_BYTES {
                return Ok(false);
            }
            fs::write_new(&journal, text.as_bytes(), path).map_err(StoreError::Io)?;
            return Ok(true);
        }
        Err(e) => return Err(StoreError::Io(e)),
    };
    let bytes = match fs::read_to_cap(&file, store::MAX_JOURNAL_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => return Ok(false),
        Err(e) => return Err(StoreError::Io(e)),
    };
    if store::journal_store(&bytes)? != Some(id) {
        return Ok(false);
    }
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1) as u64;
    if complete + lines.len() as u64 > store::MAX_JOURNAL_BYTES {
        return Ok(false);
    }
    let store = fs::ensure_regular_or_absent(path)
        .map_err(StoreError::Io)?
        .ok_or_else(|| StoreError::Io(io::ErrorKind::NotFound.into()))?;
    fs::keep_mode_and_owner(&file, &store).map_err(StoreError::Io)?;
    let mut file = file;
    let appended = file
        .set_len(complete)
        .and_then(|()| file.write_all(lines.as_bytes()))
        .and_then(|()| file.sync_data());
    if let Err(e) = appended {
        let _ = file.set_len(complete);
        return Err(StoreError::Io(e));
    }
    Ok(true)
}

/// What [`edit_store`] does with a store some of whose records do not
/// validate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnInvalid {
    /// Keeps the file as it is as `<store>.bad` (the journal as
    /// `<store>.journal.bad`), then drops them. A `.bad` already there is
    /// never replaced: it may hold the only copy of records dropped
    /// before, so the store is then left as it is
    /// ([`StoreError::CopyNotKept`]) until the user moves that file away.
    SetAside,
    /// Changes nothing ([`StoreError::Invalid`]): for an edit the user
    /// asked for, who can then look at the file first.
    Refuse,
}

/// Changes the store at `path` with `edit`, under its lock (waiting at
/// most `patience`): compacts it. The journal is applied over the file,
/// `edit` runs, the least recently used records past [`store::MAX_BYTES`]
/// are dropped, the file is replaced atomically, keeping its mode and
/// owner, paired with a new journal id, and the journal removed. A missing
/// file starts empty; one that cannot be read, that is not a gridsel store,
/// that a newer gridsel wrote or that is read-only is left as it is (an
/// error), and so is a journal that is not gridsel's; records and lines
/// that do not validate go as `on_invalid` says, and a journal over its
/// cap is kept as `<file>.journal.bad` whatever it says.
pub fn edit_store(
    path: &Path,
    patience: Duration,
    on_invalid: OnInvalid,
    edit: impl FnOnce(&mut Table),
) -> Result<(), StoreError> {
    let _lock = lock_store(path, patience)?;
    edit_locked(path, on_invalid, edit)
}

/// [`edit_store`] under the lock.
fn edit_locked(
    path: &Path,
    on_invalid: OnInvalid,
    edit: impl FnOnce(&mut Table),
) -> Result<(), StoreError> {
    let read = read_with_journal(path, None)?;
    let journal = journal_path(path);
    // Whatever `on_invalid` says: a journal over its cap cannot be read,
    // so left in place it would keep the store from ever being written.
    if read.journal_too_large {
        set_aside(&journal, None)?;
    }
    if read.store_invalid || read.journal_invalid {
        if on_invalid == OnInvalid::Refuse {
            return Err(StoreError::Invalid(read.contents.dropped));
        }
        if let (true, Some(text)) = (read.store_invalid, &read.store) {
            set_aside(path, Some(text.as_bytes()))?;
        }
        if let (true, Some(bytes)) = (read.journal_invalid, &read.journal) {
            set_aside(&journal, Some(bytes))?;
        }
    }
    let mut table = read.contents.table;
    edit(&mut table);
    let evicted = table.evict_to(store::MAX_BYTES, unix_seconds());
    if evicted > 0 {
        log::info!(
            "store {}: {evicted} least recently used searches dropped to stay under {} bytes",
            path.display(),
            store::MAX_BYTES
        );
    }
    let id = JournalId(fs::random_u64().map_err(StoreError::Io)?);
    fs::replace_atomically(path, table.render_paired(id).as_bytes()).map_err(StoreError::Io)?;
    // Written: the old journal, whether in the store now or stale, is read
    // over it no more (it has another id), so a failure here costs nothing
    // but the next write's compacting again.
    if let Err(e) = fs::remove_regular(&journal) {
        log::warn!(
            "store {}: {} is merged in but cannot be removed ({e})",
            path.display(),
            journal.display()
        );
    }
    Ok(())
}

/// Keeps `bytes`, the file at `path` as read, as `<path>.bad`, which must
/// not exist yet ([`OnInvalid::SetAside`]), with the file's mode and owner;
/// without `bytes` (a file too large to read), the file itself, linked.
fn set_aside(path: &Path, bytes: Option<&[u8]>) -> Result<(), StoreError> {
    let bad = sibling(path, ".bad");
    // What is left out of the file, and why it is kept.
    let (kept, left_out, why) = match bytes {
        Some(bytes) => (
            fs::write_new(&bad, bytes, path),
            "does not validate",
            "has records that do not validate".to_string(),
        ),
        None => (
            fs::link_new(path, &bad),
            "cannot be read",
            format!(
                "{} is {}",
                path.display(),
                fs::too_large(store::MAX_JOURNAL_BYTES)
            ),
        ),
    };
    match kept {
        Ok(()) => {
            log::info!(
                "{}: kept as it was as {} before leaving out what {left_out}",
                path.display(),
                bad.display(),
            );
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            Err(StoreError::CopyNotKept(format!(
                "{why}, and {} from before is in the way of keeping a copy: left as it is until that file is moved away",
                bad.display()
            )))
        }
        Err(e) => Err(StoreError::CopyNotKept(format!(
            "{why}, and no copy can be kept as {} ({e}): left as it is",
            bad.display()
        ))),
    }
}

/// `<store>.journal`.
pub fn journal_path(store: &Path) -> PathBuf {
    sibling(store, ".journal")
}

/// `<path><suffix>`, next to the file.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The store's clock, that its searches are stamped and aged by
/// ([`store::Tally::used`]; seconds since the Unix epoch).
pub fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsel_core::device::PRESETS;

    /// The default store's folder is created with the cache folder above
    /// it, never a missing `HOME` (`HOME=/nonexistent/home`).
    #[test]
    fn only_the_cache_and_gridsel_folders_are_created() {
        let base =
            std::env::temp_dir().join(format!("gridsel-store-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir(&base).unwrap();
        let store = |home: &Path| home.join(".cache/gridsel/tune.json");
        let err = create_store_folder(&store(&base.join("missing/home"))).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(
            err.to_string().contains("missing/home does not exist"),
            "{err}"
        );
        assert!(!base.join("missing").exists());
        create_store_folder(&store(&base)).unwrap();
        use std::os::unix::fs::PermissionsExt;
        for folder in [base.join(".cache"), base.join(".cache/gridsel")] {
            let mode = std::fs::metadata(&folder).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", folder.display());
        }
        // Existing folders are left as they are.
        create_store_folder(&store(&base)).unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_device_is_a_preset_or_a_description_file() {
        for name in PRESETS {
            assert_eq!(device(name).unwrap(), DeviceDesc::preset(name).unwrap());
        }
        assert!(matches!(
            device("/nonexistent/profile.toml"),
            Err(DeviceError::UnknownPreset(_))
        ));
    }
}
