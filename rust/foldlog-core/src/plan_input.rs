//! The planner's view of derived chat messages, built in the core: the same facts
//! `foldlog.planning.build_history` extracts in Python (role, token count, digest / user-marked /
//! error-result / elided flags, the assistant message holding a result's call, the result's size),
//! so a resumed session can plan without turning every message into a Python object first.
//!
//! The text rules follow the Python ones character for character: a message's text is a string
//! content or its content blocks' `text` joined; prefix tests look at the first 64 characters,
//! leading whitespace (Python's `str.isspace`) stripped, lowercased; the elided test is on the
//! untouched text.

use serde_json::Value;

use crate::plan::{PlanError, PlanMessage, Role};

/// Opens the digest a compaction writes (`foldlog.planning.DIGEST_OPEN`).
pub const DIGEST_OPEN: &str = "<compaction-summary>";
/// Starts a tool result replaced by the prune placeholder (`foldlog.planning.ELIDED_PREFIX`).
pub const ELIDED_PREFIX: &str = "[elided tool result — ";
const KEEP_MARKERS: [&str; 4] = ["[[keep]]", "[keep]", "<keep>", "<!-- keep -->"];
const ERROR_PREFIXES: [&str; 2] = ["error:", "blocked:"];

/// The planner messages of `messages`, `tokens[i]` being the count of message i.
pub fn plan_messages(
    messages: &[impl AsRef<Value>],
    tokens: &[u32],
) -> Result<Vec<PlanMessage>, PlanError> {
    if messages.len() != tokens.len() {
        return Err(PlanError::CountsMismatch {
            messages: messages.len(),
            counts: tokens.len(),
        });
    }
    let mut owner: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    let mut out = Vec::with_capacity(messages.len());
    for (i, (m, &t)) in messages.iter().zip(tokens).enumerate() {
        let m = m.as_ref();
        let role_name = m.get("role").map_or("None".to_owned(), py_str);
        let role = match role_name.as_str() {
            "developer" => Role::System,
            name => Role::parse(name)?,
        };
        let mut pm = PlanMessage::new(role, t);
        match role {
            Role::User => {
                let head = head(&message_text(m));
                if head.starts_with(DIGEST_OPEN) {
                    pm.is_digest = true;
                } else if KEEP_MARKERS.iter().any(|k| head.starts_with(k)) {
                    pm.is_user_marked_keep = true;
                }
            }
            Role::Assistant => {
                if let Some(Value::Array(calls)) = m.get("tool_calls") {
                    for c in calls {
                        if let Some(id) = c.get("id").filter(|v| truthy(v)) {
                            owner.insert(py_str(id), i as u32);
                        }
                    }
                }
            }
            Role::Tool => {
                let text = message_text(m);
                pm.bytes = u32::try_from(text.len()).unwrap_or(u32::MAX);
                pm.is_error_result = ERROR_PREFIXES.iter().any(|p| head(&text).starts_with(p));
                pm.is_elided = text.starts_with(ELIDED_PREFIX);
                let id = m.get("tool_call_id").map_or("None".to_owned(), py_str);
                pm.caller = owner.get(&id).copied();
            }
            Role::System => {}
        }
        out.push(pm);
    }
    Ok(out)
}

/// A string content, or the `text` of its content blocks joined.
fn message_text(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.as_object())
            .map(|b| b.get("text").map_or(String::new(), py_str))
            .collect(),
        _ => String::new(),
    }
}

/// What prefix tests see: 64 characters, leading whitespace stripped, lowercased.
fn head(text: &str) -> String {
    let first: String = text.chars().take(64).collect();
    first.trim_start_matches(py_isspace).to_lowercase()
}

/// Python's `str.isspace`: Unicode whitespace plus the four ASCII separators 0x1C–0x1F.
fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str()` of a JSON value, for the values that occur as texts and ids.
fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        other => other.to_string(),
    }
}

/// Python truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}
