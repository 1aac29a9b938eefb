//! Projection of one surface event into a chat message (OpenAI chat shape):
//! `{"role","content","reasoning_content"?,"thinking_blocks"?,"tool_calls"?,"tool_call_id"?,
//! "name"?,"is_error"?}` (`thinking_blocks` and `is_error` only where they say something: the
//! wire styles for chat completions drop both, `body.rs`).
use serde_json::{Map, Value};

use crate::event::Event;

/// Join the text of a content value: a string as is; a list of blocks by their `text`.
/// Returns `None` when the list holds blocks that are not text (images, audio, files, …): such
/// content is derived as the list of blocks, unchanged.
pub fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::Null => Some(String::new()),
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let mut parts: Vec<&str> = Vec::with_capacity(blocks.len());
            for b in blocks {
                match b {
                    Value::String(s) => parts.push(s),
                    Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                        Some("text") | None => {
                            parts.push(o.get("text").and_then(Value::as_str).unwrap_or(""))
                        }
                        // tool calls and reasoning inside assistant content are projected elsewhere
                        Some("tool_use") | Some("thinking") | Some("redacted_thinking") => {}
                        Some(_) => return None,
                    },
                    _ => return None,
                }
            }
            Some(parts.join("\n"))
        }
        other => Some(other.to_string()),
    }
}

/// The text of a chat message for rules that read words (prefix tests, transcripts, sizes):
/// the words of its `content` ([`words_of`]).
pub fn message_text(message: &Value) -> String {
    message.get("content").map_or_else(String::new, words_of)
}

/// The words of a `content` value: a string as is; a list of blocks by the `text` of its text
/// blocks, joined with `\n` (images and other blocks have no words); anything else has none.
pub fn words_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| match b {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                        Some("text") | None => o.get("text").and_then(Value::as_str),
                        Some(_) => None,
                    },
                    _ => None,
                })
                .collect();
            texts.join("\n")
        }
        _ => String::new(),
    }
}

fn arguments_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// One tool call in OpenAI shape, from either `{"id","type","function":{name,arguments}}`, the
/// flat `{"id","name","arguments"}` form, or a content block `{"type":"tool_use","id","name","input"}`.
pub fn normalize_call(call: &Value, fallback_id: String) -> Value {
    let obj = call.as_object();
    let get = |k: &str| obj.and_then(|o| o.get(k));
    let func = get("function").and_then(Value::as_object);
    let name = func
        .and_then(|f| f.get("name"))
        .or_else(|| get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let arguments = match func {
        Some(f) => arguments_text(f.get("arguments")),
        None => arguments_text(get("arguments").or_else(|| get("input"))),
    };
    let id = get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or(fallback_id);
    serde_json::json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// The tool calls of an assistant message: its `tool_calls` array, then `tool_use` content blocks.
pub fn calls_of(message: &Value, seq: u64) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(Value::Array(calls)) = message.get("tool_calls") {
        for c in calls {
            out.push(normalize_call(c, format!("call_{seq}_{}", out.len())));
        }
    }
    if let Some(Value::Array(blocks)) = message.get("content") {
        for b in blocks {
            if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                out.push(normalize_call(b, format!("call_{seq}_{}", out.len())));
            }
        }
    }
    out
}

fn content_value(content: &Value) -> Value {
    match text_of(content) {
        Some(t) => Value::String(t),
        None => content.clone(),
    }
}

/// Project a surface event. `tool_call` finds the `tool/call` event a result was built from.
pub fn project<'a>(ev: &Event, tool_call: impl Fn(u64) -> Option<&'a Event>) -> Option<Value> {
    let data = ev.data();
    let mut m = Map::new();
    match ev.kind() {
        "system/message" => {
            m.insert("role".into(), "system".into());
            m.insert(
                "content".into(),
                content_value(data.get("content").unwrap_or(&Value::Null)),
            );
        }
        "user/message" => {
            m.insert("role".into(), "user".into());
            m.insert(
                "content".into(),
                content_value(data.get("content").unwrap_or(&Value::Null)),
            );
            if let Some(name) = data.get("name").and_then(Value::as_str) {
                m.insert("name".into(), name.into());
            }
        }
        "assistant/message" => {
            let msg = data.get("message").unwrap_or(&Value::Null);
            let content = content_value(msg.get("content").unwrap_or(&Value::Null));
            let calls = calls_of(msg, ev.seq);
            let empty = matches!(&content, Value::String(s) if s.is_empty());
            if empty && calls.is_empty() {
                // kept in the log only for its usage (cut-off or empty reply)
                return None;
            }
            m.insert("role".into(), "assistant".into());
            m.insert("content".into(), content);
            if let Some(r) = msg.get("reasoning_content").and_then(Value::as_str) {
                if !r.is_empty() {
                    m.insert("reasoning_content".into(), r.into());
                }
            }
            // signed reasoning (Anthropic), kept to be sent back verbatim by the provider that made it
            if let Some(Value::Array(blocks)) = msg.get("thinking_blocks") {
                if !blocks.is_empty() {
                    m.insert("thinking_blocks".into(), Value::Array(blocks.clone()));
                }
            }
            if !calls.is_empty() {
                m.insert("tool_calls".into(), Value::Array(calls));
            }
        }
        "tool/result" => {
            let msg = data.get("message").unwrap_or(&Value::Null);
            let str_of = |keys: &[&str]| {
                keys.iter()
                    .find_map(|k| msg.get(*k).and_then(Value::as_str))
                    .map(str::to_string)
            };
            let call = || {
                ev.sources()
                    .into_iter()
                    .flatten()
                    .filter_map(|&s| tool_call(s))
                    .find(|e| e.kind() == "tool/call")
                    .map(|e| e.data())
            };
            let mut id = str_of(&["toolCallId", "tool_call_id"]);
            let mut name = str_of(&["toolName", "name"]);
            if id.is_none() || name.is_none() {
                if let Some(c) = call() {
                    id = id.or_else(|| c.get("callId").and_then(Value::as_str).map(str::to_string));
                    name =
                        name.or_else(|| c.get("name").and_then(Value::as_str).map(str::to_string));
                }
            }
            m.insert("role".into(), "tool".into());
            if let Some(id) = id {
                m.insert("tool_call_id".into(), id.into());
            }
            if let Some(name) = name {
                m.insert("name".into(), name.into());
            }
            // a failed call says so (Anthropic's `tool_result.is_error`); absent when it did not fail
            let failed = ["isError", "is_error"]
                .iter()
                .any(|k| msg.get(*k).and_then(Value::as_bool) == Some(true));
            if failed {
                m.insert("is_error".into(), Value::Bool(true));
            }
            // text-only content as a string (as always); with an image or another non-text
            // block, the list of blocks as recorded
            m.insert(
                "content".into(),
                content_value(msg.get("content").unwrap_or(&Value::Null)),
            );
        }
        _ => return None,
    }
    Some(Value::Object(m))
}
