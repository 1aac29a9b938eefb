//! `foldlog._core.WireSegments` and `WireBody`: request bodies built from cached message JSON.
use std::sync::Mutex;

use foldlog_core::body::{self, BodyCursor, WireStyle};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::{to_py, value_of};

pub(crate) fn style_of(id: &str) -> PyResult<WireStyle> {
    WireStyle::from_id(id).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "unknown wire style {id:?} (expected \"keep\", \"strip\" or \"with-calls\")"
        ))
    })
}

/// The serialised messages of one request (a snapshot: later appends do not change it).
#[pyclass(frozen, module = "foldlog._core")]
pub struct WireSegments {
    pub(crate) inner: body::WireMessages,
}

#[pymethods]
impl WireSegments {
    /// "keep", "strip" or "with-calls".
    #[getter]
    fn style(&self) -> &'static str {
        self.inner.style.id()
    }

    /// Bytes of the messages joined with commas.
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.len
    }

    /// Number of messages.
    fn __len__(&self) -> usize {
        self.inner.count()
    }

    /// These messages with message `i` sent as `segment` (its JSON, as the style writes it) for
    /// each `(i, segment)`: what a session holding media references sends, the data resolved
    /// into the few messages that reference it (the others stay the cached segments).
    fn replaced(&self, segments: Vec<(usize, Bound<'_, PyBytes>)>) -> PyResult<WireSegments> {
        let count = self.inner.count();
        let with = segments
            .iter()
            .map(|(i, s)| (*i, s.as_bytes().into()))
            .collect();
        let inner = self.inner.replacing(with).ok_or_else(|| {
            pyo3::exceptions::PyIndexError::new_err(format!(
                "a replaced message index is out of range ({count} messages)"
            ))
        })?;
        Ok(WireSegments { inner })
    }

    /// The whole body: `head` + the messages joined with commas + `tail`.
    fn body(&self, head: &[u8], tail: &[u8]) -> WireBody {
        WireBody {
            inner: body::WireBody::new(head, self.inner.clone(), tail),
        }
    }
}

/// A request body held as shared segments: `len()` is its size in bytes, `chunks()` reads it.
#[pyclass(frozen, module = "foldlog._core")]
pub struct WireBody {
    inner: body::WireBody,
}

#[pymethods]
impl WireBody {
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The body in one `bytes` (GIL released while it is joined).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes = py.detach(|| self.inner.to_vec());
        PyBytes::new(py, &bytes)
    }

    /// An iterator of `bytes` pieces of at most `size` bytes, from the start.
    #[pyo3(signature = (size=65536))]
    fn chunks(&self, size: usize) -> PyResult<BodyChunks> {
        if size == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "chunk size must be positive",
            ));
        }
        Ok(BodyChunks {
            body: self.inner.clone(),
            cursor: Mutex::new(BodyCursor::default()),
            size,
        })
    }
}

/// Pieces of a [`WireBody`], in order.
#[pyclass(frozen, module = "foldlog._core")]
pub struct BodyChunks {
    body: body::WireBody,
    cursor: Mutex<BodyCursor>,
    size: usize,
}

#[pymethods]
impl BodyChunks {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        let mut out = Vec::with_capacity(self.size.min(self.body.len()));
        let more = py.detach(|| {
            let mut cursor = self.cursor.lock().unwrap_or_else(|e| e.into_inner());
            self.body.fill(&mut cursor, self.size, &mut out)
        });
        more.then(|| PyBytes::new(py, &out))
    }
}

/// Any JSON-safe value encoded as every request body is: keys sorted, compact, UTF-8 (the only
/// JSON encoder of request bodies).
#[pyfunction]
fn encode_json<'py>(py: Python<'py>, value: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let v = value_of(value, "body")?;
    let mut out = Vec::with_capacity(256);
    body::write_value(&v, &mut out);
    Ok(PyBytes::new(py, &out))
}

/// A request body: `frame` (the body without its messages) around `messages`, each written as
/// the core writes it in `style` (what a session's cached segments hold).
#[pyfunction]
fn encode_request<'py>(
    py: Python<'py>,
    frame: &Bound<'_, PyAny>,
    messages: Vec<Bound<'_, PyAny>>,
    style: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let style = style_of(style)?;
    let frame = value_of(frame, "body")?;
    let mut values = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        values.push(value_of(m, &format!("messages[{i}]"))?);
    }
    let out = py.detach(|| {
        let segments: Vec<body::Segment> = values
            .iter()
            .map(|m| body::message_json(m, style).into())
            .collect();
        let (head, tail) = body::frame(&frame);
        let count = segments.len();
        let len = body::joined_len(&segments);
        let messages = body::WireMessages {
            style,
            messages: body::Messages::owned(segments),
            len,
        };
        debug_assert_eq!(messages.count(), count);
        body::WireBody::new(&head, messages, &tail).to_vec()
    });
    Ok(PyBytes::new(py, &out))
}

/// The bytes before and after the messages of `body` (its `"messages"` value is ignored).
#[pyfunction]
fn encode_frame<'py>(
    py: Python<'py>,
    body: &Bound<'_, PyAny>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let v = value_of(body, "body")?;
    let (head, tail) = body::frame(&v);
    Ok((PyBytes::new(py, &head), PyBytes::new(py, &tail)))
}

/// `messages` as `style` sends them, as plain values (for providers that build bodies in Python).
#[pyfunction]
fn styled_messages<'py>(
    py: Python<'py>,
    messages: Vec<Bound<'_, PyAny>>,
    style: &str,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let style = style_of(style)?;
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let v = value_of(m, &format!("messages[{i}]"))?;
        out.push(to_py(py, &body::styled(&v, style))?);
    }
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(encode_json, m)?)?;
    m.add_function(wrap_pyfunction!(encode_request, m)?)?;
    m.add_function(wrap_pyfunction!(encode_frame, m)?)?;
    m.add_function(wrap_pyfunction!(styled_messages, m)?)?;
    m.add_class::<WireSegments>()?;
    m.add_class::<WireBody>()?;
    m.add_class::<BodyChunks>()?;
    Ok(())
}
