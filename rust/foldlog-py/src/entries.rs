//! The entries of a snapshot's messages (`MessageItems`), 8 bytes a message, in chunks so that a
//! request after appends makes only what is new. The final items of the send plan never change
//! within one epoch of the plan (`EventLog::send_epoch`), so their full chunks are made once,
//! kept on the log and shared by every later snapshot; a request makes the last partial chunk
//! and its tail. Making an entry per message for every request was most of B2's step (113k
//! messages, and the large allocations' fresh pages).
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use crate::errors::poisoned;

/// Entries per shared chunk: a request makes fewer than this many plus its tail.
pub(crate) const CHUNK: usize = 1024;

/// One message of a snapshot, as read.
pub(crate) enum Entry<'a> {
    /// A derived message: the seq of its event.
    Seq(u64),
    /// A message the send plan made (a renamed or filled result, moved attachments), and
    /// whether it references media (`holds_reference`, asked of the core's message).
    New(&'a Py<PyAny>, bool),
}

/// One message as a request makes it.
pub(crate) enum Made {
    Seq(u64),
    New(Py<PyAny>, bool),
}

/// A slot of a message the plan made: its index among them, with this bit (seqs never reach it).
const MADE: u64 = 1 << 63;

/// Entries in order: a seq per derived message, the messages the plan made (rare) beside.
#[derive(Default)]
struct Run {
    slots: Vec<u64>,
    made: Vec<(Py<PyAny>, bool)>,
}

impl Run {
    fn push(&mut self, m: Made) {
        match m {
            Made::Seq(seq) => self.slots.push(seq),
            Made::New(obj, media) => {
                self.slots.push(MADE | self.made.len() as u64);
                self.made.push((obj, media));
            }
        }
    }

    fn entry(&self, slot: u64) -> Entry<'_> {
        if slot & MADE == 0 {
            return Entry::Seq(slot);
        }
        let (obj, media) = &self.made[(slot & !MADE) as usize];
        Entry::New(obj, *media)
    }

    fn heap_bytes(&self) -> usize {
        self.slots.capacity() * 8 + self.made.capacity() * std::mem::size_of::<(Py<PyAny>, bool)>()
    }
}

/// The entries of one snapshot: full chunks of `CHUNK` entries, then the rest.
pub(crate) struct Entries {
    chunks: Vec<Arc<Run>>,
    rest: Run,
}

impl Entries {
    /// Entries of derived messages, made for one snapshot only.
    pub(crate) fn of_seqs(seqs: Vec<u64>) -> Entries {
        Entries {
            chunks: Vec::new(),
            rest: Run {
                slots: seqs,
                made: Vec::new(),
            },
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.chunks.len() * CHUNK + self.rest.slots.len()
    }

    pub(crate) fn get(&self, i: usize) -> Option<Entry<'_>> {
        let run = match self.chunks.get(i / CHUNK) {
            Some(chunk) => (&**chunk, i % CHUNK),
            None => (&self.rest, i - self.chunks.len() * CHUNK),
        };
        run.0.slots.get(run.1).map(|&slot| run.0.entry(slot))
    }

    /// Entries `start..stop` (within `len`), in order.
    pub(crate) fn range(&self, start: usize, stop: usize) -> impl Iterator<Item = Entry<'_>> + '_ {
        (start..stop).map(|i| self.get(i).expect("within len"))
    }
}

/// The shared chunks of the send plan's final items, for the plan's current epoch.
#[derive(Default)]
pub(crate) struct SharedChunks(Mutex<(u64, Vec<Arc<Run>>)>);

/// Chunks of a snapshot, as taken from [`SharedChunks::get`].
pub(crate) struct Known(Vec<Arc<Run>>);

impl Known {
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

impl SharedChunks {
    /// The epoch the chunks belong to, and the chunks (the lock is held only to copy them, with
    /// the GIL: never across a wait for the log's lock).
    pub(crate) fn get(&self) -> PyResult<(u64, Known)> {
        let held = self.0.lock().map_err(poisoned)?;
        Ok((held.0, Known(held.1.clone())))
    }

    /// Bytes the kept chunks hold.
    pub(crate) fn heap_bytes(&self) -> PyResult<usize> {
        let held = self.0.lock().map_err(poisoned)?;
        Ok(held.1.iter().map(|c| c.heap_bytes()).sum::<usize>() + held.1.capacity() * 8)
    }

    /// The entries of a snapshot: `known` (the final items `..known.len() * CHUNK` of plan
    /// `epoch`), then `made` (the plan's final items from there, `fin` of them, then its tail).
    /// The new full chunks of final items are kept for the next snapshot.
    pub(crate) fn snapshot(
        &self,
        epoch: u64,
        known: Known,
        made: impl IntoIterator<Item = Made>,
        fin: usize,
    ) -> PyResult<Entries> {
        let mut chunks = known.0;
        let new_chunks = fin / CHUNK;
        let mut made = made.into_iter();
        for _ in 0..new_chunks {
            let mut run = Run {
                slots: Vec::with_capacity(CHUNK),
                made: Vec::new(),
            };
            made.by_ref().take(CHUNK).for_each(|m| run.push(m));
            chunks.push(Arc::new(run));
        }
        if new_chunks > 0 {
            let mut held = self.0.lock().map_err(poisoned)?;
            // a newer epoch, or more chunks of this one, than another snapshot kept
            if epoch > held.0 || (epoch == held.0 && chunks.len() > held.1.len()) {
                *held = (epoch, chunks.clone());
            }
        }
        let mut rest = Run::default();
        made.for_each(|m| rest.push(m));
        Ok(Entries { chunks, rest })
    }
}
