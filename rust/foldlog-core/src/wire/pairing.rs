//! The one rule pairing tool results with calls, shared by the send normalizer and the load
//! repair (so that a repaired log needs no placeholder on send), over a [`History`]: the derived
//! messages as values, or the log's message shapes (no message built).
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use crate::log::Message;

/// What pairing and the send plan read of the derived messages.
pub trait History {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `"system"`, `"user"`, `"assistant"` or `"tool"`.
    fn role(&self, i: usize) -> &str;
    /// How many tool calls message `i` holds (0 unless it is an assistant message with calls).
    fn call_count(&self, i: usize) -> usize;
    /// The id of call `k` of message `i`.
    fn call_id(&self, i: usize, k: usize) -> Cow<'_, str>;
    /// The function name of call `k` of message `i`.
    fn call_name(&self, i: usize, k: usize) -> Cow<'_, str>;
    /// A tool result's `tool_call_id` when it is a string.
    fn result_id(&self, i: usize) -> Option<Cow<'_, str>>;
    /// A tool result has a `tool_call_id` at all (a result without one pairs by position).
    fn has_result_id(&self, i: usize) -> bool {
        self.result_id(i).is_some()
    }
    /// A tool result's `name` when it is a string.
    fn result_name(&self, i: usize) -> Option<Cow<'_, str>>;
    /// Message `i`'s content is a list of blocks (the send mapping may change it).
    fn blocks(&self, i: usize) -> bool;
    /// Message `i` itself.
    fn message(&self, i: usize) -> Message;
}

fn str_at<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn calls_of(m: &Value) -> &[Value] {
    match m.get("tool_calls") {
        Some(Value::Array(calls)) => calls,
        _ => &[],
    }
}

impl History for [Message] {
    fn len(&self) -> usize {
        <[Message]>::len(self)
    }
    fn role(&self, i: usize) -> &str {
        str_at(&self[i], "role").unwrap_or("")
    }
    fn call_count(&self, i: usize) -> usize {
        calls_of(&self[i]).len()
    }
    fn call_id(&self, i: usize, k: usize) -> Cow<'_, str> {
        Cow::Borrowed(str_at(&calls_of(&self[i])[k], "id").unwrap_or(""))
    }
    fn call_name(&self, i: usize, k: usize) -> Cow<'_, str> {
        let call = &calls_of(&self[i])[k];
        Cow::Borrowed(
            call.get("function")
                .and_then(|f| str_at(f, "name"))
                .unwrap_or(""),
        )
    }
    fn result_id(&self, i: usize) -> Option<Cow<'_, str>> {
        str_at(&self[i], "tool_call_id").map(Cow::Borrowed)
    }
    fn has_result_id(&self, i: usize) -> bool {
        self[i].get("tool_call_id").is_some()
    }
    fn result_name(&self, i: usize) -> Option<Cow<'_, str>> {
        str_at(&self[i], "name").map(Cow::Borrowed)
    }
    fn blocks(&self, i: usize) -> bool {
        self[i].get("content").is_some_and(Value::is_array)
    }
    fn message(&self, i: usize) -> Message {
        self[i].clone()
    }
}

/// A list of messages reads as the slice it holds.
impl History for Vec<Message> {
    fn len(&self) -> usize {
        <[Message]>::len(self)
    }
    fn role(&self, i: usize) -> &str {
        self[..].role(i)
    }
    fn call_count(&self, i: usize) -> usize {
        self[..].call_count(i)
    }
    fn call_id(&self, i: usize, k: usize) -> Cow<'_, str> {
        self[..].call_id(i, k)
    }
    fn call_name(&self, i: usize, k: usize) -> Cow<'_, str> {
        self[..].call_name(i, k)
    }
    fn result_id(&self, i: usize) -> Option<Cow<'_, str>> {
        self[..].result_id(i)
    }
    fn has_result_id(&self, i: usize) -> bool {
        self[..].has_result_id(i)
    }
    fn result_name(&self, i: usize) -> Option<Cow<'_, str>> {
        self[..].result_name(i)
    }
    fn blocks(&self, i: usize) -> bool {
        self[..].blocks(i)
    }
    fn message(&self, i: usize) -> Message {
        self[i].clone()
    }
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

/// Pairs calls with results. A result with a foreign id never pairs by position: it is an
/// orphan.
pub struct Pairing<'a, H: History + ?Sized> {
    messages: &'a H,
    start: usize,
    used: Vec<bool>,
    // results by call id, in order: one map instead of a scan per call keeps this linear
    by_id: HashMap<Cow<'a, str>, VecDeque<usize>>,
}

impl<'a, H: History + ?Sized> Pairing<'a, H> {
    /// Pairing over `messages[start..]` (`start`: see `plan_send_from`).
    pub fn new(messages: &'a H, start: usize) -> Self {
        let n = messages.len();
        let start = start.min(n);
        let mut by_id: HashMap<Cow<'a, str>, VecDeque<usize>> = HashMap::new();
        for j in start..n {
            if messages.role(j) == "tool" {
                if let Some(id) = messages.result_id(j) {
                    by_id.entry(id).or_default().push_back(j);
                }
            }
        }
        Pairing {
            messages,
            start,
            used: vec![false; n - start],
            by_id,
        }
    }

    /// Pairs each call of assistant message `i` in call order, telling `each(k, paired)`.
    /// Call it for the assistant messages in order: earlier calls take results first.
    pub fn pair_calls(&mut self, i: usize, mut each: impl FnMut(usize, Paired)) {
        let messages = self.messages;
        let n = messages.len();
        // candidates by position: the results after this message up to the next assistant message
        let end = (i + 1..n)
            .find(|&j| messages.role(j) == "assistant")
            .unwrap_or(n);
        let mut next = i + 1;
        for k in 0..messages.call_count(i) {
            let id = messages.call_id(i, k);
            let used = &self.used;
            let start = self.start;
            let by_id = self.by_id.get_mut(id.as_ref()).and_then(|q| {
                while q.front().is_some_and(|&j| j <= i || used[j - start]) {
                    q.pop_front();
                }
                q.pop_front()
            });
            let paired = match by_id {
                Some(j) => Paired::ById(j),
                None => match (next..end).find(|&j| {
                    messages.role(j) == "tool" && !used[j - start] && !messages.has_result_id(j)
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
            each(k, paired);
        }
    }
}

/// How many calls the send normalizer would answer with its placeholder (0 after a repair).
pub fn unanswered_calls<H: History + ?Sized>(messages: &H) -> usize {
    let mut pairing = Pairing::new(messages, 0);
    let mut missing = 0;
    for i in 0..messages.len() {
        if messages.role(i) == "assistant" {
            pairing.pair_calls(i, |_, p| missing += usize::from(p == Paired::Missing));
        }
    }
    missing
}
