//! The shape of a derived message: what pairing, repair and the send plan need to know of it
//! (its role, its calls' ids and names, the id and name a tool result answers with), read once
//! when its event is parsed and kept without the message itself. The message (the projection of
//! `project.rs`) is built only when something reads it.
//!
//! Every fact here is the one `project::project` gives for the same event; `tests` check it on
//! the corpus and on generated events.
use std::borrow::Cow;

use serde_json::Value;

use crate::repair::json_close::close_json;

#[cfg(test)]
mod arb;
mod seen;
#[cfg(test)]
mod tests;

pub use seen::{ContentSeen, DataSeen, MsgSeen, ObjSeen, StrOr, Text};

pub use crate::plan::Role;

/// The role a surface event type derives (`None` for other types).
pub fn role_of_kind(kind: &str) -> Option<Role> {
    match kind {
        "system/message" => Some(Role::System),
        "user/message" => Some(Role::User),
        "assistant/message" => Some(Role::Assistant),
        "tool/result" => Some(Role::Tool),
        _ => None,
    }
}

/// A string of a shape: a span of its event's line (the usual case: no escapes), one of the
/// shape's own strings (decoded from escapes, or taken from another event), or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Str {
    start: u32,
    len: u32,
}

const OWN: u32 = 1 << 31;

impl Str {
    pub const NONE: Str = Str {
        start: 0,
        len: u32::MAX,
    };

    pub fn is_none(self) -> bool {
        self.len == u32::MAX
    }
}

/// One tool call of an assistant message, as `project::normalize_call` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallShape {
    /// [`Str::NONE`]: the call has no string id and is given `call_<seq>_<k>`.
    id: Str,
    name: Str,
    /// Its arguments are empty or complete JSON (else the load repair closes them).
    pub args_ok: bool,
}

/// What a derived message is, without its texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub role: Role,
    /// An assistant message with no text and no calls: it derives no message.
    pub silent: bool,
    /// Its content stays a list of blocks (it holds a block that is not text).
    pub blocks: bool,
    /// A tool result's id and name were taken from its `tool/call` event.
    pub from_call: bool,
    /// A tool result's `tool_call_id` (its message's `toolCallId` or `tool_call_id`).
    id: Str,
    /// A tool result's `name` (`toolName` or `name`), a user message's `name`.
    name: Str,
    calls: Box<[CallShape]>,
    owned: Owned,
}

/// A shape's own strings: nearly always none, so a thin pointer (8 bytes, where a `Vec` took 24
/// in every shape: issue 31.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[allow(clippy::box_collection)] // the box is the point: one word where there are none
struct Owned(Option<Box<Vec<Box<str>>>>);

impl Owned {
    fn of(strings: Vec<Box<str>>) -> Owned {
        Owned((!strings.is_empty()).then(|| Box::new(strings)))
    }

    fn into_vec(self) -> Vec<Box<str>> {
        self.0.map_or_else(Vec::new, |v| *v)
    }

    /// Add `s`; its index.
    fn push(&mut self, s: Box<str>) -> u32 {
        let v = self.0.get_or_insert_with(Box::default);
        v.push(s);
        v.len() as u32 - 1
    }

    fn get(&self, i: usize) -> &str {
        self.0.as_ref().map_or("", |v| &v[i])
    }

    fn heap_bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |v| {
            std::mem::size_of::<Vec<Box<str>>>()
                + v.capacity() * std::mem::size_of::<Box<str>>()
                + v.iter().map(|s| s.len()).sum::<usize>()
        })
    }
}

/// Builds a shape's strings: spans of `line` where the text is in it, else owned.
struct Strings<'l> {
    line: &'l str,
    owned: Vec<Box<str>>,
}

impl Strings<'_> {
    fn add(&mut self, text: Option<&str>) -> Str {
        let Some(text) = text else {
            return Str::NONE;
        };
        let base = self.line.as_ptr() as usize;
        let at = text.as_ptr() as usize;
        let inside = at >= base && at + text.len() <= base + self.line.len();
        if inside && self.line.len() < OWN as usize {
            return Str {
                start: (at - base) as u32,
                len: text.len() as u32,
            };
        }
        self.owned.push(text.into());
        Str {
            start: OWN | (self.owned.len() as u32 - 1),
            len: text.len() as u32,
        }
    }
}

fn as_str<'a>(v: &'a Option<StrOr<'_>>) -> Option<&'a str> {
    v.as_ref().and_then(StrOr::as_str)
}

/// `normalize_call`'s reading of one call.
fn call_shape(o: &ObjSeen<'_>, strings: &mut Strings<'_>) -> CallShape {
    let name = match &o.function {
        Some(f) => match &f.name {
            Some(n) => n.as_str(),
            None => as_str(&o.name),
        },
        None => as_str(&o.name),
    };
    let args = match &o.function {
        Some(f) => f.arguments.as_ref(),
        None => o.arguments.as_ref().or(o.input.as_ref()),
    };
    let args_ok = match args {
        Some(StrOr::Str(s)) => close_json(s).is_none(),
        // absent or null: no arguments; anything else is written as (valid) JSON
        _ => true,
    };
    CallShape {
        id: strings.add(as_str(&o.id)),
        name: strings.add(Some(name.unwrap_or(""))),
        args_ok,
    }
}

impl Shape {
    /// The shape of a surface event from what was read of its `data` (borrowed from `line`).
    pub fn of(role: Role, data: &DataSeen<'_>, line: &str) -> Shape {
        let mut strings = Strings {
            line,
            owned: Vec::new(),
        };
        let (mut silent, mut id, mut name) = (false, Str::NONE, Str::NONE);
        let mut calls: Vec<CallShape> = Vec::new();
        let blocks = match role {
            Role::System => data.content.is_blocks(),
            Role::User => {
                name = strings.add(as_str(&data.name));
                data.content.is_blocks()
            }
            Role::Assistant => {
                let msg = &data.message;
                if let Some(list) = &msg.tool_calls {
                    calls.extend(list.iter().map(|c| call_shape(c, &mut strings)));
                }
                if let ContentSeen::List { tool_uses, .. } = &msg.content {
                    calls.extend(tool_uses.iter().map(|c| call_shape(c, &mut strings)));
                }
                silent = msg.content.is_empty_text() && calls.is_empty();
                msg.content.is_blocks()
            }
            Role::Tool => {
                let msg = &data.message;
                id = strings.add(as_str(&msg.tool_call_id).or(as_str(&msg.tool_call_id_snake)));
                name = strings.add(as_str(&msg.tool_name).or(as_str(&msg.name)));
                msg.content.is_blocks()
            }
        };
        Shape {
            role,
            silent,
            blocks,
            from_call: false,
            id,
            name,
            calls: calls.into_boxed_slice(),
            owned: Owned::of(strings.owned),
        }
    }

    /// The shape of a projected message (`None`: it derives nothing), for events whose `data`
    /// the one-pass reading cannot take (nested deeper than the parser allows).
    pub fn of_projection(role: Role, message: &Option<Value>) -> Shape {
        let mut strings = Strings {
            line: "",
            owned: Vec::new(),
        };
        let Some(m) = message else {
            return Shape {
                role,
                silent: true,
                blocks: false,
                from_call: false,
                id: Str::NONE,
                name: Str::NONE,
                calls: Box::default(),
                owned: Owned::default(),
            };
        };
        fn text<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
            v.get(k).and_then(Value::as_str)
        }
        let calls: Vec<CallShape> = m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let f = &c["function"];
                CallShape {
                    id: strings.add(text(c, "id")),
                    name: strings.add(text(f, "name")),
                    args_ok: close_json(text(f, "arguments").unwrap_or("")).is_none(),
                }
            })
            .collect();
        let id = if role == Role::Tool {
            strings.add(text(m, "tool_call_id"))
        } else {
            Str::NONE
        };
        let name = strings.add(text(m, "name"));
        Shape {
            role,
            silent: false,
            blocks: m.get("content").is_some_and(Value::is_array),
            from_call: false,
            id,
            name,
            calls: calls.into_boxed_slice(),
            owned: Owned::of(strings.owned),
        }
    }

    fn text<'a>(&'a self, s: Str, line: &'a str) -> Option<&'a str> {
        if s.is_none() {
            None
        } else if s.start & OWN != 0 {
            Some(self.owned.get((s.start & !OWN) as usize))
        } else {
            Some(&line[s.start as usize..(s.start + s.len) as usize])
        }
    }

    /// A tool result's `tool_call_id`, given its event's line.
    pub fn id<'a>(&'a self, line: &'a str) -> Option<&'a str> {
        self.text(self.id, line)
    }

    /// A tool result's or a user message's `name`, given its event's line.
    pub fn name<'a>(&'a self, line: &'a str) -> Option<&'a str> {
        self.text(self.name, line)
    }

    pub fn call_count(&self) -> usize {
        self.calls.len()
    }

    pub fn calls(&self) -> &[CallShape] {
        &self.calls
    }

    /// The id of call `k` (`call_<seq>_<k>` when it has none), given its event's seq and line.
    pub fn call_id<'a>(&'a self, k: usize, seq: u64, line: &'a str) -> Cow<'a, str> {
        match self.text(self.calls[k].id, line) {
            Some(id) => Cow::Borrowed(id),
            None => Cow::Owned(format!("call_{seq}_{k}")),
        }
    }

    /// The function name of call `k`.
    pub fn call_name<'a>(&'a self, k: usize, line: &'a str) -> &'a str {
        self.text(self.calls[k].name, line).unwrap_or("")
    }

    /// A tool result without its id or name takes them from its `tool/call` event.
    pub fn needs_call(&self) -> bool {
        self.role == Role::Tool && (self.id.is_none() || self.name.is_none())
    }

    /// Fill a tool result's missing id and name from the `data` of its `tool/call` event.
    pub fn fill_from_call(&mut self, call_data: &Value) {
        let mut own = |k: &str| match call_data.get(k).and_then(Value::as_str) {
            Some(s) => Str {
                start: OWN | self.owned.push(s.into()),
                len: s.len() as u32,
            },
            None => Str::NONE,
        };
        let (id, name) = (own("callId"), own("name"));
        if self.id.is_none() {
            self.id = id;
        }
        if self.name.is_none() {
            self.name = name;
        }
        self.from_call = true;
    }

    /// Keep the strings a tool result took from its call (`fill_from_call`) in a new shape of the
    /// same event (its line was written again).
    pub fn keep_call_fill(&mut self, old: &Shape, old_line: &str) {
        if old.from_call {
            let mut strings = Strings {
                line: "",
                owned: std::mem::take(&mut self.owned).into_vec(),
            };
            if self.id.is_none() {
                self.id = strings.add(old.id(old_line));
            }
            if self.name.is_none() {
                self.name = strings.add(old.name(old_line));
            }
            self.owned = Owned::of(strings.owned);
            self.from_call = true;
        }
    }

    /// Bytes this shape holds on the heap (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Shape>()
            + self.calls.len() * std::mem::size_of::<CallShape>()
            + self.owned.heap_bytes()
    }
}
