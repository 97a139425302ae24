//! Reading the `GRIDSEL_PROFILE` files that `compare`'s and `tune`'s runs write
//! (`kernel,trip_count,policy,blocks,threads,ns`, see `gridsel_host::profile`).
//!
//! One file may hold the rows of several processes (a program that starts
//! others, all preloaded): each appends through its own buffer, so a row can
//! be cut by another process's write, and two processes creating the file at
//! once can both write the header. Header lines are skipped; any other line
//! that is not six well-formed fields is skipped and counted, never fatal.

use crate::csv;
use gridsel_host::profile::HEADER;
use std::borrow::Cow;

/// One launch as the profile recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileRow<'a> {
    pub kernel: Cow<'a, str>,
    pub trip_count: u64,
    pub blocks: u32,
    pub threads: u32,
    pub ns: u64,
}

/// Hands each launch of a profile's text to `each` (a profile can hold
/// millions, so they are not collected) and returns the number of malformed
/// lines. The `policy` column is checked but not kept: each run has its own
/// file, so the run says which policy was in force (the column names what
/// chose each grid, `llvm` where a policy kept LLVM's).
pub fn parse<'a>(text: &'a str, mut each: impl FnMut(ProfileRow<'a>)) -> usize {
    let mut bad_rows = 0;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line == HEADER {
            continue;
        }
        match parse_line(line) {
            Some(launch) => each(launch),
            None => bad_rows += 1,
        }
    }
    bad_rows
}

fn parse_line(line: &str) -> Option<ProfileRow<'_>> {
    let fields = csv::split(line)?;
    let [kernel, trip_count, policy, blocks, threads, ns] = <[_; 6]>::try_from(fields).ok()?;
    if kernel.is_empty() || policy.is_empty() {
        return None;
    }
    Some(ProfileRow {
        trip_count: trip_count.parse().ok()?,
        blocks: blocks.parse().ok()?,
        threads: threads.parse().ok()?,
        ns: ns.parse().ok()?,
        kernel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The launches of `text` and the number of malformed lines.
    fn collect(text: &str) -> (Vec<ProfileRow<'_>>, usize) {
        let mut launches = Vec::new();
        let bad_rows = parse(text, |l| launches.push(l));
        (launches, bad_rows)
    }

    fn launch(kernel: &str, trip_count: u64, blocks: u32, threads: u32, ns: u64) -> ProfileRow<'_> {
        ProfileRow {
            kernel: kernel.into(),
            trip_count,
            blocks,
            threads,
            ns,
        }
    }

    #[test]
    fn reads_rows_and_quoted_policies() {
        let text = format!("{HEADER}\nk,1000,auto,8,128,751189\nk,20,\"fixed:64,8\",8,64,900\r\n");
        assert_eq!(
            collect(&text),
            (
                vec![
                    launch("k", 1000, 8, 128, 751189),
                    launch("k", 20, 8, 64, 900)
                ],
                0
            )
        );
    }

    #[test]
    fn interleaved_processes_repeated_headers_and_cut_rows() {
        // Two processes appended to one file: the second's header arrived
        // after the first's rows, and a flush cut a row in two.
        let text = format!(
            "{HEADER}\na,10,llvm,1,32,100\n{HEADER}\nb,10,llvm,1,32,200\na,10,ll\nb,10,llvm,1,32,300\nvm,1,32,400\n"
        );
        let (launches, bad_rows) = collect(&text);
        assert_eq!(bad_rows, 2);
        assert_eq!(
            launches,
            vec![
                launch("a", 10, 1, 32, 100),
                launch("b", 10, 1, 32, 200),
                launch("b", 10, 1, 32, 300)
            ]
        );
    }

    #[test]
    fn malformed_rows_are_counted_not_fatal() {
        let bad = [
            "k,10,llvm,1,32",                      // five fields
            "k,10,llvm,1,32,100,7",                // seven
            "k,-1,llvm,1,32,100",                  // negative trip count
            "k,10,llvm,1,32,1e3",                  // not an integer
            ",10,llvm,1,32,100",                   // no kernel
            "k,10,,1,32,100",                      // no policy
            "k,10,\"fixed:1,2,1,32,100",           // unterminated quote
            "k,10,\"llvm\"x,1,32,100",             // text after a closing quote
            "k,10,ll\"vm,1,32,100",                // quote inside a field
            "k,10,llvm,1,32,99999999999999999999", // past u64
        ];
        let text = bad.join("\n") + "\nk,10,llvm,1,32,100\n\n";
        let (launches, bad_rows) = collect(&text);
        assert_eq!(bad_rows, bad.len());
        assert_eq!(launches, vec![launch("k", 10, 1, 32, 100)]);
    }
}
