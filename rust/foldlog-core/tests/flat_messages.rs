//! `log::flat` reads a derived message straight from its line: wherever it takes an event, its
//! message is the projection's (`message_of`), on odd hand-written events and generated ones.
#[path = "../src/event/shape/arb.rs"]
mod arb;
mod common;
use common::*;
use foldlog_core::log::flat::flat;
use proptest::prelude::*;
use serde_json::{json, Value};

/// Every derived message of the log `text` compared with its flat reading; how many were flat.
fn check(text: &str) -> usize {
    let mut log = load(text);
    let seqs = log.derived_seqs().to_vec();
    let mut taken = 0;
    for seq in seqs {
        let projected = log.message_of(seq).expect("a derived message");
        if let Some(f) = flat(log.event(seq).unwrap()) {
            assert_eq!(f.to_value(), *projected, "seq {seq} of\n{text}");
            taken += 1;
        }
    }
    taken
}

fn surface(kind: &str, data: Value) -> Spec<'_> {
    (kind, data, Some(json!("append")), None)
}

#[test]
fn the_seed_log_reads_flat_where_it_can() {
    // the user message and the assistant's hold blocks; the tool result takes its id from the call
    assert_eq!(check(SEED), 1);
}

#[test]
fn odd_events_read_flat_as_projected() {
    let cases: Vec<(&str, Value, bool)> = vec![
        ("system/message", json!({"content": "be brief"}), true),
        ("system/message", json!({"content": null}), true),
        ("user/message", json!({"role": "user"}), true),
        (
            "user/message",
            json!({"content": "hi", "name": "ann"}),
            true,
        ),
        ("user/message", json!({"content": "hi", "name": 5}), true),
        (
            "user/message",
            json!({"content": [{"type": "text", "text": "a"}]}),
            false,
        ),
        ("user/message", json!({"content": 3}), false),
        (
            "user/message",
            json!({"content": "caf\u{e9} \"q\"\n\\"}),
            true,
        ),
        (
            "assistant/message",
            json!({"message": {"content": "x", "reasoning_content": ""}}),
            true,
        ),
        (
            "assistant/message",
            json!({"message": {"content": "x", "reasoning_content": "why\n"}}),
            true,
        ),
        (
            "assistant/message",
            json!({"message": {"content": "x", "reasoning_content": 4}}),
            true,
        ),
        (
            "assistant/message",
            json!({"message": {"content": "x", "thinking_blocks": []}}),
            true,
        ),
        (
            "assistant/message",
            json!({"message": {"content": "x", "thinking_blocks": null}}),
            true,
        ),
        (
            "assistant/message",
            json!({"message": {"content": "x", "thinking_blocks": [{"type": "thinking"}]}}),
            false,
        ),
        (
            "assistant/message",
            json!({"message": {"content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{\"x\":1}"}},
                {"function": {"name": "b"}},
                {"id": 7, "function": {"name": 3, "arguments": null}, "name": "n"},
            ]}}),
            true,
        ),
        (
            "assistant/message",
            json!({"message": {"tool_calls": [{"id": "f", "name": "flat", "arguments": "{}"}]}}),
            true,
        ),
        (
            "assistant/message",
            json!({"message": {"tool_calls": [{"name": "n", "function": null, "input": "{"}]}}),
            false,
        ),
        (
            "assistant/message",
            json!({"message": {"tool_calls": [{"name": "n", "arguments": null, "input": "{"}]}}),
            false,
        ),
        (
            "assistant/message",
            json!({"message": {"tool_calls": [{"function": {"name": "n", "arguments": {"a": 1}}}]}}),
            false,
        ),
        (
            "assistant/message",
            json!({"message": {"content": "x", "tool_calls": {"a": 1}}}),
            true,
        ),
        (
            "assistant/message",
            json!({"message": {"content": "x", "tool_calls": [1]}}),
            false,
        ),
        (
            "tool/result",
            json!({"message": {"toolCallId": "c", "toolName": "t", "content": "r", "isError": true}}),
            true,
        ),
        (
            "tool/result",
            json!({"message": {"tool_call_id": "c", "name": "t", "content": "r", "is_error": "true"}}),
            true,
        ),
        (
            "tool/result",
            json!({"message": {"toolCallId": 5, "tool_call_id": "c", "content": null, "is_error": true, "isError": false}}),
            true,
        ),
        ("tool/result", json!({"message": null}), true),
        (
            "tool/result",
            json!({"message": {"content": [{"type": "image"}]}}),
            false,
        ),
    ];
    for (kind, data, expect_flat) in cases {
        let text = build(&[surface(kind, data.clone())]);
        assert_eq!(check(&text), usize::from(expect_flat), "{kind} {data}");
    }
    // a repeated key is the projection's (the last value), never the flat reading's
    let line = r#"{"type":"assistant/message","seq":0,"time":1,"data":{"message":{"content":"x","content":"y"}},"surfaceOp":"append"}"#;
    assert_eq!(check(&format!("{line}\n")), 0);
}

#[test]
fn a_tool_result_takes_its_call_id_and_name_flat() {
    let text = build(&[
        surface(
            "assistant/message",
            json!({"message": {"tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": "{}"}}]}}),
        ),
        (
            "tool/call",
            json!({"callId": "c1", "name": "bash", "arguments": "{}"}),
            None,
            None,
        ),
        (
            "tool/result",
            json!({"message": {"content": "ok"}}),
            Some(json!("append")),
            Some(vec![1]),
        ),
    ]);
    assert_eq!(check(&text), 2);
}

/// The strings the generated events are made of.
const STRINGS: &[&str] = &["", "x", "{", "a\"\\b\u{e9}", "text"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]
    #[test]
    fn generated_events_read_flat_as_projected(
        kind in prop_oneof![Just("system/message"), Just("user/message"), Just("assistant/message"), Just("tool/result")],
        message in arb::value(arb::KEYS, STRINGS, 6),
        content in arb::value(arb::KEYS, STRINGS, 6),
        name in arb::leaf(STRINGS),
    ) {
        let data = json!({"message": message, "content": content, "name": name});
        check(&build(&[surface(kind, data)]));
    }
}
