//! Python objects <-> JSON values. Data must survive a JSON round trip unchanged: only dicts
//! with string keys, lists/tuples, str, int, finite float, bool and None are accepted.
use foldlog_core::event::SurfaceOp;
use foldlog_core::log::NewEvent;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::errors::invalid;

fn kind(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// The UTF-8 text of a str; a lone surrogate (e.g. from `surrogateescape`) has none and is
/// refused as not JSON-safe rather than escaping as a `UnicodeEncodeError`.
fn utf8<'a>(s: &'a Bound<'_, PyString>, what: &str, path: &str) -> PyResult<&'a str> {
    s.to_str().map_err(|_| {
        invalid(format!(
            "{path}: {what} holds a lone surrogate, which is not valid Unicode and not JSON-safe"
        ))
    })
}

/// Convert, naming the place of the first value that is not JSON-safe (e.g. `data["a"][2]`).
pub fn to_value(obj: &Bound<'_, PyAny>, path: &mut String) -> PyResult<Value> {
    let py = obj.py();
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(utf8(s, "string", path)?.to_owned()));
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract::<bool>()?));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(invalid(format!(
            "{path}: integer {obj} does not fit in 64 bits and would not survive JSON"
        )));
    }
    if obj.is_instance_of::<PyFloat>() {
        let f = obj.extract::<f64>()?;
        return Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| invalid(format!("{path}: float {f} (NaN/Infinity) is not JSON-safe")));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = Map::with_capacity(d.len());
        let base = path.len();
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(invalid(format!(
                    "{path}: key {} is a {}, JSON keys must be strings",
                    k.repr()?,
                    kind(&k)
                )));
            };
            let key = utf8(key, "key", path)?.to_owned();
            path.push_str(&format!("[{key:?}]"));
            let val = to_value(&v, path)?;
            path.truncate(base);
            m.insert(key, val);
        }
        return Ok(Value::Object(m));
    }
    let seq: Option<Vec<Bound<'_, PyAny>>> = if let Ok(l) = obj.cast::<PyList>() {
        Some(l.iter().collect())
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        Some(t.iter().collect())
    } else {
        None
    };
    if let Some(items) = seq {
        let base = path.len();
        let mut out = Vec::with_capacity(items.len());
        for (i, v) in items.iter().enumerate() {
            path.push_str(&format!("[{i}]"));
            out.push(to_value(v, path)?);
            path.truncate(base);
        }
        return Ok(Value::Array(out));
    }
    // Mappings that are not dicts (e.g. MappingProxyType): accept through their items
    if obj.hasattr("keys")? && obj.hasattr("__getitem__")? {
        let d = PyDict::new(py);
        for k in obj.call_method0("keys")?.try_iter()? {
            let k = k?;
            d.set_item(&k, obj.get_item(&k)?)?;
        }
        return to_value(d.as_any(), path);
    }
    Err(invalid(format!(
        "{path}: a {} is not JSON-safe (use dict, list, str, int, float, bool or None)",
        kind(obj)
    )))
}

pub fn value_of(obj: &Bound<'_, PyAny>, root: &str) -> PyResult<Value> {
    let mut path = root.to_string();
    to_value(obj, &mut path)
}

/// A JSON scalar as a Python object (`None`, `bool`, `int`, `float`, `str`); the one conversion
/// of scalars, shared by `to_py` and the frozen message builder (`frozen.rs`).
pub fn scalar_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(0.0).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(_) | Value::Object(_) => {
            unreachable!("containers are converted by the callers")
        }
    })
}

pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => scalar_to_py(py, v)?,
        Value::Array(items) => {
            let l = PyList::empty(py);
            for x in items {
                l.append(to_py(py, x)?)?;
            }
            l.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// One event of a batch from its envelope-shaped mapping. Its `time` (epoch ms) is the batch's
/// unless the mapping gives one (an importer keeps the source's timestamps).
pub fn new_event(py: Python<'_>, ev: &Bound<'_, PyAny>, time: i64) -> PyResult<NewEvent> {
    let env = value_of(ev, "event")?;
    let kind = env
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("an event needs a string \"type\" and \"data\"".into()))?;
    let surface_op = match env.get("surfaceOp") {
        None | Some(Value::Null) => None,
        Some(op) => Some(SurfaceOp::from_value(op).map_err(|e| crate::errors::to_py(py, e, None))?),
    };
    let sources = match env.get("sourceEventSeqs") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            serde_json::from_value(v.clone())
                .map_err(|_| invalid("sourceEventSeqs must list seqs (integers)".into()))?,
        ),
    };
    let time = match env.get("time") {
        None | Some(Value::Null) => time,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| invalid("an event's \"time\" must be an integer (epoch ms)".into()))?,
    };
    Ok(NewEvent {
        kind: kind.to_string(),
        data: env.get("data").cloned().unwrap_or(Value::Null),
        time,
        surface_op,
        sources,
    })
}

/// A JSON value as read-only Python objects (`FrozenDict`, `FrozenList`): see `frozen`.
pub use crate::frozen::to_py_frozen;
