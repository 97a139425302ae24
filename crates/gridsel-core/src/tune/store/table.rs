//! The records of a store: rendering, and eviction past the size limit.

use super::{JournalId, Key, Record, RecordFile, Update, VERSION, paired_header, parse};
use std::collections::BTreeMap;

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

    /// The file's text paired with the journal `id` names ([`journal_of`](super::journal_of)
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
pub(super) fn later_use(record: u64, update: u64) -> u64 {
    if record > update.saturating_add(CLOCK_SLACK) {
        update
    } else {
        record.max(update)
    }
}
