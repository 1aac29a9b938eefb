//! The common derived message read straight from its event's line, without a `serde_json::Value`:
//! text content, tool calls with string arguments, strings borrowed from the line where they have
//! no escapes. Reading every message of a log built each one as a `Value` (its `data` parsed into
//! maps of owned strings, projected into another map, then freed), which took most of the time of
//! materialising small messages (B1, issue 31). Anything else (content blocks, signed reasoning,
//! calls given in other forms, repeated keys) is left to `project::project` ([`flat`] gives
//! `None`), so the result is always the projection's: the tests check it on the corpus.
//!
//! Ids and names come from the event's shape (read once at load, checked equal to the
//! projection's by the shape tests); only the texts are read here.
use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::event::shape::Text;
use crate::event::Event;
use crate::plan::Role;

/// One tool call of a flat assistant message (`{"id","type":"function","function":{..}}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatCall<'a> {
    pub id: Cow<'a, str>,
    pub name: &'a str,
    pub arguments: Cow<'a, str>,
}

/// A derived message whose values are all strings, one flag and a list of calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flat<'a> {
    pub role: Role,
    pub content: Cow<'a, str>,
    /// An assistant's non-empty `reasoning_content`.
    pub reasoning: Option<Cow<'a, str>>,
    pub calls: Vec<FlatCall<'a>>,
    /// A tool result's `tool_call_id`.
    pub id: Option<&'a str>,
    /// A tool result's or a user message's `name`.
    pub name: Option<&'a str>,
    pub is_error: bool,
}

/// One entry of a flat message, in the projection's key order ([`Flat::visit`]).
#[derive(Debug, Clone, Copy)]
pub enum FlatValue<'b> {
    Str(&'b str),
    Bool(bool),
    Calls(&'b [FlatCall<'b>]),
}

impl Flat<'_> {
    /// Each key and value in the order `project::project` inserts them.
    pub fn visit<'b>(&'b self, mut f: impl FnMut(&'static str, FlatValue<'b>)) {
        f("role", FlatValue::Str(self.role.as_str()));
        if self.role == Role::Tool {
            if let Some(id) = self.id {
                f("tool_call_id", FlatValue::Str(id));
            }
            if let Some(name) = self.name {
                f("name", FlatValue::Str(name));
            }
            if self.is_error {
                f("is_error", FlatValue::Bool(true));
            }
            f("content", FlatValue::Str(&self.content));
            return;
        }
        f("content", FlatValue::Str(&self.content));
        if let Some(name) = self.name {
            f("name", FlatValue::Str(name));
        }
        if let Some(r) = &self.reasoning {
            f("reasoning_content", FlatValue::Str(r));
        }
        if !self.calls.is_empty() {
            f("tool_calls", FlatValue::Calls(&self.calls));
        }
    }

    /// The message as the projection's `Value` (tests, and anything that wants one).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        self.visit(|k, v| {
            let v = match v {
                FlatValue::Str(s) => Value::from(s),
                FlatValue::Bool(b) => Value::Bool(b),
                FlatValue::Calls(calls) => calls
                    .iter()
                    .map(|c| {
                        serde_json::json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect(),
            };
            m.insert(k.to_string(), v);
        });
        Value::Object(m)
    }
}

// What is read of `data`: a repeated key, or a value of a type the fast path does not take (a
// `message` or a call that is not an object, content or arguments that are not a string) fails
// the read and leaves the event to the projection. A JSON `null` reads as absent, as
// `Value::get` + `as_*` read it. Texts are borrowed from the line when they have no escapes.
#[derive(Deserialize)]
struct DataIn<'a> {
    #[serde(borrow)]
    content: Option<Text<'a>>,
    #[serde(borrow)]
    message: Option<MsgIn<'a>>,
}

#[derive(Deserialize)]
struct MsgIn<'a> {
    #[serde(borrow)]
    content: Option<Text<'a>>,
    #[serde(borrow)]
    tool_calls: Option<&'a RawValue>,
    #[serde(borrow)]
    reasoning_content: Option<&'a RawValue>,
    #[serde(borrow)]
    thinking_blocks: Option<&'a RawValue>,
    #[serde(borrow, rename = "isError")]
    is_error_camel: Option<&'a RawValue>,
    #[serde(borrow)]
    is_error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallIn<'a> {
    #[serde(borrow)]
    function: Option<FuncIn<'a>>,
    #[serde(borrow)]
    arguments: Option<Text<'a>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct FuncIn<'a> {
    #[serde(borrow)]
    arguments: Option<Text<'a>>,
}

/// A JSON string's text (borrowed when it has no escapes); `None` for any other JSON.
fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let s = raw.get();
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(s).ok().map(Cow::Owned)
}

/// Text content or a call's arguments as the projection gives them: absent or null, empty.
fn text(t: Option<Text<'_>>) -> Cow<'_, str> {
    t.map_or(Cow::Borrowed(""), |t| t.0)
}

fn is_true(raw: Option<&RawValue>) -> bool {
    raw.is_some_and(|r| r.get() == "true")
}

/// The derived message of a surface event read from its line, when it is of the common form;
/// `None` leaves it to `project::project` (and an event that derives nothing gives `None`).
pub fn flat(ev: &Event) -> Option<Flat<'_>> {
    let shape = ev.shape()?;
    if shape.silent || shape.blocks {
        return None;
    }
    let line = ev.line();
    let data: DataIn<'_> = serde_json::from_str(ev.data_json()).ok()?;
    let mut out = Flat {
        role: shape.role,
        content: Cow::Borrowed(""),
        reasoning: None,
        calls: Vec::new(),
        id: None,
        name: None,
        is_error: false,
    };
    match shape.role {
        Role::System | Role::User => {
            out.content = text(data.content);
            if shape.role == Role::User {
                out.name = shape.name(line);
            }
        }
        Role::Assistant => {
            let msg = data.message?;
            out.content = text(msg.content);
            if let Some(r) = msg.reasoning_content.and_then(string) {
                out.reasoning = (!r.is_empty()).then_some(r);
            }
            if msg
                .thinking_blocks
                .is_some_and(|t| t.get().starts_with('[') && t.get() != "[]")
            {
                return None;
            }
            let listed = msg.tool_calls.filter(|t| t.get().starts_with('['));
            let calls: Vec<CallIn<'_>> = match listed {
                Some(t) => serde_json::from_str(t.get()).ok()?,
                None => Vec::new(),
            };
            if calls.len() != shape.call_count() {
                return None;
            }
            for (k, c) in calls.into_iter().enumerate() {
                let args = match c.function {
                    Some(f) => text(f.arguments),
                    // `arguments`, else `input`: a null `arguments` still wins over `input`, which
                    // a null read as absent cannot tell: leave that to the projection
                    None if c.arguments.is_none() && c.input.is_some() => return None,
                    None => text(c.arguments),
                };
                out.calls.push(FlatCall {
                    id: shape.call_id(k, ev.seq, line),
                    name: shape.call_name(k, line),
                    arguments: args,
                });
            }
        }
        Role::Tool => {
            let msg = data.message;
            out.id = shape.id(line);
            out.name = shape.name(line);
            out.is_error = msg
                .as_ref()
                .is_some_and(|m| is_true(m.is_error_camel) || is_true(m.is_error));
            out.content = text(msg.and_then(|m| m.content));
        }
    }
    Some(out)
}
