//! Request bodies from cached message JSON: Python-identical serialisation, the segment reader,
//! and the cache across appends, rewrites and normalizer changes.
mod common;

use foldlog_core::body::{self, py_float_repr, BodyCursor, WireBody, WireStyle};
use foldlog_core::event::SurfaceOp;
use foldlog_core::{wire, EventLog};
use serde_json::{json, Value};

fn dumps(v: &Value) -> String {
    let mut out = Vec::new();
    body::write_value(v, &mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn floats_are_written_as_python_repr() {
    let cases = [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (0.1, "0.1"),
        (1.5e-5, "1.5e-05"),
        (0.0001, "0.0001"),
        (1e16, "1e+16"),
        (1e15, "1000000000000000.0"),
        (123456.789, "123456.789"),
        (-2.5e-300, "-2.5e-300"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (5e-324, "5e-324"),
        (12345678901234567.0, "1.2345678901234568e+16"),
    ];
    for (f, want) in cases {
        assert_eq!(py_float_repr(f), want, "repr of {f:e}");
    }
}

#[test]
fn strings_and_objects_are_written_as_python_json_dumps() {
    let v = json!({"b": "é\"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f}", "a": [1, -2, 2.5, null, true], "ä": {}, "Z": []});
    assert_eq!(
        dumps(&v),
        r#"{"Z":[],"a":[1,-2,2.5,null,true],"b":"é\"\\\n\r\t\b\f\u0001\u001f"#.to_string()
            + "\u{7f}"
            + r#"","ä":{}}"#
    );
}

#[test]
fn styles_strip_or_keep_the_reasoning() {
    let call = json!({"role": "assistant", "content": "", "reasoning_content": "think",
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
    let plain = json!({"role": "assistant", "content": "hi", "reasoning_content": "think"});
    let bare = json!({"role": "assistant", "content": "",
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
    let s = |m: &Value, st| String::from_utf8(body::message_json(m, st)).unwrap();
    assert!(s(&call, WireStyle::Keep).contains(r#""reasoning_content":"think""#));
    assert!(!s(&call, WireStyle::Strip).contains("reasoning_content"));
    assert!(s(&call, WireStyle::WithCalls).contains(r#""reasoning_content":"think""#));
    assert!(!s(&plain, WireStyle::WithCalls).contains("reasoning_content"));
    assert!(s(&bare, WireStyle::WithCalls).contains(r#""reasoning_content":"","role""#));
}

#[test]
fn chat_styles_leave_out_the_messages_api_keys() {
    let thinking = json!({"role": "assistant", "content": "a", "reasoning_content": "t",
        "thinking_blocks": [{"type": "thinking", "thinking": "t", "signature": "sig"}],
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
    let failed = json!({"role": "tool", "tool_call_id": "c", "name": "f", "content": "boom", "is_error": true});
    let s = |m: &Value, st| String::from_utf8(body::message_json(m, st)).unwrap();
    assert!(s(&thinking, WireStyle::Keep).contains(r#""signature":"sig""#));
    assert!(s(&failed, WireStyle::Keep).contains(r#""is_error":true"#));
    for style in [WireStyle::Strip, WireStyle::WithCalls] {
        assert!(
            !s(&thinking, style).contains("thinking_blocks"),
            "{style:?}"
        );
        assert!(!s(&failed, style).contains("is_error"), "{style:?}");
    }
    // DeepSeek's reasoning stays on the call turn
    assert!(s(&thinking, WireStyle::WithCalls).contains(r#""reasoning_content":"t""#));
}

#[test]
fn thinking_blocks_and_failed_results_are_derived() {
    let mut log = EventLog::new(None);
    let block = json!({"type": "redacted_thinking", "data": "opaque"});
    log.add_message(&json!({"role": "user", "content": "q"}), 0)
        .unwrap();
    log.add_message(&json!({"role": "assistant", "content": "", "thinking_blocks": [block],
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}), 0)
        .unwrap();
    log.add_message(
        &json!({"role": "tool", "tool_call_id": "c", "content": "boom", "is_error": true}),
        0,
    )
    .unwrap();
    let derived = log.messages();
    assert_eq!(derived[1]["thinking_blocks"], json!([block]));
    assert_eq!(derived[2]["is_error"], json!(true));
    let bad = json!({"role": "assistant", "content": "a", "thinking_blocks": [{"type": "thinking", "thinking": "t"}]});
    let err = log.add_message(&bad, 0).unwrap_err().to_string();
    assert!(
        err.contains("thinking_blocks[0].signature is missing"),
        "{err}"
    );
}

fn seg_body(parts: &[&str]) -> WireBody {
    let segs: Vec<body::Segment> = parts.iter().map(|p| p.as_bytes().into()).collect();
    let len = body::joined_len(&segs);
    let messages = body::WireMessages {
        style: WireStyle::Keep,
        messages: body::Messages::owned(segs),
        len,
    };
    WireBody::new(b"{\"messages\":[", messages, b"],\"x\":1}")
}

#[test]
fn the_reader_gives_the_same_bytes_at_every_chunk_size() {
    let body = seg_body(&["{\"a\":1}", "{\"bb\":22}", "{}"]);
    let whole = b"{\"messages\":[{\"a\":1},{\"bb\":22},{}],\"x\":1}".to_vec();
    assert_eq!(body.len(), whole.len());
    assert_eq!(body.to_vec(), whole);
    for size in 1..=whole.len() + 1 {
        let mut cursor = BodyCursor::default();
        let mut out = Vec::new();
        let mut pieces = 0;
        loop {
            let mut piece = Vec::new();
            if !body.fill(&mut cursor, size, &mut piece) {
                break;
            }
            assert!(piece.len() <= size && !piece.is_empty());
            out.extend(piece);
            pieces += 1;
        }
        assert_eq!(out, whole, "chunk size {size}");
        assert_eq!(pieces, whole.len().div_ceil(size));
    }
    assert_eq!(
        seg_body(&[]).to_vec(),
        b"{\"messages\":[],\"x\":1}".to_vec()
    );
}

/// The body the cache gives equals serialising the normalized messages from scratch.
fn check(log: &mut EventLog) {
    for style in WireStyle::ALL {
        let fresh: Vec<Vec<u8>> = wire::normalize_for_send(&log.messages()[..])
            .iter()
            .map(|m| body::message_json(m, style))
            .collect();
        let want = [b"[".to_vec(), fresh.join(&b","[..]), b"]".to_vec()].concat();
        let got = WireBody::new(b"[", log.wire_messages(style), b"]").to_vec();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            String::from_utf8(want).unwrap()
        );
    }
}

#[test]
fn cached_bodies_follow_appends_rewrites_and_normalizer_changes() {
    let mut log = common::load(common::SEED);
    check(&mut log);
    let held = log.wire_messages(WireStyle::Strip);
    let held_bytes = WireBody::new(b"", held.clone(), b"").to_vec();
    let t = 2000;
    log.add_message(&json!({"role": "user", "content": "next"}), t)
        .unwrap();
    log.add_message(
        &json!({"role": "assistant", "content": "", "reasoning_content": "r",
                "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
        t,
    )
    .unwrap();
    // a call without its result: the normalizer fills a placeholder
    check(&mut log);
    let seq = log
        .add_message(
            &json!({"role": "tool", "tool_call_id": "c9", "name": "ls", "content": "a b"}),
            t,
        )
        .unwrap();
    check(&mut log);
    // an earlier snapshot is not changed by later appends
    assert_eq!(WireBody::new(b"", held, b"").to_vec(), held_bytes);
    let first = log.derived_seqs()[0];
    let removed: Vec<u64> = log.derived_seqs().to_vec();
    let (kind, data) = log
        .message_event(&json!({"role": "user", "content": "digest"}))
        .unwrap();
    let op = SurfaceOp::Fold {
        start: first,
        end: seq,
        keep: vec![],
    };
    log.append(kind, &data, t, Some(op), Some(removed)).unwrap();
    check(&mut log);
    log.add_message_with(
        &json!({"role": "user", "content": "fresh start"}),
        t,
        SurfaceOp::Reset { keep: vec![] },
    )
    .unwrap();
    check(&mut log);
    log.add_message(&json!({"role": "assistant", "content": "ok"}), t)
        .unwrap();
    check(&mut log);
}

/// The segments of `messages`, each on its own (from the body read whole).
fn segments_of(messages: &body::WireMessages) -> Vec<Vec<u8>> {
    let joined = WireBody::new(b"[", messages.clone(), b"]").to_vec();
    let parsed: Vec<Value> = serde_json::from_slice(&joined).unwrap();
    let style = messages.style;
    parsed
        .iter()
        .map(|m| body::message_json(m, style))
        .collect()
}

#[test]
fn replaced_segments_are_sent_in_place_of_the_cached_ones() {
    let mut log = common::load(common::SEED);
    let messages = log.wire_messages(WireStyle::Strip);
    let mut want = segments_of(&messages);
    let last = want.len() - 1;
    assert!(last > 1, "the seed derives a few messages");
    let replacing = |i: usize, text: &str| (i, body::Segment::from(text.as_bytes()));
    // the same index twice: the later one wins, and the length follows
    let out = messages
        .replacing(vec![
            replacing(0, "{\"a\":1}"),
            replacing(last, "{}"),
            replacing(0, "{\"b\":22}"),
        ])
        .unwrap();
    want[0] = b"{\"b\":22}".to_vec();
    want[last] = b"{}".to_vec();
    let out = out.replacing(vec![replacing(1, "[1]")]).unwrap();
    want[1] = b"[1]".to_vec();
    let whole = [
        b"{\"messages\":[".to_vec(),
        want.join(&b","[..]),
        b"]}".to_vec(),
    ]
    .concat();
    let body = WireBody::new(b"{\"messages\":[", out, b"]}");
    assert_eq!(body.len(), whole.len());
    assert_eq!(body.to_vec(), whole);
    for size in [1, 7, 64] {
        let mut cursor = BodyCursor::default();
        let mut read = Vec::new();
        while body.fill(&mut cursor, size, &mut read) {}
        assert_eq!(read, whole, "chunk size {size}");
    }
    // the request it was taken from is unchanged, and an index past the end is refused
    assert_eq!(
        segments_of(&messages)[0],
        segments_of(&log.wire_messages(WireStyle::Strip))[0]
    );
    assert!(messages
        .replacing(vec![replacing(last + 1, "{}")])
        .is_none());
}
