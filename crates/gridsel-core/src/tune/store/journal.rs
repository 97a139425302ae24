//! The journal: what processes added since the store was last written.

use super::{
    Checked, Contents, Only, Record, RecordFile, StoreError, Update, VERSION, read_record,
};
use serde_json::Value;
use std::fmt;

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
pub(super) fn paired_header(id: JournalId) -> String {
    format!("{{\"version\": {VERSION}, \"journal\": \"{id}\", \"records\": [\n")
}

/// How many of a store's first bytes [`journal_of`] needs.
pub const PAIRED_HEADER_BYTES: usize = 59;

/// The journal a store is paired with, from its first
/// [`PAIRED_HEADER_BYTES`] bytes, when they are the first line gridsel
/// writes ([`Table::render_paired`](super::Table::render_paired));
/// `None` for anything else (a store to read whole before anything is
/// added to it: one written by hand, by an older gridsel, or none at all).
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
    parse_journal_lines(bytes, None)
}

/// [`parse_journal`] for a reader that needs only `only`'s kernels: the
/// lines of other kernels are skipped unparsed (they are neither read nor
/// named as dropped); the first line, the torn last line and the rest
/// follow [`parse_journal`]'s rules.
pub fn parse_journal_only(bytes: &[u8], only: &Only) -> Result<Journal, StoreError> {
    parse_journal_lines(bytes, Some(only))
}

fn parse_journal_lines(bytes: &[u8], only: Option<&Only>) -> Result<Journal, StoreError> {
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
        if only.is_some_and(|only| !only.wants(line)) {
            continue;
        }
        let what = format!("journal line {}", n + 2);
        match serde_json::from_slice::<Checked>(line) {
            Err(e) => journal.dropped.push(format!("{what}: {e}")),
            Ok(record) if only.is_some_and(|only| !only.wants_record(&record)) => {}
            Ok(record) => match read_record(&what, record) {
                // A journal line is the record its update makes of none:
                // the update is what the record adds to none.
                (_, Ok(r)) => journal.updates.push(Update::between(None, &r)),
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
