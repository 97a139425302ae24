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
//! keyed by (kernel, device name, sm_arch, trip count), at most
//! [`MAX_BYTES`]. This module is the format; the preload library's
//! `files::CacheFile` reads it once per process and merges entries in under
//! a lock, atomically. A file that does not parse, or has an older version,
//! is treated as empty and replaced at the next store; one of a newer
//! version, or one that cannot be read, is left as it is.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::io;

/// The file format's version; other versions are ignored.
pub const VERSION: u32 = 1;

/// The largest cache file read or written: about 20 000 entries of some
/// 200 bytes, far more than the 256 trip counts per kernel the runtime tunes
/// for a program's few dozen kernels.
pub const MAX_BYTES: u64 = 4 << 20;

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

    /// Keeps only the entries `keep` accepts; returns how many went.
    pub fn retain(&mut self, mut keep: impl FnMut(&Entry) -> bool) -> usize {
        let before = self.map.len();
        self.map.retain(|_, e| keep(e));
        before - self.map.len()
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

/// Why a cache file could not be read or written.
#[derive(Debug)]
pub enum CacheError {
    /// Another process holds the lock (only when storing): try again later.
    Busy,
    /// Refused, unreadable or unwritable (the file layer's errors, a missing
    /// folder, permissions, a full disk, over [`MAX_BYTES`]).
    Io(io::Error),
    /// Written by a newer gridsel: neither read nor replaced.
    Newer(String),
    /// Not a cache file of this version: ignored, replaced by the next store.
    Corrupt(String),
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Busy => write!(f, "locked by another process"),
            Self::Io(e) => write!(f, "{e}"),
            Self::Newer(m) => write!(f, "{m}, written by a newer gridsel"),
            Self::Corrupt(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for CacheError {}

/// Parses a cache file's text, telling a file of a newer format (to be left
/// alone) from a corrupt one (to be replaced).
pub fn parse(text: &str) -> Result<Table, CacheError> {
    Table::parse(text).map_err(|m| {
        if newer_version(text) {
            CacheError::Newer(m)
        } else {
            CacheError::Corrupt(m)
        }
    })
}

/// Whether `text` is a cache of a later format version than this one.
fn newer_version(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("version").and_then(serde_json::Value::as_u64))
        .is_some_and(|v| v > u64::from(VERSION))
}
