//! The token counts of a `Log`'s surface and the planner's input built from them: functions
//! taking the log and a `TokenCounter`, each event counted once and its count cached in the log
//! (in memory, and in the line of events not yet flushed). Counting runs with the GIL released.
use foldlog_core::plan::input::{surface_plan, PlanInputError};
use foldlog_core::tokens::TokenizerChoice;
use pyo3::prelude::*;

use crate::errors::{plan_error, tokens_to_py};
use crate::log::Log;
use crate::plan::PyPlanHistory;
use crate::tokens::PyTokenCounter;

/// Exact tokens of the surface's messages with `counter`; `None` for an estimating counter.
#[pyfunction]
fn surface_tokens(py: Python<'_>, log: &Log, counter: &PyTokenCounter) -> PyResult<Option<u64>> {
    let TokenizerChoice::Exact(tok) = counter.inner else {
        return Ok(None);
    };
    log.with_ready_write(py, |log| log.surface_tokens(tok))?
        .map(Some)
        .map_err(tokens_to_py)
}

/// `(tokens, estimated_messages)` of the surface's messages with `counter` (the same per-event
/// cache as `surface_tokens`): how many messages hold an estimated non-text part. `None` for an
/// estimating counter.
#[pyfunction]
fn surface_token_total(
    py: Python<'_>,
    log: &Log,
    counter: &PyTokenCounter,
) -> PyResult<Option<(u64, usize)>> {
    let TokenizerChoice::Exact(tok) = counter.inner else {
        return Ok(None);
    };
    log.with_ready_write(py, |log| log.surface_token_total(tok))?
        .map(|t| Some((t.tokens, t.estimated_messages)))
        .map_err(tokens_to_py)
}

/// The count of each derived message with `counter` (parallel to the derived messages), from
/// the per-event cache; `None` for an estimating counter.
#[pyfunction]
fn surface_token_counts(
    py: Python<'_>,
    log: &Log,
    counter: &PyTokenCounter,
) -> PyResult<Option<Vec<u32>>> {
    let TokenizerChoice::Exact(tok) = counter.inner else {
        return Ok(None);
    };
    log.with_ready_write(py, |log| log.surface_token_counts(tok))?
        .map(Some)
        .map_err(tokens_to_py)
}

/// Events whose count for the current tokenizer is known (from the log or counted).
#[pyfunction]
fn cached_token_events(py: Python<'_>, log: &Log) -> PyResult<usize> {
    log.with_read(py, |log| log.cached_token_events())
}

/// The planner's view of the derived messages counted with `counter` (the only builder of the
/// planner's input): an exact counter reads the counts kept in the log (counting only what is
/// missing), the estimate counts every message; digests are read from the events' fold ops.
/// Built without Python messages.
#[pyfunction]
fn plan_history(py: Python<'_>, log: &Log, counter: &PyTokenCounter) -> PyResult<PyPlanHistory> {
    let tok = counter.inner;
    match log.with_ready_write(py, |log| surface_plan(log, tok))? {
        Ok(messages) => Ok(PyPlanHistory::from_messages(messages)),
        Err(PlanInputError::Tokens(e)) => Err(tokens_to_py(e)),
        Err(PlanInputError::Plan(e)) => Err(plan_error(e)),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(surface_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(surface_token_total, m)?)?;
    m.add_function(wrap_pyfunction!(surface_token_counts, m)?)?;
    m.add_function(wrap_pyfunction!(cached_token_events, m)?)?;
    m.add_function(wrap_pyfunction!(plan_history, m)?)?;
    Ok(())
}
