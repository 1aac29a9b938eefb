//! Parsing an event line: the envelope and, for a surface event, the shape of its message.
//!
//! The envelope's rules are those of one `serde` struct ([`Envelope`]): `type` required, `seq`
//! and `time` integers or null, `data`, `surfaceOp` and `sourceEventSeqs` optional, `ignorable` a
//! boolean, unknown keys skipped, each known key at most once. The fast path reads an object's
//! keys one by one with the same value types and the same rules, and also notes whether the
//! envelope holds `tokens`; anything it does not take (an error, a line that is not an object)
//! goes through the struct itself, so every error, and its classification as broken syntax, is
//! exactly the struct's.
use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{
    kind_index, turn_step, Buffer, Event, SurfaceOp, DATA_OBJECT, HAS_TOKENS, IGNORABLE, OTHER,
};
use crate::error::{Error, Result};
use crate::event::is_known_type;
use crate::event::shape::Text;

/// The envelope as one struct: the reference reading of a line.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    seq: Option<u64>,
    #[allow(dead_code)] // checked (an integer or null), not kept
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

/// What an envelope holds, from any reading (`data` and `surfaceOp` as their raw JSON texts).
#[derive(Debug, PartialEq)]
pub(super) struct Read<'a> {
    pub kind: Cow<'a, str>,
    pub seq: Option<u64>,
    pub data: Option<&'a str>,
    pub surface_op: Option<&'a str>,
    pub sources: Option<Vec<u64>>,
    pub ignorable: bool,
    /// Conservative: true unless the envelope is known to have no `tokens` key.
    pub tokens: bool,
}

impl<'a> From<Envelope<'a>> for Read<'a> {
    fn from(d: Envelope<'a>) -> Self {
        Read {
            kind: d.kind,
            seq: d.seq,
            data: d.data.map(RawValue::get),
            surface_op: d.surface_op.map(RawValue::get),
            sources: d.sources,
            ignorable: d.ignorable,
            tokens: true,
        }
    }
}

/// The fast reading: an object only, the struct's rules key by key.
struct Fast<'a>(Read<'a>);

impl<'de> Deserialize<'de> for Fast<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fast<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an event object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Fast<'de>, A::Error> {
                let mut kind: Option<Cow<'de, str>> = None;
                let (mut seq, mut time): (Option<Option<u64>>, Option<Option<i64>>) = (None, None);
                let mut data: Option<Option<&'de RawValue>> = None;
                let mut op: Option<Option<&'de RawValue>> = None;
                let mut sources: Option<Option<Vec<u64>>> = None;
                let mut ignorable: Option<bool> = None;
                let mut tokens = false;
                fn once<E: de::Error, T>(
                    slot: &Option<T>,
                    key: &'static str,
                ) -> std::result::Result<(), E> {
                    match slot {
                        Some(_) => Err(de::Error::duplicate_field(key)),
                        None => Ok(()),
                    }
                }
                while let Some(Text(key)) = m.next_key::<Text<'de>>()? {
                    match key.as_ref() {
                        "type" => {
                            once(&kind, "type")?;
                            kind = Some(m.next_value::<Text<'de>>()?.0);
                        }
                        "seq" => {
                            once(&seq, "seq")?;
                            seq = Some(m.next_value()?);
                        }
                        "time" => {
                            once(&time, "time")?;
                            time = Some(m.next_value()?);
                        }
                        "data" => {
                            once(&data, "data")?;
                            data = Some(m.next_value()?);
                        }
                        "surfaceOp" => {
                            once(&op, "surfaceOp")?;
                            op = Some(m.next_value()?);
                        }
                        "sourceEventSeqs" => {
                            once(&sources, "sourceEventSeqs")?;
                            sources = Some(m.next_value()?);
                        }
                        "ignorable" => {
                            once(&ignorable, "ignorable")?;
                            ignorable = Some(m.next_value()?);
                        }
                        other => {
                            tokens |= other == "tokens";
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let kind = kind.ok_or_else(|| de::Error::missing_field("type"))?;
                let _ = time;
                Ok(Fast(Read {
                    kind,
                    seq: seq.flatten(),
                    data: data.flatten().map(RawValue::get),
                    surface_op: op.flatten().map(RawValue::get),
                    sources: sources.flatten(),
                    ignorable: ignorable.unwrap_or(false),
                    tokens,
                }))
            }
        }
        d.deserialize_map(V)
    }
}

/// The envelope of `line`, or the struct's error with whether it is broken syntax.
fn envelope(line: &str) -> std::result::Result<Read<'_>, (bool, Error)> {
    match super::scan::envelope(line) {
        Some(env) => Ok(env),
        None => serde_envelope(line),
    }
}

/// The envelope of `line` as serde reads it: the reference the scanner of `scan.rs` follows.
pub(super) fn serde_envelope(line: &str) -> std::result::Result<Read<'_>, (bool, Error)> {
    if let Ok(Fast(env)) = serde_json::from_str::<Fast>(line) {
        return Ok(env);
    }
    serde_json::from_str::<Envelope>(line)
        .map(Read::from)
        .map_err(|e| {
            let syntax = matches!(
                e.classify(),
                serde_json::error::Category::Syntax | serde_json::error::Category::Eof
            );
            (syntax, Error::invalid(format!("not a JSON event: {e}")))
        })
}

/// An event read from a line, with what the log tracks of it without decoding `data` again.
pub(crate) struct Parsed {
    pub event: Event,
    /// `(turn, step)` of a `turn/start` or `step/start` event.
    pub turn_step: (Option<u64>, Option<u64>),
}

impl Parsed {
    /// Read the line `buf[start..start + len]` (UTF-8, checked by the caller).
    pub fn read(
        buf: &Buffer,
        start: usize,
        len: usize,
    ) -> std::result::Result<Parsed, (bool, Error)> {
        // SAFETY: the caller checked this span is UTF-8
        let line = unsafe { std::str::from_utf8_unchecked(&buf[start..start + len]) };
        let env = envelope(line)?;
        Self::from_envelope(buf, start, line, env).map_err(|e| (false, e))
    }

    fn from_envelope(buf: &Buffer, start: usize, line: &str, env: Read<'_>) -> Result<Parsed> {
        let kind = env.kind;
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
        let data = env
            .data
            .ok_or_else(|| Error::invalid(format!("{kind} event #{seq} without \"data\"")))?;
        let data_start = data.as_ptr() as usize - line.as_ptr() as usize;
        let data_end = data_start + data.len();
        let surface_op = match env.surface_op {
            None | Some("null") => None,
            // nearly every surface event appends: skip building a Value for it
            Some("\"append\"") => Some(SurfaceOp::Append),
            Some(raw) => {
                let v: serde_json::Value = serde_json::from_str(raw)
                    .map_err(|e| Error::invalid(format!("bad surfaceOp: {e}")))?;
                Some(SurfaceOp::from_value(&v)?)
            }
        };
        let index = kind_index(&kind);
        let mut event = Event {
            buf: buf.clone(),
            start,
            len: line.len() as u32,
            data_start: data_start as u32,
            data_end: data_end as u32,
            kind: index,
            op: 0,
            flags: u8::from(env.ignorable) * IGNORABLE
                + u8::from(env.tokens) * HAS_TOKENS
                // a raw value starts at its first byte (no blanks before it)
                + u8::from(data.starts_with('{')) * DATA_OBJECT,
            seq,
            more: None,
        };
        if index == OTHER {
            event.rare_mut().kind = Some(kind.into_owned().into_boxed_str());
        }
        event.set_sources(env.sources);
        event.set_op(surface_op);
        event.reshape();
        let turn_step = match event.kind() {
            "turn/start" | "step/start" => turn_step(event.data_json()),
            _ => (None, None),
        };
        Ok(Parsed { event, turn_step })
    }
}

/// The byte span of the `data` value inside an event line.
pub(crate) fn data_span(line: &str) -> Option<(usize, usize)> {
    #[derive(Deserialize)]
    struct DataOnly<'a> {
        #[serde(borrow)]
        data: &'a RawValue,
    }
    let d: DataOnly<'_> = serde_json::from_str(line).ok()?;
    let start = d.data.get().as_ptr() as usize - line.as_ptr() as usize;
    Some((start, start + d.data.get().len()))
}
