//! The send plan and the serialised messages of requests, kept incrementally: after appends a
//! request plans and serialises only what is new.
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use rayon::prelude::*;

use super::derive::materialize;
use super::EventLog;
use crate::body::{self, Messages, Segment, SharedSegments, WireMessages, WireStyle};
use crate::wire::{History, Sent};

#[derive(Debug)]
pub(super) struct SendState {
    /// The final part of the send plan of the current generation.
    plan: SendCache,
    /// Serialised messages, one cache per [`WireStyle`] (indexed by its position in `ALL`).
    wire: [Option<Box<WireCache>>; 3],
    /// Which plan the final items belong to: a number no other plan of the process has (a new
    /// log, a copy and every new start of the plan take a fresh one), so within one epoch the
    /// final items only grow.
    epoch: u64,
}

/// A fresh send-plan epoch.
fn next_epoch() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Default for SendState {
    fn default() -> SendState {
        SendState {
            plan: SendCache::default(),
            wire: Default::default(),
            epoch: next_epoch(),
        }
    }
}

impl Clone for SendState {
    /// A copy plans on its own: it takes a fresh epoch.
    fn clone(&self) -> SendState {
        SendState {
            plan: self.plan.clone(),
            wire: self.wire.clone(),
            epoch: next_epoch(),
        }
    }
}

/// The send plan up to its last cut: items that no later append can change.
#[derive(Debug, Clone, Default)]
struct SendCache {
    gen: u64,
    /// Derived messages `..cut` are planned; the plan of the rest is redone per request.
    cut: usize,
    items: PlanItems,
}

/// Items of a send plan: `Same(0)`, `Same(1)`, … `Same(same - 1)` — what a plan that changes
/// nothing holds, kept as a count rather than 16 bytes an item (issue 31.3) — then `rest`.
#[derive(Debug, Clone, Default)]
struct PlanItems {
    same: usize,
    rest: Vec<Sent>,
}

impl PlanItems {
    fn len(&self) -> usize {
        self.same + self.rest.len()
    }

    fn extend(&mut self, items: Vec<Sent>) {
        for item in items {
            match item {
                Sent::Same(i) if self.rest.is_empty() && i == self.same => self.same += 1,
                other => self.rest.push(other),
            }
        }
    }

    /// Items `from..`.
    fn since(&self, from: usize) -> impl Iterator<Item = Sent> + '_ {
        let rest = &self.rest[from.saturating_sub(self.same).min(self.rest.len())..];
        (from.min(self.same)..self.same)
            .map(Sent::Same)
            .chain(rest.iter().cloned())
    }
}

/// One style's serialised messages, for the current generation: the final part of the send plan
/// in order (shared with the bodies that send it), the seq of each (to reuse them after a
/// rewrite: a projection never changes), and the last request's tail (reused when it is sent
/// again or becomes final). Nothing is kept by seq: a slot per event took 24 bytes an event,
/// most of them empty (issue 31.3).
#[derive(Debug, Default)]
struct WireCache {
    list: SharedSegments,
    /// The seq of the event behind each segment of `list` ([`NOT_DERIVED`] for a message the
    /// plan made).
    seqs: Vec<u64>,
    tail: Vec<(u64, Segment)>,
    gen: u64,
    /// Sum of the lengths of `list`'s segments.
    bytes: usize,
}

/// The seq of a segment of a message that no event derives (the plan made it).
const NOT_DERIVED: u64 = u64::MAX;

impl Clone for WireCache {
    /// A copy gets its own list: two logs must never append to one shared list.
    fn clone(&self) -> Self {
        let list = self.list.read().unwrap_or_else(|e| e.into_inner()).clone();
        WireCache {
            list: Arc::new(RwLock::new(list)),
            seqs: self.seqs.clone(),
            tail: self.tail.clone(),
            gen: self.gen,
            bytes: self.bytes,
        }
    }
}

impl WireCache {
    /// The segments it keeps (each once: the tail is never in the list), with `f` on each.
    fn each_segment<R>(&self, f: impl Fn(&Segment) -> R) -> Vec<R> {
        let list = self.list.read().unwrap_or_else(|e| e.into_inner());
        list.iter()
            .chain(self.tail.iter().map(|t| &t.1))
            .map(f)
            .collect()
    }
}

impl SendState {
    pub(super) fn heap_bytes(&self) -> usize {
        let plan = self.plan.items.rest.capacity() * std::mem::size_of::<Sent>();
        let wire: usize = self
            .wire
            .iter()
            .flatten()
            .map(|c| {
                // the spans segments borrow are the log's lines: `borrowed_buffers`
                let segments: usize = c.each_segment(Segment::heap_bytes).iter().sum();
                let list =
                    c.list.read().map_or(0, |l| l.capacity()) * std::mem::size_of::<Segment>();
                let tail = c.tail.capacity() * std::mem::size_of::<(u64, Segment)>();
                std::mem::size_of::<WireCache>() + segments + list + c.seqs.capacity() * 8 + tail
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
            .flat_map(|c| c.each_segment(Segment::borrowed).into_iter().flatten())
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
            self.send.epoch = next_epoch();
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
    pub fn send_items(&self) -> impl Iterator<Item = Sent> + '_ {
        self.send.plan.items.since(0)
    }

    /// Items `from..` of the final part of the send plan.
    pub fn send_items_since(&self, from: usize) -> impl Iterator<Item = Sent> + '_ {
        self.send.plan.items.since(from)
    }

    /// How many items the final part of the send plan holds.
    pub fn send_len(&self) -> usize {
        self.send.plan.items.len()
    }

    /// The epoch of the send plan: while it stays the same, the final items only grow (an item
    /// once final is never changed), so a copy of items `..send_len()` stays right.
    pub fn send_epoch(&self) -> u64 {
        self.send.epoch
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
        let mut cache = self.send.wire[slot].take().unwrap_or_default();
        let gen = self.rewrite_version;
        // what was serialised and may be sent again: the last tail, and after a rewrite the
        // old list too (by seq)
        let mut known: HashMap<u64, Segment> =
            std::mem::take(&mut cache.tail).into_iter().collect();
        let have = cache.list.read().unwrap_or_else(|e| e.into_inner()).len();
        if cache.gen != gen || have > self.send.plan.items.len() {
            // a new generation gets a new list: bodies still holding the old one keep it intact
            let old = std::mem::take(&mut cache.list);
            let old = old.read().unwrap_or_else(|e| e.into_inner());
            known.extend(cache.seqs.drain(..).zip(old.iter().cloned()));
            known.remove(&NOT_DERIVED);
            cache.gen = gen;
            cache.bytes = 0;
        }
        let have = cache.list.read().unwrap_or_else(|e| e.into_inner()).len();
        let stable: Vec<Sent> = self.send.plan.items.since(have).collect();
        let (new, seqs) = self.segments(&known, &stable, style);
        cache.bytes += new.iter().map(|s| s.len()).sum::<usize>();
        cache.seqs.extend(seqs);
        let count = {
            let mut list = cache.list.write().unwrap_or_else(|e| e.into_inner());
            list.extend(new);
            list.len()
        };
        let (tail, tail_seqs) = self.segments(&known, &tail, style);
        drop(known);
        cache.tail = tail_seqs
            .into_iter()
            .zip(tail.iter().cloned())
            .filter(|t| t.0 != NOT_DERIVED)
            .collect();
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

    /// Segments of plan items, and the seq of each ([`NOT_DERIVED`] for messages the plan
    /// made): derived messages from `known` (serialised before), else built and serialised (in
    /// parallel when there are many, as after loading a long log); new ones made.
    fn segments(
        &self,
        known: &HashMap<u64, Segment>,
        items: &[Sent],
        style: WireStyle,
    ) -> (Vec<Segment>, Vec<u64>) {
        let seqs = self.derived.seqs_unchecked(&self.surface);
        let events = &self.events;
        // the message's longest text borrowed from its event's line where the line writes it
        // as the request does (most tool results and texts): not held twice
        let serialise = |item: &Sent| -> (Segment, u64) {
            match item {
                Sent::Same(i) => {
                    let seq = seqs[*i];
                    if let Some(seg) = known.get(&seq) {
                        return (seg.clone(), seq);
                    }
                    let ev = &events[seq as usize];
                    let m = materialize(events, seq).expect("a derived seq projects to a message");
                    let (buf, start) = ev.line_buffer();
                    let seg = Segment::of_line(
                        body::message_json(&m, style),
                        &m,
                        buf,
                        start,
                        ev.line().len(),
                    );
                    (seg, seq)
                }
                Sent::New(m) => (Segment::kept(body::message_json(m, style)), NOT_DERIVED),
            }
        };
        let missing = items
            .iter()
            .filter(|item| matches!(item, Sent::Same(i) if !known.contains_key(&seqs[*i])))
            .count();
        let made: Vec<(Segment, u64)> = if missing > 64 {
            items.par_iter().map(serialise).collect()
        } else {
            items.iter().map(serialise).collect()
        };
        made.into_iter().unzip()
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::body::WireBody;
    use crate::event::SurfaceOp;

    /// Where a segment's bytes live (the same allocation: the same message, not serialised again).
    fn addr(s: &Segment) -> *const u8 {
        match s {
            Segment::Own(b) | Segment::Packed(b) => b.as_ptr(),
            Segment::Spliced(s) => Arc::as_ptr(s).cast(),
        }
    }

    fn sent(log: &mut EventLog) -> (Vec<u8>, Vec<*const u8>) {
        let w = log.wire_messages(WireStyle::Keep);
        let shared = w.messages.shared.read().unwrap()[..w.messages.count].to_vec();
        let addrs = shared
            .iter()
            .chain(w.messages.tail.iter())
            .map(addr)
            .collect();
        (WireBody::new(b"[", w, b"]").to_vec(), addrs)
    }

    fn session() -> EventLog {
        let mut log = EventLog::new(None);
        let long = "a tool result long enough to be borrowed from its line. ".repeat(4);
        log.add_message(&json!({"role": "system", "content": "be brief"}), 1)
            .unwrap();
        for k in 0..5 {
            log.add_message(&json!({"role": "user", "content": format!("q{k}")}), 1)
                .unwrap();
            log.add_message(
                &json!({"role": "assistant", "content": "", "tool_calls": [{"id": format!("c{k}"),
                        "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
                1,
            )
            .unwrap();
            log.add_message(
                &json!({"role": "tool", "tool_call_id": format!("c{k}"), "name": "ls",
                        "content": long}),
                1,
            )
            .unwrap();
        }
        log
    }

    #[test]
    fn a_rewrite_sends_the_messages_serialised_before_and_the_bytes_of_a_fresh_log() {
        let mut log = session();
        let (_, before) = sent(&mut log);
        let first_user = log.derived_seqs()[1];
        log.add_message_with(
            &json!({"role": "user", "content": "inserted"}),
            2,
            SurfaceOp::Insert { after: first_user },
        )
        .unwrap();
        let (body, after) = sent(&mut log);
        // every message but the inserted one is the one serialised before the rewrite
        let mut want = before.clone();
        want.insert(2, after[2]);
        assert_eq!(after, want);
        let mut fresh = crate::reader::read(&log.file_bytes()).unwrap().log;
        assert_eq!(body, sent(&mut fresh).0);
        // asked again with nothing new: nothing is serialised
        assert_eq!(sent(&mut log).1, after);
    }

    #[test]
    fn final_send_items_only_grow_within_an_epoch() {
        let mut log = session();
        log.update_send();
        let (epoch, items) = (log.send_epoch(), log.send_items().collect::<Vec<_>>());
        log.add_message(&json!({"role": "user", "content": "more"}), 2)
            .unwrap();
        log.update_send();
        assert_eq!(log.send_epoch(), epoch, "appends keep the epoch");
        let grown: Vec<Sent> = log.send_items().collect();
        assert!(grown.len() >= items.len());
        assert_eq!(format!("{:?}", &grown[..items.len()]), format!("{items:?}"));
        let from = items.len() / 2;
        assert_eq!(
            format!("{:?}", log.send_items_since(from).collect::<Vec<_>>()),
            format!("{:?}", &grown[from..])
        );
        assert_eq!(log.send_len(), grown.len());
        let copy = log.clone();
        assert_ne!(copy.send_epoch(), epoch, "a copy plans on its own");
        log.replace_messages(&[json!({"role": "user", "content": "fresh"})], 3)
            .unwrap();
        log.update_send();
        assert_ne!(log.send_epoch(), epoch, "a rewrite starts a new plan");
        assert_ne!(EventLog::new(None).send_epoch(), log.send_epoch());
    }

    #[test]
    fn what_a_request_keeps_is_counted_in_the_heap() {
        let mut log = session();
        let before = log.heap_bytes();
        let w = log.wire_messages(WireStyle::Keep);
        let list = w.messages.shared.read().unwrap().clone();
        let kept: usize = list
            .iter()
            .chain(w.messages.tail.iter())
            .map(|s| s.heap_bytes() + std::mem::size_of::<Segment>())
            .sum();
        assert!(list.iter().any(|s| matches!(s, Segment::Packed(_))));
        assert!(list.iter().any(|s| matches!(s, Segment::Spliced(_))));
        assert!(
            log.heap_bytes() >= before + kept,
            "{} < {before} + {kept}",
            log.heap_bytes()
        );
    }
}
