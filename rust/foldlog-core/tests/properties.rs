//! Property tests: the reader and the normalizers never panic, on any input; a valid log
//! round-trips byte for byte; repair is idempotent and leaves every call answered.
mod common;
use common::SEED;
use foldlog_core::store::jsonl;
use foldlog_core::{reader, repair, wire, EventLog};
use proptest::prelude::*;
use serde_json::{json, Value};

fn arb_message() -> impl Strategy<Value = Value> {
    let id = prop_oneof![Just(None), "[a-c]".prop_map(Some)];
    let name = prop_oneof![Just(String::new()), "[a-z]{1,4}"];
    let args = prop_oneof![
        Just("{}".to_string()),
        Just(String::new()),
        "\\{\"[a-z]\":\"[a-z\\\\]{0,3}"
    ];
    let call = (id.clone(), name.clone(), args).prop_map(|(id, name, args)| {
        let mut c = json!({"type":"function","function":{"name": name, "arguments": args}});
        if let Some(id) = id {
            c["id"] = json!(id);
        }
        c
    });
    prop_oneof![
        "[ -~]{0,8}".prop_map(|t| json!({"role":"user","content": t})),
        ("[ -~]{0,8}", prop::collection::vec(call, 0..3))
            .prop_map(|(t, calls)| json!({"role":"assistant","content": t, "tool_calls": calls})),
        (id, name).prop_map(|(id, name)| {
            let mut m = json!({"role":"tool","content":"r","name": name});
            if let Some(id) = id {
                m["tool_call_id"] = json!(id);
            }
            m
        }),
    ]
}

fn tool_calls_answered(msgs: &[std::sync::Arc<Value>]) -> bool {
    // every assistant call is followed by exactly its results, in order
    let mut i = 0;
    while i < msgs.len() {
        if let Some(Value::Array(calls)) = msgs[i].get("tool_calls") {
            for (k, c) in calls.iter().enumerate() {
                let Some(r) = msgs.get(i + 1 + k) else {
                    return false;
                };
                if r["role"] != "tool" || r["tool_call_id"] != c["id"] {
                    return false;
                }
            }
            i += 1 + calls.len();
        } else {
            if msgs[i]["role"] == "tool" {
                return false;
            }
            i += 1;
        }
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn reader_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = reader::read(&bytes);
    }

    #[test]
    fn reader_never_panics_on_mutated_logs(cut in 0usize..1500, flip in 0usize..1500, byte in any::<u8>()) {
        let mut bytes = SEED.as_bytes().to_vec();
        if flip < bytes.len() { bytes[flip] = byte; }
        bytes.truncate(cut.min(bytes.len()));
        if let Ok(mut loaded) = reader::read(&bytes) {
            let _ = repair::normalize_on_load(&mut loaded.log, 1);
            let _ = wire::normalize_for_send(&loaded.log.messages()[..]);
        }
    }

    #[test]
    fn any_cut_of_a_valid_log_loads_its_complete_lines(cut in 0usize..1500) {
        let cut = cut.min(SEED.len());
        let bytes = &SEED.as_bytes()[..cut];
        // a cut inside the first line leaves nothing that shows the file is a log: refused, not
        // read as a torn tail (a writer would cut the file to nothing)
        let first = SEED.find('\n').unwrap();
        match reader::read(bytes) {
            Err(foldlog_core::Error::NotALog { line: 1, .. }) => prop_assert!(0 < cut && cut < first),
            Ok(loaded) => {
                prop_assert!(cut == 0 || cut >= first);
                let complete = bytes.iter().filter(|&&b| b == b'\n').count();
                prop_assert!(loaded.log.len() >= complete);
            }
            Err(e) => prop_assert!(false, "a cut of a valid log is refused: {e}"),
        }
    }

    #[test]
    fn built_logs_round_trip_and_repair_is_idempotent(msgs in prop::collection::vec(arb_message(), 0..12)) {
        let mut log = EventLog::new(None);
        for m in &msgs {
            common::record(&mut log, m, 5);
        }
        let bytes = jsonl::file_bytes(None, log.events());
        let mut loaded = reader::read(&bytes).unwrap();
        prop_assert_eq!(jsonl::file_bytes(None, loaded.log.events()), bytes);
        repair::normalize_on_load(&mut loaded.log, 6).unwrap();
        prop_assert!(repair::plan(&mut loaded.log).is_empty(), "second repair finds nothing");
        // whatever the log holds, what is sent pairs every call with exactly one result
        let sent = wire::normalize_for_send(&loaded.log.messages()[..]);
        prop_assert!(tool_calls_answered(&sent));
        // repaired logs still round-trip through the reader
        let again = jsonl::file_bytes(None, loaded.log.events());
        prop_assert_eq!(jsonl::file_bytes(None, reader::read(&again).unwrap().log.events()), again);
    }
}

/// A plan as comparable values: a derived index, or the new message.
fn plan_values(items: &[wire::Sent]) -> Vec<Value> {
    items
        .iter()
        .map(|s| match s {
            wire::Sent::Same(i) => json!(i),
            wire::Sent::New(m) => (**m).clone(),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Planning from the last cut as messages are appended one by one gives the plan of the
    /// whole list: what is before a cut never changes.
    #[test]
    fn planning_from_the_last_cut_equals_planning_everything(msgs in prop::collection::vec(arb_message(), 0..14)) {
        let mut log = EventLog::new(None);
        let mut stable: Vec<wire::Sent> = Vec::new();
        let mut cut = 0;
        for m in &msgs {
            common::record(&mut log, m, 5);
            let derived = log.messages().to_vec();
            let plan = wire::plan_send_from(&derived, cut);
            prop_assert!(plan.cut >= cut && plan.cut <= derived.len());
            let mut whole = stable.clone();
            whole.extend(plan.items.iter().cloned());
            prop_assert_eq!(plan_values(&whole), plan_values(&wire::plan_send(&derived)));
            let mut items = plan.items;
            items.truncate(plan.stable_items);
            stable.extend(items);
            cut = plan.cut;
        }
    }
}
