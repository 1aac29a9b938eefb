//! Reading a JSONL log: header or header-less version 0, lines of any length, a torn tail
//! cut and reported, damage before the end refused as corruption naming its line.
//!
//! The bytes are one shared buffer: every event keeps its line as a span of it (no copy per
//! line). Lines are parsed in parallel chunks on every core ([`chunks`]); the log's rules, which
//! depend on what came before (seq continuity, the surface), are then applied in line order, so
//! the first error in line order is the one reported, exactly as a line-by-line reading would.
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::event::{Buffer, Header};
use crate::log::EventLog;

mod chunks;
mod file;

use chunks::Outcome;

/// A torn last line that was cut off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// 1-based line number of the torn line.
    pub line: usize,
    /// Byte offset where the valid prefix of the file ends (where a writer must cut).
    pub offset: usize,
    /// How many bytes were cut.
    pub bytes: usize,
}

#[derive(Debug)]
pub struct Loaded {
    pub log: EventLog,
    pub torn: Option<TornTail>,
    /// Byte length of the valid prefix (the whole input unless a tail was torn).
    pub valid_len: usize,
    /// The valid prefix does not end with a newline (a writer must add one before appending).
    pub missing_newline: bool,
}

/// A line without its trailing `\r`, spaces and tabs and its leading spaces and tabs.
pub(crate) fn trim_line(raw: &[u8]) -> &[u8] {
    let mut s = raw;
    while let [rest @ .., b'\r' | b' ' | b'\t'] = s {
        s = rest;
    }
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    s
}

/// Parse a stored log, which must hold something: no bytes at all (or only blank lines) is not
/// a log — a writer always starts a file with its header — so it is refused as corrupt rather
/// than read as an empty session. (A writer opening such a file writes the header: see
/// `store::FileWriter::open`.)
pub fn read_stored(bytes: &[u8]) -> Result<Loaded> {
    read_stored_buffer(Arc::from(bytes))
}

/// [`read_stored`] of a buffer the log keeps as it is.
pub fn read_stored_buffer(buf: Buffer) -> Result<Loaded> {
    if buf.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::Corrupt {
            line: 1,
            message: "empty file: no header".into(),
        });
    }
    read_buffer(buf)
}

/// Read a stored log file into one buffer (in parallel pieces) and parse it (an empty file is
/// refused, as by [`read_stored`]).
pub fn read_file(path: &Path) -> Result<Loaded> {
    read_stored_buffer(file::read(path)?)
}

/// Parse a whole log (its bytes are copied once, into the buffer the events share).
pub fn read(bytes: &[u8]) -> Result<Loaded> {
    read_buffer(Arc::from(bytes))
}

/// Parse a whole log held in `buf`.
pub fn read_buffer(buf: Buffer) -> Result<Loaded> {
    let bytes: &[u8] = &buf;
    // a line is the last one when only whitespace follows it
    let last_text = bytes.iter().rposition(|b| !b.is_ascii_whitespace());
    let is_last = |next: usize| last_text.is_none_or(|p| p < next);
    let scanned = chunks::scan(&buf);
    let total: usize = scanned.iter().map(|c| c.lines.len()).sum();
    let mut log = EventLog::new(None);
    log.reserve(total);
    let mut first = true;
    let mut valid_len = 0usize;
    let mut torn = None;
    let mut base = 0usize;
    'chunks: for chunk in scanned {
        for item in chunk.lines {
            let line_no = base + item.line + 1;
            let torn_here = || TornTail {
                line: line_no,
                offset: item.start,
                bytes: bytes.len() - item.start,
            };
            let parsed = match item.outcome {
                Outcome::BadUtf8(_) if is_last(item.next) => {
                    torn = Some(torn_here());
                    break 'chunks;
                }
                Outcome::BadUtf8(message) => {
                    return Err(Error::Corrupt {
                        line: line_no,
                        message,
                    })
                }
                outcome => outcome,
            };
            if first {
                first = false;
                // SAFETY: a line that is not `BadUtf8` was checked to be UTF-8
                let text = unsafe { std::str::from_utf8_unchecked(&bytes[item.text..item.end]) };
                if let Some(h) = Header::parse(text).map_err(|e| e.at_line(line_no))? {
                    log.set_header(h);
                    valid_len = item.next;
                    continue;
                }
            }
            match parsed {
                Outcome::Event(p) => {
                    log.push_parsed(p).map_err(|e| e.at_line(line_no))?;
                    valid_len = item.next;
                }
                Outcome::Failed(true, _) if is_last(item.next) => {
                    torn = Some(torn_here());
                    break 'chunks;
                }
                Outcome::Failed(_, e) => return Err(e.at_line(line_no)),
                Outcome::BadUtf8(_) => unreachable!("handled above"),
            }
        }
        base += chunk.line_count;
    }
    let missing_newline = valid_len > 0 && bytes[..valid_len].last() != Some(&b'\n');
    Ok(Loaded {
        log,
        torn,
        valid_len,
        missing_newline,
    })
}
