//! The scanner takes a line only when serde reads it without error, and reads it the same.
use proptest::prelude::*;

use super::check as same;

const WRITTEN: &[&str] = &[
    r#"{"type":"user/message","seq":3,"time":1700000000000,"data":{"message":{"role":"user","content":"hi \"you\" \\ \n \u00e9 \u001b"}},"surfaceOp":"append"}"#,
    r#"{"type":"assistant/message","seq":4,"time":-5,"data":{"message":{"role":"assistant","content":[],"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}},"surfaceOp":{"op":"replace","target":[1,2]},"sourceEventSeqs":[1, 2 ,3],"ignorable":false,"tokens":{"o200k":12}}"#,
    r#" { "type" : "turn/start" , "seq" : null , "time" : null , "data" : { "turn" : 1 , "step" : 2.5e-3 , "x" : [ true , false , null , -0.0 , 1E+9 , {} , [] ] } } "#,
    r#"{"type":"x/y","seq":18446744073709551615,"data":null,"ignorable":true}"#,
    r#"{"type":"tool/result","seq":0,"data":"just a string","surfaceOp":null,"sourceEventSeqs":null}"#,
];

#[test]
fn written_lines_are_scanned_as_serde_reads_them() {
    for line in WRITTEN {
        assert!(same(line), "not taken: {line}");
    }
}

#[test]
fn lines_serde_refuses_or_reads_otherwise_are_left_to_it() {
    let left = [
        "",
        "{}",
        "[]",
        r#"{"seq":1,"data":{}}"#,
        r#"{"type":"a","type":"b","seq":1,"data":{}}"#,
        r#"{"type":"a","seq":1,"seq":2,"data":{}}"#,
        r#"{"type":"a","seq":1,"data":{},"data":{}}"#,
        r#"{"type":"a","seq":-0,"data":{}}"#,
        r#"{"type":"a","seq":1,"time":-0,"data":{}}"#,
        r#"{"type":"a","seq":1.0,"data":{}}"#,
        r#"{"type":"a","seq":01,"data":{}}"#,
        r#"{"type":"a","seq":18446744073709551616,"data":{}}"#,
        r#"{"type":"a","seq":1,"time":1e3,"data":{}}"#,
        r#"{"type":"a","seq":1,"data":{"t":"\ud800"}}"#,
        r#"{"type":"a","seq":1,"data":{"t":"\x"}}"#,
        "{\"type\":\"a\",\"seq\":1,\"data\":{\"t\":\"tab\there\"}}",
        r#"{"type":"a","seq":1,"data":{"t":1,}}"#,
        r#"{"type":"a","seq":1,"data":[1,]}"#,
        r#"{"type":"a","seq":1,"data":{"t" 1}}"#,
        r#"{"type":"a","seq":1,"data":{}} x"#,
        r#"{"type":"a","seq":1,"data":{}"#,
        r#"{"type":"a","seq":1,"data":.5}"#,
        r#"{"type":"a","seq":1,"data":1.}"#,
        r#"{"type":"a","seq":1,"data":tru}"#,
        r#"{"type":"a","seq":1,"data":{},"ignorable":null}"#,
        r#"{"type":"a","seq":1,"data":{},"sourceEventSeqs":[1,-2]}"#,
        r#"{"ty\u0070e":"a","seq":1,"data":{}}"#,
        r#"{"type":"\u0061","seq":1,"data":{}}"#,
        r#"{"type":1,"seq":1,"data":{}}"#,
    ];
    for line in left {
        assert!(!same(line), "taken: {line}");
    }
    let deep = format!(
        r#"{{"type":"a","seq":1,"data":{}{}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    assert!(!same(&deep));
}

/// A quote, backslash, escape, control byte or non-ASCII character at every offset of strings
/// of every length up to 40 (each lane of the 16-byte and 8-byte skips, and the bytes after
/// them), in a key, inside `data` and at the end of the line: taken exactly when serde reads it.
#[test]
fn a_special_byte_at_every_offset_of_a_string_is_read_as_serde_reads_it() {
    let specials = [
        "\"",
        "\\",
        "\\n",
        "\\u00e9",
        "\\ud800",
        "\\x",
        "\u{0}",
        "\u{1}",
        "\u{1f}",
        "\t",
        "\n",
        " ",
        "\u{7f}",
        "\u{80}",
        "\u{e9}",
        "\u{2028}",
        "\u{1f600}",
    ];
    for len in 0..40 {
        for at in 0..=len {
            for special in specials {
                let text = format!("{}{special}{}", "a".repeat(at), "b".repeat(len - at));
                for line in [
                    format!(r#"{{"type":"a","seq":1,"data":{{"{text}":1}}}}"#),
                    format!(r#"{{"type":"a","seq":1,"data":{{"t":"{text}","u":[]}}}}"#),
                    format!(r#"{{"type":"a","seq":1,"data":"{text}"}}"#),
                ] {
                    let serde = super::super::parse::serde_envelope(&line).is_ok();
                    let surrogate = special.contains("ud8");
                    assert_eq!(same(&line), serde && !surrogate, "{line:?}");
                }
            }
        }
    }
}

/// JSON-ish lines: a written line with bytes changed, dropped or added from the characters
/// that matter to the grammar.
fn mutated() -> impl Strategy<Value = String> {
    let edits = prop::collection::vec(
        (
            any::<prop::sample::Index>(),
            0u8..3,
            prop::sample::select(
                "{}[]\":,\\/ \t-+.0123456789eEuabfnrtlsd\u{1}\u{e9}"
                    .chars()
                    .collect::<Vec<_>>(),
            ),
        ),
        1..4,
    );
    (prop::sample::select(WRITTEN), edits).prop_map(|(line, edits)| {
        let mut chars: Vec<char> = line.chars().collect();
        for (at, how, c) in edits {
            let i = at.index(chars.len() + 1);
            match how {
                0 if i < chars.len() => chars[i] = c,
                1 if i < chars.len() => {
                    chars.remove(i);
                }
                _ => chars.insert(i, c),
            }
        }
        chars.into_iter().collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]
    #[test]
    fn changed_lines_are_scanned_as_serde_reads_them_or_left_to_it(line in mutated()) {
        same(&line);
    }

    #[test]
    fn any_json_data_is_scanned_as_serde_reads_it(
        data in any_json(),
        ws in prop::sample::select(vec!["", " ", "\t", "\r\n"]),
    ) {
        let text = serde_json::to_string(&data).expect("a value serialises");
        let line = format!(r#"{{"type":"a",{ws}"seq":1,"data":{ws}{text}{ws}}}"#);
        prop_assert!(same(&line) || text.contains("\\ud"), "{}", line);
    }
}

fn any_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        "[\u{0}-\u{1f}\"\\\\a]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\"]{0,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
