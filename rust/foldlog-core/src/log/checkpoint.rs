//! Checkpoints: the state a load computes, kept beside the log, so that opening a long session
//! costs what its tail costs rather than its length (docs/log-format.md, "Checkpoints").
//!
//! A checkpoint holds the surface, the turn and compaction tracking, the rewrite version, and the
//! lines of the events the ready log reads (the surface nodes, the calls their results name in
//! `sourceEventSeqs`, and an open turn's events), with the byte length and event count of the
//! log prefix it covers and a check of that prefix. A restored log holds those events and no
//! others of the prefix ([`super::Events`]: what it holds, and its caches by seq, take room for
//! the events held, not for the prefix's length): it is *partial*. Deriving, counting, planning,
//! building request bodies and appending read only the events it holds; anything else first
//! completes it ([`complete`]): the covered prefix is read and checked in full, then the events
//! appended since move onto it.
//!
//! The prefix check is sampled, so that it costs the same for any length: the covered length,
//! the file's identity (device and inode: a log rewritten atomically — an erasure, a repair, a
//! save over it — is a new file), a newline at the end of the prefix, and a digest of 4 KiB
//! blocks: the first, the last (the end of the last line) and 30 spread evenly between. What it
//! can miss: an edit in place (same file, same length) of bytes outside the sampled blocks. Such
//! an edit is still found when the log is completed, which compares the events held with the
//! prefix as read.
//!
//! A store whose events are rows (PostgreSQL) keeps its checkpoints too ([`encode_rows`],
//! [`restore_rows`]): the store deletes a session's checkpoint in the transaction that changes
//! rows it covers (an erasure, a deletion), and the check is the stored line of the last event
//! covered, read with the tail; completing such a log takes the prefix's bytes from the store
//! ([`complete_from`]).
use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{EventLog, Events, OpenTurn};
use crate::error::{Error, Result};
use crate::event::{Event, Header, SurfaceOp, FORMAT_VERSION};

/// The version of the checkpoint's own layout.
pub const CHECKPOINT_VERSION: u64 = 1;
/// The core that wrote a checkpoint: another version may derive differently, so its checkpoints
/// are not used.
const CORE_VERSION: &str = env!("CARGO_PKG_VERSION");
const BLOCK: u64 = 4096;
const SPREAD: u64 = 30;

/// Where a partial log's prefix is stored, and how much of it the checkpoint covered.
#[derive(Debug, Clone)]
pub struct Prefix {
    /// The log file, or `None` for rows in a store (whose caller reads them: [`complete_from`]).
    path: Option<PathBuf>,
    bytes: u64,
    events: usize,
}

/// Why a checkpoint was not used: `warn` when it does not match its log (edited, truncated,
/// rewritten, another version, corrupt); a tail that cannot be read alone (torn, invalid) is
/// left to the full load, which reports it.
#[derive(Debug)]
pub struct NotUsed {
    pub warn: bool,
    pub reason: String,
}

fn mismatch(reason: impl Into<String>) -> NotUsed {
    NotUsed {
        warn: true,
        reason: reason.into(),
    }
}

/// A 64-bit digest (multiply-rotate over 8-byte words): detects edits, not an adversary.
fn digest(seed: u64, bytes: &[u8]) -> u64 {
    let mix = |h: u64, w: u64| (h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    let mut h = mix(seed, bytes.len() as u64);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = mix(h, u64::from_le_bytes(w.try_into().expect("8 bytes")));
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    mix(h, u64::from_le_bytes(last))
}

fn read_at(file: &File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// The sampled check of `file[..len]` (see the module).
fn prefix_check(file: &File, len: u64) -> std::io::Result<u64> {
    let last = len.saturating_sub(BLOCK);
    let mut offsets: Vec<u64> = (0..=SPREAD + 1).map(|i| last * i / (SPREAD + 1)).collect();
    offsets.dedup();
    let mut h = len;
    for off in offsets {
        let block = read_at(file, off, BLOCK.min(len - off) as usize)?;
        h = digest(h ^ off, &block);
    }
    Ok(h)
}

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::storage_io(format!("checkpoint of {}: {e}", path.display()), &e)
}

/// The seqs a partial log must hold: the surface nodes, the events they name, and every event
/// from an open turn's (or an open compaction's) start on.
fn kept_seqs(log: &EventLog) -> BTreeSet<u64> {
    let mut kept: BTreeSet<u64> = BTreeSet::new();
    for &seq in log.surface.nodes() {
        kept.insert(seq);
        // a result's id and name may come from its call (the projection's rule); the sources of
        // a fold's digest, every node it folded, are not read again
        let Some(ev) = log.events.get(seq) else {
            continue; // not held: `encode` writes no checkpoint
        };
        if ev.kind() == "tool/result" {
            kept.extend(ev.sources().unwrap_or(&[]).iter().copied());
        }
    }
    let open_start = log.open_turn.and_then(|_| {
        log.events
            .iter()
            .rev()
            .find(|e| e.kind() == "turn/start")
            .map(|e| e.seq)
    });
    let from = match (open_start, log.open_compaction) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    if let Some(from) = from {
        kept.extend(from..log.next_seq());
    }
    kept
}

/// The events a checkpoint of `log` holds, as lines, and the head fields every checkpoint has;
/// `None` when the log lacks an event it would need (a partial log: the next whole load writes it).
fn head_and_body(log: &EventLog) -> Option<(serde_json::Map<String, Value>, Vec<u8>)> {
    let kept = kept_seqs(log);
    let mut body = Vec::new();
    for &seq in &kept {
        let line = log.events.get(seq)?.line();
        body.extend_from_slice(line.as_bytes());
        body.push(b'\n');
    }
    let head = json!({
        "checkpoint": CHECKPOINT_VERSION,
        "format": FORMAT_VERSION,
        "core": CORE_VERSION,
        "events": log.len(),
        "header": log.header().map(|h| h.line.clone()),
        "surface": log.surface.nodes(),
        "rewriteVersion": log.rewrite_version,
        "openTurn": log.open_turn.map(|t| json!([t.turn, t.step])),
        "lastTurn": log.last_turn,
        "openCompaction": log.open_compaction,
        "kept": kept.iter().collect::<Vec<_>>(),
        "body": digest(0, &body).to_string(),
    });
    let Value::Object(head) = head else {
        unreachable!("json! of an object")
    };
    Some((head, body))
}

fn joined(head: serde_json::Map<String, Value>, body: &[u8]) -> Vec<u8> {
    let mut out = serde_json::to_vec(&Value::Object(head)).expect("a Value serialises");
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

fn all_flushed(log: &EventLog) -> Result<()> {
    if log.flushed() != log.len() {
        return Err(Error::storage(
            "a checkpoint covers stored events only: flush first",
        ));
    }
    Ok(())
}

/// The checkpoint of `log`, stored in full at `path` (every event flushed, the file exactly
/// the log's bytes: the writer calls this right after a flush). `None` for a log with no events.
pub fn encode(log: &EventLog, path: &Path) -> Result<Option<Vec<u8>>> {
    if log.is_empty() {
        return Ok(None);
    }
    all_flushed(log)?;
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let meta = file.metadata().map_err(|e| io_err(path, e))?;
    let len = meta.len();
    // the file must end with the log's last event: anything else is not this log's bytes
    let last = log.events.last().expect("not empty").line();
    let want = format!("{last}\n");
    if len < want.len() as u64
        || read_at(&file, len - want.len() as u64, want.len()).map_err(|e| io_err(path, e))?
            != want.as_bytes()
    {
        return Err(Error::storage(format!(
            "{} does not end with the log's last event: no checkpoint written",
            path.display()
        )));
    }
    let check = prefix_check(&file, len).map_err(|e| io_err(path, e))?;
    let Some((mut head, body)) = head_and_body(log) else {
        return Ok(None);
    };
    head.insert("bytes".into(), json!(len));
    head.insert("check".into(), json!(check.to_string()));
    head.insert("dev".into(), json!(meta.dev().to_string()));
    head.insert("ino".into(), json!(meta.ino().to_string()));
    Ok(Some(joined(head, &body)))
}

/// The checkpoint of `log`, whose events are all stored as rows (a database store): checked,
/// when restored, against the stored line of its last event ([`restore_rows`]). `None` for a
/// log with no events.
pub fn encode_rows(log: &EventLog) -> Result<Option<Vec<u8>>> {
    if log.is_empty() {
        return Ok(None);
    }
    all_flushed(log)?;
    let last = log.events.last().expect("not empty").line();
    let Some((mut head, body)) = head_and_body(log) else {
        return Ok(None);
    };
    head.insert("store".into(), json!("rows"));
    head.insert("last".into(), json!(digest(1, last.as_bytes()).to_string()));
    Ok(Some(joined(head, &body)))
}

/// A log restored from a checkpoint, with its tail read.
#[derive(Debug)]
pub struct Restored {
    pub log: EventLog,
    /// Events read after the checkpoint.
    pub tail: usize,
}

fn field<'a>(head: &'a Value, key: &str) -> std::result::Result<&'a Value, NotUsed> {
    head.get(key)
        .ok_or_else(|| mismatch(format!("checkpoint lacks {key:?}")))
}

fn u64_of(head: &Value, key: &str) -> std::result::Result<u64, NotUsed> {
    let v = field(head, key)?;
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .ok_or_else(|| mismatch(format!("checkpoint field {key:?} is not a number")))
}

fn seqs_of(head: &Value, key: &str) -> std::result::Result<Vec<u64>, NotUsed> {
    field(head, key)?
        .as_array()
        .and_then(|a| a.iter().map(Value::as_u64).collect())
        .ok_or_else(|| mismatch(format!("checkpoint field {key:?} is not a list of seqs")))
}

/// The checkpoint's head and body, checked for version and corruption; `rows`: whether it must
/// be a rows checkpoint (`encode_rows`) or a file's.
fn opened(data: &[u8], rows: bool) -> std::result::Result<(Value, &[u8]), NotUsed> {
    let split = memchr::memchr(b'\n', data).ok_or_else(|| mismatch("checkpoint is cut"))?;
    let head: Value = serde_json::from_slice(&data[..split])
        .map_err(|e| mismatch(format!("checkpoint is corrupt ({e})")))?;
    let body = &data[split + 1..];
    let version = (u64_of(&head, "checkpoint")?, u64_of(&head, "format")?);
    let core = field(&head, "core")?.as_str().unwrap_or_default();
    if version != (CHECKPOINT_VERSION, FORMAT_VERSION) || core != CORE_VERSION {
        return Err(mismatch(format!(
            "checkpoint from another version (checkpoint {}, format {}, foldlog {core}; this is \
             {CHECKPOINT_VERSION}, {FORMAT_VERSION}, {CORE_VERSION})",
            version.0, version.1
        )));
    }
    if (head.get("store").and_then(Value::as_str) == Some("rows")) != rows {
        let (is, want) = if rows {
            ("file", "rows")
        } else {
            ("rows", "file")
        };
        return Err(mismatch(format!(
            "a checkpoint of a {is} log, not of {want}"
        )));
    }
    if digest(0, body) != u64_of(&head, "body")? {
        return Err(mismatch(
            "checkpoint is corrupt (its events do not match their digest)",
        ));
    }
    Ok((head, body))
}

/// Restore the log at `path` from its checkpoint `data`, then read the events after it.
pub fn restore(data: &[u8], path: &Path) -> std::result::Result<Restored, NotUsed> {
    let (head, body) = opened(data, false)?;
    let file = File::open(path).map_err(|e| mismatch(format!("cannot read the log: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| mismatch(format!("cannot read the log: {e}")))?;
    let bytes = u64_of(&head, "bytes")?;
    if (meta.dev(), meta.ino()) != (u64_of(&head, "dev")?, u64_of(&head, "ino")?) {
        return Err(mismatch(
            "the log was rewritten (a new file) since the checkpoint",
        ));
    }
    if meta.len() < bytes {
        return Err(mismatch(format!(
            "the log is shorter ({} bytes) than the checkpoint covers ({bytes})",
            meta.len()
        )));
    }
    let check = prefix_check(&file, bytes).map_err(|e| mismatch(e.to_string()))?;
    let ends_line = bytes > 0 && read_at(&file, bytes - 1, 1).is_ok_and(|b| b == b"\n");
    if check != u64_of(&head, "check")? || !ends_line {
        return Err(mismatch(
            "the log's bytes differ from those the checkpoint covers",
        ));
    }
    let mut log = build(&head, body, Some(path), bytes)?;
    let tail = read_at(&file, bytes, (meta.len() - bytes) as usize).map_err(|e| NotUsed {
        warn: false,
        reason: e.to_string(),
    })?;
    let tail = read_tail(&mut log, &tail)?;
    Ok(Restored { log, tail })
}

/// Restore a log stored as rows from its checkpoint `data` (`encode_rows`) and `stored`: the
/// stored lines from the last event the checkpoint covers on (seq `events - 1`, its check), as
/// JSONL. The tail after it is read under the log's rules.
pub fn restore_rows(data: &[u8], stored: &[u8]) -> std::result::Result<Restored, NotUsed> {
    let (head, body) = opened(data, true)?;
    let n = u64_of(&head, "events")?;
    let split = memchr::memchr(b'\n', stored).unwrap_or(stored.len());
    let first = crate::reader::trim_line(&stored[..split]);
    let last_seq = std::str::from_utf8(first)
        .ok()
        .and_then(|t| Event::parse(t).ok())
        .map(|e| e.seq);
    if n == 0 || last_seq != Some(n - 1) || digest(1, first) != u64_of(&head, "last")? {
        return Err(mismatch(
            "the stored events differ from those the checkpoint covers",
        ));
    }
    let mut log = build(&head, body, None, 0)?;
    let tail = read_tail(&mut log, stored.get(split + 1..).unwrap_or_default())?;
    Ok(Restored { log, tail })
}

/// The partial log a checkpoint describes.
fn build(
    head: &Value,
    body: &[u8],
    path: Option<&Path>,
    bytes: u64,
) -> std::result::Result<EventLog, NotUsed> {
    let header = match field(head, "header")?.as_str() {
        Some(line) => Header::parse(line).ok().flatten(),
        None => None,
    };
    let n = u64_of(head, "events")? as usize;
    let kept = seqs_of(head, "kept")?;
    let nodes = seqs_of(head, "surface")?;
    let mut log = EventLog::new(header);
    // the events held below `n`, in seq order (a result's call is held before it, for
    // `fill_from_call`); none in the places of the others
    log.events = Events::partial(n as u64);
    log.surface = crate::surface::Surface::from_base(n as u64);
    let lines = body.split(|&b| b == b'\n').filter(|l| !l.is_empty());
    let mut count = 0usize;
    for (line, &seq) in lines.zip(&kept) {
        let text = std::str::from_utf8(line).map_err(|_| mismatch("checkpoint is corrupt"))?;
        let mut ev = Event::parse(text).map_err(|e| mismatch(format!("checkpoint: {e}")))?;
        let ordered = log.events.last().is_none_or(|last| last.seq < seq);
        if ev.seq != seq || seq as usize >= n || !ordered {
            return Err(mismatch("checkpoint is corrupt (an event out of place)"));
        }
        log.fill_from_call(&mut ev);
        log.events.hold(ev);
        count += 1;
    }
    if count != kept.len() {
        return Err(mismatch("checkpoint is corrupt (events missing)"));
    }
    let held: BTreeSet<u64> = kept.into_iter().collect();
    for &node in &nodes {
        if !held.contains(&node) {
            return Err(mismatch(
                "checkpoint is corrupt (a surface node it does not hold)",
            ));
        }
        log.surface
            .apply(node, &SurfaceOp::Append, &[])
            .map_err(|e| mismatch(e.to_string()))?;
    }
    log.rewrite_version = u64_of(head, "rewriteVersion")?;
    log.last_turn = u64_of(head, "lastTurn")?;
    log.open_compaction = head.get("openCompaction").and_then(Value::as_u64);
    log.open_turn = head
        .get("openTurn")
        .and_then(Value::as_array)
        .map(|t| OpenTurn {
            turn: t.first().and_then(Value::as_u64).unwrap_or(0),
            step: t.get(1).and_then(Value::as_u64),
        });
    log.flushed = n;
    log.partial = Some(Box::new(Prefix {
        path: path.map(Path::to_path_buf),
        bytes,
        events: n,
    }));
    Ok(log)
}

/// Read the events stored after the checkpoint (`tail`) onto the partial log, under the log's
/// rules; a tail that cannot be read alone is left to the full load (`warn` false).
fn read_tail(log: &mut EventLog, tail: &[u8]) -> std::result::Result<usize, NotUsed> {
    let full = |why: String| NotUsed {
        warn: false,
        reason: why,
    };
    if !tail.is_empty() && tail.last() != Some(&b'\n') {
        return Err(full("the log's last line is incomplete".into()));
    }
    let mut count = 0;
    for raw in tail.split(|&b| b == b'\n') {
        let line = crate::reader::trim_line(raw);
        if line.is_empty() {
            continue;
        }
        let text = std::str::from_utf8(line).map_err(|e| full(e.to_string()))?;
        let ev = Event::parse(text).map_err(|e| full(e.to_string()))?;
        log.push(ev).map_err(|e| full(e.to_string()))?;
        count += 1;
    }
    log.flushed = log.len();
    Ok(count)
}

/// Whether `log` is partial (restored from a checkpoint and not completed).
pub fn is_partial(log: &EventLog) -> bool {
    log.partial.is_some()
}

/// The number of events a partial log's prefix holds when the caller must read them from its
/// store for [`complete_from`] (a rows checkpoint); `None` for a complete log or a file's.
pub fn prefix_from_store(log: &EventLog) -> Option<usize> {
    log.partial
        .as_deref()
        .filter(|p| p.path.is_none())
        .map(|p| p.events)
}

/// Read a partial log's whole prefix and make it a complete log: the events appended since the
/// checkpoint move onto the prefix as read, under the log's rules. Fails (the log unchanged)
/// when the stored prefix does not hold the events the partial log holds. A log restored from
/// rows takes its prefix from the caller: [`complete_from`].
pub fn complete(log: &mut EventLog) -> Result<()> {
    let Some(prefix) = log.partial.as_deref() else {
        return Ok(());
    };
    let Some(path) = prefix.path.as_deref() else {
        return Err(Error::storage(
            "a log restored from a store's checkpoint is completed from its store's rows",
        ));
    };
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let bytes = read_at(&file, 0, prefix.bytes as usize).map_err(|e| io_err(path, e))?;
    complete_from(log, &bytes)
}

/// Complete a partial log from `stored`: its log's header and exactly the events the
/// checkpoint covered ([`prefix_from_store`] says how many).
pub fn complete_from(log: &mut EventLog, stored: &[u8]) -> Result<()> {
    let Some(prefix) = log.partial.as_deref() else {
        return Ok(());
    };
    let loaded = crate::reader::read_stored(stored)?;
    let changed = || {
        let name = prefix
            .path
            .as_deref()
            .map_or_else(|| "the session".to_string(), |p| p.display().to_string());
        Error::storage(format!(
            "{name} changed in its store since its checkpoint was read"
        ))
    };
    let mut full = loaded.log;
    if loaded.torn.is_some() || full.len() != prefix.events {
        return Err(changed());
    }
    let held_differ = log.events.below_base().iter().any(|held| {
        full.event(held.seq)
            .is_none_or(|read| held.line() != read.line())
    });
    if held_differ {
        return Err(changed());
    }
    for ev in log.events.since(prefix.events) {
        full.push(ev.clone()).map_err(|_| changed())?;
    }
    if full.surface.nodes() != log.surface.nodes() || full.rewrite_version != log.rewrite_version {
        return Err(changed());
    }
    full.flushed = log.flushed;
    full.token_cache = log.token_cache.take();
    *log = full;
    Ok(())
}

#[cfg(test)]
mod tests;
