//! The store: what `tune` measured, kept across runs (`GRIDSEL_CACHE`).
//!
//! A JSON object, one record a line:
//!
//! ```json
//! {"version": 3, "journal": "5f0c29e4a1b3d870", "records": [
//! {"kernel": "__omp_offloading_..._l7", "device": "NVIDIA H100 80GB HBM3", "sm_arch": 90,
//!  "class": 21, "build": "9c1e0f5a7b2d4e68", "llvm": 19, "trips": [1000, 1000], "used": 1795000000, "runs": 3,
//!  "launches_per_run": 20, "explored": [1, 34], "settled": [false, true], "pinned": null,
//!  "grids": {"auto": {"cold": [51200], "warm": [40960, 41010]}, "move:64,1": {...}}}
//! ]}
//! ```
//!
//! A record is one search ([`super::search`]): its samples per candidate
//! and kind, how many launches explored, how many runs and launches per run
//! fed it. It is keyed by (kernel, device name, sm_arch, trip-count
//! [`class`], build): `build` names the device image the kernel came from
//! ([`crate::image::build_id`]), so that a program rebuilt (another compiler,
//! other flags, changed code) starts its searches afresh rather than
//! inheriting grids measured on other machine code; `llvm` is the major
//! version of the libomptarget that last added to it (0: unknown), which
//! production runs also match ([`super::learned`]). This module is the format and the merge; the preload
//! library's `files::StoreFile` reads the file once per process and adds
//! each process's new samples under a lock, so processes running at once
//! add to the same searches and lose nothing. The file is kept under
//! [`MAX_BYTES`] by dropping the records used least recently.
//!
//! Beside it, the store's journal: what processes added since the file was
//! last written, one [`Update`] a line in a record's own fields
//! ([`journal_line`]), after a first line naming the store it extends
//! ([`journal_header`]):
//!
//! ```json
//! {"gridsel_journal": 2, "store": "5f0c29e4a1b3d870"}
//! {"kernel": "__omp_offloading_..._l7", "device": ..., "runs": 1, ..., "grids": {"auto": {"cold": [51200], "warm": []}}}
//! ```
//!
//! Appending a line costs the same whatever the store's size; rewriting
//! the file costs a parse and a render of all of it. Readers apply the
//! journal over the file ([`Contents::extend`]) when its id is the one the
//! file names ([`JournalId`]: drawn anew at each rewrite, which merges the
//! journal in), so a journal already merged is never read twice.
//!
//! Only a gridsel store is ever replaced ([`parse`] says what is one): a
//! file that is not (a mistyped `GRIDSEL_CACHE`), one of a newer version
//! and one that cannot be read are left as they are. Each record is read
//! alone: one that does not validate, or a second record of a search, is
//! left out, named, and the rest kept; the preload library keeps the file
//! as it was as `<store>.bad` before a write drops them. A store of an
//! older version (version 1 kept only winners, version 2 knew no builds) is
//! read as empty, likewise.
//! Fields a record has that this version does not know are kept and written
//! back ([`Record::unknown`]), so a newer gridsel of the same version that
//! adds one loses nothing to an older one.

use super::search::{Candidate, Kind, Samples, Search};
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io;

/// The file format's version; other versions are ignored.
pub const VERSION: u32 = 3;

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

/// What identifies a search: kernel, device name, sm_arch, trip class,
/// and the build of the program (the device image's
/// [`crate::image::build_id`]; empty where unknown).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub kernel: String,
    pub device: String,
    pub sm_arch: u32,
    pub class: u32,
    pub build: String,
}

impl Key {
    /// The key of the search a launch joins: its kernel and build, the
    /// device it runs on and its trip count's [`class`].
    pub fn of_launch(l: &crate::policy::Launch<'_>) -> Self {
        Self::for_trip(
            l.kernel_name,
            l.device.name.as_str(),
            l.device.sm_arch,
            l.desc.trip_count,
            l.kernel.build.as_str(),
        )
    }

    /// The key of the search that launches of `kernel` of `build` at `trip`
    /// iterations on a device join: the trip count's [`class`], never the
    /// trip count.
    pub fn for_trip(
        kernel: impl Into<String>,
        device: impl Into<String>,
        sm_arch: u32,
        trip: u64,
        build: impl Into<String>,
    ) -> Self {
        Self {
            kernel: kernel.into(),
            device: device.into(),
            sm_arch,
            class: class(trip),
            build: build.into(),
        }
    }
}

impl Key {
    /// The key of the same search for any build: a record without a build
    /// (pinned from a sweep's best grids, or written by hand) that is
    /// pinned pins every build of its kernel ([`Table::for_launch`]).
    pub fn any_build(&self) -> Self {
        Self {
            build: String::new(),
            ..self.clone()
        }
    }
}

/// How a search's kernel was launched, as a [`Record`] sums it over
/// processes and an [`Update`] tells it for one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    /// The smallest and largest trip counts launched.
    pub trips: (u64, u64),
    /// When a process last added to it (seconds since the Unix epoch).
    pub used: u64,
    /// Processes that launched the kernel in this class (in an update: 1
    /// for the process's first update of the record, else 0).
    pub runs: u32,
    /// Most launches one process made.
    pub launches_per_run: u32,
}

impl Tally {
    /// Nothing launched yet.
    pub const NONE: Self = Self {
        trips: (u64::MAX, 0),
        used: 0,
        runs: 0,
        launches_per_run: 0,
    };

    /// Adds one process's tally.
    fn add(&mut self, u: &Tally) {
        self.trips = (self.trips.0.min(u.trips.0), self.trips.1.max(u.trips.1));
        self.used = later_use(self.used, u.used);
        self.runs = self.runs.saturating_add(u.runs);
        self.launches_per_run = self.launches_per_run.max(u.launches_per_run);
    }
}

/// One search as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: Key,
    pub tally: Tally,
    /// The major version of the libomptarget of the last process that
    /// added to it; 0 where unknown.
    pub llvm: u32,
    /// A grid every launch gets, no search (a store written from a sweep's
    /// best grids).
    pub pinned: Option<Candidate>,
    pub search: Search,
    /// Exploring allowance online `tune` banked for this search's later
    /// runs, in ns (negative: owed): [`super::Allowance`].
    pub credit: i64,
    /// Fields of the record this gridsel does not know, kept as they were
    /// (a newer gridsel of the same format version may add some).
    pub unknown: Map<String, Value>,
}

impl Record {
    pub fn new(key: Key) -> Self {
        Self {
            key,
            tally: Tally::NONE,
            llvm: 0,
            pinned: None,
            search: Search::default(),
            credit: 0,
            unknown: Map::new(),
        }
    }

    /// Adds one process's additions.
    pub fn merge(&mut self, u: &Update) {
        self.tally.add(&u.tally);
        if u.llvm != 0 {
            self.llvm = u.llvm;
        }
        for (slot, add) in self.search.explored.iter_mut().zip(u.explored) {
            *slot = slot.saturating_add(add);
        }
        for (slot, done) in self.search.settled.iter_mut().zip(u.settled) {
            *slot |= done;
        }
        for &(c, kind, ns) in &u.samples {
            let i = self.search.index_of(c);
            self.search.samples[i].push(kind, ns);
        }
        if u.pinned.is_some() {
            self.pinned = u.pinned;
        }
        self.credit = self.credit.saturating_add(u.credit);
    }

    /// The kind of samples the search ranks by: warm once some process
    /// launched the kernel more than once.
    pub fn kind(&self) -> Kind {
        if self.tally.launches_per_run >= 2 {
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
    pub tally: Tally,
    /// The process's libomptarget major version (0: unknown, which leaves
    /// the record's as it is).
    pub llvm: u32,
    pub explored: [u32; 2],
    /// Kinds whose plan this process saw finish.
    pub settled: [bool; 2],
    pub samples: Vec<(Candidate, Kind, u64)>,
    pub pinned: Option<Candidate>,
    /// What the process adds to the record's [`Record::credit`].
    pub credit: i64,
}

impl Update {
    pub fn new(key: Key) -> Self {
        Self {
            key,
            tally: Tally::NONE,
            llvm: 0,
            explored: [0; 2],
            settled: [false; 2],
            samples: Vec::new(),
            pinned: None,
            credit: 0,
        }
    }

    /// What `record` adds to an empty record, as an update: a journal
    /// line is the record its update makes of nothing. Samples past
    /// [`super::search::KEEP`] of a candidate's kind, which a record does
    /// not keep, would have pushed out the older ones anyway.
    fn of_record(record: Record) -> Self {
        let search = record.search;
        let samples = search
            .candidates
            .iter()
            .zip(&search.samples)
            .flat_map(|(&c, s)| {
                let cold = s.cold.iter().map(move |&ns| (c, Kind::Cold, ns));
                cold.chain(s.warm.iter().map(move |&ns| (c, Kind::Warm, ns)))
            })
            .collect();
        Self {
            key: record.key,
            tally: record.tally,
            llvm: record.llvm,
            explored: search.explored,
            settled: search.settled,
            samples,
            pinned: record.pinned,
            credit: record.credit,
        }
    }

    /// Whether it adds anything.
    pub fn is_empty(&self) -> bool {
        self.tally.runs == 0
            && self.samples.is_empty()
            && self.pinned.is_none()
            && self.settled == [false; 2]
            && self.credit == 0
    }
}

#[derive(Serialize, Deserialize)]
struct SamplesFile {
    cold: Vec<u64>,
    warm: Vec<u64>,
}

#[derive(Serialize, Deserialize)]
struct RecordFile {
    kernel: String,
    device: String,
    sm_arch: u32,
    class: u32,
    build: String,
    llvm: u32,
    trips: [u64; 2],
    used: u64,
    runs: u32,
    launches_per_run: u32,
    explored: [u32; 2],
    settled: [bool; 2],
    pinned: Option<String>,
    grids: BTreeMap<String, SamplesFile>,
    /// Absent where 0: stores written before it are read as they were.
    #[serde(default, skip_serializing_if = "is_zero")]
    credit: i64,
    /// Fields this gridsel does not know (a newer one of the same version
    /// wrote them): kept, and written back.
    #[serde(flatten)]
    unknown: Map<String, Value>,
}

fn is_zero(credit: &i64) -> bool {
    *credit == 0
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
            build: r.key.build.clone(),
            llvm: r.llvm,
            trips: [r.tally.trips.0, r.tally.trips.1],
            used: r.tally.used,
            runs: r.tally.runs,
            launches_per_run: r.tally.launches_per_run,
            explored: r.search.explored,
            settled: r.search.settled,
            pinned: r.pinned.map(|c| c.to_string()),
            grids,
            credit: r.credit,
            unknown: r.unknown.clone(),
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
            let candidate = name.parse()?;
            // A candidate without samples says nothing, and is not written
            // back (`from_record`): read as absent, so that a store reads
            // the same after a rewrite.
            if s.cold.is_empty() && s.warm.is_empty() {
                continue;
            }
            let i = search.index_of(candidate);
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
                build: self.build,
            },
            llvm: self.llvm,
            tally: Tally {
                trips: (self.trips[0], self.trips[1]),
                used: self.used,
                runs: self.runs,
                launches_per_run: self.launches_per_run,
            },
            pinned: self.pinned.map(|p| p.parse()).transpose()?,
            search,
            credit: self.credit,
            unknown: self.unknown,
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

    /// The record launches of `key` go by: a pinned record of the search
    /// for any build ([`Key::any_build`]), else the build's own.
    pub fn for_launch(&self, key: &Key) -> Option<&Record> {
        let pinned = (!key.build.is_empty())
            .then(|| self.get(&key.any_build()))
            .flatten()
            .filter(|r| r.pinned.is_some());
        pinned.or_else(|| self.get(key))
    }

    /// Adds or replaces a record.
    pub fn insert(&mut self, record: Record) {
        self.map.insert(record.key.clone(), record);
    }

    /// Merges one process's additions into its record.
    pub fn apply(&mut self, u: &Update) {
        self.map
            .entry(u.key.clone())
            .or_insert_with(|| Record::new(u.key.clone()))
            .merge(u);
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

    /// Parses a store that must read whole: its table, or why not (the
    /// file's problem, or every record dropped, one per line's part).
    /// [`parse`] is the lenient reading that the store's users make.
    pub fn parse(text: &str) -> Result<Self, String> {
        let contents = parse(text).map_err(|e| e.to_string())?;
        if contents.dropped.is_empty() {
            Ok(contents.table)
        } else {
            Err(contents.dropped.join("; "))
        }
    }

    fn lines(&self) -> Vec<(u64, String)> {
        self.records()
            .map(|r| {
                let line = serde_json::to_string(&RecordFile::from_record(r)).unwrap_or_default();
                (r.tally.used, line)
            })
            .collect()
    }

    /// The file's text, one record a line, in key order.
    pub fn render(&self) -> String {
        self.render_with_header(format!("{{\"version\": {VERSION}, \"records\": [\n"))
    }

    /// The file's text paired with the journal `id` names ([`journal_of`]
    /// reads it back from the first line).
    pub fn render_paired(&self, id: JournalId) -> String {
        self.render_with_header(paired_header(id))
    }

    fn render_with_header(&self, header: String) -> String {
        let lines: Vec<String> = self.lines().into_iter().map(|(_, l)| l).collect();
        format!("{header}{}\n]}}\n", lines.join(",\n"))
    }

    /// Drops the least recently used records until the text fits in
    /// `max_bytes`; returns how many went. A record used more than
    /// [`CLOCK_SLACK`] after `now` goes first: its time is no use time
    /// but a wrong clock's or a hand edit's (`used` = 2^64-1 would
    /// otherwise outlive every record in use), and a record in use gets a
    /// sound time back at its next update ([`Table::apply`]).
    pub fn evict_to(&mut self, max_bytes: u64, now: u64) -> usize {
        let lines = self.lines();
        // Framing (a paired header's included) plus one separator per line.
        let mut total: u64 = 96 + lines.iter().map(|(_, l)| l.len() as u64 + 2).sum::<u64>();
        if total <= max_bytes {
            return 0;
        }
        let mut by_age: Vec<(u64, &Key, u64)> = self
            .map
            .keys()
            .zip(&lines)
            .map(|(k, (used, l))| {
                let used = if *used > now.saturating_add(CLOCK_SLACK) {
                    0
                } else {
                    *used
                };
                (used, k, l.len() as u64 + 2)
            })
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

/// How far ahead of a process's clock a record's `used` may be and still
/// count as a time of use: clocks of machines that share a store (a home
/// folder over NFS) differ by seconds, not by a day.
pub const CLOCK_SLACK: u64 = 24 * 3600;

/// A record's `used` after an update stamped `update`: the later of the
/// two, unless the record's is beyond the updating process's clock (plus
/// [`CLOCK_SLACK`]), which is then no time of use and gives way.
fn later_use(record: u64, update: u64) -> u64 {
    if record > update.saturating_add(CLOCK_SLACK) {
        update
    } else {
        record.max(update)
    }
}

// ---- the journal -------------------------------------------------------------

/// The largest journal read or written: an update that would take it past
/// this is merged into the store instead, whatever that costs.
pub const MAX_JOURNAL_BYTES: u64 = 1 << 20;

/// How long a journal grows before its store asks to have it merged in: a
/// process that finds it this long merges it on its writer thread, off
/// the launches and off the exit. A few hundred processes' updates: every
/// reader of the store parses them at its start.
pub const JOURNAL_COMPACT_BYTES: u64 = 256 << 10;

/// What pairs a store with its journal: 64 random bits, drawn anew each
/// time the store is rewritten, so that a journal merged into a store is
/// never read over it again, even when the process that merged it was
/// killed before it could remove it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalId(pub u64);

impl JournalId {
    /// Sixteen hex digits, as [`fmt::Display`] writes it.
    fn parse(text: &str) -> Option<Self> {
        let hex = text.len() == 16 && text.bytes().all(|b| b.is_ascii_hexdigit());
        hex.then(|| u64::from_str_radix(text, 16).ok().map(Self))?
    }
}

impl fmt::Display for JournalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// The first line of a store paired with the journal `id`.
fn paired_header(id: JournalId) -> String {
    format!("{{\"version\": {VERSION}, \"journal\": \"{id}\", \"records\": [\n")
}

/// How many of a store's first bytes [`journal_of`] needs.
pub const PAIRED_HEADER_BYTES: usize = 59;

/// The journal a store is paired with, from its first
/// [`PAIRED_HEADER_BYTES`] bytes, when they are the first line gridsel
/// writes ([`Table::render_paired`]); `None` for anything else (a store to
/// read whole before anything is added to it: one written by hand, by an
/// older gridsel, or none at all).
pub fn journal_of(head: &[u8]) -> Option<JournalId> {
    let start = format!("{{\"version\": {VERSION}, \"journal\": \"");
    let rest = head.strip_prefix(start.as_bytes())?;
    let (id, rest) = rest.split_at_checked(16)?;
    if !rest.starts_with(b"\", \"records\": [\n") {
        return None;
    }
    JournalId::parse(std::str::from_utf8(id).ok()?)
}

/// How a journal's first line starts.
const JOURNAL_START: &[u8] = b"{\"gridsel_journal\": ";

/// A journal's first line: its format (the store's [`VERSION`]) and the
/// store it extends.
pub fn journal_header(store: JournalId) -> String {
    format!("{{\"gridsel_journal\": {VERSION}, \"store\": \"{store}\"}}\n")
}

/// A journal line: `update` as the record it would make of none, in the
/// store's own fields, so that a line validates as a record does.
pub fn journal_line(update: &Update) -> String {
    let mut record = Record::new(update.key.clone());
    record.merge(update);
    let mut line = serde_json::to_string(&RecordFile::from_record(&record)).unwrap_or_default();
    line.push('\n');
    line
}

/// A journal as read ([`parse_journal`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Journal {
    /// The store it extends ([`Contents::journal`]); `None` for a journal
    /// of an older version, or one whose first line was cut short (its
    /// creator was killed): it extends no store.
    pub store: Option<JournalId>,
    /// Its lines that validate, in order.
    pub updates: Vec<Update>,
    /// Its lines that do not, named (`journal line 3 (kernel k): ...`).
    pub dropped: Vec<String>,
    /// Where its last complete line ends. Past it is a line still being
    /// written, or one that a process killed while writing it left: not
    /// read, and cut off by the next process that appends.
    pub complete: usize,
}

/// The store a journal extends, from its first line ([`Journal::store`]):
/// [`StoreError::NotAJournal`] when it is not a journal's, and
/// [`StoreError::Newer`] for a newer version.
pub fn journal_store(bytes: &[u8]) -> Result<Option<JournalId>, StoreError> {
    let Some(end) = bytes.iter().position(|&b| b == b'\n') else {
        // The first line is written whole when the journal is created:
        // cut short, its creator was killed.
        return if JOURNAL_START.starts_with(bytes) || bytes.starts_with(JOURNAL_START) {
            Ok(None)
        } else {
            Err(StoreError::NotAJournal("no journal's first line".into()))
        };
    };
    let header: Value = serde_json::from_slice(&bytes[..end])
        .ok()
        .filter(|_| bytes.starts_with(JOURNAL_START))
        .ok_or_else(|| StoreError::NotAJournal("no journal's first line".into()))?;
    let version = header
        .get("gridsel_journal")
        .and_then(Value::as_u64)
        .ok_or_else(|| StoreError::NotAJournal("no journal version".into()))?;
    if version > u64::from(VERSION) {
        return Err(StoreError::Newer(format!(
            "journal version {version}, expected {VERSION}"
        )));
    }
    Ok(header
        .get("store")
        .and_then(Value::as_str)
        .and_then(JournalId::parse)
        .filter(|_| version == u64::from(VERSION)))
}

/// Reads a journal: its first line says what it is, each later line is
/// one update, read alone like a store's records (one that does not
/// validate is dropped, named, and the rest kept). A file whose first line
/// is not a journal's is [`StoreError::NotAJournal`], of a newer version
/// [`StoreError::Newer`].
pub fn parse_journal(bytes: &[u8]) -> Result<Journal, StoreError> {
    parse_journal_lines(bytes, |_| true)
}

/// [`parse_journal`] for a reader that needs only `only`'s kernels: the
/// lines of other kernels are skipped unparsed (they are neither read nor
/// named as dropped); the first line, the torn last line and the rest
/// follow [`parse_journal`]'s rules.
pub fn parse_journal_only(bytes: &[u8], only: &Only) -> Result<Journal, StoreError> {
    parse_journal_lines(bytes, |line| only.wants(line))
}

fn parse_journal_lines(bytes: &[u8], wants: impl Fn(&[u8]) -> bool) -> Result<Journal, StoreError> {
    let mut journal = Journal {
        store: journal_store(bytes)?,
        complete: bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1),
        ..Journal::default()
    };
    let Some(end) = bytes
        .iter()
        .position(|&b| b == b'\n')
        .filter(|_| journal.store.is_some())
    else {
        return Ok(journal);
    };
    let complete = journal.complete;
    for (n, line) in bytes[end + 1..complete]
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
    {
        if !wants(line) {
            continue;
        }
        let what = format!("journal line {}", n + 2);
        match serde_json::from_slice::<Checked>(line) {
            Err(e) => journal.dropped.push(format!("{what}: {e}")),
            Ok(record) => match read_record(&what, record) {
                (_, Ok(r)) => journal.updates.push(Update::of_record(r)),
                (name, Err(e)) => journal.dropped.push(format!("{name}: {e}")),
            },
        }
    }
    Ok(journal)
}

impl Contents {
    /// Applies `journal` over the store when it is the store's own
    /// ([`Contents::journal`]); returns whether it was.
    pub fn extend(&mut self, journal: Journal) -> bool {
        if journal.store.is_none() || journal.store != self.journal {
            return false;
        }
        for u in &journal.updates {
            self.table.apply(u);
        }
        self.dropped.extend(journal.dropped);
        true
    }
}

/// Why a store could not be read or written.
#[derive(Debug)]
pub enum StoreError {
    /// Another process holds the lock (only when storing): try again later.
    Busy,
    /// Refused, unreadable or unwritable (the file layer's errors, a missing
    /// folder, permissions, a read-only file, a full disk, over
    /// [`MAX_BYTES`]).
    Io(io::Error),
    /// Written by a newer gridsel: neither read nor replaced.
    Newer(String),
    /// Not a gridsel store (see [`parse`]): neither read nor replaced, so
    /// that a mistyped path costs nobody a file.
    NotAStore(String),
    /// Records that do not validate, where the caller would rather change
    /// nothing than drop them (`gridsel cache clear`).
    Invalid(Vec<String>),
    /// Records that do not validate, whose copy (`<store>.bad`) cannot be
    /// kept: the file is left as it is.
    CopyNotKept(String),
    /// The store's `.journal` is not a gridsel journal: neither it nor the
    /// store is read or written.
    NotAJournal(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Busy => write!(f, "locked by another process"),
            Self::Io(e) => write!(f, "{e}"),
            Self::Newer(m) => write!(f, "{m}, written by a newer gridsel"),
            Self::NotAStore(m) => write!(f, "not a gridsel store ({m})"),
            Self::Invalid(dropped) => write!(f, "{}", dropped.join("; ")),
            Self::CopyNotKept(m) => write!(f, "{m}"),
            Self::NotAJournal(m) => write!(
                f,
                "the `.journal` file beside it is not a gridsel journal ({m}): left as it is"
            ),
        }
    }
}

impl std::error::Error for StoreError {}

/// A store as read: the records that validate, and what was left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contents {
    pub table: Table,
    /// What was dropped and why, one entry per record (`record 3 (kernel
    /// k_l7): ...`, `journal line 2: ...`), or one for a whole store of an
    /// older format.
    pub dropped: Vec<String>,
    /// The journal the store is paired with (named by its first line,
    /// [`journal_of`]): only a journal of this id extends it
    /// ([`Journal::store`]).
    pub journal: Option<JournalId>,
}

/// Reads a store's text. What counts as a gridsel store, and what happens to
/// the rest:
///
/// - A JSON object with an integer `version` and, at this version, an array
///   `records` (version 1 had `entries`) is a store. The journal its first
///   line names ([`journal_of`]) is [`Contents::journal`]. Anything else (text,
///   other JSON, a key of the object given twice) is
///   [`StoreError::NotAStore`]: neither read nor replaced.
/// - An empty file (nothing but white space) is a new store, empty: gridsel
///   never writes one (it replaces its file whole), so it is a file made to
///   hold the store (`touch`), and replacing it loses nothing.
/// - A newer version is [`StoreError::Newer`], left alone; an older one is
///   a store whose records are all dropped (version 1 kept only winners,
///   version 2 did not know which build of a program measured them).
/// - Each record is read alone: one that does not validate (a field missing
///   or of the wrong type, a field given twice, more than
///   [`super::search::KEEP`] samples, a candidate that is none) is dropped,
///   named in [`Contents::dropped`], and the others kept. Of two records of
///   the same search (same [`Key`]) the first is kept and the second
///   dropped: merging them would count its runs and samples twice if it is
///   a copy. Unknown fields of a record are kept ([`Record::unknown`]);
///   unknown fields elsewhere are ignored.
pub fn parse(text: &str) -> Result<Contents, StoreError> {
    if text.trim().is_empty() {
        return Ok(Contents::default());
    }
    let doc: Document =
        serde_json::from_str(text).map_err(|e| StoreError::NotAStore(e.to_string()))?;
    if let Some(key) = doc.repeated {
        return Err(StoreError::NotAStore(format!("`{key}` given twice")));
    }
    let version = match doc.fields.get("version") {
        None => return Err(StoreError::NotAStore("no `version`".into())),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| StoreError::NotAStore(format!("`version` is {v}")))?,
    };
    let expected = format!("version {version}, expected {VERSION}");
    if version > u64::from(VERSION) {
        return Err(StoreError::Newer(expected));
    }
    if version < u64::from(VERSION) {
        // Version 1 kept `entries`, version 2 `records` without builds.
        let held = if version == 1 {
            (
                "entries",
                matches!(doc.fields.get("entries"), Some(Value::Array(_))),
            )
        } else {
            ("records", doc.records.is_some())
        };
        return if held.1 {
            Ok(Contents {
                dropped: vec![format!("{expected}: its records are not read")],
                ..Contents::default()
            })
        } else {
            Err(StoreError::NotAStore(format!(
                "{expected}, and no `{}`",
                held.0
            )))
        };
    }
    let Some(records) = doc.records else {
        return Err(StoreError::NotAStore("no `records`".into()));
    };
    let mut contents = Contents {
        journal: journal_of(text.as_bytes()),
        ..Contents::default()
    };
    for (n, record) in records.into_iter().enumerate() {
        contents.add(n + 1, record);
    }
    Ok(contents)
}

impl Contents {
    /// Adds the `n`th record of a store, unless it does not validate or
    /// repeats an earlier one's search ([`parse`]'s rules).
    fn add(&mut self, n: usize, record: Checked) {
        let (name, read) = read_record(&format!("record {n}"), record);
        match read {
            Ok(r) if self.table.get(&r.key).is_some() => self.dropped.push(format!(
                "{name}: a second record of an earlier one's search, which is kept"
            )),
            Ok(r) => self.table.insert(r),
            Err(e) => self.dropped.push(format!("{name}: {e}")),
        }
    }
}

/// The kernels a reader needs (a production run: its program's kernels),
/// so that the records of every other kernel in a store of thousands are
/// skipped without being parsed ([`parse_only`], [`parse_journal_only`]).
#[derive(Clone, Debug, Default)]
pub struct Only {
    kernels: HashSet<String>,
}

impl Only {
    pub fn kernels<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        Self {
            kernels: names.into_iter().map(String::from).collect(),
        }
    }

    /// Whether a record of `kernel` is wanted.
    pub fn wants_kernel(&self, kernel: &str) -> bool {
        self.kernels.contains(kernel)
    }

    /// Whether a line of a store or journal may hold a wanted record. Every
    /// record gridsel writes is one line that starts with its kernel's name
    /// (`{"kernel":"k_l7",`): those of other kernels are not. Any other
    /// line (written by hand, or a name with a JSON escape in it) is.
    fn wants(&self, line: &[u8]) -> bool {
        let Some(rest) = line.strip_prefix(b"{\"kernel\":\"") else {
            return true;
        };
        match rest.iter().position(|&b| b == b'"' || b == b'\\') {
            Some(end) if rest[end] == b'"' => {
                std::str::from_utf8(&rest[..end]).map_or(true, |name| self.wants_kernel(name))
            }
            _ => true,
        }
    }
}

/// [`parse`] for a reader that needs only `only`'s kernels: what [`parse`]
/// reads of them, and nothing of the others. A store as gridsel writes it
/// (its own first and last lines, one record a line) is read line by line
/// ([`OnlyLines`]), and only the lines [`Only`] wants are parsed; any other
/// text is parsed whole, then cut to `only`'s kernels.
pub fn parse_only(text: &str, only: &Only) -> Result<Contents, StoreError> {
    let mut lines = OnlyLines::new(only);
    for line in text.as_bytes().split_inclusive(|&b| b == b'\n') {
        lines.line(line);
    }
    if let Some(contents) = lines.finish() {
        return Ok(contents);
    }
    let mut contents = parse(text)?;
    contents.table.retain(|r| only.wants_kernel(&r.key.kernel));
    Ok(contents)
}

/// [`parse_only`]'s reading of a store laid out as gridsel writes it, fed
/// a line at a time (each with its `\n`), so that a reader can stream the
/// file through a small buffer: a production run that reads a few records
/// of a 4 MiB store then faults in no 4 MiB of memory (on the 2-core dev
/// VM, those page faults were most of the store's cost at start-up).
pub struct OnlyLines<'a> {
    only: &'a Only,
    contents: Contents,
    /// Lines fed so far: the next one's number, 0 being the first line.
    lines: usize,
    /// Whether the last record line ended in a comma; `None` before the
    /// first record.
    comma: Option<bool>,
    /// A blank line came (the one line of a store of no records).
    blank: bool,
    /// The last line, `]}`, came.
    closed: bool,
    /// Not laid out as gridsel writes a store: [`parse`] reads it.
    other: bool,
}

impl<'a> OnlyLines<'a> {
    pub fn new(only: &'a Only) -> Self {
        Self {
            only,
            contents: Contents::default(),
            lines: 0,
            comma: None,
            blank: false,
            closed: false,
            other: false,
        }
    }

    /// The next line of the store, with its `\n`.
    pub fn line(&mut self, line: &[u8]) {
        let n = self.lines;
        self.lines += 1;
        let Some(text) = line
            .strip_suffix(b"\n")
            .filter(|_| !self.other && !self.closed)
        else {
            // Unterminated (gridsel ends its stores with a newline), or
            // after the last line.
            self.other = true;
            return;
        };
        if n == 0 {
            self.contents.journal = journal_of(line);
            let unpaired = format!("{{\"version\": {VERSION}, \"records\": [");
            self.other = self.contents.journal.is_none() && text != unpaired.as_bytes();
            return;
        }
        match text {
            // Records are separated by commas, and the last one is not
            // followed by one, as [`Table::render`] writes them.
            b"]}" => {
                self.other = self.comma == Some(true);
                self.closed = true;
            }
            b"" => {
                self.other = self.comma.is_some() || self.blank;
                self.blank = true;
            }
            _ => {
                let (record, comma) = match text.strip_suffix(b",") {
                    Some(record) => (record, true),
                    None => (text, false),
                };
                if self.blank || self.comma == Some(false) {
                    self.other = true;
                    return;
                }
                self.comma = Some(comma);
                if !self.only.wants(record) {
                    return;
                }
                match serde_json::from_slice::<Checked>(record) {
                    Ok(checked) => self.contents.add(n, checked),
                    // Not a whole record on its line.
                    Err(_) => self.other = true,
                }
            }
        }
    }

    /// What was read of `only`'s kernels; `None` for a text not laid out
    /// as gridsel writes a store (another version, a record over several
    /// lines, separators out of place, no last line), which [`parse`] then
    /// reads whole.
    pub fn finish(self) -> Option<Contents> {
        (self.closed && !self.other).then_some(self.contents)
    }
}

/// One record of a store or line of a journal, `what` (`record 3`) in the
/// name it gets in messages: its name with the kernel's, and the record or
/// why it does not validate.
fn read_record(what: &str, record: Checked) -> (String, Result<Record, String>) {
    let name = match record.value.get("kernel").and_then(Value::as_str) {
        Some(kernel) => format!("{what} (kernel {kernel})"),
        None => what.to_string(),
    };
    let read = match record.repeated {
        Some(key) => Err(format!("`{key}` given twice")),
        None => serde_json::from_value::<RecordFile>(record.value)
            .map_err(|e| e.to_string())
            .and_then(RecordFile::into_record),
    };
    (name, read)
}

/// A store's top-level object: its `records`, each with the first key
/// given twice inside it, its other fields, and a top-level key given twice.
struct Document {
    fields: Map<String, Value>,
    records: Option<Vec<Checked>>,
    repeated: Option<String>,
}

/// A JSON value and the first object key given twice anywhere inside it
/// (`grids.auto`), which serde_json's [`Value`] would drop silently, the
/// last one winning.
struct Checked {
    value: Value,
    repeated: Option<String>,
}

impl From<Value> for Checked {
    fn from(value: Value) -> Self {
        Self {
            value,
            repeated: None,
        }
    }
}

impl<'de> Deserialize<'de> for Document {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Top;
        impl<'de> Visitor<'de> for Top {
            type Value = Document;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
                let mut doc = Document {
                    fields: Map::new(),
                    records: None,
                    repeated: None,
                };
                while let Some(key) = map.next_key::<String>()? {
                    let twice =
                        doc.records.is_some() && key == "records" || doc.fields.contains_key(&key);
                    if twice && doc.repeated.is_none() {
                        doc.repeated = Some(key.clone());
                    }
                    if key == "records" {
                        doc.records = Some(map.next_value()?);
                    } else {
                        let field: Checked = map.next_value()?;
                        doc.fields.insert(key, field.value);
                    }
                }
                Ok(doc)
            }
        }
        d.deserialize_map(Top)
    }
}

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = Checked;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Checked, E> {
                Ok(Value::Bool(v).into())
            }
            fn visit_i64<E>(self, v: i64) -> Result<Checked, E> {
                Ok(Value::from(v).into())
            }
            fn visit_u64<E>(self, v: u64) -> Result<Checked, E> {
                Ok(Value::from(v).into())
            }
            fn visit_f64<E>(self, v: f64) -> Result<Checked, E> {
                Ok(Value::from(v).into())
            }
            fn visit_str<E>(self, v: &str) -> Result<Checked, E> {
                Ok(Value::from(v).into())
            }
            fn visit_string<E>(self, v: String) -> Result<Checked, E> {
                Ok(Value::from(v).into())
            }
            fn visit_unit<E>(self) -> Result<Checked, E> {
                Ok(Value::Null.into())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
                let (mut items, mut repeated) = (Vec::new(), None);
                while let Some(item) = seq.next_element::<Checked>()? {
                    repeated = repeated.or(item.repeated);
                    items.push(item.value);
                }
                Ok(Checked {
                    value: Value::Array(items),
                    repeated,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
                let (mut object, mut repeated) = (Map::new(), None);
                while let Some(key) = map.next_key::<String>()? {
                    let field: Checked = map.next_value()?;
                    if repeated.is_none() {
                        repeated = if object.contains_key(&key) {
                            Some(key.clone())
                        } else {
                            field.repeated.map(|inner| format!("{key}.{inner}"))
                        };
                    }
                    object.insert(key, field.value);
                }
                Ok(Checked {
                    value: Value::Object(object),
                    repeated,
                })
            }
        }
        d.deserialize_any(Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Geometry;
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
            u.tally.runs = 1;
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

    const BUILD: &str = "00000000000000b1";

    fn key(class: u32) -> Key {
        Key {
            kernel: "k".into(),
            device: "H100".into(),
            sm_arch: 90,
            class,
            build: BUILD.into(),
        }
    }

    impl Key {
        fn with_kernel(self, kernel: &str) -> Self {
            Self {
                kernel: kernel.into(),
                ..self
            }
        }
    }

    #[test]
    fn launches_of_one_class_share_a_key() {
        assert_eq!(
            Key::for_trip("k", "H100", 90, 1000, BUILD),
            key(class(1000))
        );
        assert_eq!(
            Key::for_trip("k", "H100", 90, 700, BUILD),
            Key::for_trip("k", "H100", 90, 720, BUILD)
        );
        assert_eq!(Key::for_trip("k", "H100", 90, 0, BUILD), key(0));
        // Another build of the program is another search.
        assert_ne!(
            Key::for_trip("k", "H100", 90, 1000, "00000000000000b2"),
            key(class(1000))
        );
    }

    #[test]
    fn updates_merge_and_a_search_resumes_from_the_file() {
        let mut table = Table::default();
        let mut u = Update::new(key(21));
        u.tally.runs = 1;
        u.tally.launches_per_run = 1;
        u.tally.trips = (1000, 1000);
        u.tally.used = 7;
        u.explored = [1, 0];
        u.samples = vec![(Candidate::Auto, Kind::Cold, 5000)];
        table.apply(&u);
        u.samples = vec![(Candidate::Llvm, Kind::Cold, 4000)];
        u.tally.trips = (900, 900);
        table.apply(&u);
        let back = Table::parse(&table.render()).unwrap();
        assert_eq!(back, table);
        let r = back.get(&key(21)).unwrap();
        assert_eq!(
            (r.tally.runs, r.tally.trips, r.search.explored),
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

    /// A valid record of kernel `kernel` in class `class`, with `fields`
    /// (`"name":value,` each) before its own.
    fn line(kernel: &str, class: u32, fields: &str) -> String {
        format!(
            "{{{fields}\"kernel\":\"{kernel}\",\"device\":\"H100\",\"sm_arch\":90,\"class\":{class},\"build\":\"{BUILD}\",\"llvm\":19,\"trips\":[1,1],\"used\":7,\"runs\":1,\"launches_per_run\":1,\"explored\":[0,0],\"settled\":[false,false],\"pinned\":null,\"grids\":{{\"auto\":{{\"cold\":[5000],\"warm\":[]}}}}}}"
        )
    }

    fn store(lines: &[String]) -> String {
        format!(
            "{{\"version\": 3, \"records\": [\n{}\n]}}\n",
            lines.join(",\n")
        )
    }

    #[test]
    fn only_a_json_object_with_a_version_and_records_is_a_store() {
        for text in [
            "notes\n",
            "# ~/.bashrc\nexport PATH=$HOME/bin:$PATH\n",
            "[2, []]",
            "{\"name\": \"a package.json\"}",
            "{\"version\": \"3\", \"records\": []}",
            "{\"version\": 3}",
            "{\"version\": 3, \"records\": {}}",
            "{\"version\": 1, \"records\": []}",
            "{\"version\": 2, \"entries\": []}",
            "{\"version\": 3, \"records\": [], \"records\": []}",
        ] {
            assert!(
                matches!(parse(text), Err(StoreError::NotAStore(_))),
                "{text}: {:?}",
                parse(text)
            );
        }
        assert_eq!(
            parse("notes").unwrap_err().to_string(),
            "not a gridsel store (expected ident at line 1 column 2)"
        );
        // Empty: a new store.
        for text in ["", " \n"] {
            assert_eq!(parse(text).unwrap(), Contents::default());
        }
        // An older store: all of it left out; a newer one: not read.
        let old = parse("{\"version\": 1, \"entries\": []}").unwrap();
        assert_eq!(old.table, Table::default());
        assert_eq!(
            old.dropped,
            ["version 1, expected 3: its records are not read"]
        );
        // Version 2 knew no builds: its grids may be another build's.
        let v2 = store(&[line("k", 1, "")]).replacen("\"version\": 3", "\"version\": 2", 1);
        let old = parse(&v2).unwrap();
        assert_eq!(old.table, Table::default());
        assert_eq!(
            old.dropped,
            ["version 2, expected 3: its records are not read"]
        );
        assert!(matches!(
            parse("{\"version\": 4}"),
            Err(StoreError::Newer(_))
        ));
        assert_eq!(
            parse(&Table::default().render()).unwrap(),
            Contents::default()
        );
    }

    #[test]
    fn a_record_that_does_not_validate_is_dropped_alone() {
        let nine = format!("[{}]", ["1"; 9].join(","));
        let text = store(&[
            line("a", 1, ""),
            line("b", 1, "").replace("[5000]", &nine),
            line("c", 1, "").replace("\"runs\":1", "\"runs\":-1"),
            line("d", 1, "").replace("\"pinned\":null", "\"pinned\":\"grid:fast\""),
            "{\"kernel\": 3}".to_string(),
            "7".to_string(),
            line("e", 1, ""),
        ]);
        let contents = parse(&text).unwrap();
        let kept: Vec<&str> = contents
            .table
            .records()
            .map(|r| r.key.kernel.as_str())
            .collect();
        assert_eq!(kept, ["a", "e"]);
        let dropped = &contents.dropped;
        assert_eq!(dropped.len(), 5, "{dropped:?}");
        assert!(dropped[0].starts_with("record 2 (kernel b): `auto`: more than 8 samples"));
        assert!(dropped[1].starts_with("record 3 (kernel c): invalid value: integer `-1`"));
        assert!(dropped[2].starts_with("record 4 (kernel d): `grid:fast` is not a candidate"));
        assert!(
            dropped[3].starts_with("record 5: invalid type"),
            "{}",
            dropped[3]
        );
        assert!(
            dropped[4].starts_with("record 6: invalid type"),
            "{}",
            dropped[4]
        );
        // The strict reading names them all.
        assert!(
            Table::parse(&text)
                .unwrap_err()
                .contains("record 4 (kernel d)")
        );
    }

    #[test]
    fn unknown_fields_cost_no_record_and_are_written_back() {
        let text = store(&[line("a", 1, "\"p90\":[1,2],\"note\":\"x\",")
            .replace("\"warm\":[]", "\"warm\":[],\"p90\":5")]);
        let contents = parse(&text).unwrap();
        assert!(contents.dropped.is_empty(), "{:?}", contents.dropped);
        let r = contents.table.get(&key(1).with_kernel("a")).unwrap();
        assert_eq!(r.unknown.len(), 2);
        assert_eq!(r.search.samples[0].cold, [5000]);
        // Kept across an update and a rewrite (those of a candidate's
        // samples are not).
        let mut table = contents.table;
        let mut u = Update::new(key(1).with_kernel("a"));
        u.samples = vec![(Candidate::Auto, Kind::Cold, 6000)];
        table.apply(&u);
        let back = Table::parse(&table.render()).unwrap();
        assert_eq!(back, table);
        let r = back.get(&key(1).with_kernel("a")).unwrap();
        assert_eq!(r.unknown["p90"], serde_json::json!([1, 2]));
        assert_eq!(r.unknown["note"], "x");
    }

    #[test]
    fn a_second_record_of_a_search_and_a_field_given_twice_are_left_out() {
        let text = store(&[
            line("a", 1, ""),
            line("a", 1, "").replace("[5000]", "[1]"),
            line("b", 1, "\"runs\":5,"),
            line("c", 1, "").replace("\"warm\":[]", "\"warm\":[],\"cold\":[1]"),
            line("d", 1, "").replace(
                "{\"auto\":",
                "{\"llvm\":{\"cold\":[1],\"warm\":[]},\"llvm\":{\"cold\":[2],\"warm\":[]},\"auto\":",
            ),
            line("e", 1, ""),
        ]);
        let contents = parse(&text).unwrap();
        assert_eq!(
            contents.dropped,
            [
                "record 2 (kernel a): a second record of an earlier one's search, which is kept",
                "record 3 (kernel b): `runs` given twice",
                "record 4 (kernel c): `grids.auto.cold` given twice",
                "record 5 (kernel d): `grids.llvm` given twice",
            ]
        );
        let a = contents.table.get(&key(1).with_kernel("a")).unwrap();
        assert_eq!(a.search.samples[0].cold, [5000], "the first is kept");
        assert_eq!(contents.table.len(), 2);
    }

    /// An update with more samples of a candidate than a record keeps, of
    /// two candidates, both kinds.
    fn busy_update(kernel: &str) -> Update {
        let mut u = Update::new(key(21).with_kernel(kernel));
        (u.tally.runs, u.tally.launches_per_run, u.tally.used) = (1, 30, 1_800_000_000);
        u.tally.trips = (1000, 1020);
        u.explored = [0, 9];
        u.settled = [false, true];
        for ns in 0..12 {
            u.samples.push((Candidate::Llvm, Kind::Warm, 4000 + ns));
            u.samples.push((Candidate::Auto, Kind::Warm, 5000 + ns));
        }
        u.samples.push((Candidate::Auto, Kind::Cold, 9000));
        u
    }

    #[test]
    fn a_journal_line_adds_what_its_update_adds() {
        let mut base = Table::default();
        base.apply(&busy_update("k"));
        let id = JournalId(0x0123_4567_89ab_cdef);
        let mut text = journal_header(id);
        let (a, mut b) = (busy_update("k"), busy_update("other"));
        b.pinned = Some(Candidate::Grid(Geometry::new(64, 8)));
        for u in [&a, &b] {
            let line = journal_line(u);
            assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
            text += &line;
        }
        let journal = parse_journal(text.as_bytes()).unwrap();
        assert_eq!(journal.store, Some(id));
        assert!(journal.dropped.is_empty(), "{:?}", journal.dropped);
        assert_eq!(journal.complete, text.len());
        let mut direct = base.clone();
        direct.apply(&a);
        direct.apply(&b);
        let mut contents = Contents {
            table: base.clone(),
            journal: Some(id),
            ..Contents::default()
        };
        assert!(contents.extend(journal.clone()));
        // The same records, read back the same from the store.
        assert_eq!(
            Table::parse(&contents.table.render()).unwrap(),
            Table::parse(&direct.render()).unwrap()
        );
        // Another store's journal, or any for an unpaired store: not applied.
        for other in [Some(JournalId(7)), None] {
            let mut contents = Contents {
                table: base.clone(),
                journal: other,
                ..Contents::default()
            };
            assert!(!contents.extend(journal.clone()));
            assert_eq!(contents.table, base);
        }
    }

    #[test]
    fn a_store_names_its_journal_in_its_first_line() {
        let mut table = Table::default();
        table.apply(&busy_update("k"));
        let id = JournalId(u64::MAX - 5);
        let text = table.render_paired(id);
        let first = &text[..text.find('\n').unwrap() + 1];
        assert_eq!(first.len(), PAIRED_HEADER_BYTES);
        assert_eq!(journal_of(text.as_bytes()), Some(id));
        assert_eq!(
            journal_of(&text.as_bytes()[..PAIRED_HEADER_BYTES - 1]),
            None
        );
        let contents = parse(&text).unwrap();
        assert_eq!(contents.journal, Some(id));
        assert_eq!(contents.table, Table::parse(&table.render()).unwrap());
        // Not paired: an unpaired store, one written by hand, other files.
        for text in [
            table.render(),
            text.replacen("{\"version\": 3, ", "{\"version\":3, ", 1),
            text.replacen("\"journal\": \"", "\"journal\": \"x", 1),
            "notes\n".repeat(20),
        ] {
            assert_eq!(journal_of(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn a_journal_line_that_does_not_validate_is_dropped_alone_and_a_torn_last_line_is_not_read() {
        let id = JournalId(42);
        let good = journal_line(&busy_update("a"));
        let bad = good.replace("\"runs\":1", "\"runs\":-1");
        let torn = &good[..good.len() / 2];
        let text = format!("{}{good}{bad}not json\n{good}{torn}", journal_header(id));
        let journal = parse_journal(text.as_bytes()).unwrap();
        assert_eq!(journal.updates.len(), 2);
        assert_eq!(journal.complete, text.len() - torn.len());
        assert_eq!(journal.dropped.len(), 2, "{:?}", journal.dropped);
        assert!(
            journal.dropped[0]
                .starts_with("journal line 3 (kernel a): invalid value: integer `-1`"),
            "{:?}",
            journal.dropped
        );
        assert!(journal.dropped[1].starts_with("journal line 4: "));
        // A first line cut short: a journal of no store, read as empty.
        let header = journal_header(id);
        for cut in [5, header.len() - 1] {
            let journal = parse_journal(&header.as_bytes()[..cut]).unwrap();
            assert_eq!(journal, Journal::default());
        }
        // An older journal extends no store; a newer one, or a file that is
        // no journal, is refused.
        let older = format!("{{\"gridsel_journal\": 1, \"store\": \"{id}\"}}\n{good}");
        assert_eq!(parse_journal(older.as_bytes()).unwrap().store, None);
        let newer = format!("{{\"gridsel_journal\": 4, \"store\": \"{id}\"}}\n");
        assert!(matches!(
            parse_journal(newer.as_bytes()),
            Err(StoreError::Newer(_))
        ));
        for text in [
            "notes\n",
            "notes",
            "{\"gridsel_journal\": \"2\"}\n",
            "{\"version\": 3}\n",
        ] {
            assert!(
                matches!(
                    parse_journal(text.as_bytes()),
                    Err(StoreError::NotAJournal(_))
                ),
                "{text}"
            );
        }
    }

    /// What [`parse`] reads of `only`'s kernels, as a table and the
    /// dropped entries that name them.
    fn parsed_whole(text: &str, only: &Only) -> (Table, Vec<String>) {
        let mut contents = parse(text).unwrap();
        contents.table.retain(|r| only.wants_kernel(&r.key.kernel));
        let named = |d: &String| {
            only.kernels
                .iter()
                .any(|k| d.contains(&format!("(kernel {k})")))
        };
        (
            contents.table,
            contents.dropped.into_iter().filter(named).collect(),
        )
    }

    #[test]
    fn a_reader_of_some_kernels_reads_what_a_whole_parse_reads_of_them() {
        let only = Only::kernels(["a", "c"]);
        let mut table = Table::default();
        for k in ["a", "b", "c", "d"] {
            table.apply(&busy_update(k));
        }
        let bad = line("c", 3, "").replace("\"runs\":1", "\"runs\":-1");
        let second_a = line("a", 21, "");
        for text in [
            table.render(),
            table.render_paired(JournalId(7)),
            // A bad record of a wanted kernel, a second record of a search,
            // one a line each: named as a whole parse names them.
            table
                .render()
                .replacen("\n]}", &format!(",\n{bad},\n{second_a}\n]}}"), 1),
            // Records over several lines, and on one: parsed whole.
            table.render().replace(",\"device\"", ",\n\"device\""),
            table.render().replace(",\n{", ", {"),
        ] {
            let read = parse_only(&text, &only).unwrap();
            assert_eq!(
                (read.table, read.dropped),
                parsed_whole(&text, &only),
                "{text}"
            );
        }
        let read = parse_only(&table.render(), &only).unwrap();
        let kernels: Vec<&str> = read
            .table
            .records()
            .map(|r| r.key.kernel.as_str())
            .collect();
        assert_eq!(kernels, ["a", "c"]);
        assert_eq!(read.journal, None);
        let paired = parse_only(&table.render_paired(JournalId(7)), &only).unwrap();
        assert_eq!(paired.journal, Some(JournalId(7)));
        // Another kernel's broken line is not read, so costs nothing; a
        // store that is no store, or of another version, reads as `parse`.
        let broken = table
            .render()
            .replacen("{\"kernel\":\"b\"", "{\"kernel\":\"b\" oops", 1);
        assert_eq!(parse_only(&broken, &only).unwrap().table.len(), 2);
        assert!(matches!(
            parse_only("notes\n", &only),
            Err(StoreError::NotAStore(_))
        ));
        let v2 = table
            .render()
            .replacen("\"version\": 3", "\"version\": 2", 1);
        assert!(parse_only(&v2, &only).unwrap().table.is_empty());
        assert_eq!(parse_only("", &only).unwrap(), Contents::default());
    }

    #[test]
    fn a_reader_of_some_kernels_reads_only_their_journal_lines_by_the_same_rules() {
        let only = Only::kernels(["a"]);
        let id = JournalId(42);
        let (a, b) = (
            journal_line(&busy_update("a")),
            journal_line(&busy_update("b")),
        );
        let bad = a.replace("\"runs\":1", "\"runs\":-1");
        let torn = &a[..a.len() / 2];
        let text = format!("{}{a}{b}{bad}{b}not json\n{torn}", journal_header(id));
        let journal = parse_journal_only(text.as_bytes(), &only).unwrap();
        assert_eq!(journal.store, Some(id));
        assert_eq!(journal.updates.len(), 1);
        assert_eq!(journal.updates[0].key.kernel, "a");
        assert_eq!(journal.complete, text.len() - torn.len());
        // Line numbers are the file's.
        assert!(
            journal.dropped[0].starts_with("journal line 4 (kernel a): "),
            "{:?}",
            journal.dropped
        );
        assert!(
            journal.dropped[1].starts_with("journal line 6: "),
            "{:?}",
            journal.dropped
        );
        assert_eq!(journal.dropped.len(), 2);
    }

    #[test]
    fn a_pinned_record_without_a_build_pins_every_build() {
        let mut table = Table::default();
        let mut measured = busy_update("k");
        measured.settled = [true, true];
        table.apply(&measured);
        assert_eq!(table.for_launch(&key(21)).unwrap().key.build, BUILD);
        // Unpinned without a build: another build's search, not this one's.
        let mut any = Update::new(key(21).any_build());
        any.tally.runs = 1;
        table.apply(&any);
        assert_eq!(table.for_launch(&key(21)).unwrap().key.build, BUILD);
        any.pinned = Some(Candidate::Grid(Geometry::new(64, 8)));
        table.apply(&any);
        let pinned = table.for_launch(&key(21)).unwrap();
        assert_eq!((pinned.key.build.as_str(), pinned.pinned), ("", any.pinned));
    }

    #[test]
    fn eviction_drops_the_least_recently_used() {
        let mut table = Table::default();
        for c in 1..=50 {
            let mut u = Update::new(key(c));
            u.tally.used = u64::from(c);
            u.tally.runs = 1;
            u.samples = vec![(Candidate::Auto, Kind::Warm, 1000)];
            table.apply(&u);
        }
        let size = table.render().len() as u64;
        let gone = table.evict_to(size / 2, 50);
        assert!((25..30).contains(&gone), "{gone}");
        assert!(table.render().len() as u64 <= size / 2);
        assert!(table.get(&key(50)).is_some() && table.get(&key(1)).is_none());
        assert_eq!(table.evict_to(u64::MAX, 50), 0);
    }

    /// A record stamped far in the future (`used` = 2^64-1) would outlive
    /// every record in use: it goes first, and an update gives a record in
    /// use its time back.
    #[test]
    fn a_record_used_in_the_far_future_goes_first_and_use_mends_it() {
        let now = 1_800_000_000;
        let mut table = Table::default();
        for c in 1..=10 {
            let mut u = Update::new(key(c));
            u.tally.used = now - 100 + u64::from(c);
            u.tally.runs = 1;
            u.samples = vec![(Candidate::Auto, Kind::Warm, 1000)];
            table.apply(&u);
        }
        let mut future = table.get(&key(1)).unwrap().clone();
        future.key = key(11);
        future.tally.used = u64::MAX;
        table.insert(future.clone());
        // Within the clocks' slack: a time of use like any other.
        future.key = key(12);
        future.tally.used = now + CLOCK_SLACK;
        table.insert(future);
        let size = table.render().len() as u64;
        assert_eq!(table.clone().evict_to(size - 1, now), 1);
        let mut evicted = table.clone();
        evicted.evict_to(size - 1, now);
        assert!(evicted.get(&key(11)).is_none() && evicted.get(&key(1)).is_some());
        let mut two = table.clone();
        two.evict_to(size - 100, now);
        assert!(two.get(&key(12)).is_some());
        // A process's update mends the time.
        let mut u = Update::new(key(11));
        u.tally.used = now;
        table.apply(&u);
        assert_eq!(table.get(&key(11)).unwrap().tally.used, now);
        let mut u = Update::new(key(12));
        u.tally.used = now;
        table.apply(&u);
        assert_eq!(table.get(&key(12)).unwrap().tally.used, now + CLOCK_SLACK);
    }
}
