//! `foldlog._core.MessageItems`: the messages of a snapshot (the derived history, or a request's
//! messages), turned into Python objects only when read. Reading one builds it from its event's
//! line in the core and keeps the object on the log, so a message read twice is one object.
use std::sync::Mutex;

use foldlog_core::log::flat::{flat, Flat};
use foldlog_core::log::Message;
use pyo3::prelude::*;
use pyo3::types::PyList;
use rayon::prelude::*;

use crate::convert::to_py_frozen;
use crate::entries::{Entries, Entry};
use crate::errors::poisoned;
use crate::frozen::flat_to_py_frozen;
use crate::log::Log;

/// The Python objects of the messages read so far, by the seq of their event (a projection never
/// changes: one cache serves every generation of the surface).
#[derive(Default)]
pub(crate) struct Objects(Mutex<Vec<Option<Py<PyAny>>>>);

impl Objects {
    /// The cached object of each seq (`None` where none was read yet), under one lock.
    fn get_all(&self, py: Python<'_>, seqs: &[u64]) -> PyResult<Vec<Option<Py<PyAny>>>> {
        let cache = self.0.lock().map_err(poisoned)?;
        Ok(seqs
            .iter()
            .map(|&seq| {
                cache
                    .get(seq as usize)
                    .and_then(|o| o.as_ref().map(|o| o.clone_ref(py)))
            })
            .collect())
    }

    /// Keep the objects built for `seqs`, under one lock.
    fn put_all(&self, py: Python<'_>, built: &[(u64, &Py<PyAny>)]) -> PyResult<()> {
        let mut cache = self.0.lock().map_err(poisoned)?;
        if let Some(top) = built.iter().map(|(seq, _)| *seq as usize).max() {
            if cache.len() <= top {
                cache.resize_with(top + 1, || None);
            }
        }
        for (seq, obj) in built {
            cache[*seq as usize] = Some(obj.clone_ref(py));
        }
        Ok(())
    }
}

/// Pauses the cyclic GC while a batch of messages is built (with the GIL held): the objects made
/// are acyclic and immutable, so no collection could find garbage among them, and a collection
/// now and then inside the batch walked every tracked object of the process (a fifth of the
/// time of reading every message of a log, B1). The allocations still count: the first one
/// after the batch collects if they call for it.
struct GcPaused(bool);

impl GcPaused {
    fn new(_py: Python<'_>) -> GcPaused {
        // SAFETY: the GIL is held (`_py`); returns whether the GC was enabled
        GcPaused(unsafe { pyo3::ffi::PyGC_Disable() } != 0)
    }
}

impl Drop for GcPaused {
    fn drop(&mut self) {
        if self.0 {
            // SAFETY: made by `new` with the GIL held, dropped before it is released
            unsafe { pyo3::ffi::PyGC_Enable() };
        }
    }
}

/// The Python objects of the messages behind `seqs`: from the log's cache, the others built and
/// kept. A message of the common form is read from its line (`log::flat`: in parallel, the GIL
/// released) and made Python objects straight from its texts, under the read lock when it is
/// free now (it is never waited for with the GIL held); the others are projected (their JSON
/// values in parallel, the GIL released), each then made a read-only Python object in one walk
/// (`frozen`).
pub(crate) fn objects(py: Python<'_>, log: &Log, seqs: &[u64]) -> PyResult<Vec<Py<PyAny>>> {
    let mut out = log.objects.get_all(py, seqs)?;
    let mut missing: Vec<usize> = (0..seqs.len()).filter(|&k| out[k].is_none()).collect();
    if missing.is_empty() {
        return Ok(out.into_iter().map(|o| o.expect("cached")).collect());
    }
    let mut made: Vec<(usize, Py<PyAny>)> = Vec::with_capacity(missing.len());
    if let Some(l) = log.try_ready_read() {
        let read = |&k: &usize| l.event(seqs[k]).and_then(flat);
        let flats: Vec<Option<Flat<'_>>> = if missing.len() > 64 {
            py.detach(|| missing.par_iter().map(read).collect())
        } else {
            missing.iter().map(read).collect()
        };
        let _gc = GcPaused::new(py);
        let mut rest = Vec::new();
        for (&k, m) in missing.iter().zip(&flats) {
            match m {
                Some(m) => made.push((k, flat_to_py_frozen(py, m)?.unbind())),
                None => rest.push(k),
            }
        }
        missing = rest;
    }
    if !missing.is_empty() {
        let built: Vec<Option<Message>> = log.with_ready_read(py, |l| {
            let build = |&k: &usize| l.message_of(seqs[k]);
            if missing.len() > 64 {
                missing.par_iter().map(build).collect()
            } else {
                missing.iter().map(build).collect()
            }
        })?;
        let _gc = GcPaused::new(py);
        for (&k, m) in missing.iter().zip(&built) {
            let m = m.as_ref().ok_or_else(|| {
                pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "event #{} derives no message",
                    seqs[k]
                ))
            })?;
            made.push((k, to_py_frozen(py, m)?.unbind()));
        }
        // the values were allocated by the worker threads: freeing them there keeps this
        // thread (which holds the GIL) out of the other threads' allocator arenas
        if built.len() > 64 {
            rayon::spawn(move || drop(built));
        }
    }
    let kept: Vec<(u64, &Py<PyAny>)> = made.iter().map(|(k, o)| (seqs[*k], o)).collect();
    log.objects.put_all(py, &kept)?;
    for (k, obj) in made {
        out[k] = Some(obj);
    }
    Ok(out.into_iter().map(|o| o.expect("filled above")).collect())
}

/// The messages of one snapshot: fixed when taken, built when read.
#[pyclass(frozen, module = "foldlog._core")]
pub struct MessageItems {
    pub(crate) log: Py<Log>,
    pub(crate) entries: Entries,
}

impl MessageItems {
    fn range(&self, start: usize, stop: usize) -> (usize, usize) {
        let stop = stop.min(self.entries.len());
        (start.min(stop), stop)
    }
}

#[pymethods]
impl MessageItems {
    fn __len__(&self) -> usize {
        self.entries.len()
    }

    /// Messages `start..stop` as Python objects (read-only dicts and lists).
    fn items<'py>(
        &self,
        py: Python<'py>,
        start: usize,
        stop: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let (start, stop) = self.range(start, stop);
        let seqs: Vec<u64> = self
            .entries
            .range(start, stop)
            .filter_map(|e| match e {
                Entry::Seq(s) => Some(s),
                Entry::New(..) => None,
            })
            .collect();
        let mut built = objects(py, self.log.get(), &seqs)?.into_iter();
        let out = PyList::empty(py);
        for e in self.entries.range(start, stop) {
            match e {
                Entry::Seq(_) => out.append(built.next().expect("one per seq"))?,
                Entry::New(obj, _) => out.append(obj.bind(py))?,
            }
        }
        Ok(out)
    }

    /// Message `i` (0 <= i < len).
    fn item(&self, py: Python<'_>, i: usize) -> PyResult<Py<PyAny>> {
        match self.entries.get(i) {
            None => Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "message index {i} out of range ({} messages)",
                self.entries.len()
            ))),
            Some(Entry::New(obj, _)) => Ok(obj.clone_ref(py)),
            Some(Entry::Seq(seq)) => Ok(objects(py, self.log.get(), &[seq])?.remove(0)),
        }
    }

    /// The indexes in `start..stop` of messages that reference media (`holds_reference`, the
    /// core's rule): derived messages whose event the core found holding one (each event looked
    /// at once), and the send plan's messages that hold one (flagged when made). None, in
    /// O(events appended since the last call), when no event holds one (the plan's messages are
    /// made from the events: then they hold none either).
    fn media_indexes(&self, py: Python<'_>, start: usize, stop: usize) -> PyResult<Vec<usize>> {
        let referencing = self
            .log
            .get()
            .with_ready_read(py, |l| l.with_media_references(<[u64]>::to_vec))?;
        if referencing.is_empty() {
            return Ok(Vec::new());
        }
        let (start, stop) = self.range(start, stop);
        Ok((start..stop)
            .zip(self.entries.range(start, stop))
            .filter(|(_, e)| match e {
                Entry::Seq(s) => referencing.binary_search(s).is_ok(),
                Entry::New(_, media) => *media,
            })
            .map(|(i, _)| i)
            .collect())
    }

    /// The indexes in `start..stop` of messages whose content is a list of blocks (the others
    /// hold text only), read from the log without building the messages.
    fn block_indexes(&self, py: Python<'_>, start: usize, stop: usize) -> PyResult<Vec<usize>> {
        let (start, stop) = self.range(start, stop);
        let mut out = Vec::new();
        let seqs: Vec<(usize, u64)> = (start..stop)
            .zip(self.entries.range(start, stop))
            .filter_map(|(i, e)| match e {
                Entry::Seq(s) => Some((i, s)),
                Entry::New(obj, _) => {
                    let content = obj.bind(py).get_item("content").ok();
                    if content.is_some_and(|c| c.is_instance_of::<PyList>()) {
                        out.push(i);
                    }
                    None
                }
            })
            .collect();
        let listed: Vec<usize> = self.log.get().with_ready_read(py, |l| {
            seqs.iter()
                .filter(|(_, s)| {
                    l.event(*s)
                        .and_then(|e| e.shape())
                        .is_some_and(|s| s.blocks)
                })
                .map(|(i, _)| *i)
                .collect()
        })?;
        out.extend(listed);
        out.sort_unstable();
        Ok(out)
    }
}
