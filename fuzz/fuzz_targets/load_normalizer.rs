//! The load normalizer (repair) on every log the reader accepts: never fails, only appends,
//! and is idempotent (a repaired log, also written and re-read, needs no repair).
//! The checks live in `foldlog_core::fuzzing`, shared with `tests/fuzz_regressions.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| foldlog_core::fuzzing::load_normalizer(data));
