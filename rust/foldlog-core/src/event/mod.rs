//! The event envelope, the event types and the surface operations.
//!
//! An [`Event`] keeps the exact JSON line it was read from (or written as), so a valid log
//! round-trips byte for byte. A log read from a file or from bytes is one shared buffer and each
//! event is a span of it (no copy per line); an event made by this process has a buffer of its
//! own. The envelope is parsed once, with the shape of a surface event's message
//! ([`crate::event::shape`]); `data` itself is decoded only when something reads it.
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::event::shape::{role_of_kind, DataSeen, Shape};

mod header;
pub mod media_ref;
mod op;
mod parse;
mod scan;
pub mod shape;
pub mod validate;

pub use header::{Header, FORMAT_VERSION};
pub use op::SurfaceOp;
pub(crate) use parse::Parsed;
pub(crate) use scan::check as check_scan;

/// Bytes shared by every event read from one file or one `bytes` object.
pub type Buffer = Arc<[u8]>;

/// Event types this version of foldlog understands.
pub const KNOWN_TYPES: &[&str] = &[
    "system/message",
    "user/message",
    "assistant/message",
    "tool/result",
    "assistant/chunk",
    "tool/call",
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "request/header",
    "compaction/start",
    "compaction/summary",
    "compaction/end",
    // the validated typed answer of a turn (`Agent.run(output_type=…)`, docs/output.md)
    "output/validated",
    // a paused turn's calls waiting for a person, and a person's answer (docs/durable-runs.md)
    "approval/request",
    "approval/answer",
    // content removed at a person's request: which events, why, when (docs/log-format.md, "Erasure")
    "log/erasure",
];

/// The event that records an erasure: `{seqs, reason, at}` (the erased events' data are
/// tombstones: their structure kept, their content replaced by [`ERASED_CONTENT`]).
pub const ERASURE: &str = "log/erasure";

/// What a tombstone holds, and so what its derived message shows, in place of erased content.
pub const ERASED_CONTENT: &str = "[erased]";

/// Envelope key: the cached counts in `tokens` include an estimate for non-text content.
pub const TOKENS_ESTIMATED: &str = "tokensEstimated";

/// Types that are nodes of the model-visible surface (and so must carry `surfaceOp`).
pub fn is_surface_type(kind: &str) -> bool {
    matches!(
        kind,
        "system/message" | "user/message" | "assistant/message" | "tool/result"
    )
}

pub fn is_known_type(kind: &str) -> bool {
    KNOWN_TYPES.contains(&kind)
}

/// An event type's index in [`KNOWN_TYPES`], or `OTHER` (an ignorable type we do not know).
const OTHER: u8 = u8::MAX;

fn kind_index(kind: &str) -> u8 {
    KNOWN_TYPES
        .iter()
        .position(|k| *k == kind)
        .map_or(OTHER, |i| i as u8)
}

/// `surfaceOp` as stored: none and append (nearly every surface event) need no allocation.
const OP_NONE: u8 = 0;
const OP_APPEND: u8 = 1;
const OP_OTHER: u8 = 2;
static APPEND: SurfaceOp = SurfaceOp::Append;

/// Flags of an event.
const IGNORABLE: u8 = 1;
/// The envelope has a `tokens` key (counts kept with the event).
const HAS_TOKENS: u8 = 2;
/// `data` is a JSON object: noted when the line is parsed (in parallel, with the line in cache),
/// so the log's rules, applied in line order, need not read the line again.
const DATA_OBJECT: u8 = 4;

/// What few events have: an unknown type's name, a rewriting surface op, `sourceEventSeqs`
/// (kept here, not in every event: 16 bytes an event, issue 31.3).
#[derive(Debug, Clone, Default)]
struct Rare {
    kind: Option<Box<str>>,
    op: Option<SurfaceOp>,
    sources: Option<Box<[u64]>>,
}

/// What not every event has, behind one pointer (8 bytes in every event rather than 16, issue
/// 31.3): a surface event's shape, the rare fields.
#[derive(Debug, Clone, Default)]
struct More {
    shape: Option<Shape>,
    rare: Option<Box<Rare>>,
}

/// One event of the log.
#[derive(Debug, Clone)]
pub struct Event {
    buf: Buffer,
    start: usize,
    len: u32,
    /// `data` as a span of the line.
    data_start: u32,
    data_end: u32,
    kind: u8,
    op: u8,
    flags: u8,
    pub seq: u64,
    more: Option<Box<More>>,
}

impl Event {
    /// Parse one JSON line (without its newline).
    pub fn parse(line: &str) -> Result<Event> {
        Self::parse_line(line).map_err(|(_, e)| e)
    }

    /// Like [`Event::parse`], also telling whether the failure was broken JSON syntax (which the
    /// reader may treat as a torn tail) rather than a well-formed line that is not a valid event.
    pub fn parse_line(line: &str) -> std::result::Result<Event, (bool, Error)> {
        let buf: Buffer = Arc::from(line.as_bytes());
        Parsed::read(&buf, 0, line.len()).map(|p| p.event)
    }

    /// Build a new event, serialising its line in the canonical key order.
    pub fn new(
        kind: &str,
        seq: u64,
        time: i64,
        data: &Value,
        surface_op: Option<SurfaceOp>,
        sources: Option<Vec<u64>>,
    ) -> Event {
        let mut line = String::with_capacity(96);
        line.push_str("{\"type\":");
        line.push_str(&serde_json::to_string(kind).expect("string serialises"));
        line.push_str(&format!(",\"seq\":{seq},\"time\":{time},\"data\":"));
        let start = line.len();
        line.push_str(&serde_json::to_string(data).expect("Value serialises"));
        let end = line.len();
        if let Some(op) = &surface_op {
            line.push_str(",\"surfaceOp\":");
            line.push_str(&op.to_value().to_string());
        }
        if let Some(src) = &sources {
            line.push_str(",\"sourceEventSeqs\":");
            line.push_str(&serde_json::to_string(src).expect("seqs serialise"));
        }
        line.push('}');
        let buf: Buffer = Arc::from(line.as_bytes());
        let mut ev = Event {
            len: buf.len() as u32,
            buf,
            start: 0,
            data_start: start as u32,
            data_end: end as u32,
            kind: kind_index(kind),
            op: OP_NONE,
            flags: u8::from(data.is_object()) * DATA_OBJECT,
            seq,
            more: None,
        };
        if ev.kind == OTHER {
            ev.rare_mut().kind = Some(kind.into());
        }
        ev.set_sources(sources);
        ev.set_op(surface_op);
        ev.reshape();
        ev
    }

    fn rare_mut(&mut self) -> &mut Rare {
        let more = self.more.get_or_insert_with(Box::default);
        more.rare.get_or_insert_with(Box::default)
    }

    fn rare(&self) -> Option<&Rare> {
        self.more.as_ref()?.rare.as_deref()
    }

    fn set_sources(&mut self, sources: Option<Vec<u64>>) {
        if let Some(s) = sources {
            self.rare_mut().sources = Some(s.into_boxed_slice());
        }
    }

    fn set_op(&mut self, op: Option<SurfaceOp>) {
        self.op = match op {
            None => OP_NONE,
            Some(SurfaceOp::Append) => OP_APPEND,
            Some(other) => {
                self.rare_mut().op = Some(other);
                OP_OTHER
            }
        };
    }

    /// Read the shape of a surface event's message from its `data` (see [`crate::event::shape`]).
    fn reshape(&mut self) {
        let Some(role) = role_of_kind(self.kind()) else {
            return;
        };
        let data = self.data_json();
        if !data.trim_start().starts_with('{') {
            return; // refused by the log's rules: a surface event's data is an object
        }
        let line = self.line();
        // sonic-rs (SIMD string scanning): on the large-message workload 4 % less CPU for the
        // whole load than serde_json, the same on small messages (docs/benchmarks.md, B1)
        let shape = match sonic_rs::from_str::<DataSeen>(data) {
            Ok(seen) => Shape::of(role, &seen, line),
            // nested past the parser's depth limit: what the projection derives from it
            Err(_) => Shape::of_projection(role, &crate::project::project(self, |_| None)),
        };
        self.more.get_or_insert_with(Box::default).shape = Some(shape);
    }

    pub fn kind(&self) -> &str {
        match KNOWN_TYPES.get(self.kind as usize) {
            Some(k) => k,
            None => self.rare().and_then(|r| r.kind.as_deref()).unwrap_or(""),
        }
    }
    /// The exact JSON line of this event (no newline).
    pub fn line(&self) -> &str {
        let bytes = &self.buf[self.start..self.start + self.len as usize];
        // SAFETY: a line is made from a `String` (`new`) or from a span checked to be UTF-8
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
    /// The raw JSON text of `data`.
    pub fn data_json(&self) -> &str {
        &self.line()[self.data_start as usize..self.data_end as usize]
    }
    /// `data` parsed.
    pub fn data(&self) -> Value {
        serde_json::from_str(self.data_json()).unwrap_or(Value::Null)
    }
    pub fn surface_op(&self) -> Option<&SurfaceOp> {
        match self.op {
            OP_NONE => None,
            OP_APPEND => Some(&APPEND),
            _ => self.rare().and_then(|r| r.op.as_ref()),
        }
    }
    pub fn sources(&self) -> Option<&[u64]> {
        self.rare()?.sources.as_deref()
    }
    pub fn ignorable(&self) -> bool {
        self.flags & IGNORABLE != 0
    }
    /// Whether `data` is a JSON object.
    pub fn data_is_object(&self) -> bool {
        self.flags & DATA_OBJECT != 0
    }
    /// The shape of a surface event's message (`None` for other events).
    pub fn shape(&self) -> Option<&Shape> {
        self.more.as_ref()?.shape.as_ref()
    }
    pub(crate) fn shape_mut(&mut self) -> Option<&mut Shape> {
        self.more.as_mut()?.shape.as_mut()
    }
    /// Whether this event's line shares its buffer with other events (a log read from a file or
    /// from bytes): rewriting the line then copies it out, and the buffer stays alive for the
    /// others — the line is held twice.
    pub fn shares_buffer(&self) -> bool {
        Arc::strong_count(&self.buf) > 1
    }
    /// The buffer this event's line is a span of, and where in it the line starts (request
    /// segments borrow their texts from it: `wire::segment`).
    pub fn line_buffer(&self) -> (&Buffer, usize) {
        (&self.buf, self.start)
    }
    /// Whether this event's line is a span of `buf` (it was read with it).
    pub fn shares(&self, buf: &Buffer) -> bool {
        Arc::ptr_eq(&self.buf, buf)
    }
    /// The buffer this event's line is a span of (its address and length: events read from one
    /// file share one).
    pub fn buffer_span(&self) -> (*const u8, usize) {
        (self.buf.as_ptr(), self.buf.len())
    }
    /// Bytes this event holds apart from its line (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Event>()
            + self.more.as_ref().map_or(0, |m| {
                // a shape's own bytes are in `More`: what it holds beyond them
                let shape = m.shape.as_ref().map_or(0, Shape::heap_bytes);
                std::mem::size_of::<More>() + shape.saturating_sub(std::mem::size_of::<Shape>())
            })
            + self.rare().map_or(0, |r| {
                std::mem::size_of::<Rare>()
                    + r.kind.as_ref().map_or(0, |k| k.len())
                    + r.sources.as_ref().map_or(0, |s| s.len() * 8)
            })
    }
    /// `data.turn` and `data.step` without decoding the rest of `data`.
    pub fn turn_step(&self) -> (Option<u64>, Option<u64>) {
        turn_step(self.data_json())
    }

    /// The count cached in this event's envelope (`"tokens": {"<tokenizer id>": n}`), if any.
    pub fn cached_tokens(&self, tokenizer: &str) -> Option<u32> {
        self.cached_count(tokenizer).map(|(n, _)| n)
    }

    /// The count cached in the envelope and whether it is partly an estimate
    /// (`"tokensEstimated": true`: the event holds non-text content, see docs/tokens.md).
    /// Only the envelope is decoded again, with `data` (nearly all of the line) left out, and
    /// only for events whose envelope was seen to hold `tokens` when it was parsed.
    pub fn cached_count(&self, tokenizer: &str) -> Option<(u32, bool)> {
        #[derive(Deserialize)]
        struct WithTokens<'a> {
            #[serde(borrow)]
            tokens: Option<std::collections::HashMap<std::borrow::Cow<'a, str>, u32>>,
            #[serde(rename = "tokensEstimated", default)]
            estimated: bool,
        }
        if self.flags & HAS_TOKENS == 0 {
            return None;
        }
        let line = self.line();
        let (start, end) = (self.data_start as usize, self.data_end as usize);
        let (before, after) = (&line[..start], &line[end..]);
        if !before.contains("\"tokens\"") && !after.contains("\"tokens\"") {
            return None;
        }
        let mut envelope = String::with_capacity(before.len() + 4 + after.len());
        envelope.push_str(before);
        envelope.push_str("null");
        envelope.push_str(after);
        let parsed: WithTokens<'_> = serde_json::from_str(&envelope).ok()?;
        let n = parsed.tokens?.get(tokenizer).copied()?;
        Some((n, parsed.estimated))
    }

    /// Record an exact count in the envelope (see [`Event::set_cached_count`]).
    pub fn set_cached_tokens(&mut self, tokenizer: &str, count: u32) {
        self.set_cached_count(tokenizer, count, false);
    }

    /// Record a count in the envelope (the event must not be persisted yet: lines on disk are
    /// never rewritten). Adds to an existing `tokens` object or creates one; `estimated` adds
    /// `"tokensEstimated": true` (the event's non-text content was estimated, which holds for
    /// every tokenizer's count of it).
    pub fn set_cached_count(&mut self, tokenizer: &str, count: u32, estimated: bool) {
        let mut v: Value = match serde_json::from_str(self.line()) {
            Ok(v) => v,
            Err(_) => return,
        };
        let Some(obj) = v.as_object_mut() else { return };
        let tokens = obj
            .entry("tokens")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(t) = tokens.as_object_mut() {
            t.insert(tokenizer.to_string(), Value::from(count));
        }
        if estimated {
            obj.insert(TOKENS_ESTIMATED.into(), Value::Bool(true));
        }
        let line = v.to_string();
        // `data` keeps its text (re-serialised from an order-preserving map); find it again
        let Some((start, end)) = parse::data_span(&line) else {
            return;
        };
        let old = self.more.as_mut().and_then(|m| m.shape.take());
        let old_line = self.line().to_string();
        self.buf = Arc::from(line.as_bytes());
        self.start = 0;
        self.len = line.len() as u32;
        self.data_start = start as u32;
        self.data_end = end as u32;
        self.flags |= HAS_TOKENS;
        // the shape's spans point into the old line: read it again from the new one
        self.reshape();
        if let (Some(new), Some(old)) = (self.shape_mut(), old.as_ref()) {
            new.keep_call_fill(old, &old_line);
        }
    }

    pub fn is_surface(&self) -> bool {
        self.kind < 4
    }
    /// The whole event as a JSON object (what Python's `events` shows).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.line()).unwrap_or(Value::Null)
    }
}

/// `data.turn` and `data.step` of a `data` text (`None` for both unless both read as numbers).
pub(crate) fn turn_step(data: &str) -> (Option<u64>, Option<u64>) {
    #[derive(Deserialize)]
    struct TurnStep {
        turn: Option<u64>,
        step: Option<u64>,
    }
    match serde_json::from_str::<TurnStep>(data) {
        Ok(t) => (t.turn, t.step),
        Err(_) => (None, None),
    }
}
