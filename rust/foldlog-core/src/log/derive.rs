//! The derived messages: the surface nodes that project to a message, kept as the seqs of
//! their events. What pairing and planning need of a message is its event's shape; the message
//! itself ([`Message`]) is built from its event's line only when something reads it.
use std::borrow::Cow;
use std::sync::Arc;

use rayon::prelude::*;

use super::{EventLog, Events, Message};
use crate::event::shape::Shape;
use crate::event::Event;
use crate::project::project;
use crate::surface::Surface;
use crate::wire::History;

/// The derived messages of the surface nodes `..nodes`, valid for generation `gen`.
#[derive(Debug, Clone, Default)]
pub(super) struct Derived {
    /// Their seqs, once some node derives nothing; `None` while every node derives a message:
    /// they are then the surface's first `nodes` nodes, not held twice (8 bytes a message,
    /// issue 31.3).
    seqs: Option<Vec<u64>>,
    nodes: usize,
    gen: u64,
}

impl Derived {
    pub(super) fn heap_bytes(&self) -> usize {
        self.seqs.as_ref().map_or(0, |s| s.capacity() * 8)
    }

    /// The seqs as last brought up to date (callers derive first), given the log's surface.
    pub(super) fn seqs_unchecked<'a>(&'a self, surface: &'a Surface) -> &'a [u64] {
        match &self.seqs {
            Some(seqs) => seqs,
            None => &surface.nodes()[..self.nodes],
        }
    }
}

/// The projection of a surface event (the shape says whether it derives a message at all).
pub(crate) fn materialize(events: &Events, seq: u64) -> Option<Message> {
    let ev = events.get(seq)?;
    project(ev, |s| events.get(s)).map(Arc::new)
}

impl EventLog {
    /// Bring the derived messages up to date (only new nodes after appends, all again after a
    /// rewrite) and return the seq of the event behind each.
    pub fn derived_seqs(&mut self) -> &[u64] {
        let d = &mut self.derived;
        if d.gen != self.rewrite_version {
            d.seqs = None;
            d.nodes = 0;
            d.gen = self.rewrite_version;
        }
        let nodes = self.surface.nodes();
        for (k, &seq) in nodes.iter().enumerate().skip(d.nodes) {
            let derives = self.events[seq as usize].shape().is_some_and(|s| !s.silent);
            match &mut d.seqs {
                Some(seqs) if derives => seqs.push(seq),
                None if !derives => {
                    // the first node that derives nothing: from here on the seqs are a list
                    let mut seqs = Vec::with_capacity(nodes.len());
                    seqs.extend_from_slice(&nodes[..k]);
                    d.seqs = Some(seqs);
                }
                _ => {}
            }
        }
        d.nodes = nodes.len();
        d.seqs_unchecked(&self.surface)
    }

    /// How many messages the surface derives.
    pub fn derived_len(&mut self) -> usize {
        self.derived_seqs().len()
    }

    /// The derived messages as a [`History`]: their shapes, each message built on request.
    pub fn history(&mut self) -> LogHistory<'_> {
        self.derived_seqs();
        LogHistory {
            events: &self.events,
            seqs: self.derived.seqs_unchecked(&self.surface),
        }
    }

    /// The derived message `i` (built from its event's line).
    pub fn message(&mut self, i: usize) -> Option<Message> {
        let seq = *self.derived_seqs().get(i)?;
        materialize(&self.events, seq)
    }

    /// The message event `seq` derives (built from its line), if it derives one.
    pub fn message_of(&self, seq: u64) -> Option<Message> {
        materialize(&self.events, seq)
    }

    /// Every derived message, built in parallel (tests, and readers that need them all).
    pub fn messages(&mut self) -> Vec<Message> {
        self.derived_seqs();
        let events = &self.events;
        self.derived
            .seqs_unchecked(&self.surface)
            .par_iter()
            .map(|&s| materialize(events, s).expect("a derived seq projects to a message"))
            .collect()
    }

    /// Anything the model would see beyond system messages (an assistant message with neither
    /// content nor tool calls, kept only for its usage, derives to nothing and does not count).
    pub fn has_content(&mut self) -> bool {
        self.history().roles().any(|r| r != "system")
    }
}

/// The derived messages of a log, read through their events' shapes.
#[derive(Clone, Copy)]
pub struct LogHistory<'a> {
    events: &'a Events,
    seqs: &'a [u64],
}

impl<'a> LogHistory<'a> {
    pub fn seqs(&self) -> &'a [u64] {
        self.seqs
    }
    /// The log's events (those it holds: every derived message's).
    pub fn events(&self) -> &'a Events {
        self.events
    }
    fn event(&self, i: usize) -> &'a Event {
        &self.events[self.seqs[i] as usize]
    }
    /// The shape and line of derived message `i`.
    pub fn shape(&self, i: usize) -> (&'a Shape, &'a str) {
        let ev = self.event(i);
        (
            ev.shape().expect("a derived message has a shape"),
            ev.line(),
        )
    }
    pub fn roles(&self) -> impl Iterator<Item = &'static str> + 'a {
        let this = *self;
        (0..self.seqs.len()).map(move |i| this.shape(i).0.role.as_str())
    }
}

impl History for LogHistory<'_> {
    fn len(&self) -> usize {
        self.seqs.len()
    }
    fn role(&self, i: usize) -> &str {
        self.shape(i).0.role.as_str()
    }
    fn call_count(&self, i: usize) -> usize {
        self.shape(i).0.call_count()
    }
    fn call_id(&self, i: usize, k: usize) -> Cow<'_, str> {
        let (shape, line) = self.shape(i);
        shape.call_id(k, self.seqs[i], line)
    }
    fn call_name(&self, i: usize, k: usize) -> Cow<'_, str> {
        let (shape, line) = self.shape(i);
        Cow::Borrowed(shape.call_name(k, line))
    }
    fn result_id(&self, i: usize) -> Option<Cow<'_, str>> {
        let (shape, line) = self.shape(i);
        shape.id(line).map(Cow::Borrowed)
    }
    fn result_name(&self, i: usize) -> Option<Cow<'_, str>> {
        let (shape, line) = self.shape(i);
        shape.name(line).map(Cow::Borrowed)
    }
    fn blocks(&self, i: usize) -> bool {
        self.shape(i).0.blocks
    }
    fn message(&self, i: usize) -> Message {
        materialize(self.events, self.seqs[i]).expect("a derived seq projects to a message")
    }
}
