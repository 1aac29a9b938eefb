//! Bindings for the compaction planner: type conversion, error mapping, GIL release.
use std::sync::Mutex;

use foldlog_core::plan::{self, KeepPolicy, Plan, PlanConfig, PlanError, PlanMessage, Role};
use foldlog_core::project;

use crate::convert::value_of;
use crate::errors::{compaction_error, plan_error};
use pyo3::prelude::*;

const DIGEST: u8 = 1;
const USER_MARKED: u8 = 2;
const ERROR_RESULT: u8 = 4;
const ELIDED: u8 = 8;

fn role_from_code(code: char, index: usize) -> PyResult<Role> {
    match code {
        's' => Ok(Role::System),
        'u' => Ok(Role::User),
        'a' => Ok(Role::Assistant),
        't' => Ok(Role::Tool),
        other => Err(compaction_error(format!(
            "message {index}: unknown role code {other:?} (expected one of s, u, a, t)"
        ))),
    }
}

fn message(role: Role, tokens: u32, flags: u8, caller: i64, bytes: u32) -> PlanMessage {
    PlanMessage {
        tokens,
        role,
        is_digest: flags & DIGEST != 0,
        is_user_marked_keep: flags & USER_MARKED != 0,
        is_error_result: flags & ERROR_RESULT != 0,
        is_elided: flags & ELIDED != 0,
        caller: u32::try_from(caller).ok(),
        bytes,
    }
}

/// The result of planning a compaction. Indices refer to the planned history.
#[pyclass(frozen, name = "CompactionPlan", module = "foldlog._core")]
pub struct PyCompactionPlan {
    inner: Plan,
}

#[pymethods]
impl PyCompactionPlan {
    #[getter]
    fn head(&self) -> usize {
        self.inner.head
    }
    #[getter]
    fn tail_start(&self) -> usize {
        self.inner.tail_start
    }
    #[getter]
    fn kept(&self) -> Vec<usize> {
        self.inner.kept.clone()
    }
    #[getter]
    fn fold(&self) -> Vec<usize> {
        self.inner.fold.clone()
    }
    #[getter]
    fn fold_count(&self) -> usize {
        self.inner.fold.len()
    }
    #[getter]
    fn tokens_before(&self) -> u64 {
        self.inner.tokens_before
    }
    #[getter]
    fn tokens_after(&self) -> u64 {
        self.inner.tokens_after
    }
    #[getter]
    fn fold_tokens(&self) -> u64 {
        self.inner.fold_tokens
    }
    #[getter]
    fn skipped(&self) -> Option<&'static str> {
        self.inner.skipped.map(|s| s.as_str())
    }
    #[getter]
    fn should_fold(&self) -> bool {
        self.inner.should_fold()
    }
    /// Kept messages the kept-overflow rule folds (they held the plan above ``fold_target``).
    #[getter]
    fn released(&self) -> Vec<usize> {
        self.inner.released.clone()
    }
    fn __repr__(&self) -> String {
        let p = &self.inner;
        format!(
            "CompactionPlan(head={}, tail_start={}, kept={}, fold={}, tokens_before={}, tokens_after={}, skipped={})",
            p.head,
            p.tail_start,
            p.kept.len(),
            p.fold.len(),
            p.tokens_before,
            p.tokens_after,
            p.skipped.map_or("None".to_owned(), |s| format!("'{s}'"))
        )
    }
}

/// Per-message planner facts, cached columnar in Rust so that re-planning after one more
/// step costs only the new messages plus one linear pass.
#[pyclass(frozen, name = "PlanHistory", module = "foldlog._core")]
pub struct PyPlanHistory {
    messages: Mutex<Vec<PlanMessage>>,
}

impl PyPlanHistory {
    pub(crate) fn from_messages(messages: Vec<PlanMessage>) -> Self {
        PyPlanHistory {
            messages: Mutex::new(messages),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PlanMessage>> {
        // a panic while holding the lock cannot leave the Vec half-updated (pushes only)
        self.messages.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PyPlanHistory {
    #[new]
    fn new() -> Self {
        PyPlanHistory {
            messages: Mutex::new(Vec::new()),
        }
    }

    fn __len__(&self) -> usize {
        self.lock().len()
    }

    /// Appends one message. ``caller`` is the index of the assistant message holding the call
    /// a tool result answers.
    #[pyo3(signature = (role, tokens, *, digest=false, user_marked=false, error=false, elided=false, caller=None, nbytes=0))]
    #[allow(clippy::too_many_arguments)]
    fn append(
        &self,
        role: &str,
        tokens: u32,
        digest: bool,
        user_marked: bool,
        error: bool,
        elided: bool,
        caller: Option<u32>,
        nbytes: u32,
    ) -> PyResult<()> {
        let role = Role::parse(role).map_err(plan_error)?;
        self.lock().push(PlanMessage {
            tokens,
            role,
            is_digest: digest,
            is_user_marked_keep: user_marked,
            is_error_result: error,
            is_elided: elided,
            caller,
            bytes: nbytes,
        });
        Ok(())
    }

    /// Appends many messages from columns: ``roles`` one code per message (``s``ystem,
    /// ``u``ser, ``a``ssistant, ``t``ool); ``flags`` bit 1 digest, 2 user-marked, 4 error
    /// result, 8 elided; ``callers`` -1 for none.
    #[pyo3(signature = (roles, tokens, flags=None, callers=None, nbytes=None))]
    fn extend(
        &self,
        roles: &str,
        tokens: Vec<u32>,
        flags: Option<Vec<u8>>,
        callers: Option<Vec<i64>>,
        nbytes: Option<Vec<u32>>,
    ) -> PyResult<()> {
        let n = tokens.len();
        let lengths = [
            ("roles", roles.chars().count()),
            ("flags", flags.as_ref().map_or(n, Vec::len)),
            ("callers", callers.as_ref().map_or(n, Vec::len)),
            ("nbytes", nbytes.as_ref().map_or(n, Vec::len)),
        ];
        for (name, len) in lengths {
            if len != n {
                return Err(compaction_error(format!("{name} has {len} entries but tokens has {n}: every column needs one per message"),
                ));
            }
        }
        let mut batch = Vec::with_capacity(n);
        let base = self.lock().len();
        for (k, code) in roles.chars().enumerate() {
            let role = role_from_code(code, base + k)?;
            batch.push(message(
                role,
                tokens[k],
                flags.as_ref().map_or(0, |f| f[k]),
                callers.as_ref().map_or(-1, |c| c[k]),
                nbytes.as_ref().map_or(0, |b| b[k]),
            ));
        }
        self.lock().extend(batch);
        Ok(())
    }

    /// The same facts with other token counts (one per message): for a benchmark that gives
    /// every side the same counts, or a test that chooses them.
    fn with_tokens(&self, tokens: Vec<u32>) -> PyResult<PyPlanHistory> {
        let messages = self.lock();
        if tokens.len() != messages.len() {
            return Err(plan_error(PlanError::CountsMismatch {
                messages: messages.len(),
                counts: tokens.len(),
            }));
        }
        let messages = messages
            .iter()
            .zip(tokens)
            .map(|(m, tokens)| PlanMessage {
                tokens,
                ..m.clone()
            })
            .collect();
        Ok(PyPlanHistory::from_messages(messages))
    }

    /// Drops every message from ``length`` on (after a rewrite of the surface).
    fn truncate(&self, length: usize) {
        self.lock().truncate(length);
    }

    fn clear(&self) {
        self.lock().clear();
    }

    /// The token counts, in order.
    fn tokens(&self) -> Vec<u32> {
        self.lock().iter().map(|m| m.tokens).collect()
    }

    /// The history as the columns `extend` takes: ``(roles, tokens, flags, callers, nbytes)``.
    fn columns(&self) -> (String, Vec<u32>, Vec<u8>, Vec<i64>, Vec<u32>) {
        let messages = self.lock();
        let roles = messages
            .iter()
            .map(|m| match m.role {
                Role::System => 's',
                Role::User => 'u',
                Role::Assistant => 'a',
                Role::Tool => 't',
            })
            .collect();
        let flags = messages
            .iter()
            .map(|m| {
                [
                    (m.is_digest, DIGEST),
                    (m.is_user_marked_keep, USER_MARKED),
                    (m.is_error_result, ERROR_RESULT),
                    (m.is_elided, ELIDED),
                ]
                .iter()
                .filter(|(set, _)| *set)
                .fold(0, |acc, (_, bit)| acc | bit)
            })
            .collect();
        let callers = messages
            .iter()
            .map(|m| m.caller.map_or(-1, i64::from))
            .collect();
        (
            roles,
            messages.iter().map(|m| m.tokens).collect(),
            flags,
            callers,
            messages.iter().map(|m| m.bytes).collect(),
        )
    }

    /// Plans a compaction of the history (the GIL is released while planning).
    #[pyo3(signature = (*, context_window, tail_tokens=16_384, min_recent_keep=2, pinned_user_turn_tokens=1_500, min_fold_tokens=400, keep_policy="errors", force=false, prune_min_bytes=1_024, fold_target=0))]
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        py: Python<'_>,
        context_window: u64,
        tail_tokens: u64,
        min_recent_keep: usize,
        pinned_user_turn_tokens: u64,
        min_fold_tokens: u64,
        keep_policy: &str,
        force: bool,
        prune_min_bytes: u64,
        fold_target: u64,
    ) -> PyResult<PyCompactionPlan> {
        let cfg = PlanConfig {
            context_window,
            tail_tokens,
            min_recent_keep,
            pinned_user_turn_tokens,
            min_fold_tokens,
            keep_policy: KeepPolicy::parse(keep_policy).map_err(plan_error)?,
            force,
            prune_min_bytes,
            fold_target,
        };
        let result = py.detach(|| plan::plan(&self.lock(), &cfg));
        match result {
            Ok(inner) => Ok(PyCompactionPlan { inner }),
            Err(e) => Err(plan_error(e)),
        }
    }

    /// Tool results of ``plan``'s fold that prune may elide (at least ``prune_min_bytes``
    /// large, not already elided).
    #[pyo3(signature = (plan, prune_min_bytes=1_024))]
    fn prune_candidates(
        &self,
        plan: &PyCompactionPlan,
        prune_min_bytes: u64,
    ) -> PyResult<Vec<usize>> {
        let messages = self.lock();
        if let Some(&bad) = plan.inner.fold.iter().find(|&&i| i >= messages.len()) {
            return Err(compaction_error(format!(
                "the plan names message {bad} but the history has {} messages",
                messages.len()
            )));
        }
        let cfg = PlanConfig {
            prune_min_bytes,
            ..PlanConfig::default()
        };
        Ok(plan::prune_candidates(&messages, &plan.inner, &cfg))
    }
}

/// The words of a chat message's ``content`` (a string, or its text blocks joined with a
/// newline; images and other blocks have none): the one rule foldlog reads text by.
#[pyfunction]
fn message_text(message: &Bound<'_, PyAny>) -> PyResult<String> {
    let content = message.call_method1("get", ("content",))?;
    Ok(project::words_of(&value_of(&content, "content")?))
}

/// The stub a ``mask`` surface op puts in the place of the tool result at ``seq``
/// (docs/log-format.md): the call's name and short arguments, its size, its seq in the log, and
/// for a failed result (``failure``: its first line) what failed, and the first of ``ids`` (the
/// result's identifiers).
#[pyfunction]
#[pyo3(signature = (name, arguments, tokens, seq, failure=None, ids=Vec::new()))]
fn mask_stub(
    name: &str,
    arguments: &str,
    tokens: u64,
    seq: u64,
    failure: Option<&str>,
    ids: Vec<String>,
) -> String {
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    foldlog_core::surface::mask::stub(name, arguments, tokens, seq, failure, &ids)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(message_text, m)?)?;
    m.add_function(wrap_pyfunction!(mask_stub, m)?)?;
    m.add("MASKED_PREFIX", foldlog_core::surface::mask::MASKED_PREFIX)?;
    m.add_class::<PyCompactionPlan>()?;
    m.add_class::<PyPlanHistory>()?;
    m.add("PLAN_DIGEST", DIGEST)?;
    m.add("PLAN_USER_MARKED", USER_MARKED)?;
    m.add("PLAN_ERROR_RESULT", ERROR_RESULT)?;
    m.add("PLAN_ELIDED", ELIDED)?;
    m.add("ELIDED_PREFIX", foldlog_core::plan::input::ELIDED_PREFIX)?;
    Ok(())
}
