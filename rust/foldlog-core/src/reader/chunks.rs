//! Parsing the lines of a buffer in parallel: the buffer is cut at line ends into chunks, one
//! task per chunk, each line checked for UTF-8 and parsed on its own.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use rayon::prelude::*;

use super::trim_line;
use crate::error::Error;
use crate::event::{Buffer, Event, Parsed};

/// Chunks this small are not worth a task of their own.
const MIN_CHUNK: usize = 256 * 1024;

/// A line that is not an event (or that may be the header): where it is and why not.
pub(super) struct Other {
    /// How many events of the chunk come before it.
    pub before: usize,
    /// 0-based line number within its chunk.
    pub line: usize,
    /// Where the line starts, and its text without the blanks around it: `text..end`.
    pub start: usize,
    pub text: usize,
    pub end: usize,
    /// Where the next line starts.
    pub next: usize,
    /// Not UTF-8 (`None`: a parse failure, in `failure`).
    pub bad_utf8: Option<String>,
    /// Not an event: whether it is broken JSON syntax, and why.
    pub failure: Option<(bool, Error)>,
}

/// The lines of one chunk: its events in order, and the lines that are not events.
pub(super) struct Chunk {
    pub events: Vec<Event>,
    /// Per event: its 0-based line number within the chunk and where the next line starts.
    pub lines: Vec<(u32, usize)>,
    /// `(event index, turn, step)` of the `turn/start` and `step/start` events.
    pub tracked: Vec<(usize, Option<u64>, Option<u64>)>,
    pub others: Vec<Other>,
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
    // about one event per 100 bytes: sized once, not grown by copies
    let guess = (to - from) / 100;
    let mut out = Chunk {
        events: Vec::with_capacity(guess),
        lines: Vec::with_capacity(guess),
        tracked: Vec::new(),
        others: Vec::new(),
        line_count: 0,
    };
    super::huge_pages(out.events.spare_capacity_mut());
    let mut line = 0usize;
    let mut start = from;
    while start < to {
        let nl = memchr::memchr(b'\n', &bytes[start..to]).map(|i| start + i);
        let end = nl.unwrap_or(to);
        let next = nl.map_or(to, |i| i + 1);
        let raw = trim_line(&bytes[start..end]);
        if !raw.is_empty() {
            let at = raw.as_ptr() as usize - bytes.as_ptr() as usize;
            let other = |bad_utf8, failure| Other {
                before: out.events.len(),
                line,
                start,
                text: at,
                end: at + raw.len(),
                next,
                bad_utf8,
                failure,
            };
            // simdutf8's check (SIMD) passes a UTF-8 line; std's check gives the error of one
            // that is not (the same error as ever)
            let utf8 = match simdutf8::basic::from_utf8(raw) {
                Ok(_) => Ok(()),
                Err(_) => std::str::from_utf8(raw).map(drop),
            };
            match utf8 {
                Err(e) => {
                    let o = other(Some(format!("invalid UTF-8: {e}")), None);
                    out.others.push(o);
                }
                Ok(()) => match Parsed::read(buf, at, raw.len()) {
                    Ok(p) => {
                        if p.turn_step != (None, None) {
                            out.tracked
                                .push((out.events.len(), p.turn_step.0, p.turn_step.1));
                        }
                        out.events.push(p.event);
                        out.lines.push((line as u32, next));
                    }
                    Err(failure) => {
                        let o = other(None, Some(failure));
                        out.others.push(o);
                    }
                },
            }
        }
        line += 1;
        start = next;
    }
    out.line_count = line;
    out
}

/// Every line of `buf`, parsed, chunk by chunk in order: each chunk is handed out as soon as it
/// and those before it are parsed, so the caller applies the log's rules (in line order, on its
/// own thread) while the pool parses the chunks after it.
pub(super) fn scan(buf: &Buffer) -> Box<dyn Iterator<Item = Chunk>> {
    let bounds = bounds(buf);
    if bounds.len() <= 1 {
        let buf = buf.clone();
        return Box::new(bounds.into_iter().map(move |b| scan_chunk(&buf, b)));
    }
    if rayon::current_thread_index().is_some() {
        // on a pool thread already (a load inside a parallel job): waiting here for tasks queued
        // behind this one could leave the pool with no thread to run them, so parse first
        let chunks: Vec<Chunk> = bounds.into_par_iter().map(|b| scan_chunk(buf, b)).collect();
        return Box::new(chunks.into_iter());
    }
    // held while the reader reads on: a chunk not yet parsed when it stopped (at an error) is
    // not parsed at all
    let reading = Arc::new(());
    let pending: Vec<_> = bounds
        .into_iter()
        .map(|b| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            let (buf, reading) = (buf.clone(), Arc::downgrade(&reading));
            // the pool takes spawned tasks first in, first out: chunks are parsed in line order
            rayon::spawn(move || {
                if reading.strong_count() > 0 {
                    let chunk = catch_unwind(AssertUnwindSafe(|| scan_chunk(&buf, b)));
                    let _ = tx.send(chunk);
                }
            });
            rx
        })
        .collect();
    Box::new(pending.into_iter().map(move |rx| {
        let _reading = &reading;
        let parsed = rx
            .recv()
            .expect("a parsing task sends its chunk (or panic)");
        parsed.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }))
}

#[cfg(test)]
mod tests {
    use crate::error::Error;

    const HEADER: &str =
        r#"{"type":"session","version":1,"id":"x","createdAt":1,"parent":null,"meta":{}}"#;

    /// A line that is not UTF-8 is named with std's error for it (offsets included), wherever
    /// the bad byte is; at the end of the file it is a torn tail.
    #[test]
    fn a_line_that_is_not_utf8_is_named_as_ever() {
        let event = |seq: u64, text: &str| {
            format!(r#"{{"type":"user/message","seq":{seq},"data":{{"content":"{text}"}}}}"#)
        };
        for at in 0..40 {
            let text = "é".repeat(at / 2) + &"a".repeat(at % 2);
            let bad = event(1, &text).into_bytes();
            let cut = bad.len() - 3; // before the closing `"}}`
            for (line, want) in [
                // a lone continuation byte, then a lead byte with no continuation
                ([&bad[..cut], b"\x80", &bad[cut..]].concat(), cut),
                ([&bad[..cut], b"\xc3(", &bad[cut..]].concat(), cut),
            ] {
                let good = event(2, "b");
                let log = [
                    HEADER.as_bytes(),
                    b"\n",
                    &line,
                    b"\n",
                    good.as_bytes(),
                    b"\n",
                ]
                .concat();
                let message = format!(
                    "invalid UTF-8: {}",
                    std::str::from_utf8(&line).expect_err("not UTF-8")
                );
                assert!(message.contains(&format!("from index {want}")), "{message}");
                match super::super::read(&log) {
                    Err(Error::Corrupt {
                        line: 2,
                        message: m,
                    }) => assert_eq!(m, message),
                    other => panic!("{other:?}"),
                }
                let torn = [HEADER.as_bytes(), b"\n", &line].concat();
                let loaded = super::super::read(&torn).expect("a torn tail is cut");
                assert_eq!(loaded.torn.map(|t| t.line), Some(2));
            }
        }
    }
}
