//! The entries of a snapshot's messages (`MessageItems`), in chunks so that a request after
//! appends makes only what is new. The final items of the send plan never change within one
//! epoch of the plan (`EventLog::send_epoch`), so their full chunks are made once, kept on the
//! log and shared by every later snapshot; a request makes the last partial chunk and the tail.
//! Making one entry per message for every request was a fifth of B2's step (113k messages).
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use crate::errors::poisoned;
use crate::messages::Entry;

/// Entries per shared chunk: a request makes fewer than this many plus its tail.
pub(crate) const CHUNK: usize = 1024;

/// The entries of one snapshot: full chunks of `CHUNK` entries, then the rest.
pub(crate) struct Entries {
    chunks: Vec<Arc<[Entry]>>,
    rest: Vec<Entry>,
}

impl Entries {
    /// Entries made for one snapshot only.
    pub(crate) fn of(rest: Vec<Entry>) -> Entries {
        Entries {
            chunks: Vec::new(),
            rest,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.chunks.len() * CHUNK + self.rest.len()
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Entry> {
        match self.chunks.get(i / CHUNK) {
            Some(chunk) => chunk.get(i % CHUNK),
            None => self.rest.get(i - self.chunks.len() * CHUNK),
        }
    }

    /// Entries `start..stop` (within `len`), in order.
    pub(crate) fn range(&self, start: usize, stop: usize) -> impl Iterator<Item = &Entry> + '_ {
        let full = self.chunks.len() * CHUNK;
        let in_chunks =
            (start.min(full)..stop.min(full)).map(|i| &self.chunks[i / CHUNK][i % CHUNK]);
        let rest = &self.rest[start.max(full) - full..stop.max(full) - full];
        in_chunks.chain(rest.iter())
    }
}

/// The shared chunks of the send plan's final items, for the plan's current epoch.
#[derive(Default)]
pub(crate) struct SharedChunks(Mutex<(u64, Vec<Arc<[Entry]>>)>);

impl SharedChunks {
    /// The epoch the chunks belong to, and the chunks (the lock is held only to copy them, with
    /// the GIL: never across a wait for the log's lock).
    pub(crate) fn get(&self) -> PyResult<(u64, Vec<Arc<[Entry]>>)> {
        let held = self.0.lock().map_err(poisoned)?;
        Ok((held.0, held.1.clone()))
    }

    /// The entries of a snapshot: `known` (of the final items `..known.len() * CHUNK` of plan
    /// `epoch`), then `made` (the plan's final items from there, `fin` of them, then its tail).
    /// The new full chunks of final items are kept for the next snapshot.
    pub(crate) fn snapshot(
        &self,
        epoch: u64,
        mut known: Vec<Arc<[Entry]>>,
        made: Vec<Entry>,
        fin: usize,
    ) -> PyResult<Entries> {
        let new_chunks = fin / CHUNK;
        let mut made = made.into_iter();
        for _ in 0..new_chunks {
            known.push(made.by_ref().take(CHUNK).collect());
        }
        if new_chunks > 0 {
            let mut held = self.0.lock().map_err(poisoned)?;
            // a newer epoch, or more chunks of this one, than another snapshot kept
            if epoch > held.0 || (epoch == held.0 && known.len() > held.1.len()) {
                *held = (epoch, known.clone());
            }
        }
        Ok(Entries {
            chunks: known,
            rest: made.collect(),
        })
    }
}
