//! Reading a JSONL log: header or header-less version 0, lines of any length, a torn tail
//! cut and reported, damage before the end refused as corruption naming its line.
use crate::error::{Error, Result};
use crate::event::{Event, Header};
use crate::log::EventLog;

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

fn trim_line(raw: &[u8]) -> &[u8] {
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
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::Corrupt {
            line: 1,
            message: "empty file: no header".into(),
        });
    }
    read(bytes)
}

/// Parse a whole log.
pub fn read(bytes: &[u8]) -> Result<Loaded> {
    let mut log = EventLog::new(None);
    let mut line_no = 0usize;
    let mut start = 0usize;
    let mut first = true;
    let mut valid_len = 0usize;
    let mut torn = None;
    while start < bytes.len() {
        let nl = memchr::memchr(b'\n', &bytes[start..]).map(|i| start + i);
        let end = nl.unwrap_or(bytes.len());
        let next = nl.map_or(bytes.len(), |i| i + 1);
        line_no += 1;
        let raw = trim_line(&bytes[start..end]);
        if raw.is_empty() {
            start = next;
            continue;
        }
        let is_last = bytes[next..].iter().all(|b| b.is_ascii_whitespace());
        let text = match std::str::from_utf8(raw) {
            Ok(t) => Some(t),
            Err(_) if is_last => None,
            Err(e) => {
                return Err(Error::Corrupt {
                    line: line_no,
                    message: format!("invalid UTF-8: {e}"),
                });
            }
        };
        let Some(text) = text else {
            torn = Some(TornTail {
                line: line_no,
                offset: start,
                bytes: bytes.len() - start,
            });
            break;
        };
        if first {
            first = false;
            if let Some(h) = Header::parse(text).map_err(|e| e.at_line(line_no))? {
                log.set_header(h);
                valid_len = next;
                start = next;
                continue;
            }
        }
        match Event::parse_line(text) {
            Ok(ev) => {
                log.push(ev).map_err(|e| e.at_line(line_no))?;
                valid_len = next;
            }
            Err((true, _)) if is_last => {
                torn = Some(TornTail {
                    line: line_no,
                    offset: start,
                    bytes: bytes.len() - start,
                });
                break;
            }
            Err((_, e)) => return Err(e.at_line(line_no)),
        }
        start = next;
    }
    let missing_newline = valid_len > 0 && bytes[..valid_len].last() != Some(&b'\n');
    Ok(Loaded {
        log,
        torn,
        valid_len,
        missing_newline,
    })
}
