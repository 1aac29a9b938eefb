//! `foldlog._core.FileWriter` and `write_file`: the JSONL file store's writer; and the writer
//! side of a `Log` every store uses (its pending batch, the mark of what is stored).
use std::path::PathBuf;
use std::sync::Mutex;

use foldlog_core::store::{Durability, FileWriter as CoreWriter};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{detached, poisoned, to_py as err_to_py};
use crate::log::Log;

/// The JSONL file writer: holds the session's lock until closed.
#[pyclass(frozen, module = "foldlog._core")]
pub struct FileWriter {
    pub(crate) inner: Mutex<Option<CoreWriter>>,
}

impl FileWriter {
    /// Run `f` on the open writer, without the GIL (see `Log::with_write`).
    fn with_open(
        &self,
        py: Python<'_>,
        f: impl Send + FnOnce(&mut CoreWriter) -> foldlog_core::Result<()>,
    ) -> PyResult<()> {
        detached(py, None, || {
            let mut g = self
                .inner
                .lock()
                .map_err(|_| foldlog_core::Error::storage("writer lock poisoned"))?;
            let w = g
                .as_mut()
                .ok_or_else(|| foldlog_core::Error::storage("the session file is closed"))?;
            f(w)
        })
    }
}

#[pymethods]
impl FileWriter {
    /// Take the lock and open (or create with `header_line`) the file. Returns `(writer, header)`:
    /// the header line written to a new (or empty) file, else `None` (the file is not read).
    #[staticmethod]
    #[pyo3(signature = (path, header_line, durable=true))]
    fn open<'py>(
        py: Python<'py>,
        path: PathBuf,
        header_line: &str,
        durable: bool,
    ) -> PyResult<(FileWriter, Option<Bound<'py, PyBytes>>)> {
        let shown = path.display().to_string();
        let durability = if durable {
            Durability::Batch
        } else {
            Durability::None
        };
        let (w, bytes) = detached(py, Some(&shown), || {
            CoreWriter::open(&path, header_line, durability)
        })?;
        Ok((
            FileWriter {
                inner: Mutex::new(Some(w)),
            },
            bytes.map(|b| PyBytes::new(py, &b)),
        ))
    }

    /// Cut a torn tail found on open.
    fn cut_to(&self, py: Python<'_>, len: u64, add_newline: bool) -> PyResult<()> {
        self.with_open(py, |w| w.cut_to(len, add_newline))
    }

    /// Append bytes as one durable batch.
    fn append(&self, py: Python<'_>, data: &Bound<'_, PyBytes>) -> PyResult<()> {
        let bytes = data.as_bytes();
        self.with_open(py, |w| w.append(bytes))
    }

    /// Write the log's pending batch as one durable batch and mark it stored (GIL released; on
    /// error nothing is marked). Returns how many events were written.
    fn append_from(&self, py: Python<'_>, log: &Log) -> PyResult<usize> {
        let result = py.detach(|| -> foldlog_core::Result<usize> {
            let mut log = log.write_detached()?;
            let mut w = self
                .inner
                .lock()
                .map_err(|_| foldlog_core::Error::storage("writer lock poisoned"))?;
            let w = w
                .as_mut()
                .ok_or_else(|| foldlog_core::Error::storage("the session file is closed"))?;
            let count = log.pending().len();
            if count > 0 {
                w.append(&log.pending_bytes())?;
                let upto = log.len();
                log.mark_flushed(upto);
            }
            Ok(count)
        });
        result.map_err(|e| err_to_py(py, e, None))
    }

    /// Replace the whole file atomically with `data`, under the lock (an erasure).
    fn rewrite(&self, py: Python<'_>, data: &Bound<'_, PyBytes>) -> PyResult<()> {
        let bytes = data.as_bytes();
        self.with_open(py, |w| w.rewrite(bytes))
    }

    /// Close the session file but keep the lock (an idle session); the next write reopens it.
    fn suspend(&self, py: Python<'_>) -> PyResult<()> {
        self.with_open(py, |w| {
            w.suspend();
            Ok(())
        })
    }

    /// Release the lock and close the file.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            self.inner
                .lock()
                .map(|mut g| drop(g.take()))
                .map_err(|_| ())
        })
        .map_err(poisoned)
    }

    #[getter]
    fn closed(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.inner.lock().map(|g| g.is_none()).map_err(|_| ()))
            .map_err(poisoned)
    }
}

/// Write a whole new file atomically (temp file, fsync, rename).
#[pyfunction]
pub fn write_file(py: Python<'_>, path: PathBuf, data: &Bound<'_, PyBytes>) -> PyResult<()> {
    let shown = path.display().to_string();
    let bytes = data.as_bytes();
    detached(py, Some(&shown), || {
        foldlog_core::store::write_new(&path, bytes)
    })
}

/// The log's batch not yet stored: `(bytes, first_seq, count)`.
#[pyfunction]
fn pending_batch<'py>(py: Python<'py>, log: &Log) -> PyResult<(Bound<'py, PyBytes>, usize, usize)> {
    let (bytes, first, count) = log.with_ready_read(py, |log| {
        (log.pending_bytes(), log.flushed(), log.pending().len())
    })?;
    Ok((PyBytes::new(py, &bytes), first, count))
}

/// Mark the log's events before `upto` as stored (a store wrote them, or read them back).
#[pyfunction]
fn mark_flushed(py: Python<'_>, log: &Log, upto: usize) -> PyResult<()> {
    log.with_ready_write(py, |log| log.mark_flushed(upto))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FileWriter>()?;
    m.add_function(wrap_pyfunction!(write_file, m)?)?;
    m.add_function(wrap_pyfunction!(pending_batch, m)?)?;
    m.add_function(wrap_pyfunction!(mark_flushed, m)?)?;
    m.add("ERASED_CONTENT", foldlog_core::event::ERASED_CONTENT)?;
    Ok(())
}
