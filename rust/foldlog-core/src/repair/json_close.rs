//! Closing a half-streamed JSON text (tool-call arguments cut off mid-stream).
//!
//! The rules of `log-format.md`: drop a dangling backslash, close an open string, trim
//! whitespace, drop a trailing comma, turn a trailing colon into `: null`, append the missing
//! `}`/`]` in reverse order; if the result is still invalid, use `{}`. An empty text stays empty.

/// `true` when `text` is valid JSON.
pub fn is_valid(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// The closed text, or `None` when `text` needs no change (valid JSON, or empty).
pub fn close_json(text: &str) -> Option<String> {
    if text.is_empty() || is_valid(text) {
        return None;
    }
    let mut stack: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    // byte offset of the start of the current escape sequence inside a string
    let mut escape_at = 0usize;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
                escape_at = i;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => stack.push(b'}'),
            b'[' => stack.push(b']'),
            // the guard pops the opener; a mismatched closer means the text is not a cut prefix
            b'}' | b']' if stack.pop() != Some(b) => return Some("{}".to_string()),
            _ => {}
        }
    }
    let mut out = text.to_string();
    if in_string {
        if escaped {
            out.truncate(escape_at);
        } else if let Some(pos) = out.rfind("\\u") {
            // a cut \uXXXX escape: drop it when fewer than four hex digits follow
            let tail = &out[pos + 2..];
            if tail.len() < 4
                && tail.bytes().all(|c| c.is_ascii_hexdigit())
                && !is_escaped_backslash(&out, pos)
            {
                out.truncate(pos);
            }
        }
        out.push('"');
    }
    loop {
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        if out.ends_with(',') {
            out.pop();
            continue;
        }
        break;
    }
    if out.ends_with(':') {
        out.push_str(" null");
    }
    while let Some(c) = stack.pop() {
        out.push(c as char);
    }
    if is_valid(&out) {
        Some(out)
    } else {
        Some("{}".to_string())
    }
}

/// Whether the backslash at `pos` is itself escaped (preceded by an odd number of backslashes).
fn is_escaped_backslash(s: &str, pos: usize) -> bool {
    s.as_bytes()[..pos]
        .iter()
        .rev()
        .take_while(|&&c| c == b'\\')
        .count()
        % 2
        == 1
}

#[cfg(test)]
mod tests {
    use super::close_json;

    #[test]
    fn valid_and_empty_stay() {
        assert_eq!(close_json(""), None);
        assert_eq!(close_json("{\"a\":1}"), None);
    }

    #[test]
    fn closes_open_string_and_object() {
        assert_eq!(
            close_json("{\"command\":\"ls -l").as_deref(),
            Some("{\"command\":\"ls -l\"}")
        );
    }

    #[test]
    fn drops_dangling_backslash() {
        assert_eq!(close_json("{\"p\":\"a\\").as_deref(), Some("{\"p\":\"a\"}"));
    }

    #[test]
    fn drops_cut_unicode_escape() {
        assert_eq!(
            close_json("{\"p\":\"a\\u00").as_deref(),
            Some("{\"p\":\"a\"}")
        );
    }

    #[test]
    fn trailing_comma_and_whitespace() {
        assert_eq!(close_json("{\"a\":1,  ").as_deref(), Some("{\"a\":1}"));
        assert_eq!(close_json("[1,2,").as_deref(), Some("[1,2]"));
    }

    #[test]
    fn trailing_colon_becomes_null() {
        assert_eq!(close_json("{\"a\":").as_deref(), Some("{\"a\": null}"));
    }

    #[test]
    fn nested_closers_in_reverse_order() {
        assert_eq!(
            close_json("{\"a\":[{\"b\":[1").as_deref(),
            Some("{\"a\":[{\"b\":[1]}]}")
        );
    }

    #[test]
    fn hopeless_becomes_empty_object() {
        assert_eq!(close_json("{\"a\"").as_deref(), Some("{}"));
        assert_eq!(close_json("{\"a\":tru").as_deref(), Some("{}"));
        assert_eq!(close_json("}}").as_deref(), Some("{}"));
    }
}
