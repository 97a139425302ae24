//! Reading a store: what is one, and each record read alone.

use super::{JournalId, Record, RecordFile, Table, VERSION, journal_of};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;
use std::io;

/// Why a store could not be read or written.
#[derive(Debug)]
pub enum StoreError {
    /// Another process holds the lock (only when storing): try again later.
    Busy,
    /// Refused, unreadable or unwritable (the file layer's errors, a missing
    /// folder, permissions, a read-only file, a full disk, over
    /// [`MAX_BYTES`](super::MAX_BYTES)).
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
    /// ([`Journal::store`](super::Journal::store)).
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
///   [`crate::tune::search::KEEP`] samples, a candidate that is none) is dropped,
///   named in [`Contents::dropped`], and the others kept. Of two records of
///   the same search (same [`Key`](super::Key)) the first is kept and the second
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
    pub(super) fn add(&mut self, n: usize, record: Checked) {
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

/// One record of a store or line of a journal, `what` (`record 3`) in the
/// name it gets in messages: its name with the kernel's, and the record or
/// why it does not validate.
pub(super) fn read_record(what: &str, record: Checked) -> (String, Result<Record, String>) {
    let name = match record.kernel() {
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
pub(super) struct Checked {
    value: Value,
    repeated: Option<String>,
}

impl Checked {
    /// The kernel it names, when it names one.
    pub(super) fn kernel(&self) -> Option<&str> {
        self.value.get("kernel").and_then(Value::as_str)
    }
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
