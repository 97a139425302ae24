//! Whether a tuning session's run did what the program does untuned: it
//! exited with status 0, and its output matches the user's `--check`
//! pattern or, without one, equals the untuned run's.
//!
//! Outputs are compared line by line after dropping gridsel's own lines
//! (`gridsel:`, which differ between policies by design) and the lines the
//! user's `--ignore` pattern matches (timings the program prints).

use regex::Regex;

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
        .map_err(|e| format!("`{text}` is not a pattern: {e}"))
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
/// differ.
fn first_difference<'a>(
    mut reference: impl Iterator<Item = &'a str>,
    mut output: impl Iterator<Item = &'a str>,
) -> Result<(), String> {
    for line in 1.. {
        match (reference.next(), output.next()) {
            (None, None) => return Ok(()),
            (a, b) if a == b => continue,
            (a, b) => {
                let show = |l: Option<&str>| l.map_or("the end".into(), |l| format!("`{l}`"));
                return Err(format!(
                    "the output differs from the untuned run's at its line {line} (lines of gridsel and those --ignore matches left out): {} instead of {}",
                    show(b),
                    show(a)
                ));
            }
        }
    }
    unreachable!("the loop returns")
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
            err.contains("line 2") && err.contains("`time 1.31 s` instead of `time 1.25 s`"),
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
