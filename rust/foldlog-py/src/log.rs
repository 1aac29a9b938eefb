//! `foldlog._core.Log`: the event log.
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use foldlog_core::body::WireStyle;
use foldlog_core::event::{Event, Header, SurfaceOp};
use foldlog_core::log::{checkpoint, holds_reference, EventLog, Message};
use foldlog_core::store::jsonl;
use foldlog_core::{reader, wire};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use serde_json::Value;

use crate::body::{style_of, WireSegments};
use crate::convert::{new_event, to_py, to_py_frozen, value_of};
use crate::entries::{Entries, Made, SharedChunks, CHUNK};
use crate::errors::{batch_to_py, detached, poisoned, to_py as err_to_py, with_index};
use crate::messages::{MessageItems, Objects};

/// The session event log. Frozen with interior locking: one writer, many reader threads;
/// a reader never sees a half-appended event.
#[pyclass(frozen, module = "foldlog._core")]
pub struct Log {
    inner: RwLock<EventLog>,
    /// The Python objects of the messages read so far (see `messages.rs`).
    pub(crate) objects: Objects,
    /// The entries of the send plan's final items, shared by the requests' snapshots.
    chunks: SharedChunks,
    /// Restored from a checkpoint and not completed (see `checkpoint.rs`).
    partial: AtomicBool,
    /// What reads a store's rows for completing a log restored from its checkpoint: called with
    /// the number of events the checkpoint covered, it returns the header and those events.
    pub(crate) prefix_loader: std::sync::Mutex<Option<Py<PyAny>>>,
}

impl Log {
    pub(crate) fn of(log: EventLog) -> Log {
        Log {
            partial: AtomicBool::new(checkpoint::is_partial(&log)),
            inner: RwLock::new(log),
            objects: Objects::default(),
            chunks: SharedChunks::default(),
            prefix_loader: std::sync::Mutex::new(None),
        }
    }
}

fn list_of<'py>(
    py: Python<'py>,
    values: impl IntoIterator<Item = Value>,
) -> PyResult<Bound<'py, PyList>> {
    let l = PyList::empty(py);
    for v in values {
        l.append(to_py(py, &v)?)?;
    }
    Ok(l)
}

// Locks are only ever taken with the GIL released: a thread blocked on the lock while holding
// the GIL would deadlock with a lock holder that needs the GIL back.
// A log restored from a checkpoint holds only the events its surface needs: `with_read` and
// `with_write` complete it first; the `ready` variants, for what reads only those events
// (deriving, counting, planning, bodies, appending), do not.
impl Log {
    pub(crate) fn with_read<R: Send>(
        &self,
        py: Python<'_>,
        f: impl Send + FnOnce(&EventLog) -> R,
    ) -> PyResult<R> {
        self.complete(py)?;
        self.with_ready_read(py, f)
    }
    pub(crate) fn with_write<R: Send>(
        &self,
        py: Python<'_>,
        f: impl Send + FnOnce(&mut EventLog) -> R,
    ) -> PyResult<R> {
        self.complete(py)?;
        self.with_ready_write(py, f)
    }
    pub(crate) fn with_ready_read<R: Send>(
        &self,
        py: Python<'_>,
        f: impl Send + FnOnce(&EventLog) -> R,
    ) -> PyResult<R> {
        py.detach(|| self.inner.read().map(|g| f(&g)).map_err(|_| ()))
            .map_err(poisoned)
    }
    pub(crate) fn with_ready_write<R: Send>(
        &self,
        py: Python<'_>,
        f: impl Send + FnOnce(&mut EventLog) -> R,
    ) -> PyResult<R> {
        py.detach(|| self.inner.write().map(|mut g| f(&mut g)).map_err(|_| ()))
            .map_err(poisoned)
    }
    /// Read the whole prefix of a log restored from a checkpoint (once).
    pub(crate) fn complete(&self, py: Python<'_>) -> PyResult<()> {
        if !self.partial.load(Ordering::Acquire) {
            return Ok(());
        }
        match self.with_ready_read(py, checkpoint::prefix_from_store)? {
            Some(events) => {
                let stored = self.read_prefix(py, events)?;
                self.with_ready_write(py, |l| checkpoint::complete_from(l, &stored))?
            }
            None => self.with_ready_write(py, checkpoint::complete)?,
        }
        .map_err(|e| err_to_py(py, e, None))?;
        self.partial.store(false, Ordering::Release);
        // the store is not read again: let go of it
        self.prefix_loader.lock().map_err(poisoned)?.take();
        Ok(())
    }
    /// The read lock when no writer holds it or waits for it, taken with the GIL held: it never
    /// blocks, so it cannot deadlock with a lock holder waiting for the GIL (see above).
    pub(crate) fn try_ready_read(&self) -> Option<RwLockReadGuard<'_, EventLog>> {
        self.inner.try_read().ok()
    }
    /// The write lock for a store's flush, already without the GIL (`FileWriter.append_from`):
    /// a poisoned lock is the storage error the flush reports.
    pub(crate) fn write_detached(&self) -> foldlog_core::Result<RwLockWriteGuard<'_, EventLog>> {
        self.inner
            .write()
            .map_err(|_| foldlog_core::Error::storage("log lock poisoned"))
    }
}

fn load_result(py: Python<'_>, loaded: reader::Loaded) -> PyResult<(Log, Py<PyAny>)> {
    let info = PyDict::new(py);
    info.set_item("valid_len", loaded.valid_len)?;
    info.set_item("missing_newline", loaded.missing_newline)?;
    match &loaded.torn {
        Some(t) => {
            let torn = PyDict::new(py);
            torn.set_item("line", t.line)?;
            torn.set_item("offset", t.offset)?;
            torn.set_item("bytes", t.bytes)?;
            info.set_item("torn", torn)?;
        }
        None => info.set_item("torn", py.None())?,
    }
    Ok((Log::of(loaded.log), info.into_any().unbind()))
}

#[pymethods]
impl Log {
    #[new]
    #[pyo3(signature = (header_id=None, created_at=0, meta=None, parent=None))]
    fn new(
        py: Python<'_>,
        header_id: Option<&str>,
        created_at: i64,
        meta: Option<&Bound<'_, PyAny>>,
        parent: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let meta = optional_value(meta, "meta")?;
        let parent = optional_value(parent, "parent")?;
        let header = header_id
            .map(|id| Header::new(id, created_at, &meta, &parent))
            .transpose()
            .map_err(|e| err_to_py(py, e, None))?;
        Ok(Log::of(EventLog::new(header)))
    }

    /// Parse a whole log from bytes (GIL released). Returns `(log, info)`; `info` tells
    /// `valid_len`, `missing_newline` and `torn` (`None` or `{line, offset, bytes}`). Empty
    /// bytes are an empty log only with `allow_empty` (a writer's store about to write the
    /// header); otherwise `CorruptLogError` ("empty file: no header").
    #[staticmethod]
    #[pyo3(signature = (data, path=None, allow_empty=true))]
    fn parse(
        py: Python<'_>,
        data: &Bound<'_, PyBytes>,
        path: Option<&str>,
        allow_empty: bool,
    ) -> PyResult<(Log, Py<PyAny>)> {
        let bytes = data.as_bytes();
        let loaded = detached(py, path, || {
            if allow_empty {
                reader::read(bytes)
            } else {
                reader::read_stored(bytes)
            }
        })?;
        load_result(py, loaded)
    }

    /// Read and parse a file (GIL released); an empty file is refused as corrupt.
    #[staticmethod]
    fn read_file(py: Python<'_>, path: PathBuf) -> PyResult<(Log, Py<PyAny>)> {
        let shown = path.display().to_string();
        let loaded = detached(py, Some(&shown), || reader::read_file(&path))?;
        load_result(py, loaded)
    }

    #[getter]
    fn header(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let line = self.with_ready_read(py, |log| log.header().map(|h| h.line.clone()))?;
        match line {
            None => Ok(None),
            Some(line) => {
                let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                Ok(Some(to_py(py, &v)?.unbind()))
            }
        }
    }

    /// Set the header of a header-less log (a version-0 file being continued or saved).
    #[pyo3(signature = (header_id, created_at, meta=None))]
    fn set_header(
        &self,
        py: Python<'_>,
        header_id: &str,
        created_at: i64,
        meta: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let meta = optional_value(meta, "meta")?;
        let header = Header::new(header_id, created_at, &meta, &Value::Null)
            .map_err(|e| err_to_py(py, e, None))?;
        self.with_write(py, |log| log.set_header(header))
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.with_ready_read(py, |log| log.len())
    }

    #[getter]
    fn rewrite_version(&self, py: Python<'_>) -> PyResult<u64> {
        self.with_ready_read(py, |log| log.rewrite_version())
    }

    /// Append an event; `data` must be JSON-safe. Returns its seq. Nothing is recorded on error.
    #[pyo3(signature = (kind, data, time, surface_op=None, sources=None))]
    fn append(
        &self,
        py: Python<'_>,
        kind: &str,
        data: &Bound<'_, PyAny>,
        time: i64,
        surface_op: Option<&Bound<'_, PyAny>>,
        sources: Option<Vec<u64>>,
    ) -> PyResult<u64> {
        let data = value_of(data, "data")?;
        let op = match surface_op {
            None => None,
            Some(o) if o.is_none() => None,
            Some(o) => Some(
                SurfaceOp::from_value(&value_of(o, "surfaceOp")?)
                    .map_err(|e| err_to_py(py, e, None))?,
            ),
        };
        self.with_ready_write(py, |log| log.append(kind, &data, time, op, sources))?
            .map_err(|e| err_to_py(py, e, None))
    }

    /// Record an OpenAI-chat-shaped message as its surface event (appended, or with the given
    /// surface op). Returns its seq.
    #[pyo3(signature = (message, time, surface_op=None))]
    fn add_message(
        &self,
        py: Python<'_>,
        message: &Bound<'_, PyAny>,
        time: i64,
        surface_op: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let m = value_of(message, "message")?;
        let op = match surface_op {
            None => SurfaceOp::Append,
            Some(o) if o.is_none() => SurfaceOp::Append,
            Some(o) => SurfaceOp::from_value(&value_of(o, "surfaceOp")?)
                .map_err(|e| err_to_py(py, e, None))?,
        };
        self.with_ready_write(py, |log| log.add_message_with(&m, time, op))?
            .map_err(|e| err_to_py(py, e, None))
    }

    /// Append every event of `events` (mappings with `type`, `data` and, when needed,
    /// `surfaceOp` and `sourceEventSeqs`, as in the log's envelope), or none: the first refused
    /// event raises (its `index` attribute says which) and nothing is recorded. Returns the seqs.
    fn append_batch(
        &self,
        py: Python<'_>,
        events: Vec<Bound<'_, PyAny>>,
        time: i64,
    ) -> PyResult<Vec<u64>> {
        let mut batch = Vec::with_capacity(events.len());
        for (index, ev) in events.iter().enumerate() {
            let converted = new_event(py, ev, time);
            batch.push(converted.map_err(|e| with_index(py, e, index))?);
        }
        self.with_ready_write(py, |log| log.append_batch(batch))?
            .map_err(|e| batch_to_py(py, e))
    }

    /// Make the surface exactly `messages` (the first recorded with a reset, the rest appended),
    /// all or nothing. Returns the seqs.
    fn replace_messages(
        &self,
        py: Python<'_>,
        messages: Vec<Bound<'_, PyAny>>,
        time: i64,
    ) -> PyResult<Vec<u64>> {
        let mut values = Vec::with_capacity(messages.len());
        for (index, m) in messages.iter().enumerate() {
            let root = format!("replace(): messages[{index}]");
            values.push(value_of(m, &root).map_err(|e| with_index(py, e, index))?);
        }
        self.with_ready_write(py, |log| log.replace_messages(&values, time))?
            .map_err(|e| batch_to_py(py, e))
    }

    /// The derived messages as they are now (a snapshot), built as Python objects when read.
    fn derived(slf: &Bound<'_, Self>) -> PyResult<MessageItems> {
        let py = slf.py();
        let seqs = slf
            .get()
            .with_ready_write(py, |log| log.derived_seqs().to_vec())?;
        Ok(MessageItems {
            log: slf.clone().unbind(),
            entries: Entries::of_seqs(seqs),
        })
    }

    /// How many messages the surface derives (none is built).
    fn derived_len(&self, py: Python<'_>) -> PyResult<usize> {
        self.with_ready_write(py, |log| log.derived_len())
    }

    /// Seq of the event behind each derived message.
    fn derived_seqs(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        self.with_ready_write(py, |log| log.derived_seqs().to_vec())
    }

    /// The surface node seqs (including nodes that project to nothing).
    fn surface_nodes(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        self.with_ready_read(py, |log| log.surface().nodes().to_vec())
    }

    /// The send normalizer run over the whole history (no incremental plan): plain values.
    fn wire_messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let sent = self.with_ready_write(py, |log| log.normalized_messages())?;
        let out = PyList::empty(py);
        for m in &sent {
            out.append(to_py(py, m)?)?;
        }
        Ok(out)
    }

    /// The next request's messages (the derived messages after the strict send normalizer) and
    /// the same messages serialised in `style` ("keep", "strip" or "with-calls"), taken under one
    /// lock so the two agree. Only what is new since the last request is planned and serialised
    /// (the GIL released); no message is built as a Python object until it is read.
    fn wire_view(slf: &Bound<'_, Self>, style: &str) -> PyResult<(MessageItems, WireSegments)> {
        let py = slf.py();
        let style = style_of(style)?;
        let this = slf.get();
        // the entries of the plan's final items made by earlier requests (see `entries.rs`)
        let (epoch, known) = this.chunks.get()?;
        let (epoch, known, items, fin, segments) = this.with_ready_write(py, |log| {
            let segments = log.wire_messages(style);
            let tail = log.update_send();
            let same = log.send_epoch() == epoch && known.len() * CHUNK <= log.send_len();
            let mut known = known;
            if !same {
                known.clear();
            }
            let from = known.len() * CHUNK;
            let fin = log.send_len() - from;
            let items: Vec<wire::Sent> = log.send_items_since(from).chain(tail).collect();
            let seqs = log.derived_seqs();
            let items: Vec<Result<u64, Message>> = items
                .into_iter()
                .map(|s| match s {
                    wire::Sent::Same(i) => Ok(seqs[i]),
                    wire::Sent::New(m) => Err(m),
                })
                .collect();
            (log.send_epoch(), known, items, fin, segments)
        })?;
        let mut made = Vec::with_capacity(items.len());
        for item in items {
            made.push(match item {
                Ok(seq) => Made::Seq(seq),
                Err(m) => Made::New(to_py_frozen(py, &m)?.unbind(), holds_reference(&m)),
            });
        }
        let messages = MessageItems {
            log: slf.clone().unbind(),
            entries: this.chunks.snapshot(epoch, known, made, fin)?,
        };
        Ok((messages, WireSegments { inner: segments }))
    }

    /// The wire messages as JSON bytes (a JSON array, keys sorted), from the cached segments.
    fn wire_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with_ready_write(py, |log| {
            let messages = log.wire_messages(WireStyle::Keep);
            foldlog_core::body::WireBody::new(b"[", messages, b"]").to_vec()
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn has_content(&self, py: Python<'_>) -> PyResult<bool> {
        self.with_ready_write(py, |log| log.has_content())
    }

    /// One event as a dict.
    fn event<'py>(&self, py: Python<'py>, seq: i64) -> PyResult<Bound<'py, PyAny>> {
        let (n, found) = self.with_read(py, |log| {
            let n = log.len() as i64;
            let i = if seq < 0 { seq + n } else { seq };
            (
                n,
                (i >= 0)
                    .then(|| log.event(i as u64))
                    .flatten()
                    .map(Event::to_value),
            )
        })?;
        match found {
            Some(v) => to_py(py, &v),
            None => Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "no event #{seq} (log has {n})"
            ))),
        }
    }

    /// Events `start..end` as dicts.
    fn events<'py>(
        &self,
        py: Python<'py>,
        start: usize,
        end: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let values = self.with_read(py, |log| {
            let end = end.min(log.len());
            let start = start.min(end);
            log.events()[start..end]
                .iter()
                .map(Event::to_value)
                .collect::<Vec<_>>()
        })?;
        list_of(py, values)
    }

    /// Event types in seq order (cheap: no data parsing).
    fn kinds(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.with_read(py, |log| {
            log.events().iter().map(|e| e.kind().to_string()).collect()
        })
    }

    /// `(turn, step)` of the open turn, or `None`.
    fn open_turn(&self, py: Python<'_>) -> PyResult<Option<(u64, Option<u64>)>> {
        self.with_ready_read(py, |log| log.open_turn().map(|t| (t.turn, t.step)))
    }

    fn last_turn(&self, py: Python<'_>) -> PyResult<u64> {
        self.with_ready_read(py, |log| log.last_turn())
    }

    /// Seq of a `compaction/start` without its `compaction/end`.
    fn open_compaction(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        self.with_ready_read(py, |log| log.open_compaction())
    }

    /// The lines of events `start..end` as stored (each ending in `\n`), without the header:
    /// what a fork reads of its parent's log up to the fork point.
    fn event_lines<'py>(
        &self,
        py: Python<'py>,
        start: usize,
        end: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with_read(py, |log| {
            let end = end.min(log.len());
            let start = start.min(end);
            jsonl::lines(&log.events()[start..end])
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The whole log as file bytes (header first when there is one), every count made so far in
    /// its event's line.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with_read(py, |log| log.file_bytes())?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Statistics of the first `stored` events and of the surface (`foldlog log inspect`).
    #[pyo3(signature = (stored=usize::MAX))]
    fn stats<'py>(&self, py: Python<'py>, stored: usize) -> PyResult<Bound<'py, PyAny>> {
        let v = self.with_write(py, |log| log.stats(stored).to_value())?;
        to_py(py, &v)
    }

    /// Bytes the log holds in memory: its buffers, events, derivation and caches.
    /// (with the entries of requests' messages kept on the log, see `entries.rs`).
    fn heap_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.with_read(py, |log| log.heap_bytes())? + self.chunks.heap_bytes()?)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Log>()?;
    m.add_class::<MessageItems>()?;
    m.add_function(wrap_pyfunction!(header_line, m)?)?;
    Ok(())
}

/// The header line of a new log file (without its newline): the core writes every header.
#[pyfunction]
#[pyo3(signature = (session_id, created_at, meta=None, parent=None))]
pub fn header_line<'py>(
    py: Python<'py>,
    session_id: &str,
    created_at: i64,
    meta: Option<&Bound<'_, PyAny>>,
    parent: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let meta = optional_value(meta, "meta")?;
    let parent = optional_value(parent, "parent")?;
    let header =
        Header::new(session_id, created_at, &meta, &parent).map_err(|e| err_to_py(py, e, None))?;
    Ok(PyBytes::new(py, header.line.as_bytes()))
}

/// An optional Python value as JSON (`None` and absent are `null`).
fn optional_value(v: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Value> {
    match v {
        Some(v) if !v.is_none() => value_of(v, what),
        _ => Ok(Value::Null),
    }
}
