//! Surface operations: how a surface event changes what the model sees.
use serde_json::Value;

use crate::error::{Error, Result};

/// How a surface event changes the surface (see docs/log-format.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SurfaceOp {
    /// Put this event at the end.
    Append,
    /// This event takes the place of the surface nodes `start..=end`.
    Replace { start: u64, end: u64 },
    /// This event goes right after surface node `after`.
    Insert { after: u64 },
    /// Nodes `start..=end` are removed except `keep`; this digest goes right after the kept ones.
    Fold {
        start: u64,
        end: u64,
        keep: Vec<u64>,
    },
    /// The surface becomes exactly `keep` followed by this event.
    Reset { keep: Vec<u64> },
    /// This `tool/result` event (the stub of [`crate::surface::mask::stub`]) takes the place of the
    /// `tool/result` surface node `seq`, which stays in the log (observation masking).
    Mask { seq: u64 },
}

impl SurfaceOp {
    pub fn from_value(v: &Value) -> Result<SurfaceOp> {
        if let Some(s) = v.as_str() {
            return match s {
                "append" => Ok(SurfaceOp::Append),
                other => Err(Error::invalid(format!("unknown surfaceOp {other:?}"))),
            };
        }
        let obj = v
            .as_object()
            .ok_or_else(|| Error::invalid("surfaceOp must be \"append\" or an object"))?;
        let op = obj
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid("surfaceOp object needs a string \"op\""))?;
        let seq = |key: &str| -> Result<u64> {
            obj.get(key).and_then(Value::as_u64).ok_or_else(|| {
                Error::invalid(format!(
                    "surfaceOp {op:?} needs a non-negative integer {key:?}"
                ))
            })
        };
        let seqs = |key: &str| -> Result<Vec<u64>> {
            match obj.get(key) {
                None => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|x| {
                        x.as_u64().ok_or_else(|| {
                            Error::invalid(format!(
                                "surfaceOp {op:?}: {key:?} must list seqs (integers)"
                            ))
                        })
                    })
                    .collect(),
                Some(_) => Err(Error::invalid(format!(
                    "surfaceOp {op:?}: {key:?} must be an array"
                ))),
            }
        };
        match op {
            "append" => Ok(SurfaceOp::Append),
            "replace" => Ok(SurfaceOp::Replace {
                start: seq("start")?,
                end: seq("end")?,
            }),
            "insert" => Ok(SurfaceOp::Insert {
                after: seq("after")?,
            }),
            "fold" => Ok(SurfaceOp::Fold {
                start: seq("start")?,
                end: seq("end")?,
                keep: seqs("keep")?,
            }),
            "reset" => Ok(SurfaceOp::Reset {
                keep: seqs("keep")?,
            }),
            "mask" => Ok(SurfaceOp::Mask { seq: seq("seq")? }),
            other => Err(Error::invalid(format!("unknown surfaceOp {other:?}"))),
        }
    }

    pub fn to_value(&self) -> Value {
        let nums = |v: &[u64]| Value::Array(v.iter().map(|&s| Value::from(s)).collect());
        match self {
            SurfaceOp::Append => Value::from("append"),
            SurfaceOp::Replace { start, end } => {
                serde_json::json!({"op": "replace", "start": start, "end": end})
            }
            SurfaceOp::Insert { after } => serde_json::json!({"op": "insert", "after": after}),
            SurfaceOp::Fold { start, end, keep } => {
                serde_json::json!({"op": "fold", "start": start, "end": end, "keep": nums(keep)})
            }
            SurfaceOp::Reset { keep } => serde_json::json!({"op": "reset", "keep": nums(keep)}),
            SurfaceOp::Mask { seq } => serde_json::json!({"op": "mask", "seq": seq}),
        }
    }

    /// True for every op but `append`: it rewrites the surface and bumps the generation.
    pub fn rewrites(&self) -> bool {
        !matches!(self, SurfaceOp::Append)
    }
}
