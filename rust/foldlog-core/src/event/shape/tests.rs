//! A shape says what `project::project` derives: checked on hand-written odd events and on
//! generated ones (the corpus check is in `tests/load_equivalence.rs`).
use proptest::prelude::*;
use serde_json::{json, Value};

use super::{arb, role_of_kind, DataSeen, Role, Shape};
use crate::event::Event;
use crate::project::project;
use crate::repair::json_close::close_json;

/// Asserts that the shape read from `line` agrees with the projection of its event.
pub(crate) fn check(line: &str) {
    let ev = Event::parse(line).expect("a valid event");
    let role = role_of_kind(ev.kind()).expect("a surface event");
    let data: DataSeen = sonic_rs::from_str(ev.data_json()).expect("data reads");
    let shape = Shape::of(role, &data, line);
    let projected = project(&ev, |_| None);
    assert_eq!(shape.silent, projected.is_none(), "silent: {line}");
    let Some(m) = projected else { return };
    assert_eq!(m["role"], role.as_str(), "{line}");
    assert_eq!(shape.blocks, m["content"].is_array(), "blocks: {line}");
    let calls = m
        .get("tool_calls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    assert_eq!(shape.call_count(), calls.len(), "calls: {line}");
    for (k, c) in calls.iter().enumerate() {
        assert_eq!(
            shape.call_id(k, ev.seq, line),
            c["id"].as_str().unwrap(),
            "id: {line}"
        );
        assert_eq!(
            shape.call_name(k, line),
            c["function"]["name"],
            "name: {line}"
        );
        let args = c["function"]["arguments"].as_str().unwrap();
        assert_eq!(
            shape.calls()[k].args_ok,
            close_json(args).is_none(),
            "args: {line}"
        );
    }
    let id = shape.id(line);
    let name = shape.name(line);
    if role == Role::Tool {
        assert_eq!(id, m.get("tool_call_id").and_then(Value::as_str), "{line}");
    }
    assert_eq!(name, m.get("name").and_then(Value::as_str), "{line}");
}

fn line(kind: &str, data: &str) -> String {
    format!(r#"{{"type":"{kind}","seq":3,"time":0,"data":{data},"surfaceOp":"append"}}"#)
}

#[test]
fn odd_events_agree_with_the_projection() {
    let cases = [
        ("assistant/message", r#"{"message":{"content":""}}"#),
        (
            "assistant/message",
            r#"{"message":{"content":null,"tool_calls":[]}}"#,
        ),
        ("assistant/message", r#"{"message":"text"}"#),
        (
            "assistant/message",
            r#"{"message":{"content":[{"type":"text"}]}}"#,
        ),
        (
            "assistant/message",
            r#"{"message":{"content":[{"type":"text","text":""},""]}}"#,
        ),
        (
            "assistant/message",
            r#"{"message":{"content":[{"type":5,"text":"x"}]}}"#,
        ),
        ("assistant/message", r#"{"message":{"content":[null]}}"#),
        ("assistant/message", r#"{"message":{"content":{"a":1}}}"#),
        ("assistant/message", r#"{"message":{"content":0}}"#),
        (
            "assistant/message",
            r#"{"message":{"content":[{"type":"thinking","thinking":"hm"}]}}"#,
        ),
        (
            "assistant/message",
            r#"{"message":{"content":[{"type":"tool_use","id":"u1","name":"bash","input":{"c":1}}],"tool_calls":[{"id":"c1","function":{"name":"a","arguments":"{\"x\":"}}]}}"#,
        ),
        (
            "assistant/message",
            r#"{"message":{"tool_calls":[1,"x",null,{"name":"n","arguments":null,"input":"{"}]}}"#,
        ),
        (
            "assistant/message",
            r#"{"message":{"tool_calls":[{"function":"f","name":"n","input":"{"}]}}"#,
        ),
        (
            "assistant/message",
            r#"{"message":{"tool_calls":[{"function":{"arguments":{"a":[1]}},"name":"n"}]}}"#,
        ),
        (
            "assistant/message",
            r#"{"message":{"tool_calls":[{"function":{"name":7},"name":"n","id":3}]}}"#,
        ),
        (
            "assistant/message",
            r#"{"message":{"tool_calls":{"a":1},"content":"x"}}"#,
        ),
        // a repeated key keeps its last value, as `serde_json::Value` reads it
        (
            "assistant/message",
            r#"{"message":{"content":"x","content":""}}"#,
        ),
        (
            "assistant/message",
            r#"{"message":{"tool_calls":[{"id":"a","id":"b","function":{"name":"x"},"function":5}]}}"#,
        ),
        (
            "assistant/message",
            r#"{"message":{"content":"caf\u00e9 \"q\"","tool_calls":[{"id":"c\u0031","function":{"name":"b\u0061sh","arguments":"{}"}}]}}"#,
        ),
        (
            "tool/result",
            r#"{"message":{"toolCallId":5,"tool_call_id":"c","toolName":null,"name":"n","content":[{"type":"image"}]}}"#,
        ),
        ("tool/result", r#"{"message":{"content":"r"}}"#),
        ("tool/result", r#"{"message":[1]}"#),
        (
            "user/message",
            r#"{"content":[{"type":"image_url"}],"name":"ann"}"#,
        ),
        ("user/message", r#"{"content":"hi","name":5}"#),
        ("system/message", r#"{"content":[]}"#),
    ];
    for (kind, data) in cases {
        check(&line(kind, data));
    }
}

/// The strings the generated events are made of.
const STRINGS: &[&str] = &["", "x", "{", "{}", "text", "tool_use", "image"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn generated_events_agree_with_the_projection(
        kind in prop_oneof![Just("system/message"), Just("user/message"), Just("assistant/message"), Just("tool/result")],
        message in arb::value(arb::KEYS, STRINGS, 5),
        content in arb::value(arb::KEYS, STRINGS, 5),
        name in arb::leaf(STRINGS),
    ) {
        let data = json!({"message": message, "content": content, "name": name});
        check(&line(kind, &data.to_string()));
    }
}
