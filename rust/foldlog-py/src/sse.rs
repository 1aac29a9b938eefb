//! `foldlog._core.SseDecoder`: the core's server-sent-events decoder for the HTTP providers.
use std::sync::Mutex;

use foldlog_core::sse::{SseDecoder as CoreDecoder, SseError, SseEvent};
use pyo3::prelude::*;

use crate::errors::{poisoned, stream_protocol};

/// Feed bytes, get the `(data, event)` pairs of the events they complete.
#[pyclass(frozen, module = "foldlog._core")]
pub struct SseDecoder {
    inner: Mutex<CoreDecoder>,
}

fn pairs(result: Result<Vec<SseEvent>, SseError>) -> PyResult<Vec<(String, String)>> {
    result
        .map(|events| events.into_iter().map(|e| (e.data, e.event)).collect())
        .map_err(|e| stream_protocol(e.to_string()))
}

#[pymethods]
impl SseDecoder {
    /// Bounds in bytes (`None`: unbounded); the caller checks they are positive.
    #[new]
    #[pyo3(signature = (max_line_bytes, max_noise_bytes))]
    fn new(max_line_bytes: Option<usize>, max_noise_bytes: Option<usize>) -> Self {
        SseDecoder {
            inner: Mutex::new(CoreDecoder::new(max_line_bytes, max_noise_bytes)),
        }
    }

    /// The events `piece` completes (`StreamProtocolError` when a bound is passed).
    fn feed(&self, piece: &[u8]) -> PyResult<Vec<(String, String)>> {
        pairs(self.inner.lock().map_err(poisoned)?.feed(piece))
    }

    /// End of stream: the events still open.
    fn close(&self) -> PyResult<Vec<(String, String)>> {
        pairs(self.inner.lock().map_err(poisoned)?.close())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SseDecoder>()
}
