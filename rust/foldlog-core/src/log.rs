//! The event log: events in seq order, the surface they build, and the derived messages,
//! maintained incrementally (appends project only new nodes; rewrites bump a generation).
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::body::{self, Messages, Segment, SharedSegments, WireMessages, WireStyle};
use crate::error::{Error, Result};
use crate::event::{Event, Header, SurfaceOp};
use crate::project::project;
use crate::surface::Surface;
use crate::wire::Sent;

mod batch;
mod counts;

pub use batch::{BatchError, NewEvent};
use counts::TokenCache;

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
    events: Vec<Event>,
    surface: Surface,
    rewrite_version: u64,
    /// Per seq: the projection of a surface event, computed at most once.
    projected: Vec<Option<Option<Message>>>,
    /// The derived messages of the surface nodes `..derived_nodes`, valid for `derived_gen`.
    derived: Vec<Message>,
    derived_seqs: Vec<u64>,
    derived_nodes: usize,
    derived_gen: u64,
    open_turn: Option<OpenTurn>,
    last_turn: u64,
    /// Events `..flushed` are persisted; the rest are the pending batch.
    flushed: usize,
    open_compaction: Option<u64>,
    token_cache: Option<TokenCache>,
    /// Serialised messages, one cache per [`WireStyle`] (indexed by its position in `ALL`).
    wire_cache: [Option<Box<WireCache>>; 3],
    /// The final part of the send plan of the current generation.
    send: SendCache,
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
    per_seq: Vec<Option<Segment>>,
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
            list: std::sync::Arc::new(std::sync::RwLock::new(list)),
            gen: self.gen,
            bytes: self.bytes,
        }
    }
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
    pub fn events(&self) -> &[Event] {
        &self.events
    }
    pub fn len(&self) -> usize {
        self.events.len()
    }
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
    pub fn event(&self, seq: u64) -> Option<&Event> {
        self.events.get(seq as usize)
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
    pub fn next_seq(&self) -> u64 {
        self.events.len() as u64
    }

    /// Check an event against the log's rules and add it. Nothing changes when it fails.
    pub fn push(&mut self, ev: Event) -> Result<u64> {
        let seq = self.next_seq();
        self.check_envelope(&ev, seq)?;
        if let Some(op) = &ev.surface_op {
            self.surface
                .apply(seq, op, ev.sources.as_deref().unwrap_or(&[]))?;
        }
        self.commit(ev);
        Ok(seq)
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
        if let Some(src) = &ev.sources {
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
        match (ev.is_surface(), &ev.surface_op) {
            (true, None) => Err(Error::invalid(format!(
                "{} event #{seq} needs a surfaceOp",
                ev.kind()
            ))),
            (false, Some(_)) => Err(Error::invalid(format!(
                "{} event #{seq} is not a surface event and must not carry a surfaceOp",
                ev.kind()
            ))),
            (true, Some(_)) if !ev.data_json().trim_start().starts_with('{') => {
                Err(Error::invalid(format!(
                    "{} event #{seq}: data must be an object",
                    ev.kind()
                )))
            }
            _ => Ok(()),
        }
    }

    /// Add a checked event whose surface op is already applied to `self.surface`.
    fn commit(&mut self, ev: Event) {
        if ev.surface_op.as_ref().is_some_and(SurfaceOp::rewrites) {
            self.rewrite_version += 1;
        }
        self.track(&ev);
        self.events.push(ev);
        self.projected.push(None);
    }

    fn track(&mut self, ev: &Event) {
        match ev.kind() {
            "turn/start" => {
                let turn = ev.turn_step().0.unwrap_or(0);
                self.last_turn = self.last_turn.max(turn);
                self.open_turn = Some(OpenTurn { turn, step: None });
            }
            "turn/end" => self.open_turn = None,
            "step/start" => {
                let (turn, step) = ev.turn_step();
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
    /// a surface event must be a well-formed message ([`crate::validate`]); nothing is recorded
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
        if !crate::event::is_known_type(kind) {
            return Err(Error::invalid(format!("unknown event type {kind:?}")));
        }
        if !data.is_object() {
            return Err(Error::invalid(format!(
                "{kind}: data must be a JSON object"
            )));
        }
        let ev = Event::new(kind, self.next_seq(), time, data, surface_op, sources);
        self.push(ev)
    }

    /// Record an OpenAI-chat-shaped message as the matching surface event (appended).
    pub fn add_message(&mut self, message: &Value, time: i64) -> Result<u64> {
        self.add_message_with(message, time, SurfaceOp::Append)
    }

    /// Record a message as its surface event with the given surface op. The message is checked
    /// first ([`crate::validate::message`]: errors name the place inside it).
    pub fn add_message_with(&mut self, message: &Value, time: i64, op: SurfaceOp) -> Result<u64> {
        crate::validate::message(message)?;
        let (kind, data) = self.message_event(message)?;
        self.append_unchecked(kind, &data, time, Some(op), None)
    }

    /// The event type and data that record an OpenAI-chat-shaped message.
    pub fn message_event(&self, message: &Value) -> Result<(&'static str, Value)> {
        let obj = message
            .as_object()
            .ok_or_else(|| Error::invalid("a message must be a JSON object with a \"role\""))?;
        let role = obj
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid("a message needs a string \"role\""))?;
        let (turn, step) = match self.open_turn {
            Some(t) => (t.turn, t.step.unwrap_or(0)),
            None => (self.last_turn, 0),
        };
        let (kind, data) = match role {
            "system" => (
                "system/message",
                serde_json::json!({"content": obj.get("content").cloned().unwrap_or(Value::Null)}),
            ),
            "user" => ("user/message", message.clone()),
            "assistant" => (
                "assistant/message",
                serde_json::json!({"turn": turn, "step": step, "message": message}),
            ),
            "tool" => {
                let mut m = Map::new();
                m.insert("role".into(), "tool".into());
                if let Some(id) = obj.get("tool_call_id").or_else(|| obj.get("toolCallId")) {
                    m.insert("toolCallId".into(), id.clone());
                }
                if let Some(name) = obj.get("name").or_else(|| obj.get("toolName")) {
                    m.insert("toolName".into(), name.clone());
                }
                m.insert(
                    "content".into(),
                    obj.get("content").cloned().unwrap_or(Value::Null),
                );
                let is_error = obj.get("isError").or_else(|| obj.get("is_error")).cloned();
                m.insert("isError".into(), is_error.unwrap_or(Value::Bool(false)));
                (
                    "tool/result",
                    serde_json::json!({"turn": turn, "step": step, "message": Value::Object(m)}),
                )
            }
            other => {
                return Err(Error::invalid(format!(
                    "unknown message role {other:?} (expected system, user, assistant or tool)"
                )))
            }
        };
        Ok((kind, data))
    }

    fn projection(&mut self, seq: u64) -> Option<Message> {
        let i = seq as usize;
        if self.projected[i].is_none() {
            let events = &self.events;
            let p = project(&events[i], |s| events.get(s as usize)).map(Arc::new);
            self.projected[i] = Some(p);
        }
        self.projected[i].clone().flatten()
    }

    /// Bring the derived messages up to date: only new nodes after appends, a rebuild after a
    /// rewrite (projections of unchanged events are reused).
    pub fn derive(&mut self) -> &[Message] {
        if self.derived_gen != self.rewrite_version {
            self.derived.clear();
            self.derived_seqs.clear();
            self.derived_nodes = 0;
            self.derived_gen = self.rewrite_version;
        }
        let total = self.surface.len();
        for i in self.derived_nodes..total {
            let seq = self.surface.nodes()[i];
            if let Some(m) = self.projection(seq) {
                self.derived.push(m);
                self.derived_seqs.push(seq);
            }
        }
        self.derived_nodes = total;
        &self.derived
    }

    /// Bring the send plan up to date and return its tail: the items since the last cut (the
    /// items before it, `send_items()`, never change until the next rewrite). After appends only
    /// the messages since that cut are planned.
    pub fn update_send(&mut self) -> Vec<Sent> {
        self.derive();
        let gen = self.rewrite_version;
        if self.send.gen != gen || self.send.cut > self.derived.len() {
            self.send = SendCache {
                gen,
                ..SendCache::default()
            };
        }
        let plan = crate::wire::plan_send_from(&self.derived, self.send.cut);
        let mut items = plan.items;
        let tail = items.split_off(plan.stable_items);
        self.send.items.extend(items);
        self.send.cut = plan.cut;
        tail
    }

    /// The final part of the send plan of the current generation (see [`EventLog::update_send`]).
    pub fn send_items(&self) -> &[Sent] {
        &self.send.items
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
        let mut cache = self.wire_cache[slot].take().unwrap_or_default();
        let gen = self.rewrite_version;
        if cache.per_seq.len() < self.events.len() {
            cache.per_seq.resize(self.events.len(), None);
        }
        let have = cache.list.read().unwrap_or_else(|e| e.into_inner()).len();
        if cache.gen != gen || have > self.send.items.len() {
            // a new generation gets a new list: bodies still holding the old one keep it intact
            cache.list = SharedSegments::default();
            cache.gen = gen;
            cache.bytes = 0;
        }
        let have = cache.list.read().unwrap_or_else(|e| e.into_inner()).len();
        let new = self.segments(&mut cache.per_seq, &self.send.items[have..], style);
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
            tail: std::sync::Arc::new(tail),
        };
        self.wire_cache[slot] = Some(cache);
        WireMessages {
            style,
            messages,
            len,
        }
    }

    /// Segments of plan items: derived messages from the per-event cache (serialised when
    /// missing, in parallel when there are many, as after loading a long log), new ones made.
    fn segments(
        &self,
        per_seq: &mut [Option<Segment>],
        items: &[Sent],
        style: WireStyle,
    ) -> Vec<Segment> {
        use rayon::prelude::*;
        let seq_of = |i: usize| self.derived_seqs[i] as usize;
        let missing: Vec<usize> = items
            .iter()
            .filter_map(|item| match item {
                Sent::Same(i) if per_seq[seq_of(*i)].is_none() => Some(*i),
                _ => None,
            })
            .collect();
        let serialise =
            |&i: &usize| -> Segment { body::message_json(&self.derived[i], style).into() };
        let made: Vec<Segment> = if missing.len() > 256 {
            missing.par_iter().map(serialise).collect()
        } else {
            missing.iter().map(serialise).collect()
        };
        for (&i, seg) in missing.iter().zip(made) {
            per_seq[seq_of(i)] = Some(seg);
        }
        items
            .iter()
            .map(|item| match item {
                Sent::Same(i) => per_seq[seq_of(*i)].clone().expect("serialised above"),
                Sent::New(m) => body::message_json(m, style).into(),
            })
            .collect()
    }

    /// Seq of the event behind each derived message (parallel to [`EventLog::derive`]).
    pub fn derived_seqs(&mut self) -> &[u64] {
        self.derive();
        &self.derived_seqs
    }

    /// The derived messages, the seq of the event behind each, and the events: for readers that
    /// need a message's envelope next to it (the planner's input reads the digest's fold op).
    pub fn derived_with_events(&mut self) -> (&[Message], &[u64], &[Event]) {
        self.derive();
        (&self.derived, &self.derived_seqs, &self.events)
    }

    /// Anything the model would see beyond system messages (an assistant message with neither
    /// content nor tool calls, kept only for its usage, derives to nothing and does not count).
    pub fn has_content(&mut self) -> bool {
        self.derive()
            .iter()
            .any(|m| m.get("role").and_then(Value::as_str) != Some("system"))
    }

    // --- persistence bookkeeping ---------------------------------------------------------

    pub fn flushed(&self) -> usize {
        self.flushed
    }
    pub fn pending(&self) -> &[Event] {
        &self.events[self.flushed..]
    }
    /// The pending events as JSONL bytes (each line ends in `\n`).
    pub fn pending_bytes(&self) -> Vec<u8> {
        crate::writer::lines(self.pending())
    }
    pub fn mark_flushed(&mut self, upto: usize) {
        self.flushed = upto.min(self.events.len()).max(self.flushed);
    }
}

/// What [`EventLog::append`] checks of a new event before building it.
fn check_new(kind: &str, data: &Value) -> Result<()> {
    if !crate::event::is_known_type(kind) {
        return Err(Error::invalid(format!("unknown event type {kind:?}")));
    }
    if !data.is_object() {
        return Err(Error::invalid(format!(
            "{kind}: data must be a JSON object"
        )));
    }
    if crate::event::is_surface_type(kind) {
        crate::validate::event_data(kind, data)?;
    }
    Ok(())
}
