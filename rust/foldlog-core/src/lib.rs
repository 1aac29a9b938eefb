//! foldlog-core: the pure-Rust heart of foldlog.
//!
//! The session log (events, reading, writing, validation), its projection into chat
//! messages, the two repair normalizers, the compaction planner and the token counters. No PyO3
//! here: the bindings live in `rust/foldlog-py` and only convert types, map errors and release
//! the GIL.
//!
//! The modules are the rooms of the pipeline a log goes through:
//!
//! ```text
//! reader → event → surface → project → wire → body
//! ```
//!
//! bytes become events, the events build the surface (what the model sees), surface events
//! project into chat messages, the send normalizer makes those what a provider accepts, and the
//! request body is their bytes. Beside the pipeline: the load normalizer ([`repair`]), the
//! compaction planner ([`plan`]) and the token counters ([`tokens`]). [`log`] is the
//! [`EventLog`] that ties the rooms together, [`store`] writes it to files, [`error`] is the one
//! error type.
// The pipeline, in its order (a comment above each module: rustfmt sorts bare `mod` lines).
// bytes → lines → events: the JSONL reader (files, shared buffers, torn tails)
pub mod reader;
// one event: its envelope, its parse, its message's shape, the write checks (`validate`)
pub mod event;
// the surface: which events the model sees, changed by surface ops (`mask` stubs among them)
pub mod surface;
// a surface event → a chat message
pub mod project;
// the send normalizer: calls paired with results, content blocks per wire style
pub mod wire;
// request bodies from cached per-message JSON
pub mod body;

// Beside the pipeline: the load normalizer (and `json_close`), the compaction planner (and its
// input from the log), the token counters.
pub mod plan;
pub mod repair;
pub mod tokens;
// a provider's reply stream: server-sent events from bytes in arbitrary pieces
pub mod sse;

// The log that ties the rooms together, its file store (and the JSONL encoding), the errors.
pub mod error;
pub mod log;
pub mod store;

/// The checks of the fuzz targets, shared with their regression test (not a public API).
#[doc(hidden)]
pub mod fuzzing;

pub use error::{Error, Result};
pub use event::{Event, Header, SurfaceOp};
pub use log::{EventLog, Message};
