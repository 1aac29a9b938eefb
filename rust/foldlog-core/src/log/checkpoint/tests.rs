//! Checkpoints against real files: restored logs derive what full loads derive, a checkpoint
//! that does not match its log is not used, and completing a partial log gives the full log.
use std::path::PathBuf;

use serde_json::json;

use super::*;
use crate::log::Message;
use crate::store::jsonl;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("foldlog-ckpt-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("s.jsonl")
}

/// A read call `id` and its `ok` result, both on the surface.
fn call_and_result(log: &mut EventLog, id: &str) {
    let call = json!({"role": "assistant", "content": "",
        "tool_calls": [{"id": id, "type": "function",
            "function": {"name": "read", "arguments": "{}"}}]});
    log.append(
        "assistant/message",
        &json!({"message": call}),
        0,
        Some(SurfaceOp::Append),
        None,
    )
    .unwrap();
    let a = log.next_seq() - 1;
    let res = json!({"role": "tool", "tool_call_id": id, "content": "ok"});
    log.append(
        "tool/result",
        &json!({"message": res}),
        0,
        Some(SurfaceOp::Append),
        Some(vec![a]),
    )
    .unwrap();
}

/// A log of `turns` user/assistant/tool exchanges, folded halfway, written to `path`.
fn written(path: &Path, turns: u64) -> EventLog {
    let header = Header::new("s", 0, &Value::Null, &Value::Null).unwrap();
    let mut log = EventLog::new(Some(header));
    let sys = json!({"role": "system", "content": "be brief"});
    log.append("system/message", &sys, 0, Some(SurfaceOp::Append), None)
        .unwrap();
    for t in 0..turns {
        let user = json!({"role": "user", "content": format!("question {t}")});
        log.append("user/message", &user, 0, Some(SurfaceOp::Append), None)
            .unwrap();
        call_and_result(&mut log, &format!("c{t}"));
        if t == turns / 2 {
            let nodes = log.surface().nodes().to_vec();
            let (start, end) = (nodes[1], nodes[nodes.len() - 1]);
            let digest = json!({"role": "user", "content": "digest"});
            let op = SurfaceOp::Fold {
                start,
                end,
                keep: vec![],
            };
            log.append(
                "user/message",
                &digest,
                0,
                Some(op),
                Some(nodes[1..].to_vec()),
            )
            .unwrap();
        }
    }
    log.mark_flushed(log.len());
    std::fs::write(path, jsonl::file_bytes(log.header(), log.events())).unwrap();
    log
}

/// The stored line of every event the log holds.
fn lines(log: &EventLog) -> Vec<String> {
    log.events().iter().map(|e| e.line().to_string()).collect()
}

fn messages(log: &mut EventLog) -> Vec<Message> {
    log.messages()
}

#[test]
fn a_restored_log_derives_what_the_full_log_derives() {
    let path = temp("same");
    let mut log = written(&path, 40);
    let ckpt = encode(&log, &path).unwrap().unwrap();
    let restored = restore(&ckpt, &path).unwrap();
    assert_eq!(restored.tail, 0);
    let mut back = restored.log;
    assert!(is_partial(&back));
    assert_eq!(back.len(), log.len());
    assert_eq!(messages(&mut back), messages(&mut log));
    assert_eq!(back.surface().nodes(), log.surface().nodes());
    assert_eq!(back.rewrite_version(), log.rewrite_version());
}

#[test]
fn the_tail_after_a_checkpoint_is_read_under_the_rules() {
    let path = temp("tail");
    let mut log = written(&path, 10);
    let ckpt = encode(&log, &path).unwrap().unwrap();
    let more = json!({"role": "user", "content": "after the checkpoint"});
    log.append("user/message", &more, 0, Some(SurfaceOp::Append), None)
        .unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut f, jsonl::lines(log.pending()).as_slice()).unwrap();
    log.mark_flushed(log.len());
    let mut back = restore(&ckpt, &path).unwrap();
    assert_eq!(back.tail, 1);
    assert_eq!(messages(&mut back.log), messages(&mut log));
    complete(&mut back.log).unwrap();
    assert!(!is_partial(&back.log));
    assert_eq!(lines(&back.log), lines(&log));
    assert_eq!(messages(&mut back.log), messages(&mut log));
}

#[test]
fn a_checkpoint_that_does_not_match_is_not_used() {
    let path = temp("mismatch");
    let log = written(&path, 10);
    let ckpt = encode(&log, &path).unwrap().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    // edited in place, same length: "question 1" → "question X" (in a sampled block)
    let at = bytes.windows(10).position(|w| w == b"question 1").unwrap() + 9;
    let mut edited = bytes.clone();
    edited[at] = b'X';
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|f| f.write_all_at(&edited, 0))
        .unwrap();
    assert!(restore(&ckpt, &path).unwrap_err().warn);
    // truncated
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|f| {
            f.write_all_at(&bytes, 0)
                .and_then(|_| f.set_len(bytes.len() as u64 - 40))
        })
        .unwrap();
    assert!(restore(&ckpt, &path).unwrap_err().warn);
    // rewritten atomically with the same bytes: a new file
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &bytes).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    let why = restore(&ckpt, &path).unwrap_err();
    assert!(
        why.warn && why.reason.contains("rewritten"),
        "{}",
        why.reason
    );
    // corrupt, and from another version
    let ckpt = encode(&log, &path).unwrap().unwrap();
    assert!(restore(&ckpt, &path).is_ok());
    let mut corrupt = ckpt.clone();
    let last = corrupt.len() - 3;
    corrupt[last] ^= 1;
    assert!(restore(&corrupt, &path).unwrap_err().warn);
    let other = String::from_utf8(ckpt).unwrap().replacen(
        &format!("\"core\":\"{CORE_VERSION}\""),
        "\"core\":\"0.0.0\"",
        1,
    );
    assert!(restore(other.as_bytes(), &path)
        .unwrap_err()
        .reason
        .contains("another version"));
}

#[test]
fn completing_a_log_whose_prefix_changed_fails_and_leaves_it_partial() {
    let path = temp("complete");
    let log = written(&path, 10);
    let ckpt = encode(&log, &path).unwrap().unwrap();
    let mut back = restore(&ckpt, &path).unwrap().log;
    // the surface's last result changed in place, same length, after the checkpoint was read
    let bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(13)
        .rposition(|w| w == b"\"content\":\"ok")
        .unwrap()
        + 11;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|f| f.write_all_at(b"OK", at as u64))
        .unwrap();
    assert!(complete(&mut back).is_err());
    assert!(is_partial(&back));
}

#[test]
fn a_restored_log_holds_what_its_surface_reads_not_a_slot_per_event() {
    let path = temp("held");
    let header = Header::new("s", 0, &Value::Null, &Value::Null).unwrap();
    let mut log = EventLog::new(Some(header));
    let sys = json!({"role": "system", "content": "be brief"});
    log.append("system/message", &sys, 0, Some(SurfaceOp::Append), None)
        .unwrap();
    // a long history off the surface (streamed chunks), then a call and its result on it
    const COVERED: u64 = 50_000;
    while log.next_seq() < COVERED {
        log.append("assistant/chunk", &json!({"text": "x"}), 0, None, None)
            .unwrap();
    }
    call_and_result(&mut log, "c1");
    log.mark_flushed(log.len());
    std::fs::write(&path, jsonl::file_bytes(log.header(), log.events())).unwrap();
    let ckpt = encode(&log, &path).unwrap().unwrap();
    let mut back = restore(&ckpt, &path).unwrap().log;
    assert_eq!(back.len(), log.len());
    // the system message, the call and its result: no place taken for the 49,999 chunks
    assert_eq!(back.held().held(), 3);
    assert!(back.event(1).is_none());
    let small = 64 * 1024;
    assert!(
        back.heap_bytes() < small,
        "{} bytes held",
        back.heap_bytes()
    );
    // nor do the caches kept by seq: counts and serialised messages
    let tok = crate::tokens::Tokenizer::get(crate::tokens::Encoding::Cl100k).unwrap();
    let counted = back.surface_token_total(tok).unwrap();
    assert_eq!(counted, log.surface_token_total(tok).unwrap());
    let wire = |l: &mut EventLog| {
        crate::body::WireBody::new(b"[", l.wire_messages(crate::body::WireStyle::Keep), b"]")
            .to_vec()
    };
    assert_eq!(wire(&mut back), wire(&mut log));
    assert!(
        back.heap_bytes() < small,
        "{} bytes held",
        back.heap_bytes()
    );
    assert!(log.heap_bytes() > COVERED as usize * std::mem::size_of::<Event>());
    // appending goes on after the prefix; completing reads it all
    let more = json!({"role": "user", "content": "next"});
    back.append("user/message", &more, 0, Some(SurfaceOp::Append), None)
        .unwrap();
    assert_eq!(back.held().held(), 4);
    complete(&mut back).unwrap();
    assert_eq!(back.held().held(), back.len());
    assert_eq!(back.event(1).map(Event::kind), Some("assistant/chunk"));
}

/// The stored lines of `log` from seq `from` on, as a rows store reads them.
fn rows_from(log: &EventLog, from: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for e in log.events().iter().filter(|e| e.seq >= from) {
        out.extend_from_slice(e.line().as_bytes());
        out.push(b'\n');
    }
    out
}

#[test]
fn a_rows_checkpoint_restores_checks_its_last_line_and_completes_from_the_store() {
    let path = temp("rows");
    let mut log = written(&path, 40);
    let ckpt = encode_rows(&log).unwrap().unwrap();
    let n = log.len() as u64;
    let more = json!({"role": "user", "content": "after the checkpoint"});
    log.append("user/message", &more, 0, Some(SurfaceOp::Append), None)
        .unwrap();
    log.mark_flushed(log.len());
    let mut back = restore_rows(&ckpt, &rows_from(&log, n - 1)).unwrap();
    assert_eq!(back.tail, 1);
    assert_eq!(messages(&mut back.log), messages(&mut log));
    assert_eq!(prefix_from_store(&back.log), Some(n as usize));
    assert!(
        complete(&mut back.log).is_err(),
        "a rows log has no file to read"
    );
    // the prefix as the store holds it: the header and the first n events
    let prefix = jsonl::file_bytes(log.header(), &log.events()[..n as usize]);
    complete_from(&mut back.log, &prefix).unwrap();
    assert!(!is_partial(&back.log));
    assert_eq!(lines(&back.log), lines(&log));
}

#[test]
fn a_rows_checkpoint_is_not_used_when_its_last_line_differs_or_for_a_file() {
    let path = temp("rows-mismatch");
    let log = written(&path, 10);
    let ckpt = encode_rows(&log).unwrap().unwrap();
    let n = log.len() as u64;
    let stored = rows_from(&log, n - 1);
    let edited = String::from_utf8(stored.clone())
        .unwrap()
        .replace("question", "QUESTION")
        .replace("\"ok\"", "\"OK\"");
    for bad in [
        edited.into_bytes(),
        rows_from(&log, n - 2), // the check is the line of seq n - 1, first
        Vec::new(),
    ] {
        let why = restore_rows(&ckpt, &bad).unwrap_err();
        assert!(why.warn, "{}", why.reason);
    }
    // a file's checkpoint is not a rows one, nor the other way round
    let file_ckpt = encode(&log, &path).unwrap().unwrap();
    assert!(restore_rows(&file_ckpt, &stored).unwrap_err().warn);
    assert!(restore(&ckpt, &path).unwrap_err().warn);
    // a prefix with other events fails the completion and leaves the log partial
    let mut back = restore_rows(&ckpt, &stored).unwrap().log;
    let short = jsonl::file_bytes(log.header(), &log.events()[..(n - 1) as usize]);
    assert!(complete_from(&mut back, &short).is_err());
    assert!(is_partial(&back));
}
