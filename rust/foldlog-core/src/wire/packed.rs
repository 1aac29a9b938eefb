//! Short serialised messages kept packed: the keys and fixed values the request format writes
//! around their texts (`{"content":`, `,"role":"tool","tool_call_id":`, …) stored as one byte
//! each. An active session keeps every message of its request serialised (B2); for short
//! messages those fixed parts are most of the bytes, and held them at 2.6× the log (issue 31.3).
//!
//! A code is a byte below 0x20, which serialised JSON never holds as such (strings escape
//! them, and no blanks are written between tokens); a message that holds one anyway is not
//! packed. Packed bytes start with the unpacked length (4 bytes, little-endian).

/// The fixed parts, by code (code `k` is `FRAGMENTS[k - 1]`): the keys the request format
/// writes, in its key order (sorted), with the punctuation around them.
const FRAGMENTS: [&[u8]; 24] = [
    br#"{"content":"","role":"assistant","tool_calls":[{"function":{"arguments":"#,
    br#","role":"assistant","tool_calls":[{"function":{"arguments":"#,
    br#"},{"function":{"arguments":"#,
    br#",{"function":{"arguments":"#,
    br#",{"text":"#,
    br#","type":"function"}]}"#,
    br#","type":"function"}"#,
    br#","role":"tool","tool_call_id":"#,
    br#","role":"assistant"}"#,
    br#","role":"assistant""#,
    br#","role":"user"}"#,
    br#","role":"system"}"#,
    br#","reasoning_content":"#,
    br#","tool_call_id":"#,
    br#","type":"text"}"#,
    br#"{"content":[{"text":"#,
    br#"{"content":"#,
    br#"[{"text":"#,
    br#"{"image_url":{"url":"#,
    br#"},"type":"image_url"}"#,
    br#","role":"tool""#,
    br#","name":"#,
    br#"},"id":"#,
    br#""}"#,
];

/// Longer messages are kept as they are: their texts are most of their bytes.
const MAX_PACKED: usize = 1024;

/// The fragments that start with byte `b`, in the order of [`FRAGMENTS`].
fn starting_with(b: u8) -> &'static [u8] {
    match b {
        b'{' => &[0, 15, 16, 18],
        b',' => &[1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 20, 21],
        b'}' => &[2, 19, 22],
        b'[' => &[17],
        b'"' => &[23],
        _ => &[],
    }
}

/// `json` packed, if that saves at least a quarter of it.
pub(super) fn pack(json: &[u8]) -> Option<Vec<u8>> {
    if json.len() > MAX_PACKED || json.iter().any(|&b| b < 0x20) {
        return None;
    }
    let mut out = Vec::with_capacity(json.len() / 2 + 8);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    let mut i = 0;
    while i < json.len() {
        let rest = &json[i..];
        // the list is longest first where one fragment starts another
        let found = starting_with(rest[0])
            .iter()
            .find(|&&k| rest.starts_with(FRAGMENTS[k as usize]));
        match found {
            Some(&k) => {
                out.push(k + 1);
                i += FRAGMENTS[k as usize].len();
            }
            None => {
                out.push(rest[0]);
                i += 1;
            }
        }
    }
    (out.len() * 4 <= json.len() * 3).then_some(out)
}

/// The length of the message `packed` holds.
pub(super) fn unpacked_len(packed: &[u8]) -> usize {
    u32::from_le_bytes(packed[..4].try_into().expect("4 bytes")) as usize
}

/// Append the message `packed` holds to `out`.
pub(super) fn unpack_into(packed: &[u8], out: &mut Vec<u8>) {
    out.reserve(unpacked_len(packed));
    let mut rest = &packed[4..];
    while let Some(at) = rest.iter().position(|&b| b < 0x20) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(FRAGMENTS[rest[at] as usize - 1]);
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::body::{message_json, WireStyle};

    fn round_trip(json: &[u8]) -> Option<usize> {
        let packed = pack(json)?;
        let mut out = Vec::new();
        unpack_into(&packed, &mut out);
        assert_eq!(out, json, "{}", String::from_utf8_lossy(json));
        assert_eq!(unpacked_len(&packed), json.len());
        Some(packed.len())
    }

    #[test]
    fn short_messages_pack_to_less_than_half_and_unpack_to_the_same_bytes() {
        let messages = [
            json!({"role": "system", "content": "You are a careful agent."}),
            json!({"role": "user", "content": "Look at the workspace.", "name": "ann"}),
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "h0", "type": "function", "function": {"name": "noop", "arguments": "{\"i\":0}"}},
                {"id": "h1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            ]}),
            json!({"role": "tool", "tool_call_id": "h0", "name": "noop", "content": "result 0: ok"}),
            json!({"role": "assistant", "content": "done", "reasoning_content": "think"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            ]}),
        ];
        for (k, m) in messages.iter().enumerate() {
            for style in WireStyle::ALL {
                let json = message_json(m, style);
                let packed = round_trip(&json).expect("a short message packs");
                // a call and a tool result: their fixed parts are most of them
                if k == 2 || k == 3 {
                    assert!(packed * 2 < json.len(), "{packed} of {}", json.len());
                }
            }
        }
    }

    #[test]
    fn every_fragment_is_looked_for_where_it_can_start() {
        for (k, f) in FRAGMENTS.iter().enumerate() {
            assert!(starting_with(f[0]).contains(&(k as u8)), "{k}");
            assert!(f.iter().all(|&b| b >= 0x20));
        }
        let listed: usize = b"{,}[\"".iter().map(|&b| starting_with(b).len()).sum();
        assert_eq!(listed, FRAGMENTS.len());
    }

    #[test]
    fn what_packing_would_not_shrink_or_could_misread_is_left_as_it_is() {
        assert_eq!(round_trip(br#"{"x":"no fixed part here at all"}"#), None);
        // a raw control byte (never written by the serialiser) is never read as a code
        assert_eq!(
            round_trip(b"{\"content\":\"\x01\",\"role\":\"user\"}"),
            None
        );
        assert_eq!(round_trip(&[b'a'; MAX_PACKED + 1]), None);
        // punctuation inside texts is copied as it is
        let tricky = message_json(
            &json!({"role": "tool", "tool_call_id": "\"},\"id\":", "name": ",\"name\":",
                    "content": "{\"content\":\"\",\"role\":\"assistant\"}"}),
            WireStyle::Keep,
        );
        assert!(round_trip(&tricky).is_some());
    }
}
