mod common;
use common::*;
use foldlog_core::event::SurfaceOp;
use foldlog_core::store::jsonl;
use foldlog_core::{reader, repair, wire, Error};
use serde_json::json;

/// The error a log is refused with (a panic when it loads).
fn refusal(text: &str) -> Error {
    match reader::read(text.as_bytes()) {
        Err(e) => e,
        Ok(_) => panic!("the log loaded; a refusal was expected"),
    }
}

#[test]
fn seed_example_derives_user_assistant_tool() {
    let mut log = load(SEED);
    assert_eq!(log.len(), 10);
    assert!(log.header().is_none(), "version 0: no header");
    assert_eq!(roles(&mut log), ["user", "assistant", "tool"]);
    let msgs = log.messages().to_vec();
    assert_eq!(msgs[0]["content"], "Fix the typo in the example README.");
    assert_eq!(msgs[1]["content"], "I'll search");
    assert_eq!(msgs[1]["tool_calls"][0]["function"]["name"], "bash");
    assert_eq!(msgs[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        msgs[1]["tool_calls"][0]["function"]["arguments"],
        r#"{"command":"grep example README.md"}"#
    );
    assert_eq!(
        msgs[2],
        std::sync::Arc::new(
            json!({"role":"tool","tool_call_id":"call_1","name":"bash","content":"example"})
        )
    );
    assert!(
        repair::plan(&mut log).is_empty(),
        "a well-formed log needs no repair"
    );
}

#[test]
fn valid_log_round_trips_byte_for_byte() {
    let loaded = reader::read(SEED.as_bytes()).unwrap();
    assert_eq!(
        jsonl::file_bytes(loaded.log.header(), loaded.log.events()),
        SEED.as_bytes()
    );
}

#[test]
fn torn_tail_is_cut_and_reported() {
    let cut = &SEED[..SEED.len() - 20];
    let loaded = reader::read(cut.as_bytes()).unwrap();
    assert_eq!(loaded.log.len(), 9);
    let torn = loaded.torn.expect("torn tail reported");
    assert_eq!(torn.line, 10);
    assert_eq!(loaded.valid_len, torn.offset);
}

#[test]
fn damage_followed_by_valid_events_is_corruption_naming_the_line() {
    let mut lines: Vec<&str> = SEED.lines().collect();
    lines[4] = "{\"type\":\"assistant/chunk\",\"seq\":4,\"ti";
    let text = lines.join("\n");
    assert!(matches!(refusal(&text), Error::Corrupt { line: 5, .. }));
}

#[test]
fn unknown_required_type_is_a_newer_format() {
    let text = format!(
        "{SEED}{}\n",
        r#"{"type":"future/thing","seq":10,"time":1,"data":{}}"#
    );
    let Error::UnsupportedFormat { line, message } = refusal(&text) else {
        panic!("expected a newer format")
    };
    assert_eq!((line, message.contains("newer format")), (11, true));
    let ok = format!(
        "{SEED}{}\n",
        r#"{"type":"future/thing","seq":10,"time":1,"data":{},"ignorable":true}"#
    );
    let loaded = reader::read(ok.as_bytes()).unwrap();
    assert_eq!(loaded.log.len(), 11);
}

#[test]
fn newer_header_version_is_refused() {
    let text = "{\"type\":\"session\",\"version\":9,\"id\":\"x\"}\n";
    assert!(matches!(
        refusal(text),
        Error::UnsupportedFormat { line: 1, .. }
    ));
}

#[test]
fn header_is_read_and_kept() {
    let text = format!(
        "{}\n{SEED}",
        r#"{"type":"session","version":1,"id":"abc","createdAt":1,"parent":null,"meta":{}}"#
    );
    let loaded = reader::read(text.as_bytes()).unwrap();
    assert_eq!(loaded.log.header().unwrap().id.as_deref(), Some("abc"));
    assert_eq!(
        jsonl::file_bytes(loaded.log.header(), loaded.log.events()),
        text.as_bytes()
    );
}

#[test]
fn long_lines_load() {
    let big = "x".repeat(8 << 20);
    let text = build(&[(
        "user/message",
        json!({"role":"user","content": big}),
        Some(json!("append")),
        None,
    )]);
    let mut log = load(&text);
    assert_eq!(
        log.messages()[0]["content"].as_str().unwrap().len(),
        8 << 20
    );
}

#[test]
fn seq_gap_is_corruption() {
    let text = "{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1}}\n{\"type\":\"turn/end\",\"seq\":2,\"time\":1,\"data\":{\"turn\":1}}\n";
    assert!(matches!(refusal(text), Error::Corrupt { line: 2, .. }));
}

#[test]
fn surface_op_rules() {
    let mut log = load(SEED);
    // surface events need a surface op, other events must not carry one
    let d = json!({"role":"user","content":"hi"});
    assert!(log.append("user/message", &d, 1, None, None).is_err());
    assert!(log
        .append(
            "turn/start",
            &json!({"turn":2}),
            1,
            Some(SurfaceOp::Append),
            None
        )
        .is_err());
    // sources must be earlier and unique
    let mut user = |op: SurfaceOp, sources: Option<Vec<u64>>| {
        log.append("user/message", &d, 1, Some(op), sources)
    };
    assert!(user(SurfaceOp::Append, Some(vec![99])).is_err());
    assert!(user(SurfaceOp::Append, Some(vec![1, 1])).is_err());
    // replace must name surface nodes and list them as sources
    assert!(user(SurfaceOp::Replace { start: 3, end: 3 }, Some(vec![3])).is_err());
    assert!(user(SurfaceOp::Replace { start: 2, end: 2 }, None).is_err());
    let before = log.rewrite_version();
    log.append(
        "user/message",
        &d,
        1,
        Some(SurfaceOp::Replace { start: 2, end: 2 }),
        Some(vec![2]),
    )
    .unwrap();
    assert_eq!(log.rewrite_version(), before + 1);
    assert_eq!(log.messages()[0]["content"], "hi");
    assert_eq!(log.len(), 11, "failed appends changed nothing");
}

#[test]
fn fold_keeps_listed_nodes_and_places_the_digest_after_them() {
    let mut log = load(SEED);
    for i in 0..4 {
        log.add_message(&json!({"role":"user","content": format!("u{i}")}), 1)
            .unwrap();
    }
    // surface: 2,5,7,10,11,12,13 ; fold 5..=12 keeping 10
    let digest = json!({"role":"user","content":"<compaction-summary>…</compaction-summary>"});
    let fold = || SurfaceOp::Fold {
        start: 5,
        end: 12,
        keep: vec![10],
    };
    let bad = log.append("user/message", &digest, 1, Some(fold()), Some(vec![5, 7]));
    assert!(bad.is_err(), "every removed node must be a source");
    let sources = Some(vec![5, 7, 11, 12]);
    let seq = log
        .append("user/message", &digest, 1, Some(fold()), sources)
        .unwrap();
    assert_eq!(log.surface().nodes(), &[2, 10, seq, 13]);
    let contents: Vec<_> = log
        .messages()
        .iter()
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(contents[1], "u0");
    assert_eq!(contents[3], "u3");
    // the folded events are still in the log
    assert_eq!(log.event(7).unwrap().kind(), "tool/result");
}

#[test]
fn reset_and_insert() {
    let mut log = load(SEED);
    let s = log
        .append(
            "system/message",
            &json!({"content":"sys"}),
            1,
            Some(SurfaceOp::Reset { keep: vec![] }),
            None,
        )
        .unwrap();
    assert_eq!(log.surface().nodes(), &[s]);
    let u = log
        .add_message(&json!({"role":"user","content":"a"}), 1)
        .unwrap();
    let i = log
        .append(
            "user/message",
            &json!({"role":"user","content":"b"}),
            1,
            Some(SurfaceOp::Insert { after: s }),
            None,
        )
        .unwrap();
    assert_eq!(log.surface().nodes(), &[s, i, u]);
    assert!(
        log.append(
            "user/message",
            &json!({"role":"user","content":"c"}),
            1,
            Some(SurfaceOp::Reset { keep: vec![u, s] }),
            None
        )
        .is_err(),
        "keep must follow surface order"
    );
}

#[test]
fn derivation_is_incremental_and_rebuilds_after_rewrites() {
    let mut log = load(SEED);
    assert_eq!(log.messages().len(), 3);
    let first = log.messages()[0].clone();
    let seqs = log.derived_seqs().to_vec();
    log.add_message(&json!({"role":"assistant","content":"done"}), 1)
        .unwrap();
    assert_eq!(log.messages().len(), 4);
    // messages are built when read (issue 17); what derivation keeps is extended, not redone
    assert_eq!(
        &log.derived_seqs()[..3],
        &seqs[..],
        "old nodes are kept on append"
    );
    assert_eq!(first, log.messages()[0]);
    log.append(
        "system/message",
        &json!({"content":"s"}),
        1,
        Some(SurfaceOp::Reset { keep: vec![2] }),
        None,
    )
    .unwrap();
    assert_eq!(roles(&mut log), ["user", "system"]);
}

#[test]
fn empty_assistant_message_projects_to_nothing() {
    let mut log = load(SEED);
    log.add_message(&json!({"role":"assistant","content":""}), 1)
        .unwrap();
    assert_eq!(log.messages().len(), 3);
}

#[test]
fn add_message_maps_roles() {
    let mut log = load("");
    log.add_message(&json!({"role":"system","content":"s"}), 1)
        .unwrap();
    log.add_message(&json!({"role":"user","content":"u"}), 1)
        .unwrap();
    log.add_message(&json!({"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}), 1).unwrap();
    log.add_message(
        &json!({"role":"tool","tool_call_id":"c1","name":"ls","content":"a b"}),
        1,
    )
    .unwrap();
    assert_eq!(roles(&mut log), ["system", "user", "assistant", "tool"]);
    assert_eq!(log.events()[3].kind(), "tool/result");
    assert_eq!(log.events()[3].data()["message"]["toolCallId"], "c1");
    assert!(log.add_message(&json!({"role":"wizard"}), 1).is_err());
    assert!(log.add_message(&json!("text"), 1).is_err());
}

fn with_calls(
    calls: serde_json::Value,
    results: &[(Option<&str>, &str)],
) -> foldlog_core::EventLog {
    let mut log = load("");
    log.add_message(&json!({"role":"user","content":"go"}), 1)
        .unwrap();
    log.add_message(
        &json!({"role":"assistant","content":"","tool_calls": calls}),
        1,
    )
    .unwrap();
    for (id, name) in results {
        let mut m = json!({"role":"tool","content":"out","name": name});
        if let Some(id) = id {
            m["tool_call_id"] = json!(id);
        }
        common::record(&mut log, &m, 1);
    }
    log
}

fn call(id: &str, name: &str, args: &str) -> serde_json::Value {
    json!({"id": id, "type":"function", "function": {"name": name, "arguments": args}})
}

#[test]
fn repair_fills_empty_names_by_id() {
    let mut log = with_calls(
        json!([call("a", "", "{}"), call("b", "", "{}")]),
        &[(Some("b"), "grep"), (Some("a"), "ls")],
    );
    let report = repair::normalize_on_load(&mut log, 2).unwrap();
    assert_eq!(report.names_filled, 2);
    let m = &log.messages()[1];
    assert_eq!(m["tool_calls"][0]["function"]["name"], "ls");
    assert_eq!(m["tool_calls"][1]["function"]["name"], "grep");
    assert!(repair::plan(&mut log).is_empty(), "repair is idempotent");
}

#[test]
fn repair_fills_empty_names_by_position_when_ids_repeat() {
    let mut log = with_calls(
        json!([call("x", "", "{}"), call("x", "", "{}")]),
        &[(None, "ls"), (None, "grep")],
    );
    repair::normalize_on_load(&mut log, 2).unwrap();
    let m = &log.messages()[1];
    assert_eq!(m["tool_calls"][0]["function"]["name"], "ls");
    assert_eq!(m["tool_calls"][1]["function"]["name"], "grep");
}

#[test]
fn repair_closes_truncated_arguments_in_every_variant() {
    let cases = [
        ("{\"path\":\"src/ma", "{\"path\":\"src/ma\"}"),
        ("{\"a\":1,", "{\"a\":1}"),
        ("{\"a\":", "{\"a\": null}"),
        ("{\"a\":[1,{\"b\":\"x\\", "{\"a\":[1,{\"b\":\"x\"}]}"),
        ("{\"a\"", "{}"),
        ("", ""),
    ];
    for (cut, fixed) in cases {
        let mut log = with_calls(json!([call("a", "read", cut)]), &[(Some("a"), "read")]);
        repair::normalize_on_load(&mut log, 2).unwrap();
        assert_eq!(
            log.messages()[1]["tool_calls"][0]["function"]["arguments"],
            fixed,
            "case {cut:?}"
        );
    }
}

#[test]
fn repair_adds_results_for_dangling_calls_next_to_their_call() {
    let mut log = with_calls(
        json!([call("a", "ls", "{}"), call("b", "cat", "{}")]),
        &[(Some("a"), "ls")],
    );
    log.add_message(&json!({"role":"user","content":"later"}), 1)
        .unwrap();
    let report = repair::normalize_on_load(&mut log, 2).unwrap();
    assert_eq!(report.results_added, 1);
    let msgs = log.messages().to_vec();
    let r: Vec<_> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(r, ["user", "assistant", "tool", "tool", "user"]);
    assert_eq!(msgs[3]["tool_call_id"], "b");
    assert_eq!(msgs[3]["content"], repair::NO_RESULT);
}

#[test]
fn orphan_results_are_kept_on_load_and_dropped_on_send() {
    let mut log = with_calls(
        json!([call("a", "ls", "{}")]),
        &[(Some("a"), "ls"), (Some("zzz"), "ghost")],
    );
    assert!(repair::plan(&mut log).is_empty());
    assert_eq!(log.messages().len(), 4);
    let sent = wire::normalize_for_send(&log.messages()[..]);
    assert_eq!(sent.len(), 3);
}

fn send_placeholders(log: &mut foldlog_core::EventLog) -> usize {
    wire::unanswered_calls(&log.messages()[..])
}

/// The fuzzing finding (docs/fuzzing.md): a result with a foreign id does not answer the call
/// before it; the repair pairs as the send normalizer does and adds the placeholder.
#[test]
fn foreign_id_result_leaves_its_call_dangling() {
    let text = r#"{"type":"user/message","seq":0,"time":1,"data":{"role":"user","content":"hi"},"surfaceOp":"append"}
{"type":"assistant/message","seq":1,"time":1,"data":{"turn":0,"step":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"ls","arguments":"{}"}}]}},"surfaceOp":"append"}
{"type":"tool/result","seq":2,"time":1,"data":{"turn":0,"step":0,"message":{"role":"tool","toolCallId":"zzz","toolName":"ls","content":"out","isError":false}},"surfaceOp":"append"}
"#;
    let mut log = load(text);
    assert_eq!(send_placeholders(&mut log), 1);
    let report = repair::normalize_on_load(&mut log, 2).unwrap();
    assert_eq!(report.results_added, 1);
    assert!(report.dirty());
    let msgs = log.messages().to_vec();
    assert_eq!(
        msgs.len(),
        4,
        "the orphan is kept and the placeholder added"
    );
    assert_eq!(msgs[2]["tool_call_id"], "zzz");
    assert_eq!(msgs[3]["tool_call_id"], "a");
    assert_eq!(msgs[3]["content"], repair::NO_RESULT);
    assert_eq!(send_placeholders(&mut log), 0);
    assert!(repair::plan(&mut log).is_empty());
    let sent = wire::normalize_for_send(&log.messages()[..]);
    assert_eq!(sent.len(), 3, "the orphan is dropped on send");
    assert_eq!(sent[2]["tool_call_id"], "a");
}

#[test]
fn id_less_result_still_pairs_by_position() {
    let mut log = with_calls(
        json!([call("a", "", "{}"), call("b", "cat", "{}")]),
        &[(None, "ls"), (Some("b"), "cat")],
    );
    let report = repair::normalize_on_load(&mut log, 2).unwrap();
    assert_eq!(report.results_added, 0);
    assert_eq!(
        report.names_filled, 1,
        "the name comes from the id-less result"
    );
    assert_eq!(log.messages()[1]["tool_calls"][0]["function"]["name"], "ls");
    assert_eq!(send_placeholders(&mut log), 0);
}

#[test]
fn foreign_id_result_after_an_answered_call_is_an_orphan() {
    let mut log = with_calls(
        json!([call("a", "ls", "{}"), call("b", "", "{}")]),
        &[(Some("a"), "ls"), (Some("zzz"), "ghost")],
    );
    let report = repair::normalize_on_load(&mut log, 2).unwrap();
    assert_eq!(
        report.results_added, 1,
        "b is dangling: zzz answers nothing"
    );
    assert_eq!(report.names_filled, 0, "no name from an orphan");
    let msgs = log.messages().to_vec();
    let ids: Vec<_> = msgs[2..]
        .iter()
        .map(|m| m["tool_call_id"].clone())
        .collect();
    assert_eq!(ids, [json!("a"), json!("zzz"), json!("b")]);
    assert_eq!(msgs[4]["content"], repair::NO_RESULT);
    assert_eq!(send_placeholders(&mut log), 0);
    assert!(repair::plan(&mut log).is_empty());
}

/// Repeated ids across messages: the placeholder added for the second call is a later result
/// with the first call's id, which the send rule prefers to the first call's id-less result;
/// the repair plans again until every call is answered as the send normalizer pairs them.
#[test]
fn repair_reaches_a_fixed_point_when_an_earlier_call_takes_the_placeholder() {
    let mut log = with_calls(json!([call("a", "ls", "{}")]), &[(None, "ls")]);
    log.add_message(&json!({"role":"user","content":"again"}), 1)
        .unwrap();
    log.add_message(
        &json!({"role":"assistant","content":"","tool_calls":[call("a", "ls", "{}")]}),
        1,
    )
    .unwrap();
    assert_eq!(send_placeholders(&mut log), 1);
    let report = repair::normalize_on_load(&mut log, 2).unwrap();
    assert_eq!(report.results_added, 2);
    assert_eq!(send_placeholders(&mut log), 0);
    assert!(repair::plan(&mut log).is_empty());
}

#[test]
fn open_turn_after_a_crash_is_closed_as_interrupted() {
    let lines: Vec<&str> = SEED.lines().take(7).collect(); // through tool/call, before its result
    let text = lines.join("\n") + "\n";
    let mut log = load(&text);
    let report = repair::normalize_on_load(&mut log, 2).unwrap();
    assert!(report.turn_closed);
    assert_eq!(report.results_added, 1);
    let kinds: Vec<_> = log.events()[7..]
        .iter()
        .map(|e| e.kind().to_string())
        .collect();
    assert_eq!(kinds, ["tool/result", "step/end", "turn/end"]);
    assert_eq!(log.events()[9].data()["reason"]["kind"], "interrupted");
    assert_eq!(log.events()[7].sources(), Some(&[6u64][..]));
    assert!(log.open_turn().is_none());
}

#[test]
fn send_normalizer_pairs_names_and_fills() {
    let mut log = with_calls(
        json!([call("a", "ls", "{}"), call("b", "cat", "{}")]),
        &[(Some("b"), "wrong"), (None, "x")],
    );
    let sent = wire::normalize_for_send(&log.messages()[..]);
    let r: Vec<_> = sent
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m.get("tool_call_id").cloned(),
                m.get("name").cloned(),
            )
        })
        .collect();
    assert_eq!(r[2], ("tool".into(), Some(json!("a")), Some(json!("ls"))));
    assert_eq!(r[3], ("tool".into(), Some(json!("b")), Some(json!("cat"))));
    assert_eq!(sent.len(), 4);
    let mut dangling = with_calls(json!([call("a", "ls", "{}")]), &[]);
    let sent = wire::normalize_for_send(&dangling.messages()[..]);
    assert_eq!(sent[2]["content"], repair::NO_RESULT);
}

#[test]
fn repair_is_idempotent_with_shared_and_missing_ids() {
    let mut log = load("");
    log.add_message(&json!({"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"","arguments":"{}"}}, call("a", "", "{}")]}), 1).unwrap();
    log.add_message(
        &json!({"role":"assistant","content":"","tool_calls":[call("a", "a", "{}")]}),
        1,
    )
    .unwrap();
    repair::normalize_on_load(&mut log, 2).unwrap();
    let fixes = repair::plan(&mut log);
    assert!(fixes.is_empty(), "{fixes:?} {:?}", log.messages());
}
