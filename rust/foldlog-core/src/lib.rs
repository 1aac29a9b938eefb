//! foldlog-core: the pure-Rust heart of foldlog.
//!
//! The session log (events, reading, writing, validation), its projection into chat
//! messages, and the two repair normalizers. No PyO3 here: the bindings live in
//! `rust/foldlog-py` and only convert types, map errors and release the GIL.
pub mod plan;
