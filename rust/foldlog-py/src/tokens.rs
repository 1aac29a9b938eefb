//! Bindings of `foldlog_core::tokens`: type conversion, error mapping, GIL release.
use foldlog_core::tokens::{
    Calibration, Encoding, Estimate, TokenError, Tokenizer, TokenizerChoice,
};
use pyo3::prelude::*;

use crate::errors::tokens_to_py;
use pyo3::types::PyBytes;

/// The estimate at `tokens_per_char` (a positive number; default 0.25).
fn estimate(tokens_per_char: Option<f64>) -> PyResult<Estimate> {
    match tokens_per_char {
        None => Ok(Estimate::default()),
        Some(tpc) if tpc.is_finite() && tpc > 0.0 => Ok(Estimate {
            tokens_per_char: tpc,
        }),
        Some(tpc) => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "tokens_per_char must be a positive number, got {tpc}"
        ))),
    }
}

/// The tokenizer (exact or the estimate) behind `foldlog.Tokenizer`.
#[pyclass(frozen, module = "foldlog._core", name = "TokenCounter")]
pub struct PyTokenCounter {
    pub(crate) inner: TokenizerChoice,
}

fn parse_json(text: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| tokens_to_py(TokenError::BadMessage(format!("not JSON: {e}"))))
}

#[pymethods]
impl PyTokenCounter {
    /// The exact tokenizer of `model`, or the estimate (`tokens_per_char`, default 0.25).
    #[staticmethod]
    #[pyo3(signature = (model, tokens_per_char=None))]
    fn for_model(py: Python<'_>, model: &str, tokens_per_char: Option<f64>) -> PyResult<Self> {
        let choice = py
            .detach(|| Tokenizer::for_model(model))
            .map_err(tokens_to_py)?;
        let inner = match choice {
            TokenizerChoice::Estimate(_) => TokenizerChoice::Estimate(estimate(tokens_per_char)?),
            exact => exact,
        };
        Ok(PyTokenCounter { inner })
    }

    /// The estimate (`tokens_per_char`, default 0.25): for any model, and when an exact
    /// tokenizer's data cannot be loaded.
    #[staticmethod]
    #[pyo3(signature = (tokens_per_char=None))]
    #[pyo3(name = "estimate")]
    fn py_estimate(tokens_per_char: Option<f64>) -> PyResult<Self> {
        Ok(PyTokenCounter {
            inner: TokenizerChoice::Estimate(estimate(tokens_per_char)?),
        })
    }

    /// The exact tokenizer of an encoding id ("deepseek-v4", "cl100k", "o200k").
    #[staticmethod]
    fn for_encoding(py: Python<'_>, id: &str) -> PyResult<Self> {
        let enc = Encoding::from_id(id).ok_or_else(|| {
            tokens_to_py(TokenError::Unsupported(format!(
                "unknown encoding {id:?} (deepseek-v4, cl100k, o200k)"
            )))
        })?;
        let t = py.detach(|| Tokenizer::get(enc)).map_err(tokens_to_py)?;
        Ok(PyTokenCounter {
            inner: TokenizerChoice::Exact(t),
        })
    }

    #[getter]
    fn id(&self) -> &'static str {
        self.inner.id()
    }

    #[getter]
    fn exact(&self) -> bool {
        self.inner.exact()
    }

    #[getter]
    fn tokens_per_char(&self) -> Option<f64> {
        match self.inner {
            TokenizerChoice::Estimate(e) => Some(e.tokens_per_char),
            TokenizerChoice::Exact(_) => None,
        }
    }

    fn encode(&self, py: Python<'_>, text: &str) -> PyResult<Vec<u32>> {
        py.detach(|| self.inner.encode(text)).map_err(tokens_to_py)
    }

    fn count(&self, py: Python<'_>, text: &str) -> usize {
        if text.len() < 4096 {
            return self.inner.count(text); // releasing the GIL costs more than this
        }
        py.detach(|| self.inner.count(text))
    }

    fn count_batch(&self, py: Python<'_>, texts: Vec<String>) -> Vec<usize> {
        py.detach(|| {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            self.inner.count_batch(&refs)
        })
    }

    /// Tokens of one chat message given as JSON text.
    fn count_message_json(&self, py: Python<'_>, message: &str) -> PyResult<usize> {
        let value = parse_json(message)?;
        py.detach(|| self.inner.count_message(&value))
            .map_err(tokens_to_py)
    }

    /// `(tokens, estimated)` of one chat message given as JSON text: `estimated` when part of
    /// the count is the estimate of non-text content (or the counter is the estimate).
    fn count_message_detail_json(&self, py: Python<'_>, message: &str) -> PyResult<(usize, bool)> {
        let value = parse_json(message)?;
        py.detach(|| self.inner.count_message_detail(&value))
            .map(|c| (c.tokens, c.estimated))
            .map_err(tokens_to_py)
    }

    /// Tokens of a request's tool schemas given as a JSON list.
    fn count_tools_json(&self, py: Python<'_>, tools: &str) -> PyResult<usize> {
        let value = parse_json(tools)?;
        let list = value
            .as_array()
            .ok_or_else(|| tokens_to_py(TokenError::BadMessage("tools must be a list".into())))?;
        py.detach(|| self.inner.count_tools(list))
            .map_err(tokens_to_py)
    }

    fn request_overhead(&self) -> usize {
        self.inner.request_overhead()
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenCounter(id={:?}, exact={})",
            self.inner.id(),
            self.inner.exact()
        )
    }
}

/// Where DeepSeek V4's tokenizer.json is (before its first use).
#[pyfunction]
fn set_deepseek_tokenizer_path(path: std::path::PathBuf) {
    foldlog_core::tokens::set_deepseek_tokenizer_path(path);
}

/// Tokens per character learned from (chars, prompt_tokens) pairs, with the 0.05..2 rule.
#[pyfunction]
fn calibrated_tokens_per_char(pairs: Vec<(usize, usize)>) -> f64 {
    Calibration::from_pairs(&pairs).tokens_per_char()
}

/// The bytes of each ordinary token of an OpenAI encoding, by rank (lets tests check the
/// embedded data against tiktoken's published hash).
#[pyfunction]
fn openai_rank_bytes<'py>(py: Python<'py>, id: &str) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let enc = Encoding::from_id(id)
        .filter(|e| *e != Encoding::DeepSeekV4)
        .ok_or_else(|| {
            tokens_to_py(TokenError::Unsupported(format!(
                "{id:?} is not an OpenAI encoding"
            )))
        })?;
    let t = Tokenizer::get(enc).map_err(tokens_to_py)?;
    Ok(t.rank_bytes().iter().map(|b| PyBytes::new(py, b)).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTokenCounter>()?;
    m.add_function(wrap_pyfunction!(set_deepseek_tokenizer_path, m)?)?;
    m.add_function(wrap_pyfunction!(calibrated_tokens_per_char, m)?)?;
    m.add_function(wrap_pyfunction!(openai_rank_bytes, m)?)?;
    Ok(())
}
