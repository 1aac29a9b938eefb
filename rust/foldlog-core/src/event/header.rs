//! The header line of a log file.
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The first line of a file: `{"type":"session","version":1,"id":…,"createdAt":…,"parent":null,"meta":{…}}`.
#[derive(Debug, Clone)]
pub struct Header {
    pub line: String,
    pub version: u64,
    pub id: Option<String>,
}

pub const FORMAT_VERSION: u64 = 1;

impl Header {
    /// A new header. `parent` is `null` or the link to the session this one comes from: an object
    /// with a non-empty string `id` (and, by convention, `kind`: `"fork"` with `atSeq`, or
    /// `"subagent"` with `callId`; see docs/log-format.md). Anything else is refused.
    pub fn new(id: &str, created_at: i64, meta: &Value, parent: &Value) -> Result<Header> {
        check_parent(parent)?;
        let mut obj = Map::new();
        obj.insert("type".into(), Value::from("session"));
        obj.insert("version".into(), Value::from(FORMAT_VERSION));
        obj.insert("id".into(), Value::from(id));
        obj.insert("createdAt".into(), Value::from(created_at));
        obj.insert("parent".into(), parent.clone());
        obj.insert(
            "meta".into(),
            if meta.is_null() {
                Value::Object(Map::new())
            } else {
                meta.clone()
            },
        );
        Ok(Header {
            line: Value::Object(obj).to_string(),
            version: FORMAT_VERSION,
            id: Some(id.to_string()),
        })
    }

    /// `Some(header)` when the line is a session header, `None` when it is an event (version 0 file).
    pub fn parse(line: &str) -> Result<Option<Header>> {
        // cheap check first: headers are rare, events are many
        if !line.contains("\"session\"") {
            return Ok(None);
        }
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) => return Ok(None),
        };
        if v.get("type").and_then(Value::as_str) != Some("session") {
            return Ok(None);
        }
        let version = v
            .get("version")
            .and_then(Value::as_u64)
            .ok_or_else(|| Error::invalid("session header without an integer \"version\""))?;
        if version > FORMAT_VERSION {
            return Err(Error::UnsupportedFormat {
                line: 1,
                message: format!(
                    "log format version {version} is newer than this foldlog reads ({FORMAT_VERSION})"
                ),
            });
        }
        Ok(Some(Header {
            line: line.to_string(),
            version,
            id: v.get("id").and_then(Value::as_str).map(str::to_string),
        }))
    }
}

/// A header's `parent`: `null`, or an object naming the parent session by a non-empty string `id`.
fn check_parent(parent: &Value) -> Result<()> {
    match parent {
        Value::Null => Ok(()),
        Value::Object(o) => match o.get("id") {
            Some(Value::String(id)) if !id.is_empty() => Ok(()),
            _ => Err(Error::invalid(
                "header parent: \"id\" must be a non-empty string naming the parent session",
            )),
        },
        other => Err(Error::invalid(format!(
            "header parent must be null or an object with an \"id\", not {other}"
        ))),
    }
}
