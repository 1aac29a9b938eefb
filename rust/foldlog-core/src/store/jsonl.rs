//! Serialising a log as JSONL: the header line, then one event per line.
use crate::event::{Event, Header};

/// Events as JSONL bytes; every line ends with `\n`.
pub fn lines(events: &[Event]) -> Vec<u8> {
    let size: usize = events.iter().map(|e| e.line().len() + 1).sum();
    let mut out = Vec::with_capacity(size);
    for e in events {
        out.extend_from_slice(e.line().as_bytes());
        out.push(b'\n');
    }
    out
}

/// A whole log file: header (when there is one) and every event.
pub fn file_bytes(header: Option<&Header>, events: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(h) = header {
        out.extend_from_slice(h.line.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(&lines(events));
    out
}
