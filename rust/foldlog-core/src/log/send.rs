//! The send plan and the serialised messages of requests, kept incrementally: after appends a
//! request plans and serialises only what is new.
use std::sync::{Arc, RwLock};

use rayon::prelude::*;

use super::derive::materialize;
use super::events::BySeq;
use super::EventLog;
use crate::body::{self, Messages, Segment, SharedSegments, WireMessages, WireStyle};
use crate::wire::{History, Sent};

#[derive(Debug, Clone, Default)]
pub(super) struct SendState {
    /// The final part of the send plan of the current generation.
    plan: SendCache,
    /// Serialised messages, one cache per [`WireStyle`] (indexed by its position in `ALL`).
    wire: [Option<Box<WireCache>>; 3],
}

/// The send plan up to its last cut: items that no later append can change.
#[derive(Debug, Clone, Default)]
struct SendCache {
    gen: u64,
    /// Derived messages `..cut` are planned; the plan of the rest is redone per request.
    cut: usize,
    items: Vec<Sent>,
}

/// One style's serialised messages: per event (a projection never changes, so these survive
/// rewrites) and, for the current generation, the final part of the send plan in order.
#[derive(Debug, Default)]
struct WireCache {
    per_seq: BySeq<Segment>,
    list: SharedSegments,
    gen: u64,
    /// Sum of the lengths of `list`'s segments.
    bytes: usize,
}

impl Clone for WireCache {
    /// A copy gets its own list: two logs must never append to one shared list.
    fn clone(&self) -> Self {
        let list = self.list.read().unwrap_or_else(|e| e.into_inner()).clone();
        WireCache {
            per_seq: self.per_seq.clone(),
            list: Arc::new(RwLock::new(list)),
            gen: self.gen,
            bytes: self.bytes,
        }
    }
}

impl SendState {
    pub(super) fn heap_bytes(&self) -> usize {
        let plan = self.plan.items.capacity() * std::mem::size_of::<Sent>();
        let wire: usize = self
            .wire
            .iter()
            .flatten()
            .map(|c| {
                let per_seq = c.per_seq.heap_bytes();
                // a segment is shared by the per-event cache and the list: count it once (the
                // spans it borrows are the log's lines: `borrowed_buffers`)
                let segments: usize = c.per_seq.values().map(Segment::heap_bytes).sum();
                let list = c.list.read().map_or(0, |l| l.capacity() * 16);
                per_seq + segments + list
            })
            .sum();
        plan + wire
    }

    /// The buffers the cached segments borrow from (address and length): the log's lines, unless
    /// an event was written again since (then its old buffer stays alive for the segment).
    pub(super) fn borrowed_buffers(&self) -> impl Iterator<Item = (*const u8, usize)> + '_ {
        self.wire
            .iter()
            .flatten()
            .flat_map(|c| c.per_seq.values().filter_map(Segment::borrowed))
    }
}

impl EventLog {
    /// Bring the send plan up to date and return its tail: the items since the last cut (the
    /// items before it, `send_items()`, never change until the next rewrite). After appends only
    /// the messages since that cut are planned.
    pub fn update_send(&mut self) -> Vec<Sent> {
        let len = self.derived_len();
        let gen = self.rewrite_version;
        let cache = &mut self.send.plan;
        if cache.gen != gen || cache.cut > len {
            *cache = SendCache {
                gen,
                ..SendCache::default()
            };
        }
        let cut = self.send.plan.cut;
        let plan = crate::wire::plan_send_from(&self.history(), cut);
        let mut items = plan.items;
        let tail = items.split_off(plan.stable_items);
        self.send.plan.items.extend(items);
        self.send.plan.cut = plan.cut;
        tail
    }

    /// The final part of the send plan of the current generation (see [`EventLog::update_send`]).
    pub fn send_items(&self) -> &[Sent] {
        &self.send.plan.items
    }

    /// The serialised messages of the next request in `style`. Messages are serialised once
    /// per event (kept across rewrites); the final part of the send plan is kept as a shared
    /// list per generation, so after appends this costs O(messages since the last cut).
    pub fn wire_messages(&mut self, style: WireStyle) -> WireMessages {
        let tail = self.update_send();
        let slot = WireStyle::ALL
            .iter()
            .position(|s| *s == style)
            .expect("every style is in ALL");
        let mut cache = self.send.wire[slot].take().unwrap_or_else(|| {
            Box::new(WireCache {
                per_seq: BySeq::new(self.events.base()),
                ..WireCache::default()
            })
        });
        let gen = self.rewrite_version;
        cache.per_seq.cover(self.events.len());
        let have = cache.list.read().unwrap_or_else(|e| e.into_inner()).len();
        if cache.gen != gen || have > self.send.plan.items.len() {
            // a new generation gets a new list: bodies still holding the old one keep it intact
            cache.list = SharedSegments::default();
            cache.gen = gen;
            cache.bytes = 0;
        }
        let have = cache.list.read().unwrap_or_else(|e| e.into_inner()).len();
        let new = self.segments(&mut cache.per_seq, &self.send.plan.items[have..], style);
        cache.bytes += new.iter().map(|s| s.len()).sum::<usize>();
        let count = {
            let mut list = cache.list.write().unwrap_or_else(|e| e.into_inner());
            list.extend(new);
            list.len()
        };
        let tail = self.segments(&mut cache.per_seq, &tail, style);
        let tail_bytes = tail.iter().map(|s| s.len()).sum::<usize>();
        let len = cache.bytes + tail_bytes + (count + tail.len()).saturating_sub(1);
        let messages = Messages {
            shared: cache.list.clone(),
            count,
            tail: Arc::new(tail),
            replaced: Arc::default(),
        };
        self.send.wire[slot] = Some(cache);
        WireMessages {
            style,
            messages,
            len,
        }
    }

    /// Segments of plan items: derived messages from the per-event cache (built and serialised
    /// when missing, in parallel when there are many, as after loading a long log), new ones
    /// made.
    fn segments(
        &self,
        per_seq: &mut BySeq<Segment>,
        items: &[Sent],
        style: WireStyle,
    ) -> Vec<Segment> {
        let seqs = self.derived.seqs_unchecked();
        let missing: Vec<usize> = items
            .iter()
            .filter_map(|item| match item {
                Sent::Same(i) if per_seq.get(seqs[*i]).is_none() => Some(*i),
                _ => None,
            })
            .collect();
        let events = &self.events;
        // the message's longest text borrowed from its event's line where the line writes it
        // as the request does (most tool results and texts): not held twice
        let serialise = |&i: &usize| -> Segment {
            let ev = &events[seqs[i] as usize];
            let m = materialize(events, seqs[i]).expect("a derived seq projects to a message");
            let (buf, start) = ev.line_buffer();
            Segment::of_line(
                body::message_json(&m, style),
                &m,
                buf,
                start,
                ev.line().len(),
            )
        };
        let made: Vec<Segment> = if missing.len() > 64 {
            missing.par_iter().map(serialise).collect()
        } else {
            missing.iter().map(serialise).collect()
        };
        for (&i, seg) in missing.iter().zip(made) {
            per_seq.set(seqs[i], Some(seg));
        }
        items
            .iter()
            .map(|item| match item {
                Sent::Same(i) => per_seq.get(seqs[*i]).cloned().expect("serialised above"),
                Sent::New(m) => body::message_json(m, style).into(),
            })
            .collect()
    }

    /// The send plan's messages (derived ones built from their events) for callers that want
    /// them as values (tests, `wire_messages()` of the bindings' value path).
    pub fn normalized_messages(&mut self) -> Vec<crate::log::Message> {
        let history = self.history();
        crate::wire::plan_send(&history)
            .into_iter()
            .map(|s| match s {
                Sent::Same(i) => history.message(i),
                Sent::New(m) => m,
            })
            .collect()
    }
}
