//! A user's text inside gridsel's one-line messages: a value from the
//! environment or the command line may hold escape sequences, line ends or
//! a hundred kilobytes, and echoed raw it would drive the terminal, split
//! the one line into several or flood it.

/// The most characters of a value [`shown`] keeps.
pub const SHOWN_CHARS: usize = 80;

/// The most characters of a path [`shown_path`] keeps: Linux's `PATH_MAX`,
/// past which no path names a file.
pub const SHOWN_PATH_CHARS: usize = 4096;

/// `value` as a message shows it: its control characters escaped
/// ([`escaped`]) and, past [`SHOWN_CHARS`] characters, cut, with its
/// length: `abc…(120000 bytes)`.
pub fn shown(value: &str) -> String {
    cut(value, SHOWN_CHARS)
}

/// A path as a message shows it: as [`shown`], whole up to
/// [`SHOWN_PATH_CHARS`] (a path names its file only whole).
pub fn shown_path(path: &std::path::Path) -> String {
    cut(&path.to_string_lossy(), SHOWN_PATH_CHARS)
}

/// `value` escaped, and cut past `most` characters.
fn cut(value: &str, most: usize) -> String {
    match value.char_indices().nth(most) {
        Some((end, _)) => format!("{}…({} bytes)", escaped(&value[..end]), value.len()),
        None => escaped(value),
    }
}

/// `text` with each control character (line ends, tabs, escape, ...)
/// written as Rust writes it in a string (`\n`, `\u{1b}`), the rest as it is.
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_long_values_cut() {
        assert_eq!(shown("fixed:64,8"), "fixed:64,8");
        assert_eq!(shown("a\r\nb\u{1b}[31mc\td\0"), r"a\r\nb\u{1b}[31mc\td\0");
        // Any other text, backslashes and non-ASCII included, as it is.
        assert_eq!(shown(r"C:\x é"), r"C:\x é");
        let long = "é".repeat(60_000);
        let cut = shown(&long);
        assert_eq!(cut, format!("{}…(120000 bytes)", "é".repeat(SHOWN_CHARS)));
        let exact = "x".repeat(SHOWN_CHARS);
        assert_eq!(shown(&exact), exact);
        assert_eq!(escaped("\u{7f}\u{9b}"), r"\u{7f}\u{9b}");
        let path = format!("/{}/x\n", "d".repeat(200));
        assert_eq!(shown_path(path.as_ref()), path.replace('\n', r"\n"));
        let long = "/d".repeat(60_000);
        assert!(shown_path(long.as_ref()).ends_with("…(120000 bytes)"));
    }
}
