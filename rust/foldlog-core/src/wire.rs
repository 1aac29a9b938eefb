//! The send normalizer (strict): applied to derived messages only, never to the log.
//!
//! Pairs results to calls by id (else by position), gives each result its call's name, drops
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
    let n = messages.len();
    let mut used = vec![false; n];
    let mut out: Vec<Sent> = Vec::with_capacity(n);
    // results by call id, in order: one map instead of a scan per call keeps this linear
    let mut by_id: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (j, m) in messages.iter().enumerate() {
        if role(m) == "tool" {
            if let Some(id) = m.get("tool_call_id").and_then(Value::as_str) {
                by_id.entry(id).or_default().push_back(j);
            }
        }
    }
    for i in 0..n {
        let m = &messages[i];
        match role(m) {
            "tool" => continue, // placed with their call (below) or dropped as orphans
            "assistant" => {
                out.push(Sent::Same(i));
                let Some(Value::Array(calls)) = m.get("tool_calls") else {
                    continue;
                };
                // candidates: the results after this message up to the next assistant message
                let end = (i + 1..n)
                    .find(|&j| role(&messages[j]) == "assistant")
                    .unwrap_or(n);
                let mut by_position = (i + 1..end).filter(|&j| role(&messages[j]) == "tool");
                for call in calls {
                    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    let name = call
                        .get("function")
                        .and_then(|f| f.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let found = by_id
                        .get_mut(id)
                        .and_then(|q| {
                            while q.front().is_some_and(|&j| j <= i || used[j]) {
                                q.pop_front();
                            }
                            q.pop_front()
                        })
                        .or_else(|| {
                            by_position
                                .by_ref()
                                .find(|&j| !used[j] && messages[j].get("tool_call_id").is_none())
                        });
                    match found {
                        Some(j) => {
                            used[j] = true;
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
                }
            }
            _ => out.push(Sent::Same(i)),
        }
    }
    out
}
