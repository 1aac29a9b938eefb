//! The send normalizer (strict): applied to derived messages only, never to the log.
//!
//! Pairs results to calls by id (else id-less results by position; [`Pairing`], shared with the
//! load repair), gives each result its call's name, drops orphan results and fills missing
//! results with the placeholder, so that every assistant message with calls is followed by
//! exactly one result per call, in call order. It also maps content blocks for chat completions
//! ([`blocks`]).
//!
//! The plan reads the messages through a [`History`]: on the log's message shapes, a message is
//! built only where the plan changes it (a renamed or split result, mapped blocks).
use std::sync::Arc;

use serde_json::{json, Value};

use crate::log::Message;
use crate::repair::NO_RESULT;

pub mod blocks;
mod packed;
mod pairing;
pub mod segment;

pub use blocks::{map_block, map_blocks, split_tool_content, ATTACHMENTS_OF};
pub use pairing::{unanswered_calls, History, Paired, Pairing};

/// One message of a request: a derived message reused as it is (its index), or a new one.
#[derive(Debug, Clone)]
pub enum Sent {
    Same(usize),
    New(Message),
}

/// The messages a request carries. Borrowed messages are reused where nothing changes.
pub fn normalize_for_send<H: History + ?Sized>(messages: &H) -> Vec<Message> {
    plan_send(messages)
        .into_iter()
        .map(|s| match s {
            Sent::Same(i) => messages.message(i),
            Sent::New(m) => m,
        })
        .collect()
}

/// The send normalizer as a plan over the derived messages, so callers holding converted
/// copies of the derived messages (the Python cache) reuse them instead of converting again.
pub fn plan_send<H: History + ?Sized>(messages: &H) -> Vec<Sent> {
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
pub fn plan_send_from<H: History + ?Sized>(messages: &H, start: usize) -> SendPlan {
    let n = messages.len();
    let start = start.min(n);
    let mut out: Vec<Sent> = Vec::with_capacity(n - start);
    let mut pairing = Pairing::new(messages, start);
    let (mut cut, mut stable_items) = (start, 0);
    // every call so far answered, and by results before `reach`
    let mut answered = true;
    let mut reach = 0usize;
    for i in start..n {
        let r = messages.role(i);
        if r == "assistant" && answered && reach <= i {
            cut = i;
            stable_items = out.len();
        }
        match r {
            "tool" => continue, // placed with their call (below) or dropped as orphans
            "assistant" => {
                out.push(same_or_mapped(messages, i));
                // blocks of this step's results that a tool message cannot carry
                let mut attachments: Vec<Value> = Vec::new();
                pairing.pair_calls(i, |k, paired| {
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
                    let id = messages.call_id(i, k);
                    let name = messages.call_name(i, k);
                    let Some(j) = found else {
                        out.push(Sent::New(Arc::new(json!({
                            "role": "tool", "tool_call_id": id, "name": name, "content": NO_RESULT
                        }))));
                        return;
                    };
                    reach = reach.max(j + 1);
                    let same = messages.result_id(j).as_deref() == Some(id.as_ref())
                        && messages.result_name(j).as_deref() == Some(name.as_ref());
                    // only a list of blocks can hold what a tool message cannot carry
                    if same && !messages.blocks(j) {
                        out.push(Sent::Same(j));
                        return;
                    }
                    let r = messages.message(j);
                    let split = split_tool_content(r.get("content"));
                    if same && split.is_none() {
                        out.push(Sent::Same(j));
                        return;
                    }
                    let mut fixed = (*r).clone();
                    fixed["tool_call_id"] = Value::from(id.as_ref());
                    fixed["name"] = Value::from(name.as_ref());
                    if let Some((text, moved)) = split {
                        fixed["content"] = Value::String(text);
                        attachments.push(json!({
                            "type": "text",
                            "text": format!("{ATTACHMENTS_OF} {id} ({name}):"),
                        }));
                        attachments.extend(moved);
                    }
                    out.push(Sent::New(Arc::new(fixed)));
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

/// Message `i` as sent: itself, or a copy whose content blocks are mapped for chat completions.
fn same_or_mapped<H: History + ?Sized>(messages: &H, i: usize) -> Sent {
    if !messages.blocks(i) {
        return Sent::Same(i);
    }
    let message = messages.message(i);
    match message.get("content").and_then(map_blocks) {
        None => Sent::Same(i),
        Some(blocks) => {
            let mut m = (*message).clone();
            m["content"] = Value::Array(blocks);
            Sent::New(Arc::new(m))
        }
    }
}
