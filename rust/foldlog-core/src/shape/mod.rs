//! The shape of a derived message: what pairing, repair and the send plan need to know of it
//! (its role, its calls' ids and names, the id and name a tool result answers with), read once
//! when its event is parsed and kept without the message itself. The message (the projection of
//! `project.rs`) is built only when something reads it.
//!
//! Every fact here is the one `project::project` gives for the same event; `tests` check it on
//! the corpus and on generated events.
use serde_json::Value;

use crate::json_close::close_json;
use crate::line::Str;

mod seen;
#[cfg(test)]
mod tests;

pub use seen::{ContentSeen, DataSeen, MsgSeen, ObjSeen, StrOr};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// The role a surface event type derives (`None` for other types).
    pub fn of_kind(kind: &str) -> Option<Role> {
        match kind {
            "system/message" => Some(Role::System),
            "user/message" => Some(Role::User),
            "assistant/message" => Some(Role::Assistant),
            "tool/result" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// One tool call of an assistant message, as `project::normalize_call` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallShape {
    /// `None`: the call has no string id and is given `call_<seq>_<k>`.
    pub id: Option<Str>,
    pub name: Str,
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
    pub calls: Box<[CallShape]>,
    /// A tool result's `tool_call_id` (its message's `toolCallId` or `tool_call_id`).
    pub id: Option<Str>,
    /// A tool result's `name` (`toolName` or `name`), a user message's `name`.
    pub name: Option<Str>,
}

fn str_of(v: &Option<StrOr<'_>>, line: &str) -> Option<Str> {
    v.as_ref().and_then(StrOr::as_str).map(|s| Str::of(s, line))
}

/// `normalize_call`'s reading of one call.
fn as_str<'a>(v: &'a Option<StrOr<'_>>) -> Option<&'a str> {
    v.as_ref().and_then(StrOr::as_str)
}

fn call_shape(o: &ObjSeen<'_>, line: &str) -> CallShape {
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
        id: as_str(&o.id).map(|s| Str::of(s, line)),
        name: Str::of(name.unwrap_or(""), line),
        args_ok,
    }
}

impl Shape {
    /// The shape of a surface event of type `kind` from what was read of its `data`.
    pub fn of(role: Role, data: &DataSeen<'_>, line: &str) -> Shape {
        let mut shape = Shape {
            role,
            silent: false,
            blocks: false,
            calls: Box::default(),
            id: None,
            name: None,
        };
        match role {
            Role::System | Role::User => {
                shape.blocks = data.content.is_blocks();
                if role == Role::User {
                    shape.name = str_of(&data.name, line);
                }
            }
            Role::Assistant => {
                let msg = &data.message;
                let mut calls: Vec<CallShape> = Vec::new();
                if let Some(list) = &msg.tool_calls {
                    calls.extend(list.iter().map(|c| call_shape(c, line)));
                }
                if let ContentSeen::List { tool_uses, .. } = &msg.content {
                    calls.extend(tool_uses.iter().map(|c| call_shape(c, line)));
                }
                shape.blocks = msg.content.is_blocks();
                shape.silent = msg.content.is_empty_text() && calls.is_empty();
                shape.calls = calls.into_boxed_slice();
            }
            Role::Tool => {
                let msg = &data.message;
                shape.blocks = msg.content.is_blocks();
                shape.id = str_of(&msg.tool_call_id, line).or_else(|| str_of(&msg.tool_call_id_snake, line));
                shape.name = str_of(&msg.tool_name, line).or_else(|| str_of(&msg.name, line));
            }
        }
        shape
    }

    /// A tool result without its id or name takes them from its `tool/call` event.
    pub fn needs_call(&self) -> bool {
        self.role == Role::Tool && (self.id.is_none() || self.name.is_none())
    }

    /// Fill a tool result's missing id and name from the `data` of its `tool/call` event.
    pub fn fill_from_call(&mut self, call_data: &Value) {
        let own = |k: &str| call_data.get(k).and_then(Value::as_str).map(|s| Str::Own(s.into()));
        if self.id.is_none() {
            self.id = own("callId");
        }
        if self.name.is_none() {
            self.name = own("name");
        }
    }

    /// The id of call `k` (`call_<seq>_<k>` when it has none), given its event's seq and line.
    pub fn call_id<'a>(&'a self, k: usize, seq: u64, line: &'a str) -> std::borrow::Cow<'a, str> {
        match &self.calls[k].id {
            Some(id) => std::borrow::Cow::Borrowed(id.get(line)),
            None => std::borrow::Cow::Owned(format!("call_{seq}_{k}")),
        }
    }
}
