//! Recording OpenAI-chat-shaped messages as their surface events.
use serde_json::{Map, Value};

use super::EventLog;
use crate::error::{Error, Result};
use crate::event::SurfaceOp;

impl EventLog {
    /// Record an OpenAI-chat-shaped message as the matching surface event (appended).
    pub fn add_message(&mut self, message: &Value, time: i64) -> Result<u64> {
        self.add_message_with(message, time, SurfaceOp::Append)
    }

    /// Record a message as its surface event with the given surface op. The message is checked
    /// first ([`crate::event::validate::message`]: errors name the place inside it).
    pub fn add_message_with(&mut self, message: &Value, time: i64, op: SurfaceOp) -> Result<u64> {
        crate::event::validate::message(message)?;
        let (kind, data) = self.message_event(message)?;
        self.append_unchecked(kind, &data, time, Some(op), None)
    }

    /// The event type and data that record an OpenAI-chat-shaped message.
    pub fn message_event(&self, message: &Value) -> Result<(&'static str, Value)> {
        let obj = message
            .as_object()
            .ok_or_else(|| Error::invalid("a message must be a JSON object with a \"role\""))?;
        let role = obj
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid("a message needs a string \"role\""))?;
        let (turn, step) = match self.open_turn {
            Some(t) => (t.turn, t.step.unwrap_or(0)),
            None => (self.last_turn, 0),
        };
        let (kind, data) = match role {
            "system" => (
                "system/message",
                serde_json::json!({"content": obj.get("content").cloned().unwrap_or(Value::Null)}),
            ),
            "user" => ("user/message", message.clone()),
            "assistant" => (
                "assistant/message",
                serde_json::json!({"turn": turn, "step": step, "message": message}),
            ),
            "tool" => {
                let mut m = Map::new();
                m.insert("role".into(), "tool".into());
                if let Some(id) = obj.get("tool_call_id").or_else(|| obj.get("toolCallId")) {
                    m.insert("toolCallId".into(), id.clone());
                }
                if let Some(name) = obj.get("name").or_else(|| obj.get("toolName")) {
                    m.insert("toolName".into(), name.clone());
                }
                m.insert(
                    "content".into(),
                    obj.get("content").cloned().unwrap_or(Value::Null),
                );
                let is_error = obj.get("isError").or_else(|| obj.get("is_error")).cloned();
                m.insert("isError".into(), is_error.unwrap_or(Value::Bool(false)));
                (
                    "tool/result",
                    serde_json::json!({"turn": turn, "step": step, "message": Value::Object(m)}),
                )
            }
            other => {
                return Err(Error::invalid(format!(
                    "unknown message role {other:?} (expected system, user, assistant or tool)"
                )))
            }
        };
        Ok((kind, data))
    }
}
