//! The one place that turns core errors into the `foldlog.errors` exception classes (imported
//! once, by type, with `import_exception!`) and runs long work with the GIL released.
use foldlog_core::plan::PlanError;
use foldlog_core::tokens::TokenError;
use foldlog_core::Error;
use pyo3::prelude::*;

pyo3::import_exception!(foldlog.errors, CorruptLogError);
pyo3::import_exception!(foldlog.errors, NotALogError);
pyo3::import_exception!(foldlog.errors, UnsupportedFormatError);
pyo3::import_exception!(foldlog.errors, InvalidEventError);
pyo3::import_exception!(foldlog.errors, StorageError);
pyo3::import_exception!(foldlog.errors, SessionLockedError);
pyo3::import_exception!(foldlog.errors, TokenizerError);
pyo3::import_exception!(foldlog.errors, CompactionError);
pyo3::import_exception!(foldlog.errors, StreamProtocolError);

/// Sets attributes on an exception (a failure to set one leaves the exception as it is).
fn with_attrs(py: Python<'_>, err: PyErr, attrs: &[(&str, Py<PyAny>)]) -> PyErr {
    for (name, value) in attrs {
        let _ = err.value(py).setattr(*name, value);
    }
    err
}

/// Map a core error; `path` names the file when there is one.
pub fn to_py(py: Python<'_>, err: Error, path: Option<&str>) -> PyErr {
    let at = |msg: String| match path {
        Some(p) => format!("{p}: {msg}"),
        None => msg,
    };
    match err {
        Error::Corrupt { line, .. } | Error::NotALog { line, .. } => {
            let e = match err {
                Error::NotALog { .. } => NotALogError::new_err(at(err.to_string())),
                _ => CorruptLogError::new_err(at(err.to_string())),
            };
            let path = path.into_pyobject(py).map(|p| p.into_any().unbind());
            let line = line.into_pyobject(py).map(|l| l.into_any().unbind());
            match (path, line) {
                (Ok(p), Ok(l)) => with_attrs(py, e, &[("path", p), ("line", l)]),
                _ => e,
            }
        }
        Error::UnsupportedFormat { .. } => UnsupportedFormatError::new_err(at(err.to_string())),
        Error::InvalidEvent { message } => InvalidEventError::new_err(message),
        Error::Storage { message, errno } => {
            let e = StorageError::new_err(message);
            match errno.map(|c| c.into_pyobject(py)) {
                // `except OSError as e: e.errno == errno.ENOSPC` works like for any OSError
                Some(Ok(code)) => with_attrs(py, e, &[("errno", code.into_any().unbind())]),
                _ => e,
            }
        }
        Error::Locked { holder, message } => {
            let e = SessionLockedError::new_err(message);
            match holder.into_pyobject(py) {
                Ok(h) => with_attrs(py, e, &[("holder", h.into_any().unbind())]),
                Err(_) => e,
            }
        }
    }
}

/// A message that cannot be counted is an invalid message; anything else is the tokenizer's.
pub fn tokens_to_py(err: TokenError) -> PyErr {
    match err {
        TokenError::BadMessage(_) => InvalidEventError::new_err(err.to_string()),
        _ => TokenizerError::new_err(err.to_string()),
    }
}

pub fn compaction_error(message: String) -> PyErr {
    CompactionError::new_err(message)
}

pub fn plan_error(err: PlanError) -> PyErr {
    compaction_error(err.to_string())
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

/// A provider's stream broke one of its bounds.
pub fn stream_protocol(message: String) -> PyErr {
    StreamProtocolError::new_err(message)
}

pub fn invalid(message: String) -> PyErr {
    InvalidEventError::new_err(message)
}

/// A lock poisoned by a panic in another thread.
pub fn poisoned<T>(_: T) -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err("foldlog lock poisoned by a panic")
}
