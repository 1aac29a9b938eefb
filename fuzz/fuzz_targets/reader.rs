//! Arbitrary bytes through the JSONL reader: never panics, damage comes back as an error,
//! a loaded log is consistent with its valid prefix and reads back after serialising.
//! The checks live in `foldlog_core::fuzzing`, shared with `tests/fuzz_regressions.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| foldlog_core::fuzzing::reader(data));
