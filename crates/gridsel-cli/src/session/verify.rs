//! Whether a tuning session's run did what the program does untuned: it
//! exited with status 0, and its output matches the user's `--check`
//! pattern or, without one, equals the untuned run's.
//!
//! Outputs are compared line by line after dropping gridsel's own lines
//! (`gridsel:`, which differ between policies by design) and the lines the
//! user's `--ignore` pattern matches (timings the program prints).

use gridsel_core::text::{escaped, shown};
use regex::Regex;

/// The most characters of a differing line a message shows: a window
/// around the first difference ([`around`]), so that a 10 MB line does not
/// reach the terminal and the report whole.
const SHOWN_LINE_CHARS: usize = 200;

/// How a run's output is checked.
pub enum Check {
    /// The user's `--check`: it must match somewhere in the output (`^`
    /// and `$` match at line ends).
    Pattern(Regex),
    /// Equal to the untuned run's output, but for the lines `ignore`
    /// matches.
    SameOutput { ignore: Option<Regex> },
}

/// `text` as a multi-line pattern, or why it is not one.
pub fn pattern(text: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(text)
        .multi_line(true)
        .build()
        .map_err(|e| format!("`{}` is not a pattern: {e}", shown(text)))
}

impl Check {
    /// Checks `output` against `reference`, the untuned run's output; the
    /// reason when it fails, in a line.
    pub fn verify(&self, output: &str, reference: &str) -> Result<(), String> {
        match self {
            Self::Pattern(pattern) if pattern.is_match(output) => Ok(()),
            Self::Pattern(pattern) => Err(format!(
                "the output does not match --check `{}`",
                pattern.as_str()
            )),
            Self::SameOutput { ignore } => {
                let ignore = ignore.as_ref();
                first_difference(kept_lines(reference, ignore), kept_lines(output, ignore))
            }
        }
    }
}

/// The program's lines of `text`: not gridsel's, not matched by `ignore`.
fn kept_lines<'a>(text: &'a str, ignore: Option<&'a Regex>) -> impl Iterator<Item = &'a str> {
    text.lines()
        .filter(|line| !line.starts_with("gridsel:"))
        .filter(move |line| !ignore.is_some_and(|i| i.is_match(line)))
}

/// `Ok` when the two sequences of lines are equal, else where they first
/// differ: the line, the column (in characters, from 1) and the two lines
/// around it ([`around`]).
fn first_difference<'a>(
    mut reference: impl Iterator<Item = &'a str>,
    mut output: impl Iterator<Item = &'a str>,
) -> Result<(), String> {
    for line in 1.. {
        match (reference.next(), output.next()) {
            (None, None) => return Ok(()),
            (a, b) if a == b => continue,
            (a, b) => {
                let column = match (a, b) {
                    (Some(a), Some(b)) => {
                        let same = a.chars().zip(b.chars()).take_while(|(x, y)| x == y);
                        Some(same.count())
                    }
                    _ => None,
                };
                let show = |l: Option<&str>| {
                    l.map_or("the end".into(), |l| {
                        format!("`{}`", around(l, column.unwrap_or(0)))
                    })
                };
                let at = column.map_or(String::new(), |c| format!(", column {}", c + 1));
                return Err(format!(
                    "the output differs from the untuned run's at its line {line}{at} (lines of gridsel and those --ignore matches left out): {} instead of {}",
                    show(b),
                    show(a)
                ));
            }
        }
    }
    unreachable!("the loop returns")
}

/// `line` as a message shows it: whole up to [`SHOWN_LINE_CHARS`]
/// characters, else that many around the character `at` (`…` where cut),
/// its control characters escaped.
fn around(line: &str, at: usize) -> String {
    let count = line.chars().count();
    if count <= SHOWN_LINE_CHARS {
        return escaped(line);
    }
    let start = at
        .saturating_sub(SHOWN_LINE_CHARS / 2)
        .min(count - SHOWN_LINE_CHARS);
    let end = start + SHOWN_LINE_CHARS;
    let window: String = line.chars().skip(start).take(SHOWN_LINE_CHARS).collect();
    let before = if start > 0 { "…" } else { "" };
    let after = if end < count { "…" } else { "" };
    format!("{before}{}{after}", escaped(&window))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFERENCE: &str = "result 42\ntime 1.25 s\ngridsel: info: auto\n";

    #[test]
    fn equal_outputs_pass_but_for_gridsels_lines_and_ignored_ones() {
        let same = Check::SameOutput { ignore: None };
        assert_eq!(same.verify("result 42\ntime 1.25 s\n", REFERENCE), Ok(()));
        let err = same
            .verify("result 42\ntime 1.31 s\n", REFERENCE)
            .unwrap_err();
        assert!(
            err.contains("line 2, column 8")
                && err.contains("`time 1.31 s` instead of `time 1.25 s`"),
            "{err}"
        );
        let ignoring = Check::SameOutput {
            ignore: Some(pattern("^time ").unwrap()),
        };
        assert_eq!(
            ignoring.verify("result 42\ntime 1.31 s\n", REFERENCE),
            Ok(())
        );
        let err = ignoring.verify("result 43\n", REFERENCE).unwrap_err();
        assert!(err.contains("`result 43` instead of `result 42`"), "{err}");
        let err = ignoring.verify("", REFERENCE).unwrap_err();
        assert!(err.contains("the end instead of `result 42`"), "{err}");
        let err = ignoring.verify("result 42\nmore\n", REFERENCE).unwrap_err();
        assert!(err.contains("`more` instead of the end"), "{err}");
    }

    #[test]
    fn a_long_differing_line_is_cut_around_its_first_difference() {
        let same = Check::SameOutput { ignore: None };
        let reference = format!("ok\n{}A{}\n", "x".repeat(5_000_000), "y".repeat(5_000_000));
        let output = format!("ok\n{}B{}\n", "x".repeat(5_000_000), "y".repeat(5_000_000));
        let err = same.verify(&output, &reference).unwrap_err();
        assert!(err.len() < 700, "{} bytes", err.len());
        let window = |c: char| format!("`…{}{c}{}…`", "x".repeat(100), "y".repeat(99));
        assert!(
            err.contains("at its line 2, column 5000001 ")
                && err.contains(&format!("{} instead of {}", window('B'), window('A'))),
            "{err}"
        );
        // Near either end the window keeps its width; control characters
        // are escaped.
        let long = format!("\u{1b}{}", "z".repeat(300));
        assert_eq!(around(&long, 0), format!(r"\u{{1b}}{}…", "z".repeat(199)));
        assert_eq!(around(&long, 300), format!("…{}", "z".repeat(200)));
        // A line ending early differs at the column past its end.
        let err = same.verify("abc\n", "abcd\n").unwrap_err();
        assert!(err.contains("line 1, column 4 "), "{err}");
        assert!(
            pattern("(\n")
                .unwrap_err()
                .starts_with(r"`(\n` is not a pattern")
        );
    }

    #[test]
    fn a_check_pattern_matches_at_line_ends() {
        let check = Check::Pattern(pattern("^check=pass$").unwrap());
        assert_eq!(check.verify("x\ncheck=pass\ny", "anything"), Ok(()));
        let err = check.verify("check=passed\n", "").unwrap_err();
        assert!(
            err.contains("does not match --check `^check=pass$`"),
            "{err}"
        );
        assert!(pattern("(").unwrap_err().contains("`(` is not a pattern"));
    }
}
