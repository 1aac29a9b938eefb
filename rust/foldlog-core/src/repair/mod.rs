//! The load normalizer: find what would make a provider reject the history and repair it by
//! appending events (never by rewriting history). A well-formed log takes a fast path.
//!
//! Rules (log-format.md): empty tool-call names filled from the call's result (paired as on send:
//! by id, else an id-less result by position); truncated arguments closed; dangling calls given a
//! placeholder result; orphan results kept; an open turn closed as `interrupted`.
use std::collections::HashMap;

use serde_json::{json, Value};

use crate::error::Result;
use crate::event::SurfaceOp;
use crate::log::EventLog;
use crate::log::LogHistory;
use crate::wire::{History, Paired, Pairing};
use json_close::close_json;

pub mod json_close;

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
///
/// Calls pair with results exactly as the send normalizer pairs them (`wire::Pairing`: by id,
/// else an id-less result by position), so a repaired log needs no placeholder on send; a
/// result with a foreign id is an orphan and leaves its neighbour call dangling.
pub fn plan(log: &mut EventLog) -> Vec<Fix> {
    plan_pass(log).0
}

/// The fixes, and whether a placeholder's id is also another call's: then, by the send rule (a
/// call takes the first later result with its id before any result by position), an earlier
/// call with that id may take the placeholder, leaving its own call dangling again (only with
/// ids repeated across calls), so the repaired log must be planned again.
fn plan_pass(log: &mut EventLog) -> (Vec<Fix>, bool) {
    let mut fixes = Vec::new();
    let open_turn = log.open_turn();
    let history = log.history();
    let seqs = history.seqs();
    let n = history.len();
    let mut pairing = Pairing::new(&history, 0);
    for i in 0..n {
        // the calls the send normalizer answers: those of assistant messages
        if history.role(i) != "assistant" || history.call_count(i) == 0 {
            continue;
        }
        let (shape, _) = history.shape(i);
        let mut names = Vec::new();
        let mut bad_args = Vec::new();
        let mut missing = Vec::new();
        pairing.pair_calls(i, |k, paired| {
            let res = match paired {
                Paired::ById(j) | Paired::ByPosition(j) => Some(j),
                Paired::Missing => None,
            };
            if history.call_name(i, k).is_empty() {
                if let Some(n) = res.and_then(|j| history.result_name(j)) {
                    if !n.is_empty() {
                        names.push((k, n.into_owned()));
                    }
                }
            }
            if !shape.calls()[k].args_ok {
                bad_args.push(k);
            }
            if res.is_none() {
                missing.push(k);
            }
        });
        if names.is_empty() && bad_args.is_empty() && missing.is_empty() {
            continue;
        }
        let ids: Vec<String> = (0..history.call_count(i))
            .map(|k| history.call_id(i, k).into_owned())
            .collect();
        if !names.is_empty() || !bad_args.is_empty() {
            // the closed arguments: from the message itself (built only for a fix)
            let m = history.message(i);
            let calls = m["tool_calls"].as_array().cloned().unwrap_or_default();
            let args: Vec<(usize, String)> = bad_args
                .iter()
                .filter_map(|&k| {
                    let text = str_at(&calls[k], &["function", "arguments"]).unwrap_or("");
                    close_json(text).map(|closed| (k, closed))
                })
                .collect();
            let seq = seqs[i];
            let mut data = history.events()[seq as usize].data();
            let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            patch_calls(&mut data, &names, &args, &id_refs);
            fixes.push(Fix::Calls {
                seq,
                data,
                names: names.len(),
                arguments: args.len(),
            });
        }
        // placeholders go right after the results that directly follow the call group
        let after = (i + 1..n)
            .take_while(|&j| history.role(j) == "tool")
            .last()
            .map_or(seqs[i], |j| seqs[j]);
        for k in missing {
            // `names` is in call order: a search, not a scan per call (linear in the calls)
            let name = match names.binary_search_by_key(&k, |(n, _)| *n) {
                Ok(at) => names[at].1.clone(),
                Err(_) => history.call_name(i, k).into_owned(),
            };
            fixes.push(Fix::MissingResult {
                after,
                assistant: seqs[i],
                call_id: ids[k].clone(),
                name,
            });
        }
    }
    if let Some(t) = open_turn {
        if let Some(step) = t.step {
            fixes.push(Fix::CloseStep { turn: t.turn, step });
        }
        fixes.push(Fix::CloseTurn { turn: t.turn });
    }
    let again = placeholder_id_repeats(&history, &fixes);
    (fixes, again)
}

fn placeholder_id_repeats(history: &LogHistory<'_>, fixes: &[Fix]) -> bool {
    let mut wanted: HashMap<&str, usize> = fixes
        .iter()
        .filter_map(|f| match f {
            Fix::MissingResult { call_id, .. } => Some((call_id.as_str(), 0)),
            _ => None,
        })
        .collect();
    if wanted.is_empty() {
        return false;
    }
    for i in 0..history.len() {
        for k in 0..history.call_count(i) {
            if let Some(n) = wanted.get_mut(history.call_id(i, k).as_ref()) {
                *n += 1;
            }
        }
    }
    wanted.values().any(|&n| n > 1)
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
    // the turn and step of each assistant message, read once: its data holds every call, so
    // reading it again for each placeholder was quadratic in the calls of a message
    let mut turn_steps: HashMap<u64, (Value, Value)> = HashMap::new();
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
                let new = log.append_unchecked(
                    "assistant/message",
                    data,
                    time,
                    Some(op),
                    Some(vec![*seq]),
                )?;
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
                let (turn, step) = turn_steps
                    .entry(*assistant)
                    .or_insert_with(|| {
                        let ad = log.event(*assistant).map(|e| e.data()).unwrap_or_default();
                        let at = |k: &str| ad.get(k).cloned().unwrap_or(json!(0));
                        (at("turn"), at("step"))
                    })
                    .clone();
                let data = json!({
                    "turn": turn,
                    "step": step,
                    "message": {"role": "tool", "toolCallId": call_id, "toolName": name,
                                "content": NO_RESULT, "isError": true},
                });
                let seq =
                    log.append_unchecked("tool/result", &data, time, Some(op), Some(vec![source]))?;
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
///
/// Usually one pass. With repeated call ids a placeholder can be taken by an earlier call (see
/// `plan_pass`), so the log is planned again until nothing is left: each further pass answers
/// at least one more call by id (a call takes the earliest free result with its id after it,
/// which pairs as many calls by id as any assignment could, and each placeholder added after
/// a dangling call adds one), so the passes end; the bound is a guard, not a limit reached.
pub fn normalize_on_load(log: &mut EventLog, time: i64) -> Result<Report> {
    let mut report = Report::default();
    let guard = log.len() + 2;
    for _ in 0..guard {
        let (fixes, again) = plan_pass(log);
        if fixes.is_empty() {
            break;
        }
        let pass = apply(log, &fixes, time)?;
        report.names_filled += pass.names_filled;
        report.arguments_closed += pass.arguments_closed;
        report.results_added += pass.results_added;
        report.turn_closed |= pass.turn_closed;
        report.events_added += pass.events_added;
        if !again {
            break;
        }
    }
    Ok(report)
}
