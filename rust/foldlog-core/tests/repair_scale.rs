//! Load repair at scale: one assistant message with many calls, half of them unanswered, is
//! repaired in time linear in its calls (a quadratic repair took 24 s for 6,000 calls).
mod common;

use foldlog_core::{reader, repair, wire};
use serde_json::json;

/// A log whose assistant message holds `n` calls; only the even ones have a result.
fn many_calls(n: usize) -> String {
    let calls: Vec<_> = (0..n)
        .map(|k| {
            json!({"id": format!("c{k}"), "type": "function",
                        "function": {"name": "ls", "arguments": "{}"}})
        })
        .collect();
    let mut events: Vec<common::Spec<'_>> = vec![
        (
            "user/message",
            json!({"role": "user", "content": "go"}),
            Some(json!("append")),
            None,
        ),
        (
            "assistant/message",
            json!({"turn": 1, "step": 1,
                   "message": {"role": "assistant", "content": "", "tool_calls": calls}}),
            Some(json!("append")),
            None,
        ),
    ];
    for k in (0..n).step_by(2) {
        events.push((
            "tool/result",
            json!({"turn": 1, "step": 1, "message": {"role": "tool", "toolCallId": format!("c{k}"),
                   "toolName": "ls", "content": "out", "isError": false}}),
            Some(json!("append")),
            None,
        ));
    }
    events.push((
        "user/message",
        json!({"role": "user", "content": "next"}),
        Some(json!("append")),
        None,
    ));
    let header = r#"{"type":"session","version":1,"id":"s","createdAt":0,"parent":null,"meta":{}}"#;
    format!("{header}\n{}", common::build(&events))
}

#[test]
fn twenty_thousand_calls_in_one_message_are_all_answered() {
    let n = 20_000;
    let text = many_calls(n);
    let started = std::time::Instant::now();
    let mut log = reader::read(text.as_bytes()).expect("loads").log;
    let report = repair::normalize_on_load(&mut log, 5).expect("repairs");
    let took = started.elapsed();
    assert_eq!(report.results_added, n / 2);
    assert!(repair::plan(&mut log).is_empty(), "repair is complete");
    let msgs = log.messages().to_vec();
    assert_eq!(wire::unanswered_calls(&msgs[..]), 0);
    // the answered calls' results, then a placeholder per unanswered call in call order, all
    // before the user message that followed the call group
    assert_eq!(msgs.len(), 2 + n + 1);
    assert_eq!(msgs[n + 2]["content"], "next");
    let ids: Vec<&str> = msgs[2..n + 2]
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    let mut want: Vec<String> = (0..n).step_by(2).map(|k| format!("c{k}")).collect();
    want.extend((1..n).step_by(2).map(|k| format!("c{k}")));
    assert_eq!(ids, want);
    // a guard, not a benchmark (benches/repair.rs measures): quadratic took minutes here
    assert!(took.as_secs() < 10, "repair of {n} calls took {took:?}");
}
