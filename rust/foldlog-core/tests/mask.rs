//! The `mask` surface op (docs/log-format.md): a tool result's stub takes its node's place,
//! the result stays in the log; checked, replayed from bytes, left alone by the load repair.
mod common;

use common::{load, SEED};
use foldlog_core::surface::mask;
use foldlog_core::{reader, repair, SurfaceOp};
use serde_json::{json, Value};

/// The SEED with its tool result (seq 7) masked by event 10.
fn masked_log_text() -> String {
    let stub = mask::stub(
        "bash",
        "{\"command\":\"grep example README.md\"}",
        3,
        7,
        None,
        &[],
    );
    let line = json!({
        "type": "tool/result", "seq": 10, "time": 1755000000100_i64,
        "data": {"turn": 1, "step": 1, "masked": {"seq": 7, "tokens": 3},
                 "message": {"role": "tool", "toolCallId": "call_1", "toolName": "bash", "content": stub}},
        "surfaceOp": {"op": "mask", "seq": 7}, "sourceEventSeqs": [7]
    });
    format!("{SEED}{line}\n")
}

#[test]
fn mask_parses_and_serialises() {
    let op = SurfaceOp::from_value(&json!({"op": "mask", "seq": 7})).unwrap();
    assert_eq!(op, SurfaceOp::Mask { seq: 7 });
    assert_eq!(op.to_value(), json!({"op": "mask", "seq": 7}));
    assert!(op.rewrites());
    assert!(SurfaceOp::from_value(&json!({"op": "mask"})).is_err());
}

#[test]
fn mask_takes_the_place_of_the_result_and_keeps_the_call() {
    let mut log = load(SEED);
    let before = log.messages();
    let data = json!({"message": {"role": "tool", "toolCallId": "call_1", "toolName": "bash",
                                  "content": mask::stub("bash", "{}", 3, 7, None, &[])}});
    let seq = log
        .append(
            "tool/result",
            &data,
            1,
            Some(SurfaceOp::Mask { seq: 7 }),
            Some(vec![7]),
        )
        .unwrap();
    assert_eq!(log.surface().nodes(), &[2, 5, seq]);
    let after = log.messages();
    assert_eq!(after.len(), before.len());
    assert_eq!(after[1], before[1], "the call is kept");
    let text = after[2]["content"].as_str().unwrap();
    assert!(text.starts_with(mask::MASKED_PREFIX), "{text}");
    assert!(text.contains("seq 7 in the log"));
    assert_eq!(
        log.event(7).unwrap().data()["message"]["content"],
        "example"
    );
}

#[test]
fn mask_is_refused_unless_a_result_replaces_a_result_on_the_surface() {
    let mut log = load(SEED);
    let result =
        json!({"message": {"role": "tool", "toolCallId": "call_1", "content": "[masked]"}});
    let user = json!({"role": "user", "content": "x"});
    // not a tool result being masked: the user's message
    assert!(log
        .append(
            "tool/result",
            &result,
            1,
            Some(SurfaceOp::Mask { seq: 2 }),
            Some(vec![2])
        )
        .is_err());
    // a user message cannot stand in for a result
    assert!(log
        .append(
            "user/message",
            &user,
            1,
            Some(SurfaceOp::Mask { seq: 7 }),
            Some(vec![7])
        )
        .is_err());
    // the masked seq must be a source
    assert!(log
        .append(
            "tool/result",
            &result,
            1,
            Some(SurfaceOp::Mask { seq: 7 }),
            None
        )
        .is_err());
    assert_eq!(log.len(), 10, "nothing recorded");
    log.append(
        "tool/result",
        &result,
        1,
        Some(SurfaceOp::Mask { seq: 7 }),
        Some(vec![7]),
    )
    .unwrap();
    // masked once: seq 7 is no longer on the surface
    assert!(log
        .append(
            "tool/result",
            &result,
            1,
            Some(SurfaceOp::Mask { seq: 7 }),
            Some(vec![7])
        )
        .is_err());
}

#[test]
fn a_masked_log_replays_from_bytes_and_needs_no_repair() {
    let text = masked_log_text();
    let mut log = reader::read(text.as_bytes()).expect("loads").log;
    assert_eq!(log.surface().nodes(), &[2, 5, 10]);
    let messages: Vec<Value> = log.messages().iter().map(|m| json!(m)).collect();
    assert_eq!(messages[2]["tool_call_id"], "call_1");
    assert!(messages[2]["content"]
        .as_str()
        .unwrap()
        .starts_with(mask::MASKED_PREFIX));
    assert!(
        repair::plan(&mut log).is_empty(),
        "the call still has its (masked) result"
    );
    // a cut final line after the mask: the load keeps the mask and drops only the cut line
    let cut = format!("{text}{{\"type\":\"user/mess");
    let mut loaded = reader::read(cut.as_bytes()).expect("a cut last line is repaired");
    assert_eq!(loaded.log.surface().nodes(), &[2, 5, 10]);
    let _ = loaded.log.messages();
}
