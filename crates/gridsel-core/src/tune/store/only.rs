//! Filtered reading: only the records of a reader's kernels.

use super::{Checked, Contents, StoreError, VERSION, journal_of, parse};
use std::collections::HashSet;

/// The kernels a reader needs (a production run: its program's kernels),
/// so that the records of every other kernel in a store of thousands are
/// skipped without being parsed ([`parse_only`],
/// [`parse_journal_only`](super::parse_journal_only)).
#[derive(Clone, Debug, Default)]
pub struct Only {
    pub(super) kernels: HashSet<String>,
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

    /// Whether a line of a store or journal may hold a wanted record, from
    /// its first bytes alone. Every record gridsel writes is one line that
    /// starts with its kernel's name (`{"kernel":"k_l7",`): those of other
    /// kernels are not. Any other line (written by hand or by another tool,
    /// `{ "kernel": "k_l7"`, or a name with a JSON escape in it) may be, and
    /// is parsed, then kept only if [`Only::wants_record`].
    pub(super) fn wants(&self, line: &[u8]) -> bool {
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

impl Only {
    /// Whether a parsed record is of a wanted kernel, or names none as a
    /// string (it does not validate, and is named as dropped as [`parse`]
    /// names it): the check behind [`Only::wants`]'s guess, so that a
    /// filtered read is [`parse`]'s cut to the wanted kernels.
    pub(super) fn wants_record(&self, record: &Checked) -> bool {
        record.kernel().is_none_or(|k| self.wants_kernel(k))
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
                    Ok(checked) if !self.only.wants_record(&checked) => {}
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
