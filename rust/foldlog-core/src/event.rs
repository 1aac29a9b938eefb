//! The event envelope, the event types and the surface operations.
//!
//! An [`Event`] keeps the exact JSON line it was read from (or written as), so a valid
//! log round-trips byte for byte; the envelope fields are parsed once, `data` on demand.
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

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
];

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

/// How a surface event changes the surface (see docs/log-format.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SurfaceOp {
    /// Put this event at the end.
    Append,
    /// This event takes the place of the surface nodes `start..=end`.
    Replace { start: u64, end: u64 },
    /// This event goes right after surface node `after`.
    Insert { after: u64 },
    /// Nodes `start..=end` are removed except `keep`; this digest goes right after the kept ones.
    Fold {
        start: u64,
        end: u64,
        keep: Vec<u64>,
    },
    /// The surface becomes exactly `keep` followed by this event.
    Reset { keep: Vec<u64> },
}

impl SurfaceOp {
    pub fn from_value(v: &Value) -> Result<SurfaceOp> {
        if let Some(s) = v.as_str() {
            return match s {
                "append" => Ok(SurfaceOp::Append),
                other => Err(Error::invalid(format!("unknown surfaceOp {other:?}"))),
            };
        }
        let obj = v
            .as_object()
            .ok_or_else(|| Error::invalid("surfaceOp must be \"append\" or an object"))?;
        let op = obj
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid("surfaceOp object needs a string \"op\""))?;
        let seq = |key: &str| -> Result<u64> {
            obj.get(key).and_then(Value::as_u64).ok_or_else(|| {
                Error::invalid(format!(
                    "surfaceOp {op:?} needs a non-negative integer {key:?}"
                ))
            })
        };
        let seqs = |key: &str| -> Result<Vec<u64>> {
            match obj.get(key) {
                None => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|x| {
                        x.as_u64().ok_or_else(|| {
                            Error::invalid(format!(
                                "surfaceOp {op:?}: {key:?} must list seqs (integers)"
                            ))
                        })
                    })
                    .collect(),
                Some(_) => Err(Error::invalid(format!(
                    "surfaceOp {op:?}: {key:?} must be an array"
                ))),
            }
        };
        match op {
            "append" => Ok(SurfaceOp::Append),
            "replace" => Ok(SurfaceOp::Replace {
                start: seq("start")?,
                end: seq("end")?,
            }),
            "insert" => Ok(SurfaceOp::Insert {
                after: seq("after")?,
            }),
            "fold" => Ok(SurfaceOp::Fold {
                start: seq("start")?,
                end: seq("end")?,
                keep: seqs("keep")?,
            }),
            "reset" => Ok(SurfaceOp::Reset {
                keep: seqs("keep")?,
            }),
            other => Err(Error::invalid(format!("unknown surfaceOp {other:?}"))),
        }
    }

    pub fn to_value(&self) -> Value {
        let nums = |v: &[u64]| Value::Array(v.iter().map(|&s| Value::from(s)).collect());
        match self {
            SurfaceOp::Append => Value::from("append"),
            SurfaceOp::Replace { start, end } => {
                serde_json::json!({"op": "replace", "start": start, "end": end})
            }
            SurfaceOp::Insert { after } => serde_json::json!({"op": "insert", "after": after}),
            SurfaceOp::Fold { start, end, keep } => {
                serde_json::json!({"op": "fold", "start": start, "end": end, "keep": nums(keep)})
            }
            SurfaceOp::Reset { keep } => serde_json::json!({"op": "reset", "keep": nums(keep)}),
        }
    }

    /// True for every op but `append`: it rewrites the surface and bumps the generation.
    pub fn rewrites(&self) -> bool {
        !matches!(self, SurfaceOp::Append)
    }
}

/// One event of the log.
#[derive(Debug, Clone)]
pub struct Event {
    line: Box<str>,
    data_start: u32,
    data_end: u32,
    kind: Box<str>,
    pub seq: u64,
    pub time: i64,
    pub surface_op: Option<SurfaceOp>,
    pub sources: Option<Vec<u64>>,
    pub ignorable: bool,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    seq: Option<u64>,
    time: Option<i64>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
    #[serde(rename = "surfaceOp", borrow)]
    surface_op: Option<&'a RawValue>,
    #[serde(rename = "sourceEventSeqs")]
    sources: Option<Vec<u64>>,
    #[serde(default)]
    ignorable: bool,
}

impl Event {
    /// Parse one JSON line (without its newline).
    pub fn parse(line: &str) -> Result<Event> {
        Self::parse_line(line).map_err(|(_, e)| e)
    }

    /// Like [`Event::parse`], also telling whether the failure was broken JSON syntax (which the
    /// reader may treat as a torn tail) rather than a well-formed line that is not a valid event.
    pub fn parse_line(line: &str) -> std::result::Result<Event, (bool, Error)> {
        let env: Envelope<'_> = serde_json::from_str(line).map_err(|e| {
            let syntax = matches!(
                e.classify(),
                serde_json::error::Category::Syntax | serde_json::error::Category::Eof
            );
            (syntax, Error::invalid(format!("not a JSON event: {e}")))
        })?;
        Self::from_envelope(line, env).map_err(|e| (false, e))
    }

    fn from_envelope(line: &str, env: Envelope<'_>) -> Result<Event> {
        let kind = env.kind.into_owned();
        if !is_known_type(&kind) && !env.ignorable {
            return Err(Error::UnsupportedFormat {
                line: 0,
                message: format!(
                    "event type {kind:?} is not known to this foldlog and not marked ignorable \
                     (the log was written by a newer format)"
                ),
            });
        }
        let seq = env
            .seq
            .ok_or_else(|| Error::invalid(format!("{kind} event without a \"seq\"")))?;
        let time = env.time.unwrap_or(0);
        let data = env
            .data
            .ok_or_else(|| Error::invalid(format!("{kind} event #{seq} without \"data\"")))?;
        let start = data.get().as_ptr() as usize - line.as_ptr() as usize;
        let end = start + data.get().len();
        let surface_op = match env.surface_op.map(RawValue::get) {
            None | Some("null") => None,
            // nearly every surface event appends: skip building a Value for it
            Some("\"append\"") => Some(SurfaceOp::Append),
            Some(raw) => {
                let v: Value = serde_json::from_str(raw)
                    .map_err(|e| Error::invalid(format!("bad surfaceOp: {e}")))?;
                Some(SurfaceOp::from_value(&v)?)
            }
        };
        Ok(Event {
            line: line.into(),
            data_start: start as u32,
            data_end: end as u32,
            kind: kind.into_boxed_str(),
            seq,
            time,
            surface_op,
            sources: env.sources,
            ignorable: env.ignorable,
        })
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
        Event {
            line: line.into_boxed_str(),
            data_start: start as u32,
            data_end: end as u32,
            kind: kind.into(),
            seq,
            time,
            surface_op,
            sources,
            ignorable: false,
        }
    }

    pub fn kind(&self) -> &str {
        &self.kind
    }
    /// The exact JSON line of this event (no newline).
    pub fn line(&self) -> &str {
        &self.line
    }
    /// The raw JSON text of `data`.
    pub fn data_json(&self) -> &str {
        &self.line[self.data_start as usize..self.data_end as usize]
    }
    /// `data` parsed. Cheap enough for surface events; callers cache projections.
    pub fn data(&self) -> Value {
        serde_json::from_str(self.data_json()).unwrap_or(Value::Null)
    }
    /// `data.turn` and `data.step` without decoding the rest of `data`.
    pub fn turn_step(&self) -> (Option<u64>, Option<u64>) {
        #[derive(Deserialize)]
        struct TurnStep {
            turn: Option<u64>,
            step: Option<u64>,
        }
        match serde_json::from_str::<TurnStep>(self.data_json()) {
            Ok(t) => (t.turn, t.step),
            Err(_) => (None, None),
        }
    }

    /// The count cached in this event's envelope (`"tokens": {"<tokenizer id>": n}`), if any.
    pub fn cached_tokens(&self, tokenizer: &str) -> Option<u32> {
        self.cached_count(tokenizer).map(|(n, _)| n)
    }

    /// The count cached in the envelope and whether it is partly an estimate
    /// (`"tokensEstimated": true`: the event holds non-text content, see docs/tokens.md).
    /// Only the envelope is decoded again, with `data` (nearly all of the line) left out: a resume
    /// reads every event's count, and re-parsing whole lines cost as much as the counts saved.
    pub fn cached_count(&self, tokenizer: &str) -> Option<(u32, bool)> {
        #[derive(Deserialize)]
        struct WithTokens<'a> {
            #[serde(borrow)]
            tokens: Option<std::collections::HashMap<std::borrow::Cow<'a, str>, u32>>,
            #[serde(rename = "tokensEstimated", default)]
            estimated: bool,
        }
        let (start, end) = (self.data_start as usize, self.data_end as usize);
        let (before, after) = (&self.line[..start], &self.line[end..]);
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
        let mut v: Value = match serde_json::from_str(&self.line) {
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
        let data = obj_data_span(&line);
        if let Some((start, end)) = data {
            self.line = line.into_boxed_str();
            self.data_start = start as u32;
            self.data_end = end as u32;
        }
    }

    pub fn is_surface(&self) -> bool {
        is_surface_type(&self.kind)
    }
    /// The whole event as a JSON object (what Python's `events` shows).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.line).unwrap_or(Value::Null)
    }
}

/// The first line of a file: `{"type":"session","version":1,"id":…,"createdAt":…,"parent":null,"meta":{…}}`.
#[derive(Debug, Clone)]
pub struct Header {
    pub line: String,
    pub version: u64,
    pub id: Option<String>,
}

pub const FORMAT_VERSION: u64 = 1;

impl Header {
    pub fn new(id: &str, created_at: i64, meta: &Value) -> Header {
        let mut obj = Map::new();
        obj.insert("type".into(), Value::from("session"));
        obj.insert("version".into(), Value::from(FORMAT_VERSION));
        obj.insert("id".into(), Value::from(id));
        obj.insert("createdAt".into(), Value::from(created_at));
        obj.insert("parent".into(), Value::Null);
        obj.insert(
            "meta".into(),
            if meta.is_null() {
                Value::Object(Map::new())
            } else {
                meta.clone()
            },
        );
        Header {
            line: Value::Object(obj).to_string(),
            version: FORMAT_VERSION,
            id: Some(id.to_string()),
        }
    }

    /// `Some(header)` when the line is a session header, `None` when it is an event (version 0 file).
    pub fn parse(line: &str) -> Result<Option<Header>> {
        // cheap check first: headers are rare, events are many
        if !line.contains("\"session\"") {
            return Ok(None);
        }
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) => return Ok(None),
        };
        if v.get("type").and_then(Value::as_str) != Some("session") {
            return Ok(None);
        }
        let version = v
            .get("version")
            .and_then(Value::as_u64)
            .ok_or_else(|| Error::invalid("session header without an integer \"version\""))?;
        if version > FORMAT_VERSION {
            return Err(Error::UnsupportedFormat {
                line: 1,
                message: format!(
                    "log format version {version} is newer than this foldlog reads ({FORMAT_VERSION})"
                ),
            });
        }
        Ok(Some(Header {
            line: line.to_string(),
            version,
            id: v.get("id").and_then(Value::as_str).map(str::to_string),
        }))
    }
}

/// The byte span of the `data` value inside an event line.
fn obj_data_span(line: &str) -> Option<(usize, usize)> {
    #[derive(Deserialize)]
    struct DataOnly<'a> {
        #[serde(borrow)]
        data: &'a RawValue,
    }
    let d: DataOnly<'_> = serde_json::from_str(line).ok()?;
    let start = d.data.get().as_ptr() as usize - line.as_ptr() as usize;
    Some((start, start + d.data.get().len()))
}
