//! PyO3 bindings for foldlog-core: conversion, error mapping and GIL release only.
use pyo3::prelude::*;

mod body;
mod convert;
mod errors;
mod log;
mod messages;
mod plan;
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
    Ok(())
}
