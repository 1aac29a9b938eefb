//! Parsing the lines of a buffer in parallel: the buffer is cut at line ends into chunks, one
//! task per chunk, each line checked for UTF-8 and parsed on its own.
use rayon::prelude::*;

use super::trim_line;
use crate::error::Error;
use crate::event::{Buffer, Parsed};

/// Chunks this small are not worth a task of their own.
const MIN_CHUNK: usize = 256 * 1024;

/// What one line holds.
// most lines are events: boxing them would cost an allocation per line
#[allow(clippy::large_enum_variant)]
pub(super) enum Outcome {
    Event(Parsed),
    /// Not an event: whether it is broken JSON syntax, and why.
    Failed(bool, Error),
    /// Not UTF-8 (the message names where).
    BadUtf8(String),
}

/// A line that is not blank.
pub(super) struct Item {
    /// 0-based line number within its chunk.
    pub line: usize,
    /// Where the line starts, and its text without the blanks around it: `text..end`.
    pub start: usize,
    pub text: usize,
    pub end: usize,
    /// Where the next line starts.
    pub next: usize,
    pub outcome: Outcome,
}

pub(super) struct Chunk {
    pub lines: Vec<Item>,
    /// Lines in the chunk, blank ones included.
    pub line_count: usize,
}

/// Chunk boundaries: each chunk but the last ends right after a `\n`.
fn bounds(bytes: &[u8]) -> Vec<(usize, usize)> {
    let pieces = rayon::current_num_threads() * 4;
    let target = (bytes.len() / pieces.max(1)).max(MIN_CHUNK);
    let mut out = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let end = match bytes.len() - start > target {
            true => memchr::memchr(b'\n', &bytes[start + target..])
                .map_or(bytes.len(), |i| start + target + i + 1),
            false => bytes.len(),
        };
        out.push((start, end));
        start = end;
    }
    out
}

fn scan_chunk(buf: &Buffer, (from, to): (usize, usize)) -> Chunk {
    let bytes: &[u8] = buf;
    let mut lines = Vec::new();
    let mut line = 0usize;
    let mut start = from;
    while start < to {
        let nl = memchr::memchr(b'\n', &bytes[start..to]).map(|i| start + i);
        let end = nl.unwrap_or(to);
        let next = nl.map_or(to, |i| i + 1);
        let raw = trim_line(&bytes[start..end]);
        if !raw.is_empty() {
            let at = raw.as_ptr() as usize - bytes.as_ptr() as usize;
            let outcome = match std::str::from_utf8(raw) {
                Err(e) => Outcome::BadUtf8(format!("invalid UTF-8: {e}")),
                Ok(_) => match Parsed::read(buf, at, raw.len()) {
                    Ok(p) => Outcome::Event(p),
                    Err((syntax, e)) => Outcome::Failed(syntax, e),
                },
            };
            lines.push(Item {
                line,
                start,
                text: at,
                end: at + raw.len(),
                next,
                outcome,
            });
        }
        line += 1;
        start = next;
    }
    Chunk {
        lines,
        line_count: line,
    }
}

/// Every line of `buf`, parsed, chunk by chunk in order.
pub(super) fn scan(buf: &Buffer) -> Vec<Chunk> {
    let bounds = bounds(buf);
    if bounds.len() <= 1 {
        return bounds.into_iter().map(|b| scan_chunk(buf, b)).collect();
    }
    bounds.into_par_iter().map(|b| scan_chunk(buf, b)).collect()
}
