//! cargo-fuzz's `tune_cache` target; the body is in ../targets.rs.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    targets::target("tune_cache")(data);
});
