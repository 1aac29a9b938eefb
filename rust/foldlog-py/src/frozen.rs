//! Read-only Python objects (`foldlog.log.frozen`'s `FrozenDict` and `FrozenList`) built from a
//! JSON value in one walk: each dict and list made by its type's own constructor slot (no call
//! through the type, no `__init__`), keys and the usual labels (roles, block types) interned, each
//! string made once, and every dict and list inside the value left out of the cyclic GC: recorded
//! history is immutable, so no cycle can pass through it (CPython does the same for plain dicts of
//! atomic values, and a dict into which a container is forced later tracks itself again). The
//! value itself stays tracked, so that `gc.get_objects()` still finds every message read. Reading
//! every message of a large log spent a sixth of its time in GC passes over these objects (B1,
//! issue 31). A message read straight from its line (`log::flat`) is built the same way from its
//! borrowed texts, with no JSON value in between (`flat_to_py_frozen`).
use std::ptr;

use foldlog_core::log::flat::{Flat, FlatCall, FlatValue};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyString, PyTuple, PyType};
use serde_json::Value;

/// The two read-only types and their constructor slots.
struct Types {
    dict: Py<PyType>,
    list: Py<PyType>,
    dict_new: ffi::newfunc,
    list_new: ffi::newfunc,
    /// The empty argument tuple the constructors are called with.
    no_args: Py<PyTuple>,
}

static TYPES: PyOnceLock<Types> = PyOnceLock::new();

fn constructor(py: Python<'_>, t: &Py<PyType>) -> PyResult<ffi::newfunc> {
    // SAFETY: the slot of a live type; `tp_new` is a `newfunc` by the C API's definition
    let slot = unsafe { ffi::PyType_GetSlot(t.as_ptr().cast(), ffi::Py_tp_new) };
    if slot.is_null() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{} cannot be instantiated",
            t.bind(py).name()?
        )));
    }
    // SAFETY: see above
    Ok(unsafe { std::mem::transmute::<*mut std::ffi::c_void, ffi::newfunc>(slot) })
}

fn types(py: Python<'_>) -> PyResult<&'static Types> {
    TYPES.get_or_try_init(py, || {
        let m = py.import("foldlog.log.frozen")?;
        let dict = m.getattr("FrozenDict")?.cast_into::<PyType>()?.unbind();
        let list = m.getattr("FrozenList")?.cast_into::<PyType>()?.unbind();
        Ok(Types {
            dict_new: constructor(py, &dict)?,
            list_new: constructor(py, &list)?,
            dict,
            list,
            no_args: PyTuple::empty(py).unbind(),
        })
    })
}

/// A key of a message or of one of its blocks, interned when it is one of the usual ones.
fn key<'py>(py: Python<'py>, k: &str) -> Bound<'py, PyString> {
    let known = match k {
        "role" => intern!(py, "role"),
        "content" => intern!(py, "content"),
        "name" => intern!(py, "name"),
        "tool_calls" => intern!(py, "tool_calls"),
        "tool_call_id" => intern!(py, "tool_call_id"),
        "id" => intern!(py, "id"),
        "type" => intern!(py, "type"),
        "function" => intern!(py, "function"),
        "arguments" => intern!(py, "arguments"),
        "is_error" => intern!(py, "is_error"),
        "reasoning_content" => intern!(py, "reasoning_content"),
        "thinking_blocks" => intern!(py, "thinking_blocks"),
        "text" => intern!(py, "text"),
        "thinking" => intern!(py, "thinking"),
        "signature" => intern!(py, "signature"),
        "image_url" => intern!(py, "image_url"),
        "url" => intern!(py, "url"),
        "source" => intern!(py, "source"),
        "media_type" => intern!(py, "media_type"),
        "data" => intern!(py, "data"),
        _ => return PyString::new(py, k),
    };
    known.clone()
}

/// The value of a `role` or `type` key: interned when it is one of the usual labels.
fn label<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyString> {
    let known = match s {
        "user" => intern!(py, "user"),
        "assistant" => intern!(py, "assistant"),
        "tool" => intern!(py, "tool"),
        "system" => intern!(py, "system"),
        "function" => intern!(py, "function"),
        "text" => intern!(py, "text"),
        "image_url" => intern!(py, "image_url"),
        "thinking" => intern!(py, "thinking"),
        _ => return PyString::new(py, s),
    };
    known.clone()
}

/// A new, empty instance of `t` made by its constructor slot.
fn new_empty<'py>(
    py: Python<'py>,
    t: &Py<PyType>,
    new: ffi::newfunc,
    types: &Types,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: the type's own `tp_new` with an empty argument tuple, as a call of the type makes
    unsafe {
        let obj = new(t.as_ptr().cast(), types.no_args.as_ptr(), ptr::null_mut());
        Bound::from_owned_ptr_or_err(py, obj)
    }
}

/// Leave a frozen dict or list out of the cyclic GC: it holds only scalars and other frozen
/// objects (no cycle can pass through it) and its type has no `__dict__` or slots.
fn untrack(obj: &Bound<'_, PyAny>) {
    // SAFETY: a live GC object (a dict or list); untracking one that is not tracked does nothing
    unsafe { ffi::PyObject_GC_UnTrack(obj.as_ptr().cast()) };
}

/// `v` as a frozen object; `nested`: inside another one (then left out of the cyclic GC).
fn build<'py>(
    py: Python<'py>,
    types: &Types,
    v: &Value,
    nested: bool,
) -> PyResult<Bound<'py, PyAny>> {
    match v {
        Value::Array(items) => {
            let l = new_empty(py, &types.list, types.list_new, types)?;
            for x in items {
                let item = build(py, types, x, true)?;
                // SAFETY: `l` is a list (a subclass's instance); Append takes its own reference
                if unsafe { ffi::PyList_Append(l.as_ptr(), item.as_ptr()) } < 0 {
                    return Err(PyErr::fetch(py));
                }
            }
            if nested {
                untrack(&l);
            }
            Ok(l)
        }
        Value::Object(m) => {
            let d = new_empty(py, &types.dict, types.dict_new, types)?;
            for (k, x) in m {
                let item = match x {
                    Value::String(s) if k == "role" || k == "type" => label(py, s).into_any(),
                    other => build(py, types, other, true)?,
                };
                let k = key(py, k);
                // SAFETY: `d` is a dict (a subclass's instance); SetItem takes its own references
                if unsafe { ffi::PyDict_SetItem(d.as_ptr(), k.as_ptr(), item.as_ptr()) } < 0 {
                    return Err(PyErr::fetch(py));
                }
            }
            if nested {
                untrack(&d);
            }
            Ok(d)
        }
        other => crate::convert::scalar_to_py(py, other),
    }
}

/// A JSON value as read-only Python objects (`FrozenDict`, `FrozenList`, and scalars).
pub fn to_py_frozen<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    build(py, types(py)?, v, false)
}

/// Set `d[k] = v` on a frozen dict being built.
fn set(
    py: Python<'_>,
    d: &Bound<'_, PyAny>,
    k: &Bound<'_, PyString>,
    v: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // SAFETY: `d` is a dict (a subclass's instance); SetItem takes its own references
    if unsafe { ffi::PyDict_SetItem(d.as_ptr(), k.as_ptr(), v.as_ptr()) } < 0 {
        return Err(PyErr::fetch(py));
    }
    Ok(())
}

/// The `tool_calls` of a flat message: `[{"id","type":"function","function":{"name","arguments"}}]`.
fn flat_calls<'py>(
    py: Python<'py>,
    types: &Types,
    calls: &[FlatCall<'_>],
) -> PyResult<Bound<'py, PyAny>> {
    let l = new_empty(py, &types.list, types.list_new, types)?;
    for c in calls {
        let f = new_empty(py, &types.dict, types.dict_new, types)?;
        set(
            py,
            &f,
            intern!(py, "name"),
            PyString::new(py, c.name).as_any(),
        )?;
        set(
            py,
            &f,
            intern!(py, "arguments"),
            PyString::new(py, &c.arguments).as_any(),
        )?;
        untrack(&f);
        let d = new_empty(py, &types.dict, types.dict_new, types)?;
        set(py, &d, intern!(py, "id"), PyString::new(py, &c.id).as_any())?;
        set(
            py,
            &d,
            intern!(py, "type"),
            intern!(py, "function").as_any(),
        )?;
        set(py, &d, intern!(py, "function"), &f)?;
        untrack(&d);
        // SAFETY: `l` is a list (a subclass's instance); Append takes its own reference
        if unsafe { ffi::PyList_Append(l.as_ptr(), d.as_ptr()) } < 0 {
            return Err(PyErr::fetch(py));
        }
    }
    untrack(&l);
    Ok(l)
}

/// A message read flat from its line (`log::flat`) as the same read-only objects
/// `to_py_frozen` makes of its projection, built straight from the line's strings.
pub fn flat_to_py_frozen<'py>(py: Python<'py>, m: &Flat<'_>) -> PyResult<Bound<'py, PyAny>> {
    let types = types(py)?;
    let d = new_empty(py, &types.dict, types.dict_new, types)?;
    let mut result = Ok(());
    m.visit(|k, v| {
        if result.is_err() {
            return;
        }
        let item = match v {
            FlatValue::Str(s) if k == "role" => Ok(label(py, s).into_any()),
            FlatValue::Str(s) => Ok(PyString::new(py, s).into_any()),
            FlatValue::Bool(b) => Ok(PyBool::new(py, b).to_owned().into_any()),
            FlatValue::Calls(calls) => flat_calls(py, types, calls),
        };
        result = item.and_then(|item| set(py, &d, &key(py, k), &item));
    });
    result.map(|()| d)
}
