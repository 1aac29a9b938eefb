//! Reading a JSONL log: header or header-less version 0, lines of any length, a torn tail
//! cut and reported, damage before the end refused as corruption naming its line.
//!
//! A torn tail is only ever an incomplete last line after a valid first line (the header, or a
//! version-0 event): a file whose first line is neither is not a log and is refused whole
//! (`Error::NotALog`), so no writer cuts a byte of it (a note, a binary, a lone torn line, a
//! header behind a byte order mark).
//!
//! The bytes are one shared buffer: every event keeps its line as a span of it (no copy per
//! line). Lines are parsed in parallel chunks on every core ([`chunks`]); the log's rules, which
//! depend on what came before (seq continuity, the surface), are applied in line order on the
//! caller's thread, chunk by chunk as each is parsed (while the pool parses the next ones), so
//! the first error in line order is the one reported, exactly as a line-by-line reading would.
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::event::{Buffer, Header, Parsed};
use crate::log::EventLog;

mod chunks;
mod file;

pub(crate) use file::huge_pages;

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

/// What a file's first line, neither a header nor an event, holds instead.
fn not_a_log(bytes: &[u8], o: &chunks::Other, line: usize) -> Error {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    const SHOWN: usize = 60;
    let text = &bytes[o.text..o.end];
    let found = if text.starts_with(BOM) {
        "starts with a UTF-8 byte order mark (bytes EF BB BF), which a foldlog log never has: \
         remove those 3 bytes to read it"
            .to_string()
    } else if let Some(why) = &o.bad_utf8 {
        format!("is not UTF-8 text ({why})")
    } else {
        let shown: String = String::from_utf8_lossy(text).chars().take(SHOWN).collect();
        let more = if shown.len() < text.len() { "…" } else { "" };
        let why = o
            .failure
            .as_ref()
            .map_or_else(|| "not an event".to_string(), |(_, e)| e.to_string());
        format!(
            "is not a foldlog header or event: {shown:?}{more} ({why}); a transcript of another \
             tool is read by `foldlog log import`"
        )
    };
    Error::NotALog {
        line,
        message: format!("line {line} {found}"),
    }
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
    let mut log = EventLog::new(None);
    let mut valid_len = 0usize;
    let mut torn = None;
    let mut base = 0usize;
    // the first line that is not blank may be the header
    let mut first = true;
    'chunks: for chunk in chunks::scan(&buf) {
        let mut more = chunk.events.len();
        if log.is_empty() && more > 0 {
            // room for the events of the chunks still being parsed too, guessed from the first
            // chunk that holds some (lines of one log are much alike), so the log's vector grows
            // by copies rarely if ever (a log of one chunk gets exactly its events' room)
            let through = chunk.lines.last().map_or(bytes.len(), |l| l.1).max(1) as u128;
            let after = bytes.len() as u128 - through.min(bytes.len() as u128);
            let rest = (more as u128 * after / through) as usize;
            more += rest + rest / 16;
        }
        log.reserve(more);
        let mut others = chunk.others.into_iter().peekable();
        let mut tracked = chunk.tracked.into_iter().peekable();
        let count = chunk.events.len();
        let mut events = chunk.events.into_iter();
        for i in 0..=count {
            // the lines that are not events, before event i
            while let Some(o) = others.next_if(|o| o.before == i) {
                let line_no = base + o.line + 1;
                if std::mem::take(&mut first) {
                    // SAFETY: a line with no UTF-8 error was checked to be UTF-8
                    let text = (o.bad_utf8.is_none())
                        .then(|| unsafe { std::str::from_utf8_unchecked(&bytes[o.text..o.end]) });
                    if let Some(h) = text
                        .map(Header::parse)
                        .transpose()
                        .map_err(|e| e.at_line(line_no))?
                        .flatten()
                    {
                        log.set_header(h);
                        valid_len = o.next;
                        continue;
                    }
                    // neither a header nor an event: nothing proves this file is a log, so
                    // nothing of it is a torn tail to cut (a lone torn line included)
                    return Err(not_a_log(bytes, &o, line_no));
                }
                let syntax = o.failure.as_ref().is_none_or(|f| f.0);
                if syntax && is_last(o.next) {
                    torn = Some(TornTail {
                        line: line_no,
                        offset: o.start,
                        bytes: bytes.len() - o.start,
                    });
                    break 'chunks;
                }
                return Err(match (o.bad_utf8, o.failure) {
                    (Some(message), _) => Error::Corrupt {
                        line: line_no,
                        message,
                    },
                    (None, Some((_, e))) => e.at_line(line_no),
                    (None, None) => unreachable!("a line that is not an event says why"),
                });
            }
            let Some(event) = events.next() else { break };
            let (line, next) = chunk.lines[i];
            let line_no = base + line as usize + 1;
            if std::mem::take(&mut first) {
                if let Some(h) = Header::parse(event.line()).map_err(|e| e.at_line(line_no))? {
                    log.set_header(h);
                    valid_len = next;
                    continue;
                }
            }
            let turn_step = match tracked.next_if(|t| t.0 == i) {
                Some((_, turn, step)) => (turn, step),
                None => (None, None),
            };
            log.push_parsed(Parsed { event, turn_step })
                .map_err(|e| e.at_line(line_no))?;
            valid_len = next;
        }
        base += chunk.line_count;
    }
    let missing_newline = valid_len > 0 && bytes[..valid_len].last() != Some(&b'\n');
    log.loaded();
    Ok(Loaded {
        log,
        torn,
        valid_len,
        missing_newline,
    })
}
