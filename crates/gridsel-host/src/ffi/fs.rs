//! Safe file operations for every file an environment variable names
//! (`GRIDSEL_DEVICE`, `GRIDSEL_MODEL`, `GRIDSEL_CACHE` and its lock and
//! journal, `GRIDSEL_PROFILE`).
//!
//! gridsel runs inside other people's programs, often as root, on paths it
//! takes from the environment, so it only ever reads or writes **regular
//! files**:
//!
//! - A symbolic link as the last component of a path is not followed
//!   (`O_NOFOLLOW`); a FIFO, socket, character or block device or directory
//!   is refused. Each refusal is one error naming what the path is
//!   (`a FIFO, not a regular file`). The type is checked with `lstat` before
//!   the open, so a device is never even opened (opening some has effects: a
//!   watchdog starts, a tape rewinds), and again with `fstat` on the opened
//!   descriptor, which closes the race with a file swapped in between. Every
//!   open has `O_NONBLOCK`, so a FIFO swapped in cannot block it either (it
//!   changes nothing for regular files). Links in the folders leading to the
//!   file are followed, as everywhere: the checks concern the file itself.
//!   `/dev/stdout` and the like are links or devices, so they are refused too.
//! - Reads are capped ([`read_capped`]): a file over its cap is an error,
//!   never a partial parse, and `/dev/zero` cannot exhaust memory.
//! - Replacing a file ([`replace_atomically`]) writes a new file beside it,
//!   created exclusively under an unpredictable name, with the target's mode
//!   and owner, and renames it over the target, which must be a regular file
//!   that is not read-only, or absent. Temporary files left by processes
//!   that died are removed on the way.
//! - [`write_new`] creates a file that must not exist yet, exclusively.
//! - Appending ([`open_append_regular`]) creates the file or appends to a
//!   regular one; [`open_read_append`] opens an existing one to read and
//!   append (the store's journal), and [`remove_regular`] removes a regular
//!   file, never a link's target.
//! - [`lock`] takes an advisory `flock` on a regular lock file, waiting only
//!   as long as the caller allows.
//! - [`ensure_owned`] refuses a file another user owns than this process's
//!   or root (the store's files: one planted by a user who may write the
//!   folder is never read, appended to or waited on).

use std::ffi::OsString;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a path is when it is not a regular file, for the refusal's message.
fn non_regular_kind(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    let kind = if t.is_file() {
        return None;
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a file"
    };
    Some(kind)
}

fn refusal(kind: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{kind}, not a regular file"),
    )
}

fn ensure_regular(meta: &Metadata) -> io::Result<()> {
    non_regular_kind(meta).map_or(Ok(()), |kind| Err(refusal(kind)))
}

/// Refuses `path` unless it is a regular file or absent (checked without
/// opening it or following a link); the file's metadata when present.
pub fn ensure_regular_or_absent(path: &Path) -> io::Result<Option<Metadata>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => ensure_regular(&meta).map(|()| Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Refuses a file that another user owns than this process's (effective)
/// one or root, as ssh refuses such files: a user who may write the folder
/// could have planted it for this process to read, append to or wait on.
pub fn ensure_owned(meta: &Metadata) -> io::Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let owner = meta.uid();
    if owner == me || owner == 0 {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "owned by another user (uid {owner}), neither this one nor root: not trusted (remove it, or have it given to uid {me})"
        ),
    ))
}

/// Opens `path` with `options` if it is a regular file (or absent, when
/// `options` creates it); see the module documentation.
fn open_regular(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    ensure_regular_or_absent(path)?;
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            // O_NOFOLLOW's ELOOP: a link appeared after the check.
            if e.raw_os_error() == Some(libc::ELOOP) {
                refusal("a symbolic link")
            } else {
                e
            }
        })?;
    ensure_regular(&file.metadata()?)?;
    Ok(file)
}

/// `bytes` for a message: `64 KiB`, `16 MiB`, else a byte count.
fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// The error for a file larger than `cap` bytes.
pub fn too_large(cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "larger than {}, the most gridsel reads of it",
            size_text(cap)
        ),
    )
}

/// Reads the regular file at `path` as UTF-8 text; a file of more than
/// `cap` bytes is an error (`FileTooLarge`), and nothing past the cap is
/// read.
pub fn read_capped(path: &Path, cap: u64) -> io::Result<String> {
    String::from_utf8(read_capped_bytes(path, cap)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// [`read_capped`] as bytes.
pub fn read_capped_bytes(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    read_to_cap(&open_regular(path, OpenOptions::new().read(true))?, cap)
}

/// Hands each line of the regular file at `path` (with its `\n`, the last
/// one without when the file does not end in one) to `each`, through a
/// buffer of 64 KiB: a reader that keeps a few lines of a large file never
/// holds, nor faults in, all of it. A file of more than `cap` bytes is an
/// error (`FileTooLarge`) once its first `cap` bytes are read.
pub fn read_lines_capped(path: &Path, cap: u64, mut each: impl FnMut(&[u8])) -> io::Result<()> {
    use std::io::BufRead;
    let file = open_regular(path, OpenOptions::new().read(true))?;
    let mut reader = io::BufReader::with_capacity(64 << 10, file.take(cap.saturating_add(1)));
    // Lines are handed over from the buffer where they lie whole; only a
    // line across two reads is copied, into `carry`.
    let (mut carry, mut total) = (Vec::new(), 0u64);
    loop {
        let mut rest = reader.fill_buf()?;
        let read = rest.len();
        if read == 0 {
            if !carry.is_empty() {
                each(&carry);
            }
            return Ok(());
        }
        total += read as u64;
        if total > cap {
            return Err(too_large(cap));
        }
        while let Some(end) = memchr::memchr(b'\n', rest) {
            let (line, tail) = rest.split_at(end + 1);
            if carry.is_empty() {
                each(line);
            } else {
                carry.extend_from_slice(line);
                each(&carry);
                carry.clear();
            }
            rest = tail;
        }
        carry.extend_from_slice(rest);
        reader.consume(read);
    }
}

/// The rest of `file`, from its current position: more than `cap` bytes
/// is an error (`FileTooLarge`), and nothing past the cap is read.
pub fn read_to_cap(file: &File, cap: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(cap));
    }
    Ok(bytes)
}

/// The first `n` bytes of the regular file at `path` (fewer if it is
/// shorter).
pub fn read_head(path: &Path, n: usize) -> io::Result<Vec<u8>> {
    let file = open_regular(path, OpenOptions::new().read(true))?;
    let mut head = Vec::with_capacity(n);
    file.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// Opens the regular file at `path`, which must exist, to read it and
/// append to it.
pub fn open_read_append(path: &Path) -> io::Result<File> {
    open_regular(path, OpenOptions::new().read(true).append(true))
}

/// Removes the regular file at `path`, if there is one (a link there is
/// refused, not removed).
pub fn remove_regular(path: &Path) -> io::Result<()> {
    match ensure_regular_or_absent(path)? {
        Some(_) => std::fs::remove_file(path),
        None => Ok(()),
    }
}

/// Opens the regular file at `path` for appending, creating it if absent.
pub fn open_append_regular(path: &Path) -> io::Result<File> {
    open_regular(path, OpenOptions::new().append(true).create(true))
}

/// `<name>.tmp.`: the start of the names of `path`'s temporary files
/// (`<name>.tmp.<pid>.<16 hex digits>`).
fn temp_prefix(path: &Path) -> io::Result<OsString> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let mut prefix = name.to_owned();
    prefix.push(".tmp.");
    Ok(prefix)
}

/// The process id in a temporary file's name after its prefix
/// (`<pid>.<hex>`, the hex part 1 to 16 digits; earlier gridsels wrote a
/// decimal counter there, which this also matches).
fn temp_owner(suffix: &[u8]) -> Option<i32> {
    let text = std::str::from_utf8(suffix).ok()?;
    let (pid, tag) = text.split_once('.')?;
    let digits = |s: &str, hex: bool| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (hex && b.is_ascii_hexdigit()))
    };
    if !digits(pid, false) || !digits(tag, true) || tag.len() > 16 {
        return None;
    }
    pid.parse().ok().filter(|&p| p > 0)
}

/// Whether no process `pid` exists (`kill(pid, 0)` fails with `ESRCH`; a
/// process of another user gives `EPERM` and counts as alive).
fn process_gone(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Removes `path`'s temporary files whose process no longer exists (killed
/// between creating and renaming one): regular files only, named by
/// [`temp_prefix`] and [`temp_owner`]'s pattern, never through a link.
/// Returns how many it removed; a folder it cannot list removes none.
fn remove_stale_temp_files(path: &Path) -> usize {
    let (Ok(prefix), Some(dir)) = (temp_prefix(path), path.parent()) else {
        return 0;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(suffix) = name.as_bytes().strip_prefix(prefix.as_bytes()) else {
            continue;
        };
        let stale = temp_owner(suffix).is_some_and(process_gone)
            // DirEntry::file_type does not follow links.
            && entry.file_type().is_ok_and(|t| t.is_file());
        if stale && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Eight random bytes from the kernel (`getrandom`, without waiting for
/// the entropy pool: it fails only early in boot).
pub fn random_u64() -> io::Result<u64> {
    let mut bytes = [0u8; 8];
    let mut filled = 0;
    while filled < bytes.len() {
        let rest = &mut bytes[filled..];
        // SAFETY: getrandom writes at most `rest.len()` bytes into `rest`.
        let n =
            unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), libc::GRND_NONBLOCK) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        } else {
            filled += n as usize;
        }
    }
    Ok(u64::from_ne_bytes(bytes))
}

/// Creates a new temporary file beside `path`, exclusively (`O_EXCL` never
/// opens an existing file or link) under an unpredictable name.
fn create_temp(path: &Path) -> io::Result<(PathBuf, File)> {
    let prefix = temp_prefix(path)?;
    let mut attempts = 0;
    loop {
        let mut name = prefix.clone();
        name.push(format!("{}.{:016x}", std::process::id(), random_u64()?));
        let temp = path.with_file_name(name);
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&temp);
        match created {
            Ok(file) => return Ok((temp, file)),
            // 64 random bits taken: someone planted the name; draw again.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 3 => attempts += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Refuses to replace a read-only file: one whose mode grants nobody
/// write permission (a user's way of freezing it, which root's permission
/// to write anyway would not respect), or that this process may not open
/// for writing (opening a regular file without truncating changes nothing).
pub fn ensure_writable(path: &Path, meta: &Metadata) -> io::Result<()> {
    let refused = || io::Error::new(io::ErrorKind::PermissionDenied, "read-only, not replaced");
    if meta.permissions().mode() & 0o222 == 0 {
        return Err(refused());
    }
    match open_regular(path, OpenOptions::new().write(true)) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Err(refused()),
        other => other.map(drop),
    }
}

/// Gives `file`, which stands in for `like` (a new store for the old one,
/// the journal or `.bad` copy for the store), the permission bits and,
/// where this process may, the owner and group of `like`, changing only
/// what differs: a private file stays private, a shared one shared. A
/// process that may not give the file away (another user's file in a
/// folder it may write) keeps at least the group where it belongs to it,
/// and otherwise owns the file.
pub fn keep_mode_and_owner(file: &File, like: &Metadata) -> io::Result<()> {
    let (uid, gid) = (like.uid(), like.gid());
    let meta = file.metadata()?;
    if (meta.uid(), meta.gid()) != (uid, gid)
        && std::os::unix::fs::fchown(file, Some(uid), Some(gid)).is_err()
    {
        let _ = std::os::unix::fs::fchown(file, None, Some(gid));
    }
    // After the owner: changing it may clear set-id bits (none are kept).
    // Another user's world-writable mode is theirs to choose, not this
    // process's to give its own file.
    let meta = file.metadata()?;
    let foreign = meta.uid() != uid;
    let mode = like.permissions().mode() & if foreign { 0o775 } else { 0o777 };
    if meta.permissions().mode() & 0o777 == mode {
        return Ok(());
    }
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

/// Replaces the file at `path` with `bytes`, atomically: readers see the
/// old file or the new one, never a part. `path` must be a regular file
/// that is not read-only (`ensure_writable`), or absent. The bytes go to
/// a new temporary file beside it, which takes the old file's mode and
/// owner (`keep_mode_and_owner`; a new file gets mode 0644 less the
/// umask), is synced and renamed over `path`; stale temporary files of
/// `path` are removed first (`remove_stale_temp_files`).
pub fn replace_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let existing = ensure_regular_or_absent(path)?;
    if let Some(meta) = &existing {
        ensure_writable(path, meta)?;
    }
    remove_stale_temp_files(path);
    let (temp, mut file) = create_temp(path)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| existing.map_or(Ok(()), |meta| keep_mode_and_owner(&file, &meta)))
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Writes `bytes` to a new file at `path`, which must not exist (`O_EXCL`:
/// never an existing file, never through a link: `AlreadyExists`), with
/// the mode and owner of the regular file `like` (`keep_mode_and_owner`),
/// synced. A file half written is removed.
pub fn write_new(path: &Path, bytes: &[u8], like: &Path) -> io::Result<()> {
    let like = ensure_regular_or_absent(like)?.ok_or(io::ErrorKind::NotFound)?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(like.permissions().mode() & 0o777)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| keep_mode_and_owner(&file, &like))
        .and_then(|()| file.sync_all());
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// Gives the regular file at `from` a second name `to`, which must not
/// exist (`AlreadyExists`; never through a link), in the same folder:
/// a file too large to copy is kept as it is.
pub fn link_new(from: &Path, to: &Path) -> io::Result<()> {
    ensure_regular_or_absent(from)?.ok_or(io::ErrorKind::NotFound)?;
    // link(2) does not follow a link at `from`, nor create through one at `to`.
    std::fs::hard_link(from, to)
}

/// An exclusive `flock` on an open file, released when dropped (closing the
/// file releases it).
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

/// How often [`lock`] tries again while another process holds the lock.
const LOCK_POLL: Duration = Duration::from_millis(2);

/// Opens (creating it if absent) the regular file at `path` and takes an
/// exclusive lock on it, trying for at most `patience` (zero: once). A lock
/// still held by another process after that is `WouldBlock`.
pub fn lock(path: &Path, patience: Duration) -> io::Result<FileLock> {
    let file = open_regular(
        path,
        OpenOptions::new().write(true).create(true).truncate(false),
    )?;
    let deadline = Instant::now() + patience;
    loop {
        // SAFETY: flock on a descriptor `file` owns for the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(FileLock { _file: file });
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => {
                let now = Instant::now();
                if now >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        "locked by another process",
                    ));
                }
                std::thread::sleep(LOCK_POLL.min(deadline - now));
            }
            _ => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::process::Command;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("gridsel-fs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn mkfifo(path: &Path) {
        let status = Command::new("mkfifo").arg(path).status().unwrap();
        assert!(status.success());
    }

    fn message(r: io::Result<impl std::fmt::Debug>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn reads_regular_files_up_to_the_cap_and_refuses_larger_ones() {
        let d = dir("cap");
        let path = d.join("f");
        std::fs::write(&path, "x".repeat(100)).unwrap();
        assert_eq!(read_capped(&path, 100).unwrap().len(), 100);
        let e = read_capped(&path, 99).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(
            e.to_string(),
            "larger than 99 bytes, the most gridsel reads of it"
        );
        assert!(message(read_capped(&path, 64)).contains("64 bytes"));
        assert_eq!(
            too_large(64 << 10).to_string(),
            "larger than 64 KiB, the most gridsel reads of it"
        );
        assert!(too_large(16 << 20).to_string().contains("16 MiB"));
        assert_eq!(
            read_capped(&d.join("missing"), 10).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_links_fifos_devices_and_directories_without_blocking() {
        let d = dir("refuse");
        let target = d.join("target");
        std::fs::write(&target, "secret").unwrap();
        let link = d.join("link");
        symlink(&target, &link).unwrap();
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        let cases = [
            (link.as_path(), "a symbolic link, not a regular file"),
            (fifo.as_path(), "a FIFO, not a regular file"),
            (
                Path::new("/dev/zero"),
                "a character device, not a regular file",
            ),
            (
                Path::new("/dev/null"),
                "a character device, not a regular file",
            ),
            (d.as_path(), "a directory, not a regular file"),
        ];
        for (path, expected) in cases {
            assert_eq!(message(read_capped(path, 1 << 20)), expected, "{path:?}");
            assert_eq!(message(open_append_regular(path)), expected, "{path:?}");
            assert_eq!(message(lock(path, Duration::ZERO)), expected, "{path:?}");
            assert_eq!(
                message(replace_atomically(path, b"new")),
                expected,
                "{path:?}"
            );
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "secret");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // A dangling link is not followed to create its target either.
        let dangling = d.join("dangling");
        symlink(d.join("created"), &dangling).unwrap();
        assert!(open_append_regular(&dangling).is_err());
        assert!(lock(&dangling, Duration::ZERO).is_err());
        assert!(!d.join("created").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn replaces_atomically_with_a_fresh_file_and_leaves_no_temporary() {
        let d = dir("replace");
        let path = d.join("cache.json");
        replace_atomically(&path, b"one").unwrap();
        replace_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o022, 0, "{mode:o}: not writable by others");
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["cache.json"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn temporary_names_are_unpredictable() {
        let d = dir("names");
        let path = d.join("c");
        let (a, _) = create_temp(&path).unwrap();
        let (b, _) = create_temp(&path).unwrap();
        assert_ne!(a, b);
        let prefix = format!("c.tmp.{}.", std::process::id());
        for t in [&a, &b] {
            let name = t.file_name().unwrap().to_str().unwrap();
            let tag = name.strip_prefix(&prefix).unwrap();
            assert_eq!(tag.len(), 16, "{name}");
            assert!(tag.bytes().all(|c| c.is_ascii_hexdigit()), "{name}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn only_dead_processes_regular_temporaries_of_this_file_are_removed() {
        let d = dir("stale");
        let path = d.join("cache.json");
        // Above any pid_max (at most 2^22): no such process.
        let dead = 2_000_000_000;
        let alive = std::process::id();
        let victim = d.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let write = |name: String| {
            std::fs::write(d.join(&name), "").unwrap();
            name
        };
        let removed = [
            write(format!("cache.json.tmp.{dead}.0123456789abcdef")),
            write(format!("cache.json.tmp.{dead}.7")),
        ];
        let kept = [
            write(format!("cache.json.tmp.{alive}.0123456789abcdef")),
            write("cache.json.tmp.1.0".to_string()),
            write(format!("other.json.tmp.{dead}.0")),
            write(format!("cache.json.tmp.{dead}.0123456789abcdef0")),
            write(format!("cache.json.tmp.{dead}.xyz")),
            write(format!("cache.json.tmp.{dead}")),
            write("cache.json.tmp.-5.0".to_string()),
        ];
        let link = format!("cache.json.tmp.{dead}.1");
        symlink(&victim, d.join(&link)).unwrap();
        let folder = format!("cache.json.tmp.{dead}.2");
        std::fs::create_dir(d.join(&folder)).unwrap();

        assert_eq!(remove_stale_temp_files(&path), 2);
        for name in &removed {
            assert!(!d.join(name).exists(), "{name}");
        }
        for name in kept.iter().chain([&link, &folder]) {
            assert!(std::fs::symlink_metadata(d.join(name)).is_ok(), "{name}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // Writing the file cleans up too.
        write(format!("cache.json.tmp.{dead}.1f"));
        replace_atomically(&path, b"x").unwrap();
        assert!(!d.join(format!("cache.json.tmp.{dead}.1f")).exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn appends_to_regular_files_and_creates_missing_ones() {
        let d = dir("append");
        let path = d.join("p.csv");
        for line in ["a\n", "b\n"] {
            open_append_regular(&path)
                .unwrap()
                .write_all(line.as_bytes())
                .unwrap();
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_held_lock_is_would_block_after_the_patience() {
        let d = dir("lock");
        let path = d.join("c.lock");
        let held = lock(&path, Duration::ZERO).unwrap();
        // flock locks belong to the open file: a second open in the same
        // process contends like another process would.
        let start = Instant::now();
        let e = lock(&path, Duration::ZERO).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(e.to_string(), "locked by another process");
        assert!(start.elapsed() < Duration::from_millis(100));
        let start = Instant::now();
        assert!(lock(&path, Duration::from_millis(50)).is_err());
        assert!(start.elapsed() >= Duration::from_millis(50));
        drop(held);
        assert!(lock(&path, Duration::ZERO).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
