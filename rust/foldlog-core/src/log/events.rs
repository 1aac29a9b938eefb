//! The events a log holds, by seq, and the caches it keeps by seq. A whole log holds every
//! event in one vector; a log restored from a checkpoint (`checkpoint`) holds only the events
//! its surface reads among those the checkpoint covers, so that what it holds — and the time to
//! restore it — does not grow with the number of events covered.
use std::collections::HashMap;
use std::ops::Index;

use crate::event::Event;

/// The events of a log by seq: every event from `base` on, in order, and the few held below
/// it, sorted by seq. A whole log has `base` 0 and nothing below; a partial log has `base` at
/// the end of the prefix its checkpoint covers.
#[derive(Debug, Clone, Default)]
pub struct Events {
    below: Vec<Event>,
    base: u64,
    from_base: Vec<Event>,
}

impl Events {
    /// No events held, `base` events counted: a partial log before its held events are added
    /// ([`Events::hold`]).
    pub(super) fn partial(base: u64) -> Events {
        Events {
            base,
            ..Events::default()
        }
    }

    /// How many events the log has (its next seq), held or not.
    pub fn len(&self) -> usize {
        self.base as usize + self.from_base.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The seq from which on every event is held (0 for a whole log).
    pub fn base(&self) -> u64 {
        self.base
    }
    /// How many events are held: [`Events::len`] for a whole log.
    pub fn held(&self) -> usize {
        self.below.len() + self.from_base.len()
    }

    /// Event `seq`, if the log holds it.
    #[inline]
    pub fn get(&self, seq: u64) -> Option<&Event> {
        match seq.checked_sub(self.base) {
            Some(i) => self.from_base.get(usize::try_from(i).ok()?),
            None => self.below_index(seq).map(|i| &self.below[i]),
        }
    }
    pub(super) fn get_mut(&mut self, seq: u64) -> Option<&mut Event> {
        match seq.checked_sub(self.base) {
            Some(i) => self.from_base.get_mut(usize::try_from(i).ok()?),
            None => self.below_index(seq).map(|i| &mut self.below[i]),
        }
    }
    fn below_index(&self, seq: u64) -> Option<usize> {
        self.below.binary_search_by_key(&seq, |e| e.seq).ok()
    }

    /// The last event (always held).
    pub fn last(&self) -> Option<&Event> {
        self.from_base.last().or(self.below.last())
    }
    /// The events held, in seq order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Event> + '_ {
        self.below.iter().chain(&self.from_base)
    }
    /// The events held below `base`, in seq order.
    pub(super) fn below_base(&self) -> &[Event] {
        &self.below
    }
    /// Events `seq..` (all held: `seq` is at least `base`).
    pub fn since(&self, seq: usize) -> &[Event] {
        let base = self.base as usize;
        assert!(seq >= base, "events before #{base} are not all held");
        &self.from_base[seq - base..]
    }

    /// Add the next event (seq [`Events::len`]).
    pub(super) fn push(&mut self, ev: Event) {
        debug_assert_eq!(ev.seq, self.len() as u64);
        self.from_base.push(ev);
    }
    /// Hold an event below `base`, after those held already (a partial log being built).
    pub(super) fn hold(&mut self, ev: Event) {
        debug_assert!(ev.seq < self.base && self.below.last().is_none_or(|l| l.seq < ev.seq));
        self.below.push(ev);
    }
    pub(super) fn reserve(&mut self, more: usize) {
        self.from_base.reserve(more);
        crate::reader::huge_pages(self.from_base.spare_capacity_mut());
    }

    /// Bytes the held events take (not their lines), with the room reserved for more.
    pub(super) fn heap_bytes(&self) -> usize {
        let spare = self.below.capacity() - self.below.len() + self.from_base.capacity()
            - self.from_base.len();
        self.iter().map(Event::heap_bytes).sum::<usize>() + spare * std::mem::size_of::<Event>()
    }
}

impl Index<usize> for Events {
    type Output = Event;
    /// Event `seq`, which the log must hold (a partial log holds what its surface reads).
    fn index(&self, seq: usize) -> &Event {
        self.get(seq as u64)
            .unwrap_or_else(|| panic!("event #{seq} is not held (a partial log: complete it)"))
    }
}

/// Values kept per event (token counts) for the events a log holds: a slot per
/// seq from the log's `base` on, a map for the few below it, so that a partial log's caches do
/// not take room for the events it does not hold.
#[derive(Debug, Clone)]
pub(super) struct BySeq<T> {
    base: u64,
    below: HashMap<u64, T>,
    slots: Vec<Option<T>>,
}

impl<T> Default for BySeq<T> {
    fn default() -> Self {
        BySeq {
            base: 0,
            below: HashMap::new(),
            slots: Vec::new(),
        }
    }
}

impl<T: Clone> BySeq<T> {
    /// An empty cache for a log whose events are all held from `base` on.
    pub(super) fn new(base: u64) -> Self {
        BySeq {
            base,
            ..BySeq::default()
        }
    }

    /// Room for a slot per seq up to `len` (one resize for a batch of new events).
    pub(super) fn cover(&mut self, len: usize) {
        let want = len.saturating_sub(self.base as usize);
        if self.slots.len() < want {
            self.slots.resize(want, None);
        }
    }

    #[inline]
    pub(super) fn get(&self, seq: u64) -> Option<&T> {
        match seq.checked_sub(self.base) {
            Some(i) => self.slots.get(i as usize)?.as_ref(),
            None => self.below.get(&seq),
        }
    }

    pub(super) fn set(&mut self, seq: u64, value: Option<T>) {
        match seq.checked_sub(self.base) {
            Some(i) => {
                self.cover(seq as usize + 1);
                self.slots[i as usize] = value;
            }
            None => {
                match value {
                    Some(v) => self.below.insert(seq, v),
                    None => self.below.remove(&seq),
                };
            }
        }
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &T> + '_ {
        self.below.values().chain(self.slots.iter().flatten())
    }

    /// Bytes of the slots and the map (not what the values hold elsewhere).
    pub(super) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Option<T>>()
            + self.below.capacity() * (std::mem::size_of::<(u64, T)>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(seq: u64) -> Event {
        Event::parse(&format!(
            r#"{{"type":"assistant/chunk","seq":{seq},"time":0,"data":{{}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_partial_store_holds_only_what_it_is_given() {
        let mut events = Events::partial(1_000_000);
        for seq in [0, 17, 999_998] {
            events.hold(ev(seq));
        }
        events.push(ev(1_000_000));
        assert_eq!(events.len(), 1_000_001);
        assert_eq!(events.held(), 4);
        assert_eq!(events.get(17).map(|e| e.seq), Some(17));
        assert!(events.get(18).is_none());
        assert_eq!(events[1_000_000].seq, 1_000_000);
        assert_eq!(events.since(1_000_000).len(), 1);
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 17, 999_998, 1_000_000]);
        assert!(events.heap_bytes() < 10 * std::mem::size_of::<Event>());
    }

    #[test]
    fn a_cache_by_seq_takes_room_for_what_it_keeps() {
        let mut cache: BySeq<u32> = BySeq::new(1_000_000);
        cache.set(5, Some(1));
        cache.set(1_000_002, Some(2));
        assert_eq!(cache.get(5), Some(&1));
        assert_eq!(cache.get(6), None);
        assert_eq!(cache.get(1_000_002), Some(&2));
        assert_eq!(cache.values().count(), 2);
        assert!(cache.heap_bytes() < 1_000);
        cache.set(5, None);
        assert_eq!(cache.get(5), None);
    }
}
