//! cargo-fuzz's `tune_journal` target; the body is in ../targets.rs.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    targets::target("tune_journal")(data);
});
