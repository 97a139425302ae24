//! `GRIDSEL_CACHE`: tuned grids saved across runs.
//!
//! A small JSON file:
//!
//! ```json
//! {"version": 1, "entries": [{"kernel": "__omp_offloading_..._l7", "device": "H100",
//!   "sm_arch": 90, "trip_count": 1000, "threads": 128, "blocks": 8,
//!   "ns": 5120, "launches": 61}]}
//! ```
//!
//! keyed by (kernel, device name, sm_arch, trip count). It is read once per
//! process; each converged search merges its entry in under an advisory
//! lock on `<file>.lock` (flock), writes a temporary file next to it and
//! renames it over the old one, so readers never see half a file and
//! concurrent processes never lose each other's entries. A file that does
//! not parse, or has another version, is reported by the caller and
//! treated as empty (and replaced at the next write).

use crate::ffi::fs;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The file format's version; other versions are ignored.
pub const VERSION: u32 = 1;

/// One tuned (kernel, device, trip count).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub kernel: String,
    pub device: String,
    pub sm_arch: u32,
    pub trip_count: u64,
    pub threads: u32,
    pub blocks: u32,
    /// Median time of the winner when it was measured.
    pub ns: u64,
    /// Launches the search spent.
    pub launches: u32,
}

type Key = (String, String, u32, u64);

impl Entry {
    fn key(&self) -> Key {
        (
            self.kernel.clone(),
            self.device.clone(),
            self.sm_arch,
            self.trip_count,
        )
    }
}

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    entries: Vec<Entry>,
}

/// The entries of a cache file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    map: BTreeMap<Key, Entry>,
}

impl Table {
    pub fn get(&self, kernel: &str, device: &str, sm_arch: u32, trip: u64) -> Option<&Entry> {
        self.map
            .get(&(kernel.to_string(), device.to_string(), sm_arch, trip))
    }

    /// Adds or replaces an entry.
    pub fn insert(&mut self, entry: Entry) {
        self.map.insert(entry.key(), entry);
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.map.values()
    }

    /// Parses a cache file's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not a cache file ({e})"))?;
        let version = value.get("version").and_then(serde_json::Value::as_u64);
        if version != Some(u64::from(VERSION)) {
            return Err(format!(
                "version {}, expected {VERSION}",
                version.map_or_else(|| "missing".to_string(), |v| v.to_string())
            ));
        }
        let file: File =
            serde_json::from_value(value).map_err(|e| format!("not a cache file ({e})"))?;
        let mut table = Self::default();
        for e in file.entries {
            table.insert(e);
        }
        Ok(table)
    }

    /// The file's text, one entry a line, in key order.
    pub fn render(&self) -> String {
        let mut out = format!("{{\"version\": {VERSION}, \"entries\": [\n");
        let lines: Vec<String> = self
            .entries()
            .map(|e| serde_json::to_string(e).unwrap_or_default())
            .collect();
        out.push_str(&lines.join(",\n"));
        out.push_str("\n]}\n");
        out
    }
}

/// Reads a cache file; a missing file is an empty table.
pub fn load(path: &Path) -> Result<Table, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Table::parse(&text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Table::default()),
        Err(e) => Err(e.to_string()),
    }
}

/// Whether `text` is a cache of a later format version than this one.
fn newer_version(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("version").and_then(serde_json::Value::as_u64))
        .is_some_and(|v| v > u64::from(VERSION))
}

/// `<path><suffix>`, next to the file.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Merges `entries` into the file at `path` (created if missing; a corrupt
/// file is replaced), under the lock, atomically.
pub fn store(path: &Path, entries: &[Entry]) -> io::Result<()> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let _lock = fs::lock_exclusive(&sibling(path, ".lock"))?;
    // Start afresh only from a missing or corrupt file, never from one that
    // could not be read or that a newer gridsel wrote.
    let mut table = match std::fs::read_to_string(path) {
        Ok(text) => match Table::parse(&text) {
            Ok(t) => t,
            Err(_) if newer_version(&text) => {
                return Err(io::Error::other(
                    "written by a newer gridsel; left as it is",
                ));
            }
            Err(_) => Table::default(),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Table::default(),
        Err(e) => return Err(e),
    };
    for e in entries {
        table.insert(e.clone());
    }
    let tmp = sibling(
        path,
        &format!(
            ".tmp.{}.{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ),
    );
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(table.render().as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
