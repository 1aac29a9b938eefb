//! Erasure (issue 32, part 1; docs/log-format.md, "Erasure"): the `log/erasure` kind is known and
//! its data checked on append, tombstones load and derive as erased with their calls still paired,
//! and the file writer's one rewrite replaces the file atomically and goes on appending to it.
mod common;
use foldlog_core::event::{ERASED_CONTENT, ERASURE};
use foldlog_core::store::{Durability, FileWriter};
use foldlog_core::EventLog;
use serde_json::json;

#[test]
fn an_erasure_event_is_known_and_its_data_checked() {
    let mut log = EventLog::new(None);
    let ok = json!({"seqs": [0, 2], "reason": "request 1", "at": 1_800_000_000_000_i64});
    assert_eq!(log.append(ERASURE, &ok, 1, None, None).unwrap(), 0);
    for (data, says) in [
        (json!({"reason": "r", "at": 1}), "seqs is missing"),
        (
            json!({"seqs": [], "reason": "r", "at": 1}),
            "seqs must name at least one event",
        ),
        (
            json!({"seqs": [2, 1], "reason": "r", "at": 1}),
            "seqs[1] must be larger",
        ),
        (
            json!({"seqs": [1, 1], "reason": "r", "at": 1}),
            "seqs[1] must be larger",
        ),
        (
            json!({"seqs": ["1"], "reason": "r", "at": 1}),
            "seqs[0] must be an event seq",
        ),
        (
            json!({"seqs": [1], "reason": " ", "at": 1}),
            "reason must not be empty",
        ),
        (json!({"seqs": [1], "at": 1}), "reason is missing"),
        (json!({"seqs": [1], "reason": "r"}), "at is missing"),
        (
            json!({"seqs": [1], "reason": "r", "at": "now"}),
            "at must be epoch milliseconds",
        ),
    ] {
        let err = log
            .append(ERASURE, &data, 1, None, None)
            .expect_err(&format!("{data} was accepted"))
            .to_string();
        assert!(err.contains(says), "{data}: {err}");
        assert!(err.contains("invalid log/erasure data"), "{err}");
    }
    assert_eq!(log.len(), 1, "nothing recorded for a refused erasure");
}

#[test]
fn tombstones_derive_as_erased_and_their_calls_stay_paired() {
    let e = ERASED_CONTENT;
    let text = format!(
        r#"{{"type":"session","version":1,"id":"s","createdAt":1,"parent":null,"meta":{{}}}}
{{"type":"user/message","seq":0,"time":1,"data":{{"role":"user","content":"{e}","erased":3}},"surfaceOp":"append"}}
{{"type":"assistant/message","seq":1,"time":1,"data":{{"turn":1,"step":1,"message":{{"role":"assistant","content":"{e}","tool_calls":[{{"id":"c1","type":"function","function":{{"name":"read","arguments":"{{}}"}}}}]}},"erased":3}},"surfaceOp":"append"}}
{{"type":"tool/result","seq":2,"time":1,"data":{{"turn":1,"step":1,"message":{{"role":"tool","toolCallId":"c1","toolName":"read","content":"{e}","isError":false}},"erased":3}},"surfaceOp":"append"}}
{{"type":"log/erasure","seq":3,"time":2,"data":{{"seqs":[0,1,2],"reason":"request","at":2}}}}
"#
    );
    let mut log = common::load(&text);
    let messages = log.messages();
    assert_eq!(messages.len(), 3);
    for m in &messages {
        assert_eq!(m["content"], json!(e), "{m}");
    }
    assert_eq!(messages[1]["tool_calls"][0]["id"], json!("c1"));
    assert_eq!(messages[2]["tool_call_id"], json!("c1"));
    let report = foldlog_core::repair::normalize_on_load(&mut log, 5).unwrap();
    assert_eq!(report.events_added, 0, "a tombstoned log needs no repair");
}

#[test]
fn the_writer_rewrites_its_file_atomically_and_goes_on() {
    let dir = std::env::temp_dir().join(format!("foldlog-erasure-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.jsonl");
    let _ = std::fs::remove_file(&path);
    let (mut w, _) =
        FileWriter::open(&path, r#"{"type":"session","id":"s"}"#, Durability::Batch).unwrap();
    w.append(
        b"{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1,\"x\":\"SECRET\"}}\n",
    )
    .unwrap();
    let new = b"{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1}}\n";
    w.rewrite(new).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), new);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // the writer's check that the file is what it left holds for the new file
    w.append(b"{\"type\":\"turn/end\",\"seq\":1,\"time\":2,\"data\":{\"turn\":1}}\n")
        .unwrap();
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .ends_with("\"turn\":1}}\n"));
    // a file changed under the writer is not rewritten
    std::fs::write(&path, b"changed\n").unwrap();
    let err = w.rewrite(new).unwrap_err().to_string();
    assert!(err.contains("under its writer"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"changed\n");
    drop(w);
    let _ = std::fs::remove_dir_all(&dir);
}
