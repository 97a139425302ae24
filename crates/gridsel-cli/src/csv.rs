//! CSV as gridsel's command lines read and write it: comma-separated
//! fields, one record per line, a field quoted (`"..."`, a quote inside
//! doubled) when it holds a comma, a quote or a line break, as RFC 4180 and
//! Python's `csv` module write it. Files with a header line are read by
//! column name ([`Reader`]), fields typed with errors that name the file,
//! the line and the column.
//!
//! Records are lines: a field holding a line break is written quoted, so
//! that other readers get it right, but the files read here (sweep results,
//! `GRIDSEL_PROFILE` rows, the harness's tables) hold none, and a record cut
//! by another process's write must stay one bad line, not swallow the next.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

/// `text` as one CSV field: quoted when it holds a comma, a quote or a line
/// break, as it is otherwise.
pub fn field(text: &str) -> Cow<'_, str> {
    if text.contains([',', '"', '\n', '\r']) {
        quoted(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// `text` as one CSV field, quoted whatever it holds: for columns that hold
/// lists or policies in some rows, so that every row of a file that is
/// compared line by line (the decision dump) reads alike.
pub fn quoted(text: &str) -> Cow<'_, str> {
    Cow::Owned(format!("\"{}\"", text.replace('"', "\"\"")))
}

/// The fields of one CSV line (without its line break), unquoted; `None`
/// for a malformed line: an unterminated quote, text after a closing quote,
/// or a quote inside an unquoted field.
pub fn split(line: &str) -> Option<Vec<Cow<'_, str>>> {
    let mut fields = Vec::new();
    let mut rest = line;
    loop {
        let (field, after) = match rest.strip_prefix('"') {
            Some(quoted) => unquote(quoted)?,
            None => {
                let end = rest.find(',').unwrap_or(rest.len());
                if rest[..end].contains('"') {
                    return None;
                }
                (Cow::Borrowed(&rest[..end]), &rest[end..])
            }
        };
        fields.push(field);
        match after.strip_prefix(',') {
            Some(next) => rest = next,
            None if after.is_empty() => return Some(fields),
            None => return None,
        }
    }
}

/// A quoted field's text (after its opening quote) and what follows its
/// closing quote.
fn unquote(quoted: &str) -> Option<(Cow<'_, str>, &str)> {
    let mut text: Option<String> = None;
    let mut start = 0;
    loop {
        let end = start + quoted[start..].find('"')?;
        let after = &quoted[end + 1..];
        if let Some(rest) = after.strip_prefix('"') {
            // A doubled quote: one quote of the text.
            text.get_or_insert_with(String::new)
                .push_str(&quoted[start..=end]);
            start = quoted.len() - rest.len();
            continue;
        }
        let field = match text {
            Some(mut owned) => {
                owned.push_str(&quoted[start..end]);
                Cow::Owned(owned)
            }
            None => Cow::Borrowed(&quoted[..end]),
        };
        return Some((field, after));
    }
}

/// A CSV file with a header line, read record by record; empty lines are
/// skipped. Errors are one line each, naming the file (`source`), the line
/// and the column.
pub struct Reader<'a> {
    source: &'a str,
    header: Vec<Cow<'a, str>>,
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
}

/// A column of a [`Reader`]'s file, found by name.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    index: usize,
    name: &'static str,
}

impl<'a> Reader<'a> {
    /// Reads the header line of `text`, the contents of `source`.
    pub fn new(source: &'a str, text: &'a str) -> Result<Self, String> {
        let mut lines = text.lines().enumerate();
        let (_, first) = lines.next().ok_or_else(|| format!("{source} is empty"))?;
        let header = split(first).ok_or_else(|| format!("{source} line 1: malformed header"))?;
        Ok(Self {
            source,
            header,
            lines,
        })
    }

    /// The column named `name`.
    pub fn column(&self, name: &'static str) -> Result<Column, String> {
        self.header
            .iter()
            .position(|h| h == name)
            .map(|index| Column { index, name })
            .ok_or_else(|| format!("{} lacks column {name}", self.source))
    }

    /// The columns named `names`, in that order.
    pub fn columns<const N: usize>(&self, names: [&'static str; N]) -> Result<[Column; N], String> {
        let mut columns = [Column { index: 0, name: "" }; N];
        for (column, name) in columns.iter_mut().zip(names) {
            *column = self.column(name)?;
        }
        Ok(columns)
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Record<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        let (i, line) = self.lines.find(|(_, l)| !l.is_empty())?;
        let line_number = i + 1;
        Some(match split(line) {
            Some(fields) => Ok(Record {
                source: self.source,
                line: line_number,
                fields,
            }),
            None => Err(format!(
                "{} line {line_number}: malformed (a quote not closed, or inside a field)",
                self.source
            )),
        })
    }
}

/// One record of a [`Reader`]'s file.
pub struct Record<'a> {
    source: &'a str,
    line: usize,
    fields: Vec<Cow<'a, str>>,
}

impl Record<'_> {
    /// The text of `column`.
    pub fn text(&self, column: Column) -> Result<&str, String> {
        self.fields
            .get(column.index)
            .map(|f| f.as_ref())
            .ok_or_else(|| self.error(column, "missing (too few fields)"))
    }

    /// `column` as a number of type `T`.
    pub fn number<T: Number>(&self, column: Column) -> Result<T, String> {
        let text = self.text(column)?;
        text.parse().map_err(|_| {
            let text = gridsel_core::text::shown(text);
            self.error(column, format_args!("`{text}` is not {}", T::WHAT))
        })
    }

    /// An error about `column` of this record.
    pub fn error(&self, column: Column, what: impl fmt::Display) -> String {
        format!("{} line {}: {} {what}", self.source, self.line, column.name)
    }

    /// An error about this record as a whole.
    pub fn record_error(&self, what: impl fmt::Display) -> String {
        format!("{} line {}: {what}", self.source, self.line)
    }
}

/// A number a CSV field holds, and how an error names what was expected.
pub trait Number: FromStr {
    /// "a whole number", "a number".
    const WHAT: &'static str;
}

macro_rules! numbers {
    ($what:literal: $($t:ty),*) => {
        $(impl Number for $t {
            const WHAT: &'static str = $what;
        })*
    };
}
numbers!("a whole number": u32, u64, usize);
numbers!("a number": f64);

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(line: &str) -> Option<Vec<String>> {
        split(line).map(|f| f.into_iter().map(Cow::into_owned).collect())
    }

    #[test]
    fn fields_are_quoted_only_when_they_must_be_and_read_back() {
        for text in ["auto", "", "fixed:64,8", "a\"b", "two\nlines", "\"", ",,"] {
            let line = format!("{},x,{}", field(text), quoted(text));
            assert_eq!(
                fields(&line),
                Some(vec![text.to_string(), "x".into(), text.into()]),
                "{line}"
            );
        }
        assert_eq!(field("auto"), "auto");
        assert_eq!(field("fixed:64,8"), "\"fixed:64,8\"");
        assert_eq!(field("a\"b"), "\"a\"\"b\"");
        assert_eq!(quoted("llvm"), "\"llvm\"");
    }

    #[test]
    fn malformed_lines_are_refused() {
        assert_eq!(
            fields("a,,b"),
            Some(vec!["a".into(), "".into(), "b".into()])
        );
        assert_eq!(fields(""), Some(vec!["".into()]));
        for bad in ["\"open,b", "\"x\"y,b", "a\"b,c", "a,\"b\"\""] {
            assert_eq!(fields(bad), None, "{bad}");
        }
    }

    #[test]
    fn records_by_column_name_with_errors_naming_line_and_column() {
        let text = "name,n,x\nfixed,1,0.5\n\n\"a,b\",7,2\nc,-1,1\nd\nbad\"line\n";
        let reader = Reader::new("t.csv", text).unwrap();
        let [name, n, x] = reader.columns(["name", "n", "x"]).unwrap();
        assert_eq!(reader.column("y").err().unwrap(), "t.csv lacks column y");
        let records: Vec<_> = reader.collect();
        let first = records[0].as_ref().unwrap();
        assert_eq!(first.text(name).unwrap(), "fixed");
        assert_eq!(first.number::<u32>(n).unwrap(), 1);
        assert_eq!(first.number::<f64>(x).unwrap(), 0.5);
        // The empty line is skipped, but counted in line numbers.
        let quoted = records[1].as_ref().unwrap();
        assert_eq!(quoted.text(name).unwrap(), "a,b");
        assert_eq!(
            records[2].as_ref().unwrap().number::<u64>(n).err().unwrap(),
            "t.csv line 5: n `-1` is not a whole number"
        );
        assert_eq!(
            records[3].as_ref().unwrap().text(x).err().unwrap(),
            "t.csv line 6: x missing (too few fields)"
        );
        assert!(
            records[4]
                .as_ref()
                .err()
                .unwrap()
                .starts_with("t.csv line 7: malformed")
        );
        assert_eq!(records.len(), 5);
        assert_eq!(Reader::new("e.csv", "").err().unwrap(), "e.csv is empty");
    }
}
