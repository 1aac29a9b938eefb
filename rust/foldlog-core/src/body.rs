//! Request bodies built from cached per-message JSON.
//!
//! Each derived message is serialised once per [`WireStyle`] and kept (by the seq of its event:
//! a projection never changes), so a request after an append serialises only the new messages.
//! The bytes are exactly what the Python providers produce with
//! `json.dumps(body, ensure_ascii=False, separators=(",", ":"), sort_keys=True)`: the body can be
//! sent as segments (header, messages joined by commas, trailer) without joining it in Python.
use std::sync::{Arc, RwLock};

use serde_json::{Number, Value};

/// What happens to `reasoning_content` (and the Messages-API-only keys, [`MESSAGES_API_KEYS`])
/// when a message is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireStyle {
    /// Messages as derived (what `wire_messages()` holds).
    Keep,
    /// Without `reasoning_content` (OpenAI-compatible endpoints), nor the Messages API's keys.
    Strip,
    /// DeepSeek thinking mode: assistant messages with tool calls carry their
    /// `reasoning_content` (`""` when none was recorded); every other message goes without it
    /// (and without the Messages API's keys).
    WithCalls,
}

impl WireStyle {
    pub const ALL: [WireStyle; 3] = [WireStyle::Keep, WireStyle::Strip, WireStyle::WithCalls];

    pub fn id(self) -> &'static str {
        match self {
            WireStyle::Keep => "keep",
            WireStyle::Strip => "strip",
            WireStyle::WithCalls => "with-calls",
        }
    }

    pub fn from_id(id: &str) -> Option<WireStyle> {
        WireStyle::ALL.into_iter().find(|s| s.id() == id)
    }
}

/// Keys of a derived message that only the Anthropic Messages API takes (signed reasoning, a
/// failed result's flag); `Strip` and `WithCalls` leave them out.
pub const MESSAGES_API_KEYS: [&str; 2] = ["thinking_blocks", "is_error"];

/// Python's truth value of a JSON value (`if out.get("tool_calls")`).
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// One message as the style sends it, serialised (sorted keys, compact, UTF-8 unescaped).
pub fn message_json(message: &Value, style: WireStyle) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let Value::Object(obj) = message else {
        write_value(message, &mut out);
        return out;
    };
    let reasoning: Option<Value> = match style {
        WireStyle::Keep => obj.get("reasoning_content").cloned(),
        WireStyle::Strip => None,
        WireStyle::WithCalls => {
            let calls = obj.get("role").and_then(Value::as_str) == Some("assistant")
                && obj.get("tool_calls").is_some_and(truthy);
            calls.then(|| match obj.get("reasoning_content") {
                Some(Value::String(s)) => Value::String(s.clone()),
                _ => Value::String(String::new()),
            })
        }
    };
    // the keys only the Messages API reads (`thinking_blocks`, `is_error`) are no part of a chat
    // completions message: the styles for those endpoints leave them out
    let chat_only = style != WireStyle::Keep;
    let mut keys: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "reasoning_content")
        .filter(|k| !(chat_only && MESSAGES_API_KEYS.contains(k)))
        .collect();
    if reasoning.is_some() {
        keys.push("reasoning_content");
    }
    keys.sort_unstable();
    out.push(b'{');
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(k, &mut out);
        out.push(b':');
        match (*k, &reasoning) {
            ("reasoning_content", Some(r)) => write_value(r, &mut out),
            _ => write_value(&obj[*k], &mut out),
        }
    }
    out.push(b'}');
    out
}

/// A message as `style` sends it, as a value (`message_json` parsed back: one rule).
pub fn styled(message: &Value, style: WireStyle) -> Value {
    serde_json::from_slice(&message_json(message, style)).unwrap_or(Value::Null)
}

/// The bytes before and after the messages of a request body (`body`'s `"messages"` is
/// ignored): keys sorted, each `key:value` written by [`write_value`].
pub fn frame(body: &Value) -> (Vec<u8>, Vec<u8>) {
    let mut head = b"{".to_vec();
    let mut tail = b"]".to_vec();
    if let Value::Object(obj) = body {
        let mut keys: Vec<&String> = obj.keys().filter(|k| *k != "messages").collect();
        keys.sort_unstable();
        for k in keys {
            let before = k.as_str() < "messages";
            let out = if before { &mut head } else { &mut tail };
            if !before {
                out.push(b',');
            }
            write_str(k, out);
            out.push(b':');
            write_value(&obj[k.as_str()], out);
            if before {
                out.push(b',');
            }
        }
    }
    head.extend_from_slice(br#""messages":["#);
    tail.push(b'}');
    (head, tail)
}

/// Any JSON value the way Python's `json.dumps(..., ensure_ascii=False, separators=(",", ":"),
/// sort_keys=True)` writes it (keys in code point order, which is UTF-8 byte order).
pub fn write_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(x, out);
            }
            out.push(b']');
        }
        Value::Object(obj) => {
            let mut entries: Vec<(&String, &Value)> = obj.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(k, out);
                out.push(b':');
                write_value(x, out);
            }
            out.push(b'}');
        }
    }
}

fn write_number(n: &Number, out: &mut Vec<u8>) {
    if let Some(u) = n.as_u64() {
        out.extend_from_slice(u.to_string().as_bytes());
    } else if let Some(i) = n.as_i64() {
        out.extend_from_slice(i.to_string().as_bytes());
    } else if let Some(f) = n.as_f64() {
        out.extend_from_slice(py_float_repr(f).as_bytes());
    }
}

/// `repr(float)` of CPython: the shortest digits that round-trip, in fixed notation when the
/// decimal exponent is in `-4..16`, else `d.ddde±XX`.
pub fn py_float_repr(f: f64) -> String {
    // Rust's `{:e}` gives the same shortest round-trip digits, as `d.ddde<exp>`
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = digits.len() as i32;
    let decpt = exp + 1;
    let mut s = String::with_capacity(24);
    if f.is_sign_negative() {
        s.push('-');
    }
    if decpt <= -4 || decpt > 16 {
        s.push_str(&digits[..1]);
        if n > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        s.push('e');
        s.push(if e < 0 { '-' } else { '+' });
        s.push_str(&format!("{:02}", e.abs()));
    } else if decpt <= 0 {
        s.push_str("0.");
        s.extend(std::iter::repeat_n('0', (-decpt) as usize));
        s.push_str(&digits);
    } else if decpt >= n {
        s.push_str(&digits);
        s.extend(std::iter::repeat_n('0', (decpt - n) as usize));
        s.push_str(".0");
    } else {
        s.push_str(&digits[..decpt as usize]);
        s.push('.');
        s.push_str(&digits[decpt as usize..]);
    }
    s
}

/// A JSON string as Python writes it with `ensure_ascii=False`: only `"`, `\` and the control
/// characters are escaped (`\n`, `\r`, `\t`, `\b`, `\f`, else `\u00XX` in lower-case hex).
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if short.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0xf) as usize]);
        } else {
            out.extend_from_slice(short);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

pub use crate::wire::segment::Segment;

/// The serialised messages of one generation of the surface, in order: append-only, so a body
/// that holds the first `count` of them stays valid while later messages are added.
pub type SharedSegments = Arc<RwLock<Vec<Segment>>>;

/// The messages part of a request: the first `count` segments of a generation's shared list
/// (the part of the send plan that later appends cannot change; taken in O(1)), then a short
/// tail of its own (the messages since the last cut of the plan).
#[derive(Debug, Clone, Default)]
pub struct Messages {
    pub shared: SharedSegments,
    pub count: usize,
    pub tail: Arc<Vec<Segment>>,
    /// Segments sent in place of some of the others, by index, sorted (a message whose media
    /// references were resolved: the cached segment holds the references, see
    /// [`WireMessages::replacing`]); usually empty.
    pub replaced: Arc<Vec<(usize, Segment)>>,
}

impl Messages {
    /// Messages held in a list of their own.
    pub fn owned(segments: Vec<Segment>) -> Messages {
        Messages {
            tail: Arc::new(segments),
            ..Messages::default()
        }
    }
}

/// The serialised messages of one request: what a body frames with its header and trailer.
#[derive(Debug, Clone)]
pub struct WireMessages {
    pub style: WireStyle,
    pub messages: Messages,
    /// Bytes of the messages joined with commas.
    pub len: usize,
}

impl WireMessages {
    pub fn count(&self) -> usize {
        self.messages.count + self.messages.tail.len()
    }

    /// Run `f` over the segments, as the shared part and the tail (a read lock is held on the
    /// shared list meanwhile).
    fn with_segments<R>(&self, f: impl FnOnce(&[Segment], &[Segment]) -> R) -> R {
        let guard = self
            .messages
            .shared
            .read()
            .unwrap_or_else(|e| e.into_inner());
        f(&guard[..self.messages.count], &self.messages.tail)
    }

    /// Segment `i` as sent: its replacement, else the one in `shared` or in the tail.
    fn segment<'a>(&'a self, i: usize, shared: &'a [Segment], tail: &'a [Segment]) -> &'a Segment {
        let replaced = &self.messages.replaced;
        if !replaced.is_empty() {
            if let Ok(k) = replaced.binary_search_by_key(&i, |(j, _)| *j) {
                return &replaced[k].1;
            }
        }
        shared.get(i).unwrap_or_else(|| &tail[i - shared.len()])
    }

    /// These messages with segment `i` sent as `segment` for each `(i, segment)` of `with` (a
    /// later one for the same `i` wins); the others stay shared, so the cost is that of `with`,
    /// not of the history. `None` when an index is out of range.
    pub fn replacing(&self, with: Vec<(usize, Segment)>) -> Option<WireMessages> {
        let count = self.count();
        if with.iter().any(|(i, _)| *i >= count) {
            return None;
        }
        let mut merged: std::collections::BTreeMap<usize, Segment> =
            self.messages.replaced.iter().cloned().collect();
        let mut len = self.len;
        self.with_segments(|shared, tail| {
            for (i, segment) in with {
                let before = merged.get(&i).map_or_else(
                    || {
                        shared
                            .get(i)
                            .unwrap_or_else(|| &tail[i - shared.len()])
                            .len()
                    },
                    Segment::len,
                );
                len = len + segment.len() - before;
                merged.insert(i, segment);
            }
        });
        Some(WireMessages {
            style: self.style,
            messages: Messages {
                replaced: Arc::new(merged.into_iter().collect()),
                ..self.messages.clone()
            },
            len,
        })
    }
}

/// A whole request body: `head` + the messages joined with commas + `tail`.
#[derive(Debug, Clone)]
pub struct WireBody {
    pub head: Arc<[u8]>,
    pub messages: WireMessages,
    pub tail: Arc<[u8]>,
}

impl WireBody {
    pub fn new(head: &[u8], messages: WireMessages, tail: &[u8]) -> WireBody {
        WireBody {
            head: head.into(),
            messages,
            tail: tail.into(),
        }
    }

    /// Length in bytes (the `Content-Length`).
    pub fn len(&self) -> usize {
        self.head.len() + self.messages.len + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body in one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        let mut cursor = BodyCursor::default();
        while self.fill(&mut cursor, usize::MAX, &mut out) {}
        out
    }

    /// Append up to `max` further bytes from `cursor` to `out`; false once the body is done.
    pub fn fill(&self, cursor: &mut BodyCursor, max: usize, out: &mut Vec<u8>) -> bool {
        if cursor.pos >= self.len() {
            return false;
        }
        let mut room = max;
        let take = |src: &[u8], from: usize, room: &mut usize, out: &mut Vec<u8>| -> usize {
            let n = (src.len() - from).min(*room);
            out.extend_from_slice(&src[from..from + n]);
            *room -= n;
            n
        };
        // the cursor's place: in the head, in segment `seg` at `off` (a comma before every
        // segment but the first counts as its first byte), or in the tail
        let head_len = self.head.len();
        if cursor.pos < head_len {
            cursor.pos += take(&self.head, cursor.pos, &mut room, out);
        }
        let msgs_end = head_len + self.messages.len;
        if room > 0 && cursor.pos >= head_len && cursor.pos < msgs_end {
            self.messages.with_segments(|shared, tail| {
                let total = shared.len() + tail.len();
                while room > 0 && cursor.seg < total {
                    let comma = usize::from(cursor.seg > 0);
                    if cursor.off < comma {
                        out.push(b',');
                        room -= 1;
                        cursor.off += 1;
                        cursor.pos += 1;
                        continue;
                    }
                    let seg = self.messages.segment(cursor.seg, shared, tail);
                    let n = (seg.len() - (cursor.off - comma)).min(room);
                    seg.copy_range(cursor.off - comma, n, out);
                    room -= n;
                    cursor.off += n;
                    cursor.pos += n;
                    if cursor.off - comma == seg.len() {
                        cursor.seg += 1;
                        cursor.off = 0;
                    }
                }
            });
        }
        if room > 0 && cursor.pos >= msgs_end {
            cursor.pos += take(&self.tail, cursor.pos - msgs_end, &mut room, out);
        }
        true
    }
}

/// Where a reader of a [`WireBody`] is.
#[derive(Debug, Clone, Copy, Default)]
pub struct BodyCursor {
    pos: usize,
    seg: usize,
    off: usize,
}

/// Bytes of `segments` joined with commas.
pub fn joined_len(segments: &[Segment]) -> usize {
    segments.iter().map(|s| s.len()).sum::<usize>() + segments.len().saturating_sub(1)
}
