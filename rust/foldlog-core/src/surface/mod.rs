//! The surface: the ordered list of surface-event seqs the model currently sees, and the
//! rules for changing it (`append`, `replace`, `insert`, `fold`, `reset`, `mask`).
use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::event::SurfaceOp;

pub mod mask;

/// `Surface::pos` of a seq that is not on the surface.
const NOT_ON: u32 = u32::MAX;

#[derive(Debug, Clone, Default)]
pub struct Surface {
    nodes: Vec<u64>,
    pos: Positions,
}

/// By seq, a node's position, or `NOT_ON`: a slot per seq from `base` on (seqs are dense: 4
/// bytes an event), a map below it — the nodes of a log restored from a checkpoint, which holds
/// no other events there (`log::checkpoint`).
#[derive(Debug, Clone, Default)]
struct Positions {
    base: u64,
    below: HashMap<u64, u32>,
    slots: Vec<u32>,
}

impl Positions {
    fn get(&self, seq: u64) -> u32 {
        match seq.checked_sub(self.base) {
            Some(i) => self.slots.get(i as usize).copied().unwrap_or(NOT_ON),
            None => self.below.get(&seq).copied().unwrap_or(NOT_ON),
        }
    }
    fn set(&mut self, seq: u64, at: u32) {
        match seq.checked_sub(self.base) {
            Some(i) => {
                let i = i as usize;
                if self.slots.len() <= i {
                    self.slots.resize(i + 1, NOT_ON);
                }
                self.slots[i] = at;
            }
            None if at == NOT_ON => {
                self.below.remove(&seq);
            }
            None => {
                self.below.insert(seq, at);
            }
        }
    }
    fn clear(&mut self) {
        self.below.clear();
        self.slots.fill(NOT_ON);
    }
    fn heap_bytes(&self) -> usize {
        self.slots.capacity() * 4 + self.below.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
    }
}

impl Surface {
    /// An empty surface of a log whose events from `base` on are all held (one restored from a
    /// checkpoint: its index takes no room for the seqs below `base` that are not nodes).
    pub(crate) fn from_base(base: u64) -> Surface {
        Surface {
            nodes: Vec::new(),
            pos: Positions {
                base,
                ..Positions::default()
            },
        }
    }
    /// Give back the room its vectors took beyond what they hold (grown by doubling while a
    /// log was read: up to half of them spare).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.nodes.shrink_to_fit();
        self.pos.slots.shrink_to_fit();
        self.pos.below.shrink_to_fit();
    }
    /// Bytes the surface holds (its nodes and their index).
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * 8 + self.pos.heap_bytes()
    }
    pub fn nodes(&self) -> &[u64] {
        &self.nodes
    }
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
    pub fn contains(&self, seq: u64) -> bool {
        self.position(seq).is_some()
    }
    pub fn position(&self, seq: u64) -> Option<usize> {
        match self.pos.get(seq) {
            NOT_ON => None,
            p => Some(p as usize),
        }
    }

    fn at(&self, seq: u64, what: &str) -> Result<usize> {
        self.position(seq).ok_or_else(|| {
            Error::invalid(format!(
                "surfaceOp {what} names seq {seq}, which is not on the surface"
            ))
        })
    }

    fn range(&self, start: u64, end: u64, what: &str) -> Result<(usize, usize)> {
        let (s, e) = (self.at(start, what)?, self.at(end, what)?);
        if s > e {
            return Err(Error::invalid(format!(
                "surfaceOp {what}: start {start} comes after end {end} on the surface"
            )));
        }
        Ok((s, e))
    }

    /// Positions of `keep` inside `lo..=hi`, strictly increasing (kept nodes stay in surface order).
    fn kept_positions(&self, keep: &[u64], lo: usize, hi: usize, what: &str) -> Result<Vec<usize>> {
        let mut out = Vec::with_capacity(keep.len());
        for &k in keep {
            let p = self.at(k, what)?;
            if p < lo || p > hi {
                return Err(Error::invalid(format!(
                    "surfaceOp {what}: kept seq {k} is outside the region"
                )));
            }
            if out.last().is_some_and(|&last| p <= last) {
                return Err(Error::invalid(format!(
                    "surfaceOp {what}: \"keep\" must list surface nodes once each, in surface order"
                )));
            }
            out.push(p);
        }
        Ok(out)
    }

    fn require_sources(removed: &[u64], sources: &[u64], what: &str) -> Result<()> {
        // sources are short for replace and sorted for folds we write; a set keeps odd logs linear
        let set: std::collections::HashSet<u64> = sources.iter().copied().collect();
        if let Some(missing) = removed.iter().find(|s| !set.contains(s)) {
            return Err(Error::invalid(format!(
                "surfaceOp {what} removes seq {missing} but does not list it in sourceEventSeqs"
            )));
        }
        Ok(())
    }

    /// Check `op` against the current surface and apply it for the event `seq`.
    pub fn apply(&mut self, seq: u64, op: &SurfaceOp, sources: &[u64]) -> Result<()> {
        match op {
            SurfaceOp::Append => {
                self.set(seq, self.nodes.len());
                self.nodes.push(seq);
                return Ok(());
            }
            SurfaceOp::Replace { start, end } => {
                let (s, e) = self.range(*start, *end, "replace")?;
                Self::require_sources(&self.nodes[s..=e], sources, "replace")?;
                self.nodes.splice(s..=e, [seq]);
            }
            SurfaceOp::Mask { seq: masked } => {
                // one node for one: the node keeps its place, nothing else moves
                let p = self.at(*masked, "mask")?;
                Self::require_sources(&[*masked], sources, "mask")?;
                self.nodes[p] = seq;
                self.pos.set(*masked, NOT_ON);
                self.set(seq, p);
                return Ok(());
            }
            SurfaceOp::Insert { after } => {
                let p = self.at(*after, "insert")?;
                self.nodes.insert(p + 1, seq);
                // only the nodes from the new one on moved: a full reindex per insert made the
                // load repair's run of placeholders quadratic in the calls of a message
                self.reindex_from(p + 1);
                return Ok(());
            }
            SurfaceOp::Fold { start, end, keep } => {
                let (s, e) = self.range(*start, *end, "fold")?;
                let kept = self.kept_positions(keep, s, e, "fold")?;
                let removed: Vec<u64> = (s..=e)
                    .filter(|p| kept.binary_search(p).is_err())
                    .map(|p| self.nodes[p])
                    .collect();
                Self::require_sources(&removed, sources, "fold")?;
                let mut middle: Vec<u64> = keep.clone();
                middle.push(seq);
                self.nodes.splice(s..=e, middle);
            }
            SurfaceOp::Reset { keep } => {
                let kept =
                    self.kept_positions(keep, 0, self.nodes.len().saturating_sub(1), "reset")?;
                let mut nodes: Vec<u64> = kept.iter().map(|&p| self.nodes[p]).collect();
                nodes.push(seq);
                self.nodes = nodes;
            }
        }
        self.reindex();
        Ok(())
    }

    fn set(&mut self, seq: u64, at: usize) {
        self.pos.set(seq, at as u32);
    }

    fn reindex_from(&mut self, from: usize) {
        for i in from..self.nodes.len() {
            self.set(self.nodes[i], i);
        }
    }

    fn reindex(&mut self) {
        self.pos.clear();
        for i in 0..self.nodes.len() {
            self.set(self.nodes[i], i);
        }
    }
}
