//! The send normalizer (strict): applied to derived messages only, never to the log.
//!
//! Pairs results to calls by id (else id-less results by position; `Pairing`, shared with the
//! load repair), gives each result its call's name, drops
//! orphan results and fills missing results with the placeholder, so that every assistant
//! message with calls is followed by exactly one result per call, in call order.
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
                out.push(Sent::Same(i));
                let Some(Value::Array(calls)) = m.get("tool_calls") else {
                    continue;
                };
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
                            if same {
                                out.push(Sent::Same(j));
                            } else {
                                let mut fixed = (**r).clone();
                                fixed["tool_call_id"] = Value::from(id);
                                fixed["name"] = Value::from(name);
                                out.push(Sent::New(Arc::new(fixed)));
                            }
                        }
                        None => out.push(Sent::New(Arc::new(json!({
                            "role": "tool", "tool_call_id": id, "name": name, "content": NO_RESULT
                        })))),
                    }
                });
            }
            _ => out.push(Sent::Same(i)),
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
