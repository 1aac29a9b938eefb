//! Messages are checked on every write path (issue 14, item 4) and batch writes are all or
//! nothing (item 3); non-text content is kept and derived as given (item 2).
mod common;
use foldlog_core::log::NewEvent;
use foldlog_core::{EventLog, SurfaceOp};
use serde_json::{json, Value};

fn refused(log: &mut EventLog, m: Value) -> String {
    let before = log.len();
    let err = log
        .add_message(&m, 1)
        .expect_err(&format!("{m} was accepted"));
    assert_eq!(log.len(), before, "nothing is recorded when {m} is refused");
    err.to_string()
}

#[test]
fn wrong_content_is_refused_naming_the_place() {
    let mut log = EventLog::new(None);
    for (m, says) in [
        (
            json!({"role": "user", "content": 42}),
            "content must be a string or a list of content blocks, got a number (42)",
        ),
        (
            json!({"role": "user", "content": {"a": 1}}),
            "content must be a string or a list",
        ),
        (
            json!({"role": "user", "content": null}),
            "content must be a string or a list",
        ),
        (json!({"role": "user"}), "content is missing"),
        (
            json!({"role": "system", "content": null}),
            "invalid system message: content",
        ),
        (
            json!({"role": "user", "content": [1, 2]}),
            "content[0] must be a content block",
        ),
        (
            json!({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": 1}]}),
            "content[1].type must be a string",
        ),
        (
            json!({"role": "user", "content": [{"text": "no type"}]}),
            "content[0].type is missing",
        ),
        (
            json!({"role": "user", "content": [{"type": "text"}]}),
            "content[0].text is missing",
        ),
        (
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"detail": "low"}}]}),
            "content[0].image_url.url is missing",
        ),
        (
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x", "detail": "max"}}]}),
            "content[0].image_url.detail must be \"low\", \"high\" or \"auto\"",
        ),
        (
            json!({"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAA"}}]}),
            "content[0].input_audio.format is missing",
        ),
        (
            json!({"role": "user", "content": [{"type": "file", "file": {"filename": "a.pdf"}}]}),
            "content[0].file needs a \"file_data\" or a \"file_id\"",
        ),
        (
            json!({"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "AAA"}}]}),
            "content[0].source.media_type is missing",
        ),
        (
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": ""}}]}),
            "content[0].image_url.url must not be empty",
        ),
        (
            json!({"role": "tool", "tool_call_id": "c", "content": [{"type": "input_audio", "input_audio": {"data": "AAA", "format": ""}}]}),
            "content[0].input_audio.format must not be empty",
        ),
        (
            json!({"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}]}),
            "content[0].source.data must not be empty",
        ),
        (
            json!({"role": "user", "content": [{"type": "document", "source": {"type": "url", "url": ""}}]}),
            "content[0].source.url must not be empty",
        ),
        (
            json!({"role": "user", "content": "x", "name": 5}),
            "name must be a string",
        ),
        (
            json!({"role": "assistant", "content": "x", "tool_calls": "nope"}),
            "tool_calls must be a list of tool calls, got a string",
        ),
        (
            json!({"role": "assistant", "content": "x", "tool_calls": [7]}),
            "tool_calls[0] must be a tool call object",
        ),
        (
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": {"arguments": "{}"}}]}),
            "tool_calls[0].function.name is missing",
        ),
        (
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": {"name": 3}}]}),
            "tool_calls[0].function.name must be a string",
        ),
        (
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "f", "arguments": [1]}]}),
            "tool_calls[0].arguments must be a string (JSON text) or an object",
        ),
        (
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": 1, "name": "f"}]}),
            "tool_calls[0].id must be a string",
        ),
        (
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": "f"}]}),
            "tool_calls[0].function must be an object",
        ),
        (
            json!({"role": "assistant", "content": null}),
            "invalid assistant message: content",
        ),
        (
            json!({"role": "assistant", "content": "x", "reasoning_content": 1}),
            "reasoning_content must be a string",
        ),
        (
            json!({"role": "tool", "content": "out"}),
            "toolCallId is missing",
        ),
        (
            json!({"role": "tool", "tool_call_id": 3, "content": "out"}),
            "tool_call_id must be a string",
        ),
        (
            json!({"role": "tool", "tool_call_id": "a", "content": null}),
            "content must be a string or a list",
        ),
        (
            json!({"role": "tool", "tool_call_id": "a", "content": "x", "isError": "no"}),
            "isError must be true or false",
        ),
        (
            json!({"role": "robot", "content": "x"}),
            "unknown message role \"robot\"",
        ),
        (json!({"content": "x"}), "needs a string \"role\""),
        (json!("hi"), "must be a JSON object"),
    ] {
        let err = refused(&mut log, m.clone());
        assert!(err.contains(says), "{m}: {err:?} does not say {says:?}");
    }
}

#[test]
fn real_shapes_are_accepted_as_given() {
    let mut log = EventLog::new(None);
    let png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let accepted = [
        json!({"role": "system", "content": "sys"}),
        json!({"role": "user", "content": "hi", "name": "ann", "source": "inbox"}),
        json!({"role": "user", "content": []}),
        json!({"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": png, "detail": "high"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc"}},
            {"type": "video_url", "video_url": {"url": "https://x"}}
        ]}),
        // assistant: content null with calls (recorded as given), function and flat calls,
        // arguments as text (even cut) or as an object, calls without ids, tool_use blocks
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"a\":"}},
            {"id": "c2", "name": "cat", "arguments": {"path": "x"}},
            {"type": "function", "function": {"name": "", "arguments": ""}}
        ]}),
        json!({"role": "assistant", "content": "", "tool_calls": null, "reasoning_content": null}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "I'll look"}, {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]}),
        json!({"role": "tool", "tool_call_id": "c1", "name": "ls", "content": "out"}),
        json!({"role": "tool", "toolCallId": "c2", "toolName": "cat", "content": [
            {"type": "text", "text": "screenshot:"},
            {"type": "image_url", "image_url": {"url": png}}
        ], "isError": false}),
    ];
    for m in &accepted {
        log.add_message(m, 1)
            .unwrap_or_else(|e| panic!("{m} refused: {e}"));
    }
    let events = log.events().to_vec();
    assert!(
        events[4].data()["message"]["content"].is_null(),
        "None stays None in the log"
    );
    let derived = log.messages().to_vec();
    // text only: joined into a string as before; any non-text block: the list, unchanged
    assert_eq!(derived[2]["content"], json!(""));
    assert_eq!(derived[3]["content"], accepted[3]["content"]);
    let tool = derived.iter().rev().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["content"], accepted[8]["content"]);
}

#[test]
fn append_checks_surface_data_too() {
    let mut log = EventLog::new(None);
    for (kind, data, says) in [
        (
            "user/message",
            json!({"role": "user", "content": 42}),
            "invalid user/message data: content must be",
        ),
        (
            "user/message",
            json!({"role": "assistant", "content": "x"}),
            "role must be \"user\"",
        ),
        (
            "system/message",
            json!({"content": [1]}),
            "invalid system/message data: content[0]",
        ),
        (
            "assistant/message",
            json!({"turn": 1, "step": 1}),
            "message is missing",
        ),
        (
            "assistant/message",
            json!({"message": {"role": "assistant", "content": "x", "tool_calls": "nope"}}),
            "message.tool_calls must be a list",
        ),
        (
            "tool/result",
            json!({"message": {"role": "tool", "content": "x"}}),
            "message.toolCallId is missing",
        ),
        (
            "tool/result",
            json!({"message": {"role": "tool", "toolCallId": "a", "content": [{"type": "text", "text": 1}]}}),
            "message.content[0].text must be a string",
        ),
    ] {
        let err = log
            .append(kind, &data, 1, Some(SurfaceOp::Append), None)
            .expect_err(kind);
        assert!(err.to_string().contains(says), "{kind} {data}: {err}");
        assert!(log.is_empty());
    }
    // other events are not messages: only their being objects is checked
    log.append("tool/call", &json!({"callId": 1}), 1, None, None)
        .unwrap();
}

#[test]
fn a_refused_replace_changes_nothing() {
    let mut log = EventLog::new(None);
    log.add_message(&json!({"role": "system", "content": "old"}), 1)
        .unwrap();
    log.add_message(&json!({"role": "user", "content": "a"}), 1)
        .unwrap();
    let before: Vec<Value> = log.messages().iter().map(|m| (**m).clone()).collect();
    let (len, version) = (log.len(), log.rewrite_version());
    let err = log
        .replace_messages(
            &[
                json!({"role": "system", "content": "new"}),
                json!({"role": "user", "content": "kept"}),
                json!({"role": "user", "content": null}),
            ],
            2,
        )
        .unwrap_err();
    assert_eq!(err.index, 2);
    assert!(
        err.error.to_string().contains("content must be"),
        "{}",
        err.error
    );
    assert_eq!((log.len(), log.rewrite_version()), (len, version));
    let after: Vec<Value> = log.messages().iter().map(|m| (**m).clone()).collect();
    assert_eq!(after, before);
    // and a good one goes through in one piece
    let seqs = log
        .replace_messages(
            &[
                json!({"role": "system", "content": "new"}),
                json!({"role": "user", "content": "kept"}),
            ],
            3,
        )
        .unwrap();
    assert_eq!(seqs, [2, 3]);
    assert_eq!(log.rewrite_version(), version + 1);
    assert_eq!(common::roles(&mut log), ["system", "user"]);
}

#[test]
fn a_batch_with_a_bad_surface_op_late_changes_nothing() {
    let mut log = EventLog::new(None);
    log.add_message(&json!({"role": "user", "content": "a"}), 1)
        .unwrap();
    // a user message with this content, placed by `op`
    let item = |content: &str, op: SurfaceOp, sources: Option<Vec<u64>>| NewEvent {
        kind: "user/message".into(),
        data: json!({"role": "user", "content": content}),
        time: 2,
        surface_op: Some(op),
        sources,
    };
    let batch = vec![
        item("b", SurfaceOp::Append, None),
        // replaces seq 0 and 1 (this batch's first event): fine on the scratch surface
        item(
            "c",
            SurfaceOp::Replace { start: 0, end: 1 },
            Some(vec![0, 1]),
        ),
        // names a seq that the replace above removed
        item("d", SurfaceOp::Insert { after: 1 }, None),
    ];
    let err = log.append_batch(batch).unwrap_err();
    assert_eq!(err.index, 2);
    assert!(
        err.error.to_string().contains("not on the surface"),
        "{}",
        err.error
    );
    assert_eq!((log.len(), log.rewrite_version()), (1, 0));
    assert_eq!(log.surface().nodes(), [0]);
    // sources must name earlier events, counted from the batch's own seqs
    let bad = vec![item("x", SurfaceOp::Append, Some(vec![1]))];
    assert_eq!(log.append_batch(bad).unwrap_err().index, 0);
    let ok = vec![
        item("b", SurfaceOp::Append, None),
        item("c", SurfaceOp::Replace { start: 1, end: 1 }, Some(vec![1])),
    ];
    assert_eq!(log.append_batch(ok).unwrap(), [1, 2]);
    assert_eq!(log.surface().nodes(), [0, 2]);
    assert_eq!(log.rewrite_version(), 1);
}

#[test]
fn has_content_ignores_an_empty_assistant_message() {
    let mut log = EventLog::new(None);
    log.add_message(&json!({"role": "system", "content": "s"}), 1)
        .unwrap();
    log.add_message(&json!({"role": "assistant", "content": ""}), 1)
        .unwrap();
    assert!(
        !log.has_content(),
        "an empty reply kept for its usage is not content"
    );
    log.add_message(&json!({"role": "user", "content": "hi"}), 1)
        .unwrap();
    assert!(log.has_content());
}

/// A tool's returned blocks: the message rule for each block, plus at least one block, each of
/// a type every provider family sends (`validate::tool_blocks`, behind `foldlog.tools.content`).
#[test]
fn a_tools_blocks_are_checked_by_the_message_rule_and_its_own_two() {
    use foldlog_core::event::validate::tool_blocks;
    let png = "data:image/png;base64,iVBORw0KGgo=";
    tool_blocks(&json!([{"type": "text", "text": "the page"}, {"type": "image_url", "image_url": {"url": png}}]))
        .expect("text and an image");
    tool_blocks(&json!([{"type": "image", "source": {"type": "file", "file_id": "f"}}]))
        .expect("a source type the rule does not know is kept, as in a message");
    for (blocks, says) in [
        (json!({"type": "text"}), "content must be a list of content blocks, got an object"),
        (json!([]), "content must hold at least one content block"),
        (json!([1]), "content[0] must be a content block"),
        (
            json!([{"type": "text", "text": "x"}, {"type": "image_url", "image_url": png}]),
            "content[1].image_url must be an object, got a string",
        ),
        (
            json!([{"type": "text", "text": "ok"}, {"type": "video", "video": {}}]),
            "content[1].type must be one of text, image_url, input_audio, file, image, document (the blocks a tool may return), got \"video\"",
        ),
        (
            json!([{"type": "thinking", "thinking": "hm"}]),
            "content[0].type must be one of",
        ),
        (
            json!([{"type": "file", "file": {"filename": "a.pdf"}}]),
            "content[0].file needs a \"file_data\" or a \"file_id\"",
        ),
    ] {
        let err = tool_blocks(&blocks).expect_err(&format!("{blocks} was accepted")).to_string();
        assert!(err.contains(says), "{blocks}: {err}");
    }
    // the same blocks in a message: a type the providers may not send is kept as given there
    let mut log = EventLog::new(None);
    let video =
        json!({"role": "tool", "tool_call_id": "c", "content": [{"type": "video", "video": {}}]});
    log.add_message(&video, 1)
        .expect("a message keeps unknown block types");
}
