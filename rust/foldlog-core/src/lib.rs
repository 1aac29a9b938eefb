//! foldlog-core: the pure-Rust heart of foldlog.
//!
//! The session log (events, reading, writing, validation), its projection into chat
//! messages, and the two repair normalizers. No PyO3 here: the bindings live in
//! `rust/foldlog-py` and only convert types, map errors and release the GIL.
pub mod body;
pub mod error;
pub mod event;
/// The checks of the fuzz targets, shared with their regression test (not a public API).
#[doc(hidden)]
pub mod fuzzing;
pub mod json_close;
pub mod log;
pub mod mask;
pub mod plan;
pub mod plan_input;
pub mod project;
pub mod reader;
pub mod repair;
pub mod shape;
pub mod store;
pub mod surface;
pub mod wire;
pub mod writer;

pub use error::{Error, Result};
pub use event::{Event, Header, SurfaceOp};
pub use log::{EventLog, Message};
pub mod tokens;
pub mod validate;
