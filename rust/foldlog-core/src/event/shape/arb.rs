//! Generated `data` for the projection's property tests: JSON values built from the keys the
//! projection reads and a few telling strings. Shared by the shape's unit tests and the flat
//! reader's integration test (`tests/flat_messages.rs` includes this file by its path).
use proptest::prelude::*;
use serde_json::Value;

/// The keys the projection reads in a message's `data` (and one it does not).
pub const KEYS: &[&str] = &[
    "type",
    "text",
    "id",
    "name",
    "function",
    "arguments",
    "input",
    "content",
    "tool_calls",
    "message",
    "reasoning_content",
    "thinking_blocks",
    "toolCallId",
    "tool_call_id",
    "toolName",
    "isError",
    "is_error",
    "other",
];

/// A scalar: null, a boolean, a small number or one of `strings`.
pub fn leaf(strings: &'static [&'static str]) -> impl Strategy<Value = Value> + Clone {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (0u8..3).prop_map(Value::from),
        prop::sample::select(strings).prop_map(Value::from),
    ]
}

/// Arrays and objects of `keys` (fewer than `max_keys` pairs, a key may repeat), nested up to
/// four deep, around leaves of `strings`.
pub fn value(
    keys: &'static [&'static str],
    strings: &'static [&'static str],
    max_keys: usize,
) -> impl Strategy<Value = Value> {
    leaf(strings).prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(keys), inner), 0..max_keys).prop_map(
                |kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            ),
        ]
    })
}
