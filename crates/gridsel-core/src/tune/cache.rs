//! The store: what `tune` measured, kept across runs (`GRIDSEL_CACHE`).
//!
//! A JSON file, one record a line:
//!
//! ```json
//! {"version": 2, "records": [
//! {"kernel": "__omp_offloading_..._l7", "device": "NVIDIA H100 80GB HBM3", "sm_arch": 90,
//!  "class": 21, "trips": [1000, 1000], "used": 1795000000, "runs": 3,
//!  "launches_per_run": 20, "explored": [1, 34], "settled": [false, true], "pinned": null,
//!  "grids": {"auto": {"cold": [51200], "warm": [40960, 41010]}, "move:64,1": {...}}}
//! ]}
//! ```
//!
//! A record is one search ([`super::search`]): its samples per candidate
//! and kind, how many launches explored, how many runs and launches per run
//! fed it. It is keyed by (kernel, device name, sm_arch, trip-count
//! [`class`]). This module is the format and the merge; the preload
//! library's `files::CacheFile` reads the file once per process and merges
//! each process's new samples in under a lock, atomically, so processes
//! running at once add to the same searches and lose nothing. The file is
//! kept under [`MAX_BYTES`] by dropping the records used least recently.
//! A file that does not parse, or has an older version (version 1 kept only
//! winners), is treated as empty and replaced at the next store; one of a
//! newer version, or one that cannot be read, is left as it is.

use super::search::{Candidate, Kind, Samples, Search};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::io;

/// The file format's version; other versions are ignored.
pub const VERSION: u32 = 2;

/// The largest store read or written: some 2 000 searches of a dozen
/// candidates with their samples, far more than a program's few dozen
/// kernels need; past it the least recently used records go.
pub const MAX_BYTES: u64 = 4 << 20;

/// The trip-count class of a launch: half octaves, so that the trip counts
/// of a solver's shrinking loops (one launch each) share a search. Class 0
/// is a trip count of 0 (unknown to the host); class c > 0 holds trip counts
/// in [2^((c-1)/2), 2^(c/2)).
pub fn class(trip: u64) -> u32 {
    if trip == 0 {
        return 0;
    }
    // The largest c - 1 with 2^((c-1)/2) <= trip, i.e. 2^(c-1) <= trip^2,
    // computed exactly on integers.
    let square = u128::from(trip) * u128::from(trip);
    square.ilog2() + 1
}

/// The smallest trip count of `class`: samples of a class are scaled to it.
pub fn class_floor(class: u32) -> u64 {
    if class == 0 {
        return 0;
    }
    // The least t with t^2 >= 2^(class-1).
    let target = 1u128 << (class - 1);
    let mut t = (target as f64).sqrt() as u128;
    while t * t < target {
        t += 1;
    }
    while t > 1 && (t - 1) * (t - 1) >= target {
        t -= 1;
    }
    t as u64
}

/// A time measured at `trip`, scaled to its class's smallest trip count, so
/// that samples taken at different trip counts of one class compare.
pub fn scale_to_class(ns: u64, trip: u64) -> u64 {
    let floor = class_floor(class(trip));
    if trip == 0 || floor == trip {
        return ns;
    }
    let scaled = u128::from(ns) * u128::from(floor) / u128::from(trip);
    u64::try_from(scaled).unwrap_or(u64::MAX).max(1)
}

/// What identifies a search: kernel, device name, sm_arch, trip class.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub kernel: String,
    pub device: String,
    pub sm_arch: u32,
    pub class: u32,
}

impl Key {
    /// The key of the search that launches of `kernel` at `trip` iterations
    /// on a device join: the trip count's [`class`], never the trip count.
    pub fn for_trip(
        kernel: impl Into<String>,
        device: impl Into<String>,
        sm_arch: u32,
        trip: u64,
    ) -> Self {
        Self {
            kernel: kernel.into(),
            device: device.into(),
            sm_arch,
            class: class(trip),
        }
    }
}

/// One search as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: Key,
    /// The smallest and largest trip counts launched.
    pub trips: (u64, u64),
    /// When a process last added to it (seconds since the Unix epoch).
    pub used: u64,
    /// Processes that launched the kernel in this class.
    pub runs: u32,
    /// Most launches one process made.
    pub launches_per_run: u32,
    /// A grid every launch gets, no search (a store written from a sweep's
    /// best grids).
    pub pinned: Option<Candidate>,
    pub search: Search,
}

impl Record {
    pub fn new(key: Key) -> Self {
        Self {
            key,
            trips: (u64::MAX, 0),
            used: 0,
            runs: 0,
            launches_per_run: 0,
            pinned: None,
            search: Search::default(),
        }
    }

    /// The kind of samples the search ranks by: warm once some process
    /// launched the kernel more than once.
    pub fn kind(&self) -> Kind {
        if self.launches_per_run >= 2 {
            Kind::Warm
        } else {
            Kind::Cold
        }
    }
}

/// What one process adds to a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub key: Key,
    pub trips: (u64, u64),
    pub used: u64,
    /// 1 for the process's first update of the record, else 0.
    pub runs: u32,
    pub launches_per_run: u32,
    pub explored: [u32; 2],
    /// Kinds whose plan this process saw finish.
    pub settled: [bool; 2],
    pub samples: Vec<(Candidate, Kind, u64)>,
    pub pinned: Option<Candidate>,
}

impl Update {
    pub fn new(key: Key) -> Self {
        Self {
            key,
            trips: (u64::MAX, 0),
            used: 0,
            runs: 0,
            launches_per_run: 0,
            explored: [0; 2],
            settled: [false; 2],
            samples: Vec::new(),
            pinned: None,
        }
    }

    /// Whether it adds anything.
    pub fn is_empty(&self) -> bool {
        self.runs == 0
            && self.samples.is_empty()
            && self.pinned.is_none()
            && self.settled == [false; 2]
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SamplesFile {
    cold: Vec<u64>,
    warm: Vec<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordFile {
    kernel: String,
    device: String,
    sm_arch: u32,
    class: u32,
    trips: [u64; 2],
    used: u64,
    runs: u32,
    launches_per_run: u32,
    explored: [u32; 2],
    settled: [bool; 2],
    pinned: Option<String>,
    grids: BTreeMap<String, SamplesFile>,
}

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    records: Vec<serde_json::Value>,
}

impl RecordFile {
    fn from_record(r: &Record) -> Self {
        let grids = r
            .search
            .candidates
            .iter()
            .zip(&r.search.samples)
            .filter(|(_, s)| !s.cold.is_empty() || !s.warm.is_empty())
            .map(|(c, s)| {
                (
                    c.to_string(),
                    SamplesFile {
                        cold: s.cold.clone(),
                        warm: s.warm.clone(),
                    },
                )
            })
            .collect();
        Self {
            kernel: r.key.kernel.clone(),
            device: r.key.device.clone(),
            sm_arch: r.key.sm_arch,
            class: r.key.class,
            trips: [r.trips.0, r.trips.1],
            used: r.used,
            runs: r.runs,
            launches_per_run: r.launches_per_run,
            explored: r.search.explored,
            settled: r.search.settled,
            pinned: r.pinned.map(|c| c.to_string()),
            grids,
        }
    }

    fn into_record(self) -> Result<Record, String> {
        let mut search = Search {
            explored: self.explored,
            settled: self.settled,
            ..Search::default()
        };
        for (name, s) in self.grids {
            if s.cold.len() > super::search::KEEP || s.warm.len() > super::search::KEEP {
                return Err(format!(
                    "`{name}`: more than {} samples",
                    super::search::KEEP
                ));
            }
            let i = search.index_of(name.parse()?);
            search.samples[i] = Samples {
                cold: s.cold,
                warm: s.warm,
            };
        }
        Ok(Record {
            key: Key {
                kernel: self.kernel,
                device: self.device,
                sm_arch: self.sm_arch,
                class: self.class,
            },
            trips: (self.trips[0], self.trips[1]),
            used: self.used,
            runs: self.runs,
            launches_per_run: self.launches_per_run,
            pinned: self.pinned.map(|p| p.parse()).transpose()?,
            search,
        })
    }
}

/// The records of a store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    map: BTreeMap<Key, Record>,
}

impl Table {
    pub fn get(&self, key: &Key) -> Option<&Record> {
        self.map.get(key)
    }

    /// Adds or replaces a record.
    pub fn insert(&mut self, record: Record) {
        self.map.insert(record.key.clone(), record);
    }

    /// Merges one process's additions into its record.
    pub fn apply(&mut self, u: &Update) {
        let r = self
            .map
            .entry(u.key.clone())
            .or_insert_with(|| Record::new(u.key.clone()));
        r.trips = (r.trips.0.min(u.trips.0), r.trips.1.max(u.trips.1));
        r.used = r.used.max(u.used);
        r.runs = r.runs.saturating_add(u.runs);
        r.launches_per_run = r.launches_per_run.max(u.launches_per_run);
        for (slot, add) in r.search.explored.iter_mut().zip(u.explored) {
            *slot = slot.saturating_add(add);
        }
        for (slot, done) in r.search.settled.iter_mut().zip(u.settled) {
            *slot |= done;
        }
        for &(c, kind, ns) in &u.samples {
            let i = r.search.index_of(c);
            r.search.samples[i].push(kind, ns);
        }
        if u.pinned.is_some() {
            r.pinned = u.pinned;
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.map.values()
    }

    /// Keeps only the records `keep` accepts; returns how many went.
    pub fn retain(&mut self, mut keep: impl FnMut(&Record) -> bool) -> usize {
        let before = self.map.len();
        self.map.retain(|_, r| keep(r));
        before - self.map.len()
    }

    /// Parses a store's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not a gridsel store ({e})"))?;
        let version = value.get("version").and_then(serde_json::Value::as_u64);
        if version != Some(u64::from(VERSION)) {
            return Err(format!(
                "version {}, expected {VERSION}",
                version.map_or_else(|| "missing".to_string(), |v| v.to_string())
            ));
        }
        let file: File =
            serde_json::from_value(value).map_err(|e| format!("not a gridsel store ({e})"))?;
        let mut table = Self::default();
        for (n, value) in file.records.into_iter().enumerate() {
            let record = serde_json::from_value::<RecordFile>(value)
                .map_err(|e| e.to_string())
                .and_then(RecordFile::into_record)
                .map_err(|e| format!("record {}: {e}", n + 1))?;
            table.insert(record);
        }
        Ok(table)
    }

    fn lines(&self) -> Vec<(u64, String)> {
        self.records()
            .map(|r| {
                let line = serde_json::to_string(&RecordFile::from_record(r)).unwrap_or_default();
                (r.used, line)
            })
            .collect()
    }

    /// The file's text, one record a line, in key order.
    pub fn render(&self) -> String {
        let lines: Vec<String> = self.lines().into_iter().map(|(_, l)| l).collect();
        format!(
            "{{\"version\": {VERSION}, \"records\": [\n{}\n]}}\n",
            lines.join(",\n")
        )
    }

    /// Drops the least recently used records until the text fits in
    /// `max_bytes`; returns how many went.
    pub fn evict_to(&mut self, max_bytes: u64) -> usize {
        let lines = self.lines();
        // Framing plus one separator per line.
        let mut total: u64 = 64 + lines.iter().map(|(_, l)| l.len() as u64 + 2).sum::<u64>();
        if total <= max_bytes {
            return 0;
        }
        let mut by_age: Vec<(u64, &Key, u64)> = self
            .map
            .keys()
            .zip(&lines)
            .map(|(k, (used, l))| (*used, k, l.len() as u64 + 2))
            .collect();
        by_age.sort();
        let mut gone = Vec::new();
        for (_, key, len) in by_age {
            if total <= max_bytes {
                break;
            }
            total -= len;
            gone.push(key.clone());
        }
        for key in &gone {
            self.map.remove(key);
        }
        gone.len()
    }
}

/// Why a store could not be read or written.
#[derive(Debug)]
pub enum CacheError {
    /// Another process holds the lock (only when storing): try again later.
    Busy,
    /// Refused, unreadable or unwritable (the file layer's errors, a missing
    /// folder, permissions, a full disk, over [`MAX_BYTES`]).
    Io(io::Error),
    /// Written by a newer gridsel: neither read nor replaced.
    Newer(String),
    /// Not a store of this version: ignored, replaced by the next store.
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

/// Parses a store's text, telling a file of a newer format (to be left
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

/// Whether `text` is a store of a later format version than this one.
fn newer_version(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("version").and_then(serde_json::Value::as_u64))
        .is_some_and(|v| v > u64::from(VERSION))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::search::Step;

    #[test]
    fn classes_are_half_octaves() {
        assert_eq!(class(0), 0);
        assert_eq!(class(1), 1);
        assert_eq!((class(2), class(3), class(4)), (3, 4, 5));
        // Class 2, [1.41, 2), holds no integer.
        assert_eq!(class_floor(2), 2);
        for c in (1..=120).filter(|&c| c != 2) {
            let floor = class_floor(c);
            assert_eq!(class(floor), c, "class {c}");
            assert!(floor == 1 || class(floor - 1) < c, "class {c}");
        }
        // A solver's loop from 1000 down to 725 shares one class.
        assert_eq!(class(1000), class(725));
        assert_ne!(class(1000), class(700));
        assert_eq!(
            scale_to_class(2000, 1000),
            2000 * class_floor(class(1000)) / 1000
        );
        assert_eq!(scale_to_class(77, 0), 77);
        assert_eq!(class(u64::MAX), 128);
    }

    #[test]
    fn regions_without_a_loop_have_a_class_of_their_own() {
        // Trip count 0 is a `target teams` region without a distribute
        // loop: no trip count shares its class, so its search never mixes
        // with a loop's, and its times are taken as they are.
        assert_eq!(class(0), 0);
        assert!((1..=1 << 12).chain([u64::MAX]).all(|t| class(t) >= 1));
        assert_eq!(class_floor(0), 0);
        assert_eq!(scale_to_class(1234, 0), 1234);
        // The store keeps class 0 apart from class 1.
        let mut table = Table::default();
        for (c, ns) in [(class(0), 1000), (class(1), 2000)] {
            let mut u = Update::new(key(c));
            u.runs = 1;
            u.samples = vec![(Candidate::Auto, Kind::Cold, ns)];
            table.apply(&u);
        }
        let table = Table::parse(&table.render()).unwrap();
        assert_eq!(table.len(), 2);
        for (c, ns) in [(0, 1000), (1, 2000)] {
            let r = table.get(&key(c)).unwrap();
            assert_eq!(r.search.samples[0].cold, [ns], "class {c}");
        }
    }

    fn key(class: u32) -> Key {
        Key {
            kernel: "k".into(),
            device: "H100".into(),
            sm_arch: 90,
            class,
        }
    }

    #[test]
    fn launches_of_one_class_share_a_key() {
        assert_eq!(Key::for_trip("k", "H100", 90, 1000), key(class(1000)));
        assert_eq!(
            Key::for_trip("k", "H100", 90, 700),
            Key::for_trip("k", "H100", 90, 720)
        );
        assert_eq!(Key::for_trip("k", "H100", 90, 0), key(0));
    }

    #[test]
    fn updates_merge_and_a_search_resumes_from_the_file() {
        let mut table = Table::default();
        let mut u = Update::new(key(21));
        u.runs = 1;
        u.launches_per_run = 1;
        u.trips = (1000, 1000);
        u.used = 7;
        u.explored = [1, 0];
        u.samples = vec![(Candidate::Auto, Kind::Cold, 5000)];
        table.apply(&u);
        u.samples = vec![(Candidate::Llvm, Kind::Cold, 4000)];
        u.trips = (900, 900);
        table.apply(&u);
        let back = Table::parse(&table.render()).unwrap();
        assert_eq!(back, table);
        let r = back.get(&key(21)).unwrap();
        assert_eq!(
            (r.runs, r.trips, r.search.explored),
            (2, (900, 1000), [2, 0])
        );
        assert_eq!(r.kind(), Kind::Cold);
        // One faster launch does not displace auto; a second one does.
        assert_eq!(r.search.leader(Kind::Cold), 0);
        u.samples = vec![
            (Candidate::Llvm, Kind::Cold, 4000),
            (Candidate::Auto, Kind::Cold, 5000),
        ];
        table.apply(&u);
        let r = table.get(&key(21)).unwrap();
        assert_eq!(
            r.search.leader(Kind::Cold),
            r.search
                .candidates
                .iter()
                .position(|c| *c == Candidate::Llvm)
                .unwrap()
        );
        assert!(matches!(
            r.search.step(Kind::Cold, 0),
            Step::Settled(_) | Step::Explore(_)
        ));
    }

    #[test]
    fn bad_records_are_errors_and_old_versions_corrupt() {
        assert!(Table::parse("{\"version\": 2, \"records\": [{\"kernel\": 1}]}").is_err());
        let bad_grid = Table::default().render().replace("[\n\n]", "[{\"kernel\":\"k\",\"device\":\"d\",\"sm_arch\":90,\"class\":1,\"trips\":[1,1],\"used\":0,\"runs\":1,\"launches_per_run\":1,\"explored\":[0,0],\"settled\":[false,false],\"pinned\":null,\"grids\":{\"fast\":{\"cold\":[],\"warm\":[]}}}]");
        assert!(Table::parse(&bad_grid).unwrap_err().contains("fast"));
        assert!(matches!(
            parse("{\"version\": 1, \"entries\": []}"),
            Err(CacheError::Corrupt(_))
        ));
        assert!(matches!(
            parse("{\"version\": 3}"),
            Err(CacheError::Newer(_))
        ));
        assert_eq!(parse(&Table::default().render()).unwrap(), Table::default());
    }

    #[test]
    fn eviction_drops_the_least_recently_used() {
        let mut table = Table::default();
        for c in 1..=50 {
            let mut u = Update::new(key(c));
            u.used = u64::from(c);
            u.runs = 1;
            u.samples = vec![(Candidate::Auto, Kind::Warm, 1000)];
            table.apply(&u);
        }
        let size = table.render().len() as u64;
        let gone = table.evict_to(size / 2);
        assert!((25..30).contains(&gone), "{gone}");
        assert!(table.render().len() as u64 <= size / 2);
        assert!(table.get(&key(50)).is_some() && table.get(&key(1)).is_none());
        assert_eq!(table.evict_to(u64::MAX), 0);
    }
}
