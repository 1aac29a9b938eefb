//! The compaction planner over byte-encoded histories and configs: never panics and every
//! plan keeps the documented invariants (prefix, tail, call groups, keep policy, accounting).
//! The checks live in `foldlog_core::fuzzing`, shared with `tests/fuzz_regressions.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| foldlog_core::fuzzing::planner(data));
