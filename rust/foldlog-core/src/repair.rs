//! The load normalizer: find what would make a provider reject the history and repair it by
//! appending events (never by rewriting history). A well-formed log takes a fast path.
//!
//! Rules (log-format.md): empty tool-call names filled from the result with the same id (ids all
//! present and distinct) else by position; truncated arguments closed; dangling calls given a
//! placeholder result; orphan results kept; an open turn closed as `interrupted`.
use std::collections::HashMap;

use serde_json::{json, Value};

use crate::error::Result;
use crate::event::SurfaceOp;
use crate::json_close::close_json;
use crate::log::EventLog;

pub const NO_RESULT: &str =
    "[no result: the previous turn was interrupted before this tool call completed]";

#[derive(Debug, Clone, PartialEq)]
pub enum Fix {
    /// Replace assistant message `seq` with `data` (names filled, arguments closed).
    Calls {
        seq: u64,
        data: Value,
        names: usize,
        arguments: usize,
    },
    /// Add a placeholder result for `call_id` right after surface node `after`.
    MissingResult {
        after: u64,
        assistant: u64,
        call_id: String,
        name: String,
    },
    CloseStep {
        turn: u64,
        step: u64,
    },
    CloseTurn {
        turn: u64,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub names_filled: usize,
    pub arguments_closed: usize,
    pub results_added: usize,
    pub turn_closed: bool,
    pub events_added: usize,
}

impl Report {
    pub fn dirty(&self) -> bool {
        self.events_added > 0
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for k in path {
        cur = cur.get(*k)?;
    }
    cur.as_str()
}

/// What the load normalizer would do to this log (empty for a well-formed log).
pub fn plan(log: &mut EventLog) -> Vec<Fix> {
    let mut fixes = Vec::new();
    let msgs: Vec<_> = log.derive().to_vec();
    let seqs: Vec<u64> = log.derived_seqs().to_vec();
    let is_assistant = |m: &Value| m.get("role").and_then(Value::as_str) == Some("assistant");
    for (i, m) in msgs.iter().enumerate() {
        let Some(Value::Array(calls)) = m.get("tool_calls") else {
            continue;
        };
        // the results that directly follow this call group
        // a call's results stand between it and the next assistant message
        let group_end = (i + 1..msgs.len())
            .find(|&j| is_assistant(&msgs[j]))
            .unwrap_or(msgs.len());
        let following: Vec<usize> = (i + 1..msgs.len())
            .take_while(|&j| msgs[j].get("role").and_then(Value::as_str) == Some("tool"))
            .collect();
        let ids: Vec<&str> = calls
            .iter()
            .map(|c| str_at(c, &["id"]).unwrap_or(""))
            .collect();
        let ids_ok = ids.iter().all(|s| !s.is_empty()) && {
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            sorted.windows(2).all(|w| w[0] != w[1])
        };
        let result_for = |k: usize| -> Option<usize> {
            if ids_ok {
                let by_id = (i + 1..group_end)
                    .find(|&j| msgs[j].get("tool_call_id").and_then(Value::as_str) == Some(ids[k]));
                if by_id.is_some() {
                    return by_id;
                }
            }
            // by position among the directly following results that carry no id of another call
            following.get(k).copied().filter(|&j| {
                match msgs[j].get("tool_call_id").and_then(Value::as_str) {
                    None => true,
                    Some(rid) => !ids_ok || rid == ids[k] || !ids.contains(&rid),
                }
            })
        };
        let mut names = Vec::new();
        let mut args = Vec::new();
        let mut missing = Vec::new();
        for (k, c) in calls.iter().enumerate() {
            let res = result_for(k);
            if str_at(c, &["function", "name"]).unwrap_or("").is_empty() {
                if let Some(n) = res.and_then(|j| msgs[j].get("name").and_then(Value::as_str)) {
                    if !n.is_empty() {
                        names.push((k, n.to_string()));
                    }
                }
            }
            if let Some(closed) = close_json(str_at(c, &["function", "arguments"]).unwrap_or("")) {
                args.push((k, closed));
            }
            if res.is_none() {
                missing.push(k);
            }
        }
        if !names.is_empty() || !args.is_empty() {
            let seq = seqs[i];
            let mut data = log.event(seq).map(|e| e.data()).unwrap_or(Value::Null);
            patch_calls(&mut data, &names, &args, &ids);
            fixes.push(Fix::Calls {
                seq,
                data,
                names: names.len(),
                arguments: args.len(),
            });
        }
        let after = following.last().map_or(seqs[i], |&j| seqs[j]);
        for k in missing {
            let name = names
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, s)| s.clone())
                .unwrap_or_else(|| {
                    str_at(&calls[k], &["function", "name"])
                        .unwrap_or("")
                        .to_string()
                });
            fixes.push(Fix::MissingResult {
                after,
                assistant: seqs[i],
                call_id: ids[k].to_string(),
                name,
            });
        }
    }
    if let Some(t) = log.open_turn() {
        if let Some(step) = t.step {
            fixes.push(Fix::CloseStep { turn: t.turn, step });
        }
        fixes.push(Fix::CloseTurn { turn: t.turn });
    }
    fixes
}

/// Patch the k-th call (in projection order: `tool_calls` entries, then `tool_use` blocks).
/// Calls without an id get the id the projection gave them, so the replacement keeps pairing
/// with results that were matched (or added) under that id.
fn patch_calls(
    data: &mut Value,
    names: &[(usize, String)],
    args: &[(usize, String)],
    ids: &[&str],
) {
    let Some(msg) = data.get_mut("message") else {
        return;
    };
    let mut slots: Vec<&mut Value> = Vec::new();
    let (calls, content) = match msg {
        Value::Object(o) => {
            let mut calls = None;
            let mut content = None;
            for (k, v) in o.iter_mut() {
                match k.as_str() {
                    "tool_calls" => calls = Some(v),
                    "content" => content = Some(v),
                    _ => {}
                }
            }
            (calls, content)
        }
        _ => return,
    };
    if let Some(Value::Array(cs)) = calls {
        slots.extend(cs.iter_mut());
    }
    if let Some(Value::Array(blocks)) = content {
        slots.extend(
            blocks
                .iter_mut()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")),
        );
    }
    for (slot, id) in slots.iter_mut().zip(ids) {
        if slot
            .get("id")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            slot["id"] = Value::from(*id);
        }
    }
    for (k, name) in names {
        if let Some(slot) = slots.get_mut(*k) {
            let target = if slot.get("function").is_some_and(Value::is_object) {
                &mut slot["function"]
            } else {
                &mut **slot
            };
            target["name"] = Value::String(name.clone());
        }
    }
    for (k, closed) in args {
        if let Some(slot) = slots.get_mut(*k) {
            if slot.get("function").is_some_and(Value::is_object) {
                slot["function"]["arguments"] = Value::String(closed.clone());
            } else if slot.get("arguments").is_some() {
                slot["arguments"] = Value::String(closed.clone());
            }
        }
    }
}

/// Append the repair events for `fixes` to the log.
pub fn apply(log: &mut EventLog, fixes: &[Fix], time: i64) -> Result<Report> {
    let mut report = Report::default();
    let mut inserted_after: HashMap<u64, u64> = HashMap::new();
    let mut call_events: Option<HashMap<String, u64>> = None;
    for fix in fixes {
        match fix {
            Fix::Calls {
                seq,
                data,
                names,
                arguments,
            } => {
                let op = SurfaceOp::Replace {
                    start: *seq,
                    end: *seq,
                };
                let new =
                    log.append("assistant/message", data, time, Some(op), Some(vec![*seq]))?;
                inserted_after.insert(*seq, new);
                report.names_filled += names;
                report.arguments_closed += arguments;
            }
            Fix::MissingResult {
                after,
                assistant,
                call_id,
                name,
            } => {
                let calls = call_events.get_or_insert_with(|| {
                    log.events()
                        .iter()
                        .filter(|e| e.kind() == "tool/call")
                        .filter_map(|e| {
                            Some((e.data().get("callId")?.as_str()?.to_string(), e.seq))
                        })
                        .collect()
                });
                let source = calls.get(call_id).copied().unwrap_or(*assistant);
                // the replaced assistant message (if names were fixed) stands where the original stood
                let anchor = *inserted_after.get(after).unwrap_or(after);
                let anchor = if log.surface().contains(anchor) {
                    anchor
                } else {
                    log.next_seq() - 1
                };
                let op = if log.surface().nodes().last() == Some(&anchor) {
                    SurfaceOp::Append
                } else {
                    SurfaceOp::Insert { after: anchor }
                };
                let ad = log
                    .event(*assistant)
                    .map(|e| e.data())
                    .unwrap_or(Value::Null);
                let data = json!({
                    "turn": ad.get("turn").cloned().unwrap_or(json!(0)),
                    "step": ad.get("step").cloned().unwrap_or(json!(0)),
                    "message": {"role": "tool", "toolCallId": call_id, "toolName": name,
                                "content": NO_RESULT, "isError": true},
                });
                let seq = log.append("tool/result", &data, time, Some(op), Some(vec![source]))?;
                inserted_after.insert(*after, seq);
                report.results_added += 1;
            }
            Fix::CloseStep { turn, step } => {
                log.append(
                    "step/end",
                    &json!({"turn": turn, "step": step}),
                    time,
                    None,
                    None,
                )?;
            }
            Fix::CloseTurn { turn } => {
                let data = json!({"turn": turn, "reason": {"kind": "interrupted"}});
                log.append("turn/end", &data, time, None, None)?;
                report.turn_closed = true;
            }
        }
        report.events_added += 1;
    }
    Ok(report)
}

/// Plan and apply in one go.
pub fn normalize_on_load(log: &mut EventLog, time: i64) -> Result<Report> {
    let fixes = plan(log);
    if fixes.is_empty() {
        return Ok(Report::default());
    }
    apply(log, &fixes, time)
}
