//! Content blocks on the send side (wire.rs): importer image / document blocks become chat
//! completions blocks, and a tool result holding images keeps its text while the images go in a
//! user message after the step's results. The cached body segments send the same messages.
use foldlog_core::body::{self, WireStyle};
use foldlog_core::{wire, EventLog};
use proptest::prelude::*;
use serde_json::{json, Value};

const PNG: &str = "iVBORw0KGgo=";

fn image(data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}})
}

fn sent(messages: &[Value]) -> Vec<Value> {
    let mut log = EventLog::new(None);
    for m in messages {
        log.add_message(m, 1).unwrap();
    }
    let out: Vec<Value> = wire::normalize_for_send(&log.messages()[..])
        .iter()
        .map(|m| (**m).clone())
        .collect();
    // the cached segments of every style send exactly these messages
    for style in WireStyle::ALL {
        let segs = log.wire_messages(style);
        assert_eq!(segs.count(), out.len());
        let joined = body::WireBody::new(b"[", segs, b"]").to_vec();
        let want: Vec<Value> = out.iter().map(|m| styled(m, style)).collect();
        let mut bytes = Vec::new();
        body::write_value(&Value::Array(want), &mut bytes);
        assert_eq!(
            String::from_utf8(joined).unwrap(),
            String::from_utf8(bytes).unwrap()
        );
    }
    out
}

fn styled(m: &Value, style: WireStyle) -> Value {
    serde_json::from_slice(&body::message_json(m, style)).unwrap()
}

fn call(id: &str, name: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}})
}

#[test]
fn importer_images_and_documents_become_chat_completions_blocks() {
    let user = json!({"role": "user", "content": [
        {"type": "text", "text": "what is in these?"},
        image(PNG),
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "document", "title": "spec.pdf",
         "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "plain words"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/b.png", "detail": "low"}},
        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
        {"type": "image", "source": {"type": "file", "file_id": "f_1"}},
    ]});
    let out = sent(&[json!({"role": "system", "content": "s"}), user]);
    assert_eq!(
        out[1]["content"],
        json!([
            {"type": "text", "text": "what is in these?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "file", "file": {"filename": "spec.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}},
            {"type": "file", "file": {"filename": "document.pdf", "file_data": "data:application/pdf;base64,JVBE"}},
            {"type": "text", "text": "plain words"},
            {"type": "image_url", "image_url": {"url": "https://example.com/b.png", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
            // a source chat completions has no form for: unchanged, for the provider to refuse
            {"type": "image", "source": {"type": "file", "file_id": "f_1"}},
        ])
    );
}

#[test]
fn messages_without_importer_blocks_are_sent_as_derived() {
    let msgs = [
        json!({"role": "system", "content": "s"}),
        json!({"role": "user", "content": [{"type": "text", "text": "a"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}),
    ];
    let mut log = EventLog::new(None);
    for m in &msgs {
        log.add_message(m, 1).unwrap();
    }
    let plan = wire::plan_send(&log.messages()[..]);
    assert!(plan.iter().all(|s| matches!(s, wire::Sent::Same(_))));
}

#[test]
fn a_tool_result_with_images_keeps_its_text_and_the_images_follow_the_steps_results() {
    let msgs = [
        json!({"role": "system", "content": "s"}),
        json!({"role": "user", "content": "look"}),
        json!({"role": "assistant", "content": "", "tool_calls": [call("c1", "screenshot"), call("c2", "ls")]}),
        json!({"role": "tool", "tool_call_id": "c1", "name": "screenshot", "content": [
            {"type": "text", "text": "the login page"}, image(PNG), {"type": "text", "text": "1280x800"}]}),
        json!({"role": "tool", "tool_call_id": "c2", "name": "ls", "content": "a.txt"}),
        json!({"role": "assistant", "content": "I see it"}),
    ];
    let out = sent(&msgs);
    let roles: Vec<&str> = out.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "user",
            "assistant"
        ]
    );
    assert_eq!(
        out[3]["content"],
        "the login page\n1280x800\n[this result also holds 1 attachment(s) (image); they follow in a user message]"
    );
    assert_eq!(out[4]["content"], "a.txt");
    assert_eq!(
        out[5]["content"],
        json!([
            {"type": "text", "text": "Attachments of the tool result c1 (screenshot):"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
        ])
    );
}

#[test]
fn attachments_of_several_results_share_one_user_message_in_call_order() {
    let msgs = [
        json!({"role": "user", "content": "go"}),
        json!({"role": "assistant", "content": "", "tool_calls": [call("a", "shot"), call("b", "shot")]}),
        // results arrive out of call order: they are placed in call order, and so are attachments
        json!({"role": "tool", "tool_call_id": "b", "name": "shot", "content": [image("BB")]}),
        json!({"role": "tool", "tool_call_id": "a", "name": "shot", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA", "detail": "high"}}]}),
    ];
    let out = sent(&msgs);
    assert_eq!(out.len(), 5);
    assert_eq!(out[2]["tool_call_id"], "a");
    assert_eq!(
        out[2]["content"],
        "[this result also holds 1 attachment(s) (image); they follow in a user message]"
    );
    assert_eq!(
        out[4]["content"],
        json!([
            {"type": "text", "text": "Attachments of the tool result a (shot):"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA", "detail": "high"}},
            {"type": "text", "text": "Attachments of the tool result b (shot):"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,BB"}},
        ])
    );
}

fn arb_content() -> impl Strategy<Value = Value> {
    let block = prop_oneof![
        "[a-z]{0,4}".prop_map(|t| json!({"type": "text", "text": t})),
        "[A-Z]{1,4}".prop_map(|d| image(&d)),
        Just(json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}})),
        Just(
            json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JV"}})
        ),
    ];
    prop_oneof![
        "[a-z]{0,4}".prop_map(Value::from),
        prop::collection::vec(block, 1..4).prop_map(Value::Array),
    ]
}

fn arb_message() -> impl Strategy<Value = Value> {
    // writers require a tool result's id (id-less results only come from loaded logs, covered by
    // log_rules.rs); "d" answers no call: an orphan
    let id = "[a-d]";
    prop_oneof![
        arb_content().prop_map(|c| json!({"role": "user", "content": c})),
        ("[a-z]{0,3}", prop::collection::vec("[a-c]", 0..3)).prop_map(|(t, ids)| {
            let calls: Vec<Value> = ids.iter().map(|i| call(i, "t")).collect();
            json!({"role": "assistant", "content": t, "tool_calls": calls})
        }),
        (id, arb_content()).prop_map(|(id, c)| {
            json!({"role": "tool", "content": c, "name": "t", "tool_call_id": id})
        }),
    ]
}

fn blocks(m: &Value) -> Vec<Value> {
    match &m["content"] {
        Value::Array(b) => b.clone(),
        _ => Vec::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Whatever the history holds: no importer block is sent, a tool message holds only text, each
    /// non-text block of a sent result is in the user message right after its step's results, and
    /// planning from the last cut still equals planning everything.
    #[test]
    fn sent_content_is_what_chat_completions_take(msgs in prop::collection::vec(arb_message(), 0..12)) {
        let mut log = EventLog::new(None);
        let mut stable: Vec<wire::Sent> = Vec::new();
        let mut cut = 0;
        for m in &msgs {
            log.add_message(m, 1).unwrap();
            let derived = log.messages().to_vec();
            let plan = wire::plan_send_from(&derived, cut);
            let mut whole = stable.clone();
            whole.extend(plan.items.iter().cloned());
            let values = |items: &[wire::Sent]| -> Vec<Value> {
                items.iter().map(|s| match s {
                    wire::Sent::Same(i) => (*derived[*i]).clone(),
                    wire::Sent::New(m) => (**m).clone(),
                }).collect()
            };
            prop_assert_eq!(values(&whole), values(&wire::plan_send(&derived)));
            let mut items = plan.items;
            items.truncate(plan.stable_items);
            stable.extend(items);
            cut = plan.cut;
        }
        let out: Vec<Value> = wire::normalize_for_send(&log.messages()[..]).iter().map(|m| (**m).clone()).collect();
        for (k, m) in out.iter().enumerate() {
            for b in blocks(m) {
                let t = b["type"].as_str().unwrap_or("");
                prop_assert!(t != "image" && t != "document", "importer block sent: {}", b);
            }
            if m["role"] == "tool" {
                prop_assert!(m["content"].is_string(), "tool content not text: {}", m);
                let note = m["content"].as_str().unwrap().contains("they follow in a user message");
                if note {
                    // the attachments message is after this step's results
                    let next = out[k + 1..].iter().find(|x| x["role"] != "tool").unwrap();
                    prop_assert_eq!(&next["role"], "user");
                    let id = m["tool_call_id"].as_str().unwrap();
                    let header = format!("{} {} (t):", wire::ATTACHMENTS_OF, id);
                    prop_assert!(blocks(next).iter().any(|b| b["text"] == header.as_str()));
                }
            }
        }
    }
}
