//! PyO3 bindings for foldlog-core: conversion, error mapping and GIL release only.
use pyo3::prelude::*;

mod body;
mod checkpoint;
mod content;
mod convert;
mod entries;
mod errors;
mod frozen;
mod log;
mod messages;
mod plan;
mod repair;
mod sse;
mod surface_counts;
mod tokens;
mod writer;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    log::register(m)?;
    writer::register(m)?;
    body::register(m)?;
    tokens::register(m)?;
    plan::register(m)?;
    content::register(m)?;
    repair::register(m)?;
    surface_counts::register(m)?;
    checkpoint::register(m)?;
    sse::register(m)?;
    Ok(())
}
