//! Checkpoints (`foldlog_core::log::checkpoint`): written beside a stored log, restored into a
//! partial `Log` that completes itself when something reads beyond its surface (`log.rs`).
use std::path::PathBuf;

use foldlog_core::log::checkpoint;
use foldlog_core::repair;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::to_py as err_to_py;
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

/// Whether `log` was restored from a checkpoint and has not read its whole prefix yet.
#[pyfunction]
fn checkpoint_partial(py: Python<'_>, log: &Log) -> PyResult<bool> {
    log.with_ready_read(py, checkpoint::is_partial)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(checkpoint_encode, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_restore, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_partial, m)?)?;
    Ok(())
}
