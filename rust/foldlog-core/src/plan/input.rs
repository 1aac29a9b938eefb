//! The planner's input, built in the core from the log: one [`PlanMessage`] per derived
//! message of the surface. This is the only builder (the Python package calls it through
//! `Session.plan_history`), so a preview and a run always plan on the same facts.
//!
//! What each fact comes from (`docs/compaction.md`, "Planning"):
//!
//! * role: the derived message's role (`system`, `user`, `assistant`, `tool`);
//! * token count: the tokenizer's count of the derived message; an exact tokenizer reads the
//!   per-event cache of the log (each event counted once), the estimate counts now;
//! * digest: **from the log, never from text** — a `user/message` event whose surface op is a
//!   `fold` (foldlog's own compactions and imported ones alike);
//! * user-marked keep, error result, elided result: prefix tests on the message's text
//!   ([`crate::project::message_text`]), which are the user's and the tools' own words;
//! * caller: the assistant message holding the call a tool result answers;
//! * bytes: the UTF-8 size of a tool result's text (what prune would drop).

use std::collections::HashMap;
use std::fmt;

use rayon::prelude::*;
use serde_json::Value;

use crate::event::{Event, SurfaceOp};
use crate::log::{EventLog, Events, Message};
use crate::plan::{PlanError, PlanMessage, Role};
use crate::project::message_text;
use crate::tokens::{TokenError, TokenizerChoice};

/// Starts a tool result replaced by the prune placeholder (`foldlog.planning.ELIDED_PREFIX`).
pub const ELIDED_PREFIX: &str = "[elided tool result — ";
/// A user message starting with one of these (after leading whitespace, any case) asks to be
/// kept verbatim under the `user_marked` keep policy.
pub const KEEP_MARKERS: [&str; 4] = ["[[keep]]", "[keep]", "<keep>", "<!-- keep -->"];
/// A tool result starting with one of these (after leading whitespace, any case) failed.
pub const ERROR_PREFIXES: [&str; 2] = ["error:", "blocked:"];
/// Prefix tests look at this many characters only: never lowercase a whole tool output.
const HEAD_CHARS: usize = 64;

/// Why the planner's input could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanInputError {
    /// A message could not be counted.
    Tokens(TokenError),
    /// The facts do not make a valid planner input.
    Plan(PlanError),
}

impl fmt::Display for PlanInputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanInputError::Tokens(e) => e.fmt(f),
            PlanInputError::Plan(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PlanInputError {}

impl From<TokenError> for PlanInputError {
    fn from(e: TokenError) -> Self {
        PlanInputError::Tokens(e)
    }
}

impl From<PlanError> for PlanInputError {
    fn from(e: PlanError) -> Self {
        PlanInputError::Plan(e)
    }
}

/// The token count of each derived message of `log` with `tok` (parallel to
/// [`EventLog::derive`]): an exact tokenizer reads and fills the log's per-event cache; the
/// estimate (with its calibrated ratio) counts every message now, in parallel.
pub fn surface_counts(log: &mut EventLog, tok: TokenizerChoice) -> Result<Vec<u32>, TokenError> {
    match tok {
        TokenizerChoice::Exact(t) => log.surface_token_counts(t),
        TokenizerChoice::Estimate(_) => log
            .messages()
            .par_iter()
            .map(|m| tok.count_message(m).map(saturate))
            .collect(),
    }
}

/// The planner's input for the current surface of `log`, counted with `tok`.
pub fn surface_plan(
    log: &mut EventLog,
    tok: TokenizerChoice,
) -> Result<Vec<PlanMessage>, PlanInputError> {
    let counts = surface_counts(log, tok)?;
    let messages = log.messages();
    let history = log.history();
    Ok(plan_messages(
        &messages,
        history.seqs(),
        history.events(),
        &counts,
    )?)
}

/// The planner messages of derived `messages`: `seqs[i]` is the seq of the event behind
/// message i (held in `events`), `counts[i]` its token count.
pub fn plan_messages(
    messages: &[Message],
    seqs: &[u64],
    events: &Events,
    counts: &[u32],
) -> Result<Vec<PlanMessage>, PlanError> {
    if messages.len() != counts.len() || messages.len() != seqs.len() {
        return Err(PlanError::CountsMismatch {
            messages: messages.len(),
            counts: counts.len(),
        });
    }
    // call id -> index of the assistant message that made it (a repeated id: the latest)
    let mut owner: HashMap<&str, u32> = HashMap::new();
    let mut out = Vec::with_capacity(messages.len());
    for (i, ((m, &seq), &tokens)) in messages.iter().zip(seqs).zip(counts).enumerate() {
        let m: &Value = m;
        let role = Role::parse(m.get("role").and_then(Value::as_str).unwrap_or(""))?;
        let mut pm = PlanMessage::new(role, tokens);
        match role {
            Role::User => {
                pm.is_digest = events.get(seq).is_some_and(is_digest_event);
                pm.is_user_marked_keep =
                    !pm.is_digest && starts_with_any(&head(&message_text(m)), &KEEP_MARKERS);
            }
            Role::Assistant => {
                if let Some(Value::Array(calls)) = m.get("tool_calls") {
                    for id in calls.iter().filter_map(|c| c.get("id")?.as_str()) {
                        if !id.is_empty() {
                            owner.insert(id, i as u32);
                        }
                    }
                }
            }
            Role::Tool => {
                let text = message_text(m);
                pm.bytes = u32::try_from(text.len()).unwrap_or(u32::MAX);
                pm.is_error_result = starts_with_any(&head(&text), &ERROR_PREFIXES);
                // a pruned or masked result: nothing left to elide
                pm.is_elided = text.starts_with(ELIDED_PREFIX)
                    || text.starts_with(crate::surface::mask::MASKED_PREFIX);
                pm.caller = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .and_then(|id| owner.get(id).copied());
            }
            Role::System => {}
        }
        out.push(pm);
    }
    Ok(out)
}

/// A digest: a `user/message` whose surface op folds part of the surface into it.
pub fn is_digest_event(ev: &Event) -> bool {
    ev.kind() == "user/message" && matches!(ev.surface_op(), Some(SurfaceOp::Fold { .. }))
}

/// What prefix tests see: the first [`HEAD_CHARS`] characters, leading whitespace stripped,
/// lowercased.
fn head(text: &str) -> String {
    let end = text
        .char_indices()
        .nth(HEAD_CHARS)
        .map_or(text.len(), |(i, _)| i);
    text[..end].trim_start().to_lowercase()
}

fn starts_with_any(text: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|p| text.starts_with(p))
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Estimate;
    use serde_json::json;

    fn log_of(messages: &[Value]) -> EventLog {
        let mut log = EventLog::new(None);
        for m in messages {
            log.add_message(m, 0).expect("a valid message");
        }
        log
    }

    fn estimate() -> TokenizerChoice {
        TokenizerChoice::Estimate(Estimate::default())
    }

    fn call(id: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}})
    }

    #[test]
    fn a_digest_is_known_from_its_fold_op_never_from_its_text() {
        let mut log = log_of(&[
            json!({"role": "system", "content": "s"}),
            json!({"role": "user", "content": "<compaction-summary>typed by the user"}),
            json!({"role": "assistant", "content": "a"}),
            json!({"role": "user", "content": "b"}),
        ]);
        let plan = surface_plan(&mut log, estimate()).unwrap();
        assert!(
            plan.iter().all(|m| !m.is_digest),
            "text alone makes no digest"
        );
        let nodes = log.surface().nodes().to_vec();
        let folded = log
            .append(
                "user/message",
                &json!({"role": "user", "content": "no tag at all"}),
                0,
                Some(SurfaceOp::Fold {
                    start: nodes[1],
                    end: nodes[2],
                    keep: vec![],
                }),
                Some(vec![nodes[1], nodes[2]]),
            )
            .unwrap();
        let plan = surface_plan(&mut log, estimate()).unwrap();
        let seqs = log.derived_seqs().to_vec();
        let digest = seqs.iter().position(|&s| s == folded).unwrap();
        assert!(plan[digest].is_digest);
        assert_eq!(plan.iter().filter(|m| m.is_digest).count(), 1);
    }

    #[test]
    fn text_flags_callers_and_sizes() {
        let mut log = log_of(&[
            json!({"role": "user", "content": "  [[KEEP]] the port is 8443"}),
            json!({"role": "assistant", "content": "", "tool_calls": [call("a"), call("b")]}),
            json!({"role": "tool", "tool_call_id": "a", "content": "\n ERROR: no such file"}),
            json!({"role": "tool", "tool_call_id": "b", "content": "[elided tool result — bash, 9 bytes]"}),
            json!({"role": "tool", "tool_call_id": "zz", "content": "orphan ✓"}),
            json!({"role": "user", "content": format!("{}[[keep]] past the head", "x".repeat(64))}),
        ]);
        let plan = surface_plan(&mut log, estimate()).unwrap();
        let roles: Vec<Role> = plan.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool,
                Role::Tool,
                Role::User
            ]
        );
        assert!(plan[0].is_user_marked_keep && !plan[5].is_user_marked_keep);
        assert!(plan[2].is_error_result && !plan[3].is_error_result);
        assert!(plan[3].is_elided && !plan[2].is_elided);
        assert_eq!(
            plan.iter().map(|m| m.caller).collect::<Vec<_>>(),
            [None, None, Some(1), Some(1), None, None]
        );
        assert_eq!(plan[4].bytes, "orphan ✓".len() as u32);
    }

    #[test]
    fn estimate_counts_are_the_estimates_message_counts() {
        let messages = [
            json!({"role": "user", "content": "x".repeat(400)}),
            json!({"role": "assistant", "content": "ok"}),
        ];
        let mut log = log_of(&messages);
        let counts = surface_counts(&mut log, estimate()).unwrap();
        let expected: Vec<u32> = messages
            .iter()
            .map(|m| estimate().count_message(m).unwrap() as u32)
            .collect();
        assert_eq!(counts, expected);
        let calibrated = TokenizerChoice::Estimate(Estimate {
            tokens_per_char: 0.5,
        });
        assert!(surface_counts(&mut log, calibrated).unwrap()[0] > counts[0]);
    }
}
