//! The load normalizer over a `Log` (`foldlog_core::repair`): how much it would repair, and the
//! repair itself (appended events, never a rewrite), with the GIL released.
use foldlog_core::repair;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py as err_to_py;
use crate::log::Log;

/// How many repair events the load normalizer would add to `log` (0 for a well-formed log).
#[pyfunction]
fn repair_needed(py: Python<'_>, log: &Log) -> PyResult<usize> {
    log.with_write(py, |log| repair::plan(log).len())
}

/// Apply the load normalizer: append its repair events to `log`. Returns a report dict.
#[pyfunction]
fn normalize_on_load<'py>(py: Python<'py>, log: &Log, time: i64) -> PyResult<Bound<'py, PyDict>> {
    log.settle_for_repair(py)?;
    let report = log
        .with_ready_write(py, |log| repair::normalize_on_load(log, time))?
        .map_err(|e| err_to_py(py, e, None))?;
    let d = PyDict::new(py);
    d.set_item("names_filled", report.names_filled)?;
    d.set_item("arguments_closed", report.arguments_closed)?;
    d.set_item("results_added", report.results_added)?;
    d.set_item("turn_closed", report.turn_closed)?;
    d.set_item("events_added", report.events_added)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(repair_needed, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_on_load, m)?)?;
    Ok(())
}
