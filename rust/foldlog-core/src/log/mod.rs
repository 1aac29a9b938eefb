//! The event log: events in seq order, the surface they build, and the derived messages,
//! maintained incrementally (appends derive only new nodes; rewrites bump a generation).
//!
//! By concern: checking and adding events (here), recording chat messages (`record`), the
//! derived messages and their shapes (`derive`), the send plan and request bodies (`send`),
//! token counts (`counts`), all-or-nothing batches (`batch`), statistics (`stats`).
use std::sync::Arc;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::event::{Event, Header, Parsed, SurfaceOp};
use crate::surface::Surface;

mod batch;
pub mod checkpoint;
mod counts;
mod derive;
mod events;
pub mod flat;
mod media_scan;
mod record;
mod send;
mod stats;

pub use batch::{BatchError, NewEvent};
pub use counts::SurfaceTokens;
use counts::TokenCache;
pub use derive::LogHistory;
pub use events::Events;
pub use media_scan::{holds_reference, references_media};
pub use stats::Stats;

/// A chat message derived from the log, shared (never mutated after projection).
pub type Message = Arc<Value>;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenTurn {
    pub turn: u64,
    /// The open step in that turn, if any.
    pub step: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct EventLog {
    header: Option<Header>,
    events: Events,
    surface: Surface,
    rewrite_version: u64,
    derived: derive::Derived,
    open_turn: Option<OpenTurn>,
    last_turn: u64,
    /// Events `..flushed` are persisted; the rest are the pending batch.
    flushed: usize,
    open_compaction: Option<u64>,
    token_cache: Option<TokenCache>,
    send: send::SendState,
    /// Restored from a checkpoint: where the prefix it does not hold is stored (`checkpoint`).
    partial: Option<Box<checkpoint::Prefix>>,
    /// The events holding a media reference, looked at as events come (`media_scan`).
    media_scan: media_scan::MediaScan,
}

impl EventLog {
    pub fn new(header: Option<Header>) -> EventLog {
        EventLog {
            header,
            ..EventLog::default()
        }
    }

    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }
    pub fn set_header(&mut self, header: Header) {
        self.header = Some(header);
    }
    /// Every event in seq order. A partial log (restored from a checkpoint, see `checkpoint`)
    /// holds only some of the events its checkpoint covers: this gives only those after it, and
    /// [`EventLog::held`] those it holds; complete it first to read them all.
    pub fn events(&self) -> &[Event] {
        self.events.since(self.events.base() as usize)
    }
    /// The events the log holds, by seq (all of them unless it is partial).
    pub fn held(&self) -> &Events {
        &self.events
    }
    /// `f` of the seqs, in order, of the events whose message references media; each event is
    /// looked at once (O(events appended since the last call)).
    pub fn with_media_references<R>(&self, f: impl FnOnce(&[u64]) -> R) -> R {
        self.media_scan.with_references(&self.events, f)
    }
    /// Whether some event's message references media.
    pub fn references_media(&self) -> bool {
        self.with_media_references(|seqs| !seqs.is_empty())
    }
    /// How many events the log has (its next seq), whether it holds them all or not.
    pub fn len(&self) -> usize {
        self.events.len()
    }
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
    /// Event `seq`, if the log holds it.
    pub fn event(&self, seq: u64) -> Option<&Event> {
        self.events.get(seq)
    }
    pub fn surface(&self) -> &Surface {
        &self.surface
    }
    pub fn rewrite_version(&self) -> u64 {
        self.rewrite_version
    }
    pub fn open_turn(&self) -> Option<OpenTurn> {
        self.open_turn
    }
    pub fn last_turn(&self) -> u64 {
        self.last_turn
    }
    /// The id of a compaction that started and has not ended (a crash mid-compaction).
    pub fn open_compaction(&self) -> Option<u64> {
        self.open_compaction
    }
    /// Make room for `more` events (a reader that knows how many lines it read).
    pub fn reserve(&mut self, more: usize) {
        self.events.reserve(more);
    }
    /// A log just read: give back the room the surface's vectors grew beyond what they hold
    /// (its events were reserved ahead, the derivation is sized when first made).
    pub(crate) fn loaded(&mut self) {
        self.surface.shrink_to_fit();
    }
    pub fn next_seq(&self) -> u64 {
        self.events.len() as u64
    }

    /// Check an event against the log's rules and add it. Nothing changes when it fails.
    pub fn push(&mut self, ev: Event) -> Result<u64> {
        let turn_step = match ev.kind() {
            "turn/start" | "step/start" => ev.turn_step(),
            _ => (None, None),
        };
        self.push_parsed(Parsed {
            event: ev,
            turn_step,
        })
    }

    /// [`EventLog::push`] of an event read by the reader (what it tracks already read).
    pub(crate) fn push_parsed(&mut self, parsed: Parsed) -> Result<u64> {
        let Parsed {
            event: mut ev,
            turn_step,
        } = parsed;
        let seq = self.next_seq();
        self.check_envelope(&ev, seq)?;
        if let Some(op) = ev.surface_op() {
            self.surface.apply(seq, op, ev.sources().unwrap_or(&[]))?;
        }
        self.fill_from_call(&mut ev);
        self.commit(ev, turn_step);
        Ok(seq)
    }

    /// A tool result without its id or name in its message takes them from the `tool/call`
    /// event it names first in `sourceEventSeqs` (the projection's rule).
    fn fill_from_call(&self, ev: &mut Event) {
        if !ev.shape().is_some_and(|s| s.needs_call()) {
            return;
        }
        let call = ev
            .sources()
            .into_iter()
            .flatten()
            .filter_map(|&s| self.events.get(s))
            .find(|e| e.kind() == "tool/call")
            .map(Event::data);
        if let (Some(data), Some(shape)) = (call, ev.shape_mut()) {
            shape.fill_from_call(&data);
        }
    }

    /// The rules an event must keep to be the log's event `seq` (its surface op aside, which
    /// needs the surface: [`Surface::apply`] checks it).
    fn check_envelope(&self, ev: &Event, seq: u64) -> Result<()> {
        if ev.seq != seq {
            return Err(Error::invalid(format!(
                "seq {} breaks continuity: expected {seq}",
                ev.seq
            )));
        }
        if let Some(src) = ev.sources() {
            // most lists hold one or two seqs: a set only for long ones
            let mut seen =
                (src.len() > 16).then(|| std::collections::HashSet::with_capacity(src.len()));
            for (i, &s) in src.iter().enumerate() {
                if s >= seq {
                    return Err(Error::invalid(format!(
                        "event #{seq}: sourceEventSeqs entry {s} is not an earlier event"
                    )));
                }
                let repeated = match &mut seen {
                    Some(set) => !set.insert(s),
                    None => src[..i].contains(&s),
                };
                if repeated {
                    return Err(Error::invalid(format!(
                        "event #{seq}: sourceEventSeqs lists {s} twice"
                    )));
                }
            }
        }
        match (ev.is_surface(), ev.surface_op()) {
            (true, None) => Err(Error::invalid(format!(
                "{} event #{seq} needs a surfaceOp",
                ev.kind()
            ))),
            (false, Some(_)) => Err(Error::invalid(format!(
                "{} event #{seq} is not a surface event and must not carry a surfaceOp",
                ev.kind()
            ))),
            (true, Some(_)) if !ev.data_is_object() => Err(Error::invalid(format!(
                "{} event #{seq}: data must be an object",
                ev.kind()
            ))),
            (true, Some(SurfaceOp::Mask { seq: masked })) => self.check_mask(ev, seq, *masked),
            _ => Ok(()),
        }
    }

    /// A `mask` puts a tool result in the place of a tool result (docs/log-format.md).
    fn check_mask(&self, ev: &Event, seq: u64, masked: u64) -> Result<()> {
        let target = self.events.get(masked).map(Event::kind);
        // a partial log holds every surface node: an earlier event it does not hold is off the
        // surface, which the surface reports as for a whole log
        let unheld = target.is_none() && masked < self.next_seq();
        if ev.kind() != "tool/result" || (target != Some("tool/result") && !unheld) {
            return Err(Error::invalid(format!(
                "event #{seq}: surfaceOp mask puts a tool/result in the place of a tool/result \
                 (this is {}, seq {masked} is {})",
                ev.kind(),
                target.unwrap_or("not an earlier event")
            )));
        }
        Ok(())
    }

    /// Add a checked event whose surface op is already applied to `self.surface`.
    fn commit(&mut self, ev: Event, turn_step: (Option<u64>, Option<u64>)) {
        if ev.surface_op().is_some_and(SurfaceOp::rewrites) {
            self.rewrite_version += 1;
        }
        self.track(&ev, turn_step);
        self.events.push(ev);
    }

    fn track(&mut self, ev: &Event, (turn, step): (Option<u64>, Option<u64>)) {
        match ev.kind() {
            "turn/start" => {
                let turn = turn.unwrap_or(0);
                self.last_turn = self.last_turn.max(turn);
                self.open_turn = Some(OpenTurn { turn, step: None });
            }
            "turn/end" => self.open_turn = None,
            "step/start" => {
                let step = step.unwrap_or(0);
                match &mut self.open_turn {
                    Some(t) => t.step = Some(step),
                    None => {
                        self.open_turn = Some(OpenTurn {
                            turn: turn.unwrap_or(0),
                            step: Some(step),
                        })
                    }
                }
            }
            "step/end" => {
                if let Some(t) = &mut self.open_turn {
                    t.step = None;
                }
            }
            "compaction/start" => self.open_compaction = Some(ev.seq),
            "compaction/end" => self.open_compaction = None,
            _ => {}
        }
    }

    /// Build and add a new event (the writer's path). `time` in epoch milliseconds. The data of
    /// a surface event must be a well-formed message ([`crate::event::validate`]); nothing is recorded
    /// when anything is refused.
    pub fn append(
        &mut self,
        kind: &str,
        data: &Value,
        time: i64,
        surface_op: Option<SurfaceOp>,
        sources: Option<Vec<u64>>,
    ) -> Result<u64> {
        check_new(kind, data)?;
        self.append_unchecked(kind, data, time, surface_op, sources)
    }

    /// [`EventLog::append`] without the message-shape check: for events built by the core from
    /// events already in the log (repair), which must be recordable whatever an old log holds.
    pub(crate) fn append_unchecked(
        &mut self,
        kind: &str,
        data: &Value,
        time: i64,
        surface_op: Option<SurfaceOp>,
        sources: Option<Vec<u64>>,
    ) -> Result<u64> {
        check_kind(kind, data)?;
        let ev = Event::new(kind, self.next_seq(), time, data, surface_op, sources);
        self.push(ev)
    }

    /// Bytes this log holds in memory: the buffers its lines are spans of (each counted once),
    /// its events, the surface, the derivation and the caches of counts and serialised messages.
    pub fn heap_bytes(&self) -> usize {
        let mut buffers: Vec<(*const u8, usize)> = self
            .events
            .iter()
            .map(|e| e.buffer_span())
            .chain(self.send.borrowed_buffers())
            .collect();
        buffers.sort_unstable();
        buffers.dedup();
        let lines: usize = buffers.iter().map(|b| b.1).sum();
        let events = self.events.heap_bytes();
        lines
            + events
            + self.surface.heap_bytes()
            + self.derived.heap_bytes()
            + self.token_cache.as_ref().map_or(0, TokenCache::heap_bytes)
            + self.send.heap_bytes()
    }

    // --- persistence bookkeeping ---------------------------------------------------------

    pub fn flushed(&self) -> usize {
        self.flushed
    }
    pub fn pending(&self) -> &[Event] {
        self.events.since(self.flushed)
    }
    /// The pending events as JSONL bytes (each line ends in `\n`).
    pub fn pending_bytes(&self) -> Vec<u8> {
        crate::store::jsonl::lines(self.pending())
    }
    pub fn mark_flushed(&mut self, upto: usize) {
        self.flushed = upto.min(self.events.len()).max(self.flushed);
    }
}

/// What [`EventLog::append`] checks of a new event before building it.
fn check_new(kind: &str, data: &Value) -> Result<()> {
    check_kind(kind, data)?;
    if crate::event::is_surface_type(kind) || kind == crate::event::ERASURE {
        crate::event::validate::event_data(kind, data)?;
    }
    Ok(())
}

/// A new event's type is known and its data is an object.
fn check_kind(kind: &str, data: &Value) -> Result<()> {
    if !crate::event::is_known_type(kind) {
        return Err(Error::invalid(format!("unknown event type {kind:?}")));
    }
    if !data.is_object() {
        return Err(Error::invalid(format!(
            "{kind}: data must be a JSON object"
        )));
    }
    Ok(())
}
