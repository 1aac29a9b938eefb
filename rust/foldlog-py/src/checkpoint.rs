//! Checkpoints (`foldlog_core::log::checkpoint`): written beside a stored log, restored into a
//! partial `Log` that completes itself when something reads beyond its surface (`log.rs`).
use std::path::PathBuf;

use foldlog_core::log::checkpoint;
use foldlog_core::repair;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{poisoned, to_py as err_to_py};
use crate::log::Log;

impl Log {
    /// Complete a partial log when the load normalizer has work: a repair reads events beyond
    /// the surface (an open turn's, a call's), which a partial log does not hold.
    pub(crate) fn settle_for_repair(&self, py: Python<'_>) -> PyResult<()> {
        let needs = self.with_ready_write(py, |log| {
            checkpoint::is_partial(log)
                && (log.open_turn().is_some() || !repair::plan(log).is_empty())
        })?;
        if needs {
            self.complete(py)?;
        }
        Ok(())
    }

    /// The header and first `events` events of a log restored from a store's checkpoint, read
    /// by the loader its store gave (`checkpoint_restore_rows`).
    pub(crate) fn read_prefix(&self, py: Python<'_>, events: usize) -> PyResult<Vec<u8>> {
        let loader = self
            .prefix_loader
            .lock()
            .map_err(|_| poisoned(()))?
            .as_ref()
            .map(|l| l.clone_ref(py));
        let Some(loader) = loader else {
            return Err(err_to_py(
                py,
                foldlog_core::Error::storage(
                    "this log was restored from a store's checkpoint without a way to read the store",
                ),
                None,
            ));
        };
        let got = loader.call1(py, (events,))?;
        Ok(got.bind(py).cast::<PyBytes>()?.as_bytes().to_vec())
    }
}

/// The checkpoint of `log`, whose bytes are stored in full at `path` (call right after a
/// flush); `None` for a log without events.
#[pyfunction]
fn checkpoint_encode<'py>(
    py: Python<'py>,
    log: &Log,
    path: PathBuf,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let bytes = log
        .with_ready_read(py, |l| checkpoint::encode(l, &path))?
        .map_err(|e| err_to_py(py, e, None))?;
    Ok(bytes.map(|b| PyBytes::new(py, &b)))
}

/// Restore the log at `path` from its checkpoint `data`: `(log, tail, None)` with the events
/// read after it, or `(None, warn, reason)` when the checkpoint is not used (`warn`: it does not
/// match the log; otherwise the tail is left to a full load, which reports it).
#[pyfunction]
fn checkpoint_restore(
    py: Python<'_>,
    data: &Bound<'_, PyBytes>,
    path: PathBuf,
) -> PyResult<(Option<Log>, usize, bool, Option<String>)> {
    let data = data.as_bytes();
    Ok(match py.detach(|| checkpoint::restore(data, &path)) {
        Ok(r) => (Some(Log::of(r.log)), r.tail, false, None),
        Err(why) => (None, 0, why.warn, Some(why.reason)),
    })
}

/// The checkpoint of `log`, whose events are all stored as rows in a store (call right after a
/// flush); `None` for a log without events.
#[pyfunction]
fn checkpoint_encode_rows<'py>(
    py: Python<'py>,
    log: &Log,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let bytes = log
        .with_ready_read(py, checkpoint::encode_rows)?
        .map_err(|e| err_to_py(py, e, None))?;
    Ok(bytes.map(|b| PyBytes::new(py, &b)))
}

/// Restore a log stored as rows from its checkpoint `data` and `stored` (the lines from the last
/// event it covers on); `loader(n)` returns the header and the first `n` events when the log
/// must be completed. `(log, tail, False, None)`, or `(None, 0, warn, reason)` as
/// `checkpoint_restore`.
#[pyfunction]
fn checkpoint_restore_rows(
    py: Python<'_>,
    data: &Bound<'_, PyBytes>,
    stored: &Bound<'_, PyBytes>,
    loader: Py<PyAny>,
) -> PyResult<(Option<Log>, usize, bool, Option<String>)> {
    let (data, stored) = (data.as_bytes(), stored.as_bytes());
    Ok(match py.detach(|| checkpoint::restore_rows(data, stored)) {
        Ok(r) => {
            let log = Log::of(r.log);
            *log.prefix_loader.lock().map_err(|_| poisoned(()))? = Some(loader);
            (Some(log), r.tail, false, None)
        }
        Err(why) => (None, 0, why.warn, Some(why.reason)),
    })
}

/// Whether `log` was restored from a checkpoint and has not read its whole prefix yet.
#[pyfunction]
fn checkpoint_partial(py: Python<'_>, log: &Log) -> PyResult<bool> {
    log.with_ready_read(py, checkpoint::is_partial)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(checkpoint_encode, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_restore, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_partial, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_encode_rows, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_restore_rows, m)?)?;
    Ok(())
}
