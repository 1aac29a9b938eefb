//! Message validation on the write paths: one rule decides what `add_message` and
//! `replace_messages` record, refused input changes nothing, recorded content derives as given.
//! The checks live in `foldlog_core::fuzzing`, shared with `tests/fuzz_regressions.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| foldlog_core::fuzzing::message(data));
