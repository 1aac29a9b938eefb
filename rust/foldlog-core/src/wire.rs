//! The send normalizer (strict): applied to derived messages only, never to the log.
//!
//! Pairs results to calls by id (else id-less results by position; `Pairing`, shared with the
//! load repair), gives each result its call's name, drops
//! orphan results and fills missing results with the placeholder, so that every assistant
//! message with calls is followed by exactly one result per call, in call order.
//!
//! It also maps content blocks to what chat-completions endpoints take (the one place this is
//! done; `docs/providers.md`): the importers' Anthropic-style `image` / `document` blocks become
//! `image_url` (a data URL) / `file` blocks, and a tool result holding anything but text keeps
//! its text (with a note) while the rest goes to a user message after the step's results —
//! chat completions take only text in tool messages.
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::log::Message;
use crate::repair::NO_RESULT;

fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

/// One message of a request: a derived message reused as it is (its index), or a new one.
#[derive(Debug, Clone)]
pub enum Sent {
    Same(usize),
    New(Message),
}

/// The messages a request carries. Borrowed messages are reused where nothing changes.
pub fn normalize_for_send(messages: &[Message]) -> Vec<Message> {
    plan_send(messages)
        .into_iter()
        .map(|s| match s {
            Sent::Same(i) => messages[i].clone(),
            Sent::New(m) => m,
        })
        .collect()
}

/// The send normalizer as a plan over the derived messages, so callers holding converted
/// copies of the derived messages (the Python cache) reuse them instead of converting again.
pub fn plan_send(messages: &[Message]) -> Vec<Sent> {
    plan_send_from(messages, 0).items
}

/// The send plan of `messages[start..]` (indices into the whole list), where `start` is a cut of
/// an earlier plan of a prefix of `messages`: the plan of the whole list is the earlier items
/// before that cut followed by these `items`.
#[derive(Debug, Clone)]
pub struct SendPlan {
    pub items: Vec<Sent>,
    /// The furthest index up to which the plan is final whatever is appended later: every call
    /// before it is answered, by id, by a result before it (results after a cut can only be
    /// claimed by calls after it, and calls before it claim nothing more; a placeholder or a
    /// result matched by position could still give way to a later result with the call's id).
    pub cut: usize,
    /// How many of `items` come before `cut`.
    pub stable_items: usize,
}

/// The send normalizer from `start` (0, or the `cut` of a plan of a prefix of `messages`), so a
/// request after appends plans only the messages since the last cut.
pub fn plan_send_from(messages: &[Message], start: usize) -> SendPlan {
    let n = messages.len();
    let start = start.min(n);
    let mut out: Vec<Sent> = Vec::with_capacity(n - start);
    let mut pairing = Pairing::new(messages, start);
    let (mut cut, mut stable_items) = (start, 0);
    // every call so far answered, and by results before `reach`
    let mut answered = true;
    let mut reach = 0usize;
    for i in start..n {
        let m = &messages[i];
        let r = role(m);
        if r == "assistant" && answered && reach <= i {
            cut = i;
            stable_items = out.len();
        }
        match r {
            "tool" => continue, // placed with their call (below) or dropped as orphans
            "assistant" => {
                out.push(same_or_mapped(messages, i));
                let Some(Value::Array(calls)) = m.get("tool_calls") else {
                    continue;
                };
                // blocks of this step's results that a tool message cannot carry
                let mut attachments: Vec<Value> = Vec::new();
                pairing.pair_calls(i, calls, |call, paired| {
                    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    let name = call
                        .get("function")
                        .and_then(|f| f.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let found = match paired {
                        Paired::ById(j) => Some(j),
                        // a result with the call's id appended later would win over these
                        Paired::ByPosition(j) => {
                            answered = false;
                            Some(j)
                        }
                        Paired::Missing => {
                            answered = false;
                            None
                        }
                    };
                    match found {
                        Some(j) => {
                            reach = reach.max(j + 1);
                            let r = &messages[j];
                            let same = r.get("tool_call_id").and_then(Value::as_str) == Some(id)
                                && r.get("name").and_then(Value::as_str) == Some(name);
                            let split = split_tool_content(r.get("content"));
                            if same && split.is_none() {
                                out.push(Sent::Same(j));
                            } else {
                                let mut fixed = (**r).clone();
                                fixed["tool_call_id"] = Value::from(id);
                                fixed["name"] = Value::from(name);
                                if let Some((text, moved)) = split {
                                    fixed["content"] = Value::String(text);
                                    attachments.push(json!({
                                        "type": "text",
                                        "text": format!("{ATTACHMENTS_OF} {id} ({name}):"),
                                    }));
                                    attachments.extend(moved);
                                }
                                out.push(Sent::New(Arc::new(fixed)));
                            }
                        }
                        None => out.push(Sent::New(Arc::new(json!({
                            "role": "tool", "tool_call_id": id, "name": name, "content": NO_RESULT
                        })))),
                    }
                });
                if !attachments.is_empty() {
                    out.push(Sent::New(Arc::new(
                        json!({"role": "user", "content": attachments}),
                    )));
                }
            }
            _ => out.push(same_or_mapped(messages, i)),
        }
    }
    if answered && reach <= n {
        cut = n;
        stable_items = out.len();
    }
    SendPlan {
        items: out,
        cut,
        stable_items,
    }
}

/// The text before the blocks a tool result could not carry, in the user message after the
/// step's results (followed by the result's call id and tool name).
pub const ATTACHMENTS_OF: &str = "Attachments of the tool result";

/// Message `i` as sent: itself, or a copy whose content blocks are mapped for chat completions.
fn same_or_mapped(messages: &[Message], i: usize) -> Sent {
    match messages[i].get("content").and_then(map_blocks) {
        None => Sent::Same(i),
        Some(blocks) => {
            let mut m = (*messages[i]).clone();
            m["content"] = Value::Array(blocks);
            Sent::New(Arc::new(m))
        }
    }
}

/// The block types that chat completions have no equivalent for and that are mapped.
fn mapped_type(block: &Value) -> bool {
    matches!(
        block.get("type").and_then(Value::as_str),
        Some("image") | Some("document")
    )
}

/// The blocks of `content` as chat completions take them, or `None` when nothing changes.
pub fn map_blocks(content: &Value) -> Option<Vec<Value>> {
    let Value::Array(blocks) = content else {
        return None;
    };
    if !blocks.iter().any(mapped_type) {
        return None;
    }
    Some(blocks.iter().map(map_block).collect())
}

/// One block for chat completions. Anthropic-style `image` (base64 or url source) becomes
/// `image_url`; `document` with a base64 source becomes a `file` with a data URL, with a text
/// source a `text` block. Anything else, or a shape not understood, is sent unchanged (a
/// provider that cannot take it says so before sending).
pub fn map_block(block: &Value) -> Value {
    let kind = block.get("type").and_then(Value::as_str);
    let source = block.get("source");
    let field = |k: &str| source.and_then(|s| s.get(k)).and_then(Value::as_str);
    match (kind, field("type")) {
        (Some("image"), Some("base64")) => match (field("media_type"), field("data")) {
            (Some(media), Some(data)) => {
                json!({"type": "image_url", "image_url": {"url": format!("data:{media};base64,{data}")}})
            }
            _ => block.clone(),
        },
        (Some("image"), Some("url")) => match field("url") {
            Some(url) => json!({"type": "image_url", "image_url": {"url": url}}),
            None => block.clone(),
        },
        (Some("document"), Some("base64")) => match (field("media_type"), field("data")) {
            (Some(media), Some(data)) => {
                let title = block.get("title").and_then(Value::as_str);
                let filename = match title {
                    Some(t) if !t.is_empty() => t.to_string(),
                    _ => default_filename(media),
                };
                json!({"type": "file", "file": {
                    "filename": filename,
                    "file_data": format!("data:{media};base64,{data}"),
                }})
            }
            _ => block.clone(),
        },
        (Some("document"), Some("text")) => match field("data") {
            Some(text) => json!({"type": "text", "text": text}),
            None => block.clone(),
        },
        _ => block.clone(),
    }
}

fn default_filename(media_type: &str) -> String {
    let ext = match media_type {
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        _ => "bin",
    };
    format!("document.{ext}")
}

/// A tool result's content split for chat completions: `None` when it is a string or only
/// text blocks (sent as it is); else its text (the text blocks joined by newlines, then a note
/// naming what follows) and the other blocks, mapped, for the user message after the results.
pub fn split_tool_content(content: Option<&Value>) -> Option<(String, Vec<Value>)> {
    let Some(Value::Array(blocks)) = content else {
        return None;
    };
    let is_text = |b: &Value| b.get("type").and_then(Value::as_str) == Some("text");
    if blocks.iter().all(is_text) {
        return None;
    }
    let mut texts: Vec<&str> = Vec::new();
    let mut moved: Vec<Value> = Vec::new();
    for b in blocks {
        if is_text(b) {
            texts.push(b.get("text").and_then(Value::as_str).unwrap_or(""));
        } else {
            moved.push(map_block(b));
        }
    }
    let kinds: Vec<&str> = moved
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("image_url") => "image",
            Some("input_audio") => "audio",
            Some(other) => other,
            None => "block",
        })
        .collect();
    let note = format!(
        "[this result also holds {} attachment(s) ({}); they follow in a user message]",
        moved.len(),
        kinds.join(", ")
    );
    let mut text = texts.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&note);
    Some((text, moved))
}

/// The result a call pairs with (an index into the messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paired {
    /// The first result after the call, not taken by an earlier call, carrying the call's id.
    ById(usize),
    /// Else the next id-less result before the next assistant message.
    ByPosition(usize),
    /// Neither: the send normalizer fills the placeholder.
    Missing,
}

/// The one rule pairing results with calls, shared by the send normalizer and the load repair
/// (so that a repaired log needs no placeholder on send). A result with a foreign id never pairs
/// by position: it is an orphan.
pub struct Pairing<'a> {
    messages: &'a [Message],
    start: usize,
    used: Vec<bool>,
    // results by call id, in order: one map instead of a scan per call keeps this linear
    by_id: HashMap<&'a str, VecDeque<usize>>,
}

impl<'a> Pairing<'a> {
    /// Pairing over `messages[start..]` (`start`: see `plan_send_from`).
    pub fn new(messages: &'a [Message], start: usize) -> Self {
        let start = start.min(messages.len());
        let mut by_id: HashMap<&str, VecDeque<usize>> = HashMap::new();
        for (j, m) in messages.iter().enumerate().skip(start) {
            if role(m) == "tool" {
                if let Some(id) = m.get("tool_call_id").and_then(Value::as_str) {
                    by_id.entry(id).or_default().push_back(j);
                }
            }
        }
        Pairing {
            messages,
            start,
            used: vec![false; messages.len() - start],
            by_id,
        }
    }

    /// Pairs each of `calls` (the calls of assistant message `i`) in call order, telling `each`.
    /// Call it for the assistant messages in order: earlier calls take results first.
    pub fn pair_calls(&mut self, i: usize, calls: &[Value], mut each: impl FnMut(&Value, Paired)) {
        let messages = self.messages;
        let n = messages.len();
        // candidates by position: the results after this message up to the next assistant message
        let end = (i + 1..n)
            .find(|&j| role(&messages[j]) == "assistant")
            .unwrap_or(n);
        let mut next = i + 1;
        for call in calls {
            let id = call.get("id").and_then(Value::as_str).unwrap_or("");
            let used = &self.used;
            let start = self.start;
            let by_id = self.by_id.get_mut(id).and_then(|q| {
                while q.front().is_some_and(|&j| j <= i || used[j - start]) {
                    q.pop_front();
                }
                q.pop_front()
            });
            let paired = match by_id {
                Some(j) => Paired::ById(j),
                None => match (next..end).find(|&j| {
                    role(&messages[j]) == "tool"
                        && !used[j - start]
                        && messages[j].get("tool_call_id").is_none()
                }) {
                    Some(j) => {
                        next = j + 1;
                        Paired::ByPosition(j)
                    }
                    None => {
                        next = end;
                        Paired::Missing
                    }
                },
            };
            if let Paired::ById(j) | Paired::ByPosition(j) = paired {
                self.used[j - self.start] = true;
            }
            each(call, paired);
        }
    }
}

/// How many calls the send normalizer would answer with its placeholder (0 after a repair).
pub fn unanswered_calls(messages: &[Message]) -> usize {
    let mut pairing = Pairing::new(messages, 0);
    let mut missing = 0;
    for (i, m) in messages.iter().enumerate() {
        if role(m) != "assistant" {
            continue;
        }
        if let Some(Value::Array(calls)) = m.get("tool_calls") {
            pairing.pair_calls(i, calls, |_, p| {
                missing += usize::from(p == Paired::Missing)
            });
        }
    }
    missing
}
