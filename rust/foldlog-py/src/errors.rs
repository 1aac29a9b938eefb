//! One place that turns core errors into the `foldlog.errors` exception classes and runs long
//! work with the GIL released.
use foldlog_core::Error;
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("foldlog.errors")?.getattr(name)
}

fn build(py: Python<'_>, name: &str, message: String, kwargs: &[(&str, Py<PyAny>)]) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let cls = class(py, name)?;
        let kw = PyDict::new(py);
        for (k, v) in kwargs {
            kw.set_item(*k, v)?;
        }
        Ok(PyErr::from_value(cls.call((message.clone(),), Some(&kw))?))
    })();
    made.unwrap_or_else(|e| e)
}

/// Map a core error; `path` names the file when there is one.
pub fn to_py(py: Python<'_>, err: Error, path: Option<&str>) -> PyErr {
    let path_obj = || {
        path.map_or_else(
            || py.None(),
            |p| p.into_pyobject(py).unwrap().into_any().unbind(),
        )
    };
    let at = |msg: String| match path {
        Some(p) => format!("{p}: {msg}"),
        None => msg,
    };
    match err {
        Error::Corrupt { line, .. } => {
            let msg = at(err.to_string());
            build(
                py,
                "CorruptLogError",
                msg,
                &[
                    ("path", path_obj()),
                    ("line", line.into_pyobject(py).unwrap().into_any().unbind()),
                ],
            )
        }
        Error::UnsupportedFormat { .. } => {
            build(py, "UnsupportedFormatError", at(err.to_string()), &[])
        }
        Error::InvalidEvent { message } => build(py, "InvalidEventError", message, &[]),
        Error::Storage { message, errno } => {
            let err = build(py, "StorageError", message, &[]);
            if let Some(code) = errno {
                // `except OSError as e: e.errno == errno.ENOSPC` works like for any OSError
                let _ = err.value(py).setattr("errno", code);
            }
            err
        }
        Error::Locked { holder, message } => build(
            py,
            "SessionLockedError",
            message,
            &[(
                "holder",
                holder.into_pyobject(py).unwrap().into_any().unbind(),
            )],
        ),
    }
}

/// Sets `index` (the position of the refused item of a batch) on an exception.
pub fn with_index(py: Python<'_>, err: PyErr, index: usize) -> PyErr {
    let _ = err.value(py).setattr("index", index);
    err
}

/// Map a refused batch: the error of its first bad item, with that item's `index`.
pub fn batch_to_py(py: Python<'_>, err: foldlog_core::log::BatchError) -> PyErr {
    with_index(py, to_py(py, err.error, None), err.index)
}

/// Run `f` without the GIL and map its error.
pub fn detached<T: Send>(
    py: Python<'_>,
    path: Option<&str>,
    f: impl Send + FnOnce() -> foldlog_core::Result<T>,
) -> PyResult<T> {
    py.detach(f).map_err(|e| to_py(py, e, path))
}

pub fn invalid(py: Python<'_>, message: String) -> PyErr {
    build(py, "InvalidEventError", message, &[])
}
