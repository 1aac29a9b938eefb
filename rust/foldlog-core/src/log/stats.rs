//! Statistics of a log (what `foldlog log inspect` shows): counts of the events as stored and of
//! the derived messages. The one place they are computed.
use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;
use serde_json::{json, Value};

use super::EventLog;

/// Counts of a log's first `events` events (those stored: repair events added at load are left
/// out) and of its surface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub events: usize,
    pub types: BTreeMap<String, u64>,
    pub turns: u64,
    pub steps: u64,
    /// Derived messages by role.
    pub messages: BTreeMap<&'static str, u64>,
    pub surface_messages: usize,
    pub tool_calls: u64,
    pub tool_results: u64,
    pub compactions: u64,
    /// Compactions started (by `data.id`) without their end.
    pub unfinished_compactions: usize,
    /// Sums of the integer fields of the assistant messages' `usage`.
    pub usage: BTreeMap<String, i64>,
}

impl Stats {
    /// The statistics as JSON (the keys `foldlog log inspect --json` prints).
    pub fn to_value(&self) -> Value {
        json!({
            "events": self.events,
            "types": self.types,
            "turns": self.turns,
            "steps": self.steps,
            "messages": self.messages,
            "surface_messages": self.surface_messages,
            "tool_calls": self.tool_calls,
            "tool_results": self.tool_results,
            "compactions": self.compactions,
            "unfinished_compactions": self.unfinished_compactions,
            "usage": self.usage,
        })
    }
}

/// `data.id` of a compaction event and `data.usage` of an assistant message, nothing else.
#[derive(Deserialize, Default)]
struct Fields {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
}

fn fields(data: &str) -> Fields {
    serde_json::from_str(data).unwrap_or_default()
}

impl EventLog {
    /// Statistics of the first `stored` events (all of them when `stored` is larger) and of the
    /// current surface.
    pub fn stats(&mut self, stored: usize) -> Stats {
        let mut s = Stats::default();
        let (mut started, mut ended) = (HashSet::new(), HashSet::new());
        let all = self.events();
        let events = &all[..stored.min(all.len())];
        s.events = events.len();
        for e in events {
            let kind = e.kind();
            *s.types.entry(kind.to_string()).or_default() += 1;
            match kind {
                "compaction/start" => {
                    started.insert(fields(e.data_json()).id.map(|v| v.to_string()));
                }
                "compaction/end" => {
                    ended.insert(fields(e.data_json()).id.map(|v| v.to_string()));
                }
                "assistant/message" => {
                    if let Some(Value::Object(usage)) = fields(e.data_json()).usage {
                        for (k, v) in usage {
                            // what Python counts as an int, booleans included
                            let n = match v {
                                Value::Bool(b) => Some(i64::from(b)),
                                v => v.as_i64(),
                            };
                            if let Some(n) = n {
                                *s.usage.entry(k).or_default() += n;
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let count = |k: &str| s.types.get(k).copied().unwrap_or(0);
        s.turns = count("turn/start");
        s.steps = count("step/start");
        s.tool_calls = count("tool/call");
        s.tool_results = count("tool/result");
        s.compactions = count("compaction/summary");
        s.unfinished_compactions = started.difference(&ended).count();
        for role in self.history().roles() {
            *s.messages.entry(role).or_default() += 1;
        }
        s.surface_messages = self.derived_len();
        s
    }
}
