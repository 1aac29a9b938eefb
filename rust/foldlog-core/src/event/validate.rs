//! The shape of chat messages, checked on every write path (`EventLog::add_message`,
//! `EventLog::append` of a surface event, the batch writes behind `Session.replace` and the
//! importers). One place, so that nothing a provider would refuse — and nothing that would be
//! silently changed on the way to it — gets into a log.
//!
//! Loading never checks this: logs written before these rules (and the seed's version-0 format)
//! load and derive as they always did. Errors name the place inside the message, e.g.
//! `content[1].type must be a string, got a number (1)` or
//! `tool_calls[0].function.name is missing`. See docs/log-format.md, "Message shapes".
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The roles [`crate::log::EventLog::add_message`] records, each as its surface event type.
pub const ROLES: [&str; 4] = ["system", "user", "assistant", "tool"];

/// The `detail` values an `image_url` block may carry.
pub const IMAGE_DETAILS: [&str; 3] = ["low", "high", "auto"];

/// The block types a tool may return ([`tool_blocks`]): those every provider family sends
/// (docs/providers.md). A message may hold other types too (what an importer found, kept as
/// given); a tool's result may not.
pub const TOOL_BLOCK_TYPES: [&str; 6] = [
    "text",
    "image_url",
    "input_audio",
    "file",
    "image",
    "document",
];

/// A short description of a JSON value for error messages (never the whole of a long value).
pub fn describe(v: &Value) -> String {
    fn short(v: &Value) -> String {
        let s = v.to_string();
        if s.chars().count() > 40 {
            let cut: String = s.chars().take(37).collect();
            format!("{cut}...")
        } else {
            s
        }
    }
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(_) => format!("a number ({})", short(v)),
        Value::String(_) => format!("a string ({})", short(v)),
        Value::Array(a) => format!("a list of {} item(s)", a.len()),
        Value::Object(_) => format!("an object ({})", short(v)),
    }
}

/// Where a check is inside the value being validated (`content[1].image_url.url`).
struct Place {
    path: String,
}

impl Place {
    fn new(root: &str) -> Place {
        Place { path: root.into() }
    }
    fn at<R>(&mut self, key: &str, f: impl FnOnce(&mut Place) -> R) -> R {
        let base = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
        let r = f(self);
        self.path.truncate(base);
        r
    }
    fn index<R>(&mut self, i: usize, f: impl FnOnce(&mut Place) -> R) -> R {
        let base = self.path.len();
        self.path.push_str(&format!("[{i}]"));
        let r = f(self);
        self.path.truncate(base);
        r
    }
    fn fail(&self, problem: impl std::fmt::Display) -> Error {
        Error::invalid(format!("{} {problem}", self.path))
    }
}

fn get<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn required_str<'a>(obj: &'a Map<String, Value>, key: &str, p: &mut Place) -> Result<&'a str> {
    p.at(key, |p| match obj.get(key) {
        Some(Value::String(s)) => Ok(s.as_str()),
        None => Err(p.fail("is missing (a string is required)")),
        Some(other) => Err(p.fail(format!("must be a string, got {}", describe(other)))),
    })
}

/// A string that carries a block's payload (a URL, base64 data, a media type): an empty one is
/// nothing a provider accepts.
fn payload_str(obj: &Map<String, Value>, key: &str, p: &mut Place) -> Result<()> {
    if required_str(obj, key, p)?.is_empty() {
        return p.at(key, |p| Err(p.fail("must not be empty")));
    }
    Ok(())
}

fn optional_str(obj: &Map<String, Value>, key: &str, p: &mut Place) -> Result<()> {
    match get(obj, key) {
        None | Some(Value::String(_)) => Ok(()),
        Some(other) => p.at(key, |p| {
            Err(p.fail(format!("must be a string, got {}", describe(other))))
        }),
    }
}

fn optional_bool(obj: &Map<String, Value>, key: &str, p: &mut Place) -> Result<()> {
    match get(obj, key) {
        None | Some(Value::Bool(_)) => Ok(()),
        Some(other) => p.at(key, |p| {
            Err(p.fail(format!("must be true or false, got {}", describe(other))))
        }),
    }
}

fn object_at<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    p: &mut Place,
) -> Result<&'a Map<String, Value>> {
    p.at(key, |p| match obj.get(key) {
        Some(Value::Object(o)) => Ok(o),
        None => Err(p.fail("is missing (an object is required)")),
        Some(other) => Err(p.fail(format!("must be an object, got {}", describe(other)))),
    })
}

/// One content block: a mapping with a string `type`, and the fields its known type needs.
fn check_block(block: &Value, p: &mut Place) -> Result<()> {
    let Some(obj) = block.as_object() else {
        return Err(p.fail(format!(
            "must be a content block (an object with a string \"type\"), got {}",
            describe(block)
        )));
    };
    let kind = required_str(obj, "type", p)?;
    // a media reference (its bytes in the media store): checked before the shape of its type
    if let Err((place, problem)) = super::media_ref::check(kind, obj) {
        return if place.is_empty() {
            Err(p.fail(problem))
        } else {
            p.at(&place, |p| Err(p.fail(problem)))
        };
    }
    match kind {
        "text" => {
            required_str(obj, "text", p)?;
        }
        "image_url" => {
            let image = object_at(obj, "image_url", p)?;
            p.at("image_url", |p| -> Result<()> {
                payload_str(image, "url", p)?;
                if let Some(detail) = get(image, "detail") {
                    let ok = detail.as_str().is_some_and(|d| IMAGE_DETAILS.contains(&d));
                    if !ok {
                        return p.at("detail", |p| {
                            Err(p.fail(format!(
                                "must be \"low\", \"high\" or \"auto\", got {}",
                                describe(detail)
                            )))
                        });
                    }
                }
                Ok(())
            })?;
        }
        "input_audio" => {
            let audio = object_at(obj, "input_audio", p)?;
            p.at("input_audio", |p| -> Result<()> {
                payload_str(audio, "data", p)?;
                payload_str(audio, "format", p)?;
                Ok(())
            })?;
        }
        "file" => {
            let file = object_at(obj, "file", p)?;
            p.at("file", |p| -> Result<()> {
                for key in ["file_data", "file_id", "filename"] {
                    optional_str(file, key, p)?;
                }
                if get(file, "file_data").is_none() && get(file, "file_id").is_none() {
                    return Err(p.fail("needs a \"file_data\" or a \"file_id\""));
                }
                Ok(())
            })?;
        }
        // Anthropic-style blocks, as the importers produce them
        "image" | "document" => {
            let source = object_at(obj, "source", p)?;
            p.at("source", |p| -> Result<()> {
                match required_str(source, "type", p)? {
                    "base64" => {
                        payload_str(source, "media_type", p)?;
                        payload_str(source, "data", p)?;
                    }
                    "text" => {
                        required_str(source, "data", p)?;
                    }
                    "url" => {
                        payload_str(source, "url", p)?;
                    }
                    _ => {}
                }
                Ok(())
            })?;
        }
        "tool_use" => {
            optional_str(obj, "id", p)?;
            required_str(obj, "name", p)?;
        }
        "thinking" => optional_str(obj, "thinking", p)?,
        // any other type is kept as given (a provider that cannot take it says so before sending)
        _ => {}
    }
    Ok(())
}

/// A `content` value: a string or a list of content blocks; null (or absent) only where
/// `null_ok` (an assistant message with tool calls).
fn check_content(obj: &Map<String, Value>, null_ok: bool, p: &mut Place) -> Result<()> {
    p.at("content", |p| match obj.get("content") {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(blocks)) => {
            for (i, b) in blocks.iter().enumerate() {
                p.index(i, |p| check_block(b, p))?;
            }
            Ok(())
        }
        None | Some(Value::Null) if null_ok => Ok(()),
        None => Err(p.fail("is missing (a string or a list of content blocks is required)")),
        Some(other) => Err(p.fail(format!(
            "must be a string or a list of content blocks, got {}",
            describe(other)
        ))),
    })
}

/// One entry of `tool_calls`: `{id, type:"function", function:{name, arguments}}` or the flat
/// `{id, name, arguments}`; `arguments` a string (the model's raw JSON, possibly cut) or an object.
fn check_call(call: &Value, p: &mut Place) -> Result<()> {
    let Some(obj) = call.as_object() else {
        return Err(p.fail(format!(
            "must be a tool call object ({{id, name, arguments}}), got {}",
            describe(call)
        )));
    };
    optional_str(obj, "id", p)?;
    optional_str(obj, "type", p)?;
    let check_args = |holder: &Map<String, Value>, p: &mut Place| -> Result<()> {
        let key = if holder.contains_key("arguments") {
            "arguments"
        } else {
            "input"
        };
        match get(holder, key) {
            None | Some(Value::String(_)) | Some(Value::Object(_)) => Ok(()),
            Some(other) => p.at(key, |p| {
                Err(p.fail(format!(
                    "must be a string (JSON text) or an object, got {}",
                    describe(other)
                )))
            }),
        }
    };
    if obj.contains_key("function") {
        let function = object_at(obj, "function", p)?;
        p.at("function", |p| -> Result<()> {
            required_str(function, "name", p)?;
            check_args(function, p)
        })
    } else {
        required_str(obj, "name", p)?;
        check_args(obj, p)
    }
}

fn check_calls(obj: &Map<String, Value>, p: &mut Place) -> Result<bool> {
    p.at("tool_calls", |p| match obj.get("tool_calls") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Array(calls)) => {
            for (i, c) in calls.iter().enumerate() {
                p.index(i, |p| check_call(c, p))?;
            }
            Ok(!calls.is_empty())
        }
        Some(other) => Err(p.fail(format!(
            "must be a list of tool calls, got {}",
            describe(other)
        ))),
    })
}

/// An assistant message's `thinking_blocks` (the provider's signed reasoning, sent back verbatim:
/// Anthropic's extended thinking): absent, `null`, or a list of
/// `{type:"thinking", thinking, signature}` and `{type:"redacted_thinking", data}`.
fn check_thinking_blocks(obj: &Map<String, Value>, p: &mut Place) -> Result<()> {
    p.at("thinking_blocks", |p| match obj.get("thinking_blocks") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(blocks)) => {
            for (i, b) in blocks.iter().enumerate() {
                p.index(i, |p| {
                    let Some(block) = b.as_object() else {
                        return Err(p.fail(format!(
                            "must be a thinking block (an object with a string \"type\"), got {}",
                            describe(b)
                        )));
                    };
                    match required_str(block, "type", p)? {
                        "thinking" => {
                            required_str(block, "thinking", p)?;
                            required_str(block, "signature", p)?;
                        }
                        "redacted_thinking" => {
                            required_str(block, "data", p)?;
                        }
                        other => {
                            return p.at("type", |p| {
                                Err(p.fail(format!(
                                    "must be \"thinking\" or \"redacted_thinking\", got {other:?}"
                                )))
                            })
                        }
                    }
                    Ok(())
                })?;
            }
            Ok(())
        }
        Some(other) => Err(p.fail(format!(
            "must be a list of thinking blocks, got {}",
            describe(other)
        ))),
    })
}

fn check_role(obj: &Map<String, Value>, want: &str, p: &mut Place) -> Result<()> {
    match get(obj, "role") {
        None => Ok(()),
        Some(Value::String(r)) if r == want => Ok(()),
        Some(other) => p.at("role", |p| {
            Err(p.fail(format!("must be {want:?} here, got {}", describe(other))))
        }),
    }
}

/// The fields of a message of `role` (its `role` key, if any, is checked by the caller).
fn check_fields(role: &str, obj: &Map<String, Value>, p: &mut Place) -> Result<()> {
    match role {
        "system" | "user" => {
            check_content(obj, false, p)?;
            optional_str(obj, "name", p)?;
        }
        "assistant" => {
            let calls = check_calls(obj, p)?;
            check_content(obj, calls, p)?;
            optional_str(obj, "reasoning_content", p)?;
            check_thinking_blocks(obj, p)?;
            optional_str(obj, "name", p)?;
        }
        "tool" => {
            let id_key = if obj.contains_key("tool_call_id") {
                "tool_call_id"
            } else {
                "toolCallId"
            };
            required_str(obj, id_key, p)?;
            for key in ["name", "toolName"] {
                optional_str(obj, key, p)?;
            }
            for key in ["isError", "is_error"] {
                optional_bool(obj, key, p)?;
            }
            check_content(obj, false, p)?;
        }
        _ => {}
    }
    Ok(())
}

/// An OpenAI-chat-shaped message as `Session.add` takes it.
pub fn message(message: &Value) -> Result<()> {
    let obj = message.as_object().ok_or_else(|| {
        Error::invalid(format!(
            "a message must be a JSON object with a \"role\", got {}",
            describe(message)
        ))
    })?;
    let role = match obj.get("role") {
        Some(Value::String(r)) => r.as_str(),
        None => return Err(Error::invalid("a message needs a string \"role\"")),
        Some(other) => {
            return Err(Error::invalid(format!(
                "a message needs a string \"role\", got {}",
                describe(other)
            )))
        }
    };
    if !ROLES.contains(&role) {
        return Err(Error::invalid(format!(
            "unknown message role {role:?} (expected system, user, assistant or tool)"
        )));
    }
    let mut p = Place::new("");
    check_fields(role, obj, &mut p).map_err(|e| context(e, &format!("invalid {role} message: ")))
}

/// The content blocks a tool returns (`ToolOutcome(content=[...])`, checked before its result
/// is logged): a non-empty list whose every block passes the message rule and is of a type the
/// providers send ([`TOOL_BLOCK_TYPES`]). Errors name the place, e.g. `content[1].type`.
pub fn tool_blocks(blocks: &Value) -> Result<()> {
    let mut p = Place::new("content");
    let Value::Array(list) = blocks else {
        return Err(p.fail(format!(
            "must be a list of content blocks, got {}",
            describe(blocks)
        )));
    };
    if list.is_empty() {
        return Err(p.fail("must hold at least one content block"));
    }
    for (i, block) in list.iter().enumerate() {
        p.index(i, |p| {
            check_block(block, p)?;
            let kind = block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if TOOL_BLOCK_TYPES.contains(&kind) {
                return Ok(());
            }
            p.at("type", |p| {
                Err(p.fail(format!(
                    "must be one of {} (the blocks a tool may return), got {kind:?}",
                    TOOL_BLOCK_TYPES.join(", ")
                )))
            })
        })?;
    }
    Ok(())
}

/// The `data` of a surface event or an erasure on the write path (`append`). Other event types
/// are not checked here beyond being objects.
pub fn event_data(kind: &str, data: &Value) -> Result<()> {
    let Some(obj) = data.as_object() else {
        return Err(Error::invalid(format!(
            "{kind}: data must be a JSON object"
        )));
    };
    let mut p = Place::new("");
    let checked = match kind {
        "system/message" => check_content(obj, false, &mut p),
        "user/message" => {
            check_role(obj, "user", &mut p).and_then(|()| check_fields("user", obj, &mut p))
        }
        "assistant/message" | "tool/result" => {
            let (role, want) = if kind == "tool/result" {
                ("tool", "tool")
            } else {
                ("assistant", "assistant")
            };
            object_at(obj, "message", &mut p).and_then(|m| {
                p.at("message", |p| {
                    check_role(m, want, p)?;
                    check_fields(role, m, p)
                })
            })
        }
        crate::event::ERASURE => check_erasure(obj, &mut p),
        _ => Ok(()),
    };
    checked.map_err(|e| context(e, &format!("invalid {kind} data: ")))
}

/// An erasure event's data: `seqs`, a non-empty list of event seqs in increasing order (each
/// erased once), `reason`, a non-empty string, `at`, epoch milliseconds. Never content: the
/// erased events' data are not in it.
fn check_erasure(obj: &Map<String, Value>, p: &mut Place) -> Result<()> {
    p.at("seqs", |p| match obj.get("seqs") {
        Some(Value::Array(seqs)) if !seqs.is_empty() => {
            let mut last: Option<u64> = None;
            for (i, s) in seqs.iter().enumerate() {
                let Some(n) = s.as_u64() else {
                    return p.index(i, |p| {
                        Err(p.fail(format!("must be an event seq, got {}", describe(s))))
                    });
                };
                if last.is_some_and(|l| l >= n) {
                    return p.index(i, |p| {
                        Err(p.fail("must be larger than the seq before it (sorted, no repeats)"))
                    });
                }
                last = Some(n);
            }
            Ok(())
        }
        Some(Value::Array(_)) => Err(p.fail("must name at least one event")),
        None => Err(p.fail("is missing (a list of event seqs is required)")),
        Some(other) => Err(p.fail(format!(
            "must be a list of event seqs, got {}",
            describe(other)
        ))),
    })?;
    if required_str(obj, "reason", p)?.trim().is_empty() {
        return p.at("reason", |p| Err(p.fail("must not be empty")));
    }
    p.at("at", |p| match obj.get("at") {
        Some(v) if v.is_i64() => Ok(()),
        None => Err(p.fail("is missing (epoch milliseconds are required)")),
        Some(other) => Err(p.fail(format!(
            "must be epoch milliseconds, got {}",
            describe(other)
        ))),
    })
}

fn context(err: Error, prefix: &str) -> Error {
    match err {
        Error::InvalidEvent { message } => {
            Error::invalid(format!("{prefix}{}", message.trim_start()))
        }
        other => other,
    }
}
