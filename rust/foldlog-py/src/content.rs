//! The content-block rule of the log for what tools return (`foldlog.tools.content`): the
//! core's `validate::tool_blocks`, so a tool's blocks and a message's blocks are checked by one
//! rule.
use foldlog_core::event::validate;
use pyo3::prelude::*;

use crate::convert::{to_py, value_of};
use crate::errors::to_py as err_to_py;

/// `blocks` checked by the log's block rule and returned as plain JSON data (a copy). A refusal
/// raises `InvalidEventError` naming the place (`content[1].image_url.url must not be empty`).
#[pyfunction]
fn check_tool_blocks<'py>(
    py: Python<'py>,
    blocks: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let value = value_of(blocks, "content")?;
    validate::tool_blocks(&value).map_err(|e| err_to_py(py, e, None))?;
    to_py(py, &value)
}

/// `(width, height)` of an image from its bytes (PNG, JPEG, GIF, WebP header), as the token
/// counter reads it from a block's base64 data; `None` when the header cannot be read. What a
/// media reference records for an image (`foldlog.log.media`), so its count stays the image's.
#[pyfunction]
fn media_image_size(py: Python<'_>, data: &[u8]) -> Option<(u32, u32)> {
    py.detach(|| foldlog_core::tokens::media::bytes_image_size(data))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_tool_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(media_image_size, m)?)?;
    Ok(())
}
