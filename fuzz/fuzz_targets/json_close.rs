//! The truncated-JSON closer: never panics, returns valid JSON or nothing, leaves valid
//! documents alone and closes every cut prefix of a valid document.
//! The checks live in `foldlog_core::fuzzing`, shared with `tests/fuzz_regressions.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| foldlog_core::fuzzing::json_close(data));
