#![allow(dead_code)]
use foldlog_core::log::EventLog;
use foldlog_core::reader;
use serde_json::Value;

/// The example log of the seed document (version 0, no header).
pub const SEED: &str = r#"{"type":"turn/start","seq":0,"time":1755000000000,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":1755000000010,"data":{"turn":1,"step":1}}
{"type":"user/message","seq":2,"time":1755000000020,"data":{"role":"user","content":[{"type":"text","text":"Fix the typo in the example README."}]},"surfaceOp":"append","sourceEventSeqs":[0]}
{"type":"assistant/chunk","seq":3,"time":1755000000030,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","text":"I'll "}}}
{"type":"assistant/chunk","seq":4,"time":1755000000040,"data":{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","name":"bash","arguments":"{\"command\":\"grep example README.md\"}"}}}
{"type":"assistant/message","seq":5,"time":1755000000050,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"I'll search"},{"type":"tool_use","id":"call_1","name":"bash","input":{"command":"grep example README.md"}}]},"usage":{"inputTokens":12,"outputTokens":4}},"surfaceOp":"append","sourceEventSeqs":[3,4]}
{"type":"tool/call","seq":6,"time":1755000000060,"data":{"turn":1,"step":1,"callId":"call_1","name":"bash","arguments":"{\"command\":\"grep example README.md\"}"}}
{"type":"tool/result","seq":7,"time":1755000000070,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"bash","content":"example","isError":false}},"surfaceOp":"append","sourceEventSeqs":[6]}
{"type":"step/end","seq":8,"time":1755000000080,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":9,"time":1755000000090,"data":{"turn":1,"reason":{"kind":"completed"}}}
"#;

/// Record a message as an older log may hold it: through `add_message` when today's writer
/// accepts it, else (an id-less tool result, which writers refuse now) the way the reader adds
/// a line it loads.
pub fn record(log: &mut EventLog, m: &Value, time: i64) {
    if log.add_message(m, time).is_ok() {
        return;
    }
    let (kind, data) = log.message_event(m).expect("a message with a known role");
    let ev = foldlog_core::Event::new(
        kind,
        log.next_seq(),
        time,
        &data,
        Some(foldlog_core::SurfaceOp::Append),
        None,
    );
    log.push(ev).expect("the reader accepts it");
}

pub fn load(text: &str) -> EventLog {
    reader::read(text.as_bytes()).expect("log loads").log
}

pub fn roles(log: &mut EventLog) -> Vec<String> {
    log.messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

/// (type, data, surfaceOp, sourceEventSeqs)
pub type Spec<'a> = (&'a str, Value, Option<Value>, Option<Vec<u64>>);

/// Build a log line by line.
pub fn build(events: &[Spec<'_>]) -> String {
    let mut out = String::new();
    for (i, (t, d, op, src)) in events.iter().enumerate() {
        let mut v = serde_json::json!({"type": t, "seq": i, "time": 1000 + i as i64, "data": d});
        if let Some(op) = op {
            v["surfaceOp"] = op.clone();
        }
        if let Some(src) = src {
            v["sourceEventSeqs"] = serde_json::json!(src);
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}
