//! All-or-nothing writes of several events: every event of a batch is checked — its shape, its
//! envelope, its surface op against the surface as the earlier events of the batch leave it —
//! before the log changes at all (`Session.replace`, the importers' writer).
use serde_json::Value;

use super::{check_new, EventLog};
use crate::error::Error;
use crate::event::{Event, SurfaceOp};

/// One event of a batch for [`EventLog::append_batch`].
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub kind: String,
    pub data: Value,
    pub time: i64,
    pub surface_op: Option<SurfaceOp>,
    pub sources: Option<Vec<u64>>,
}

/// A refused batch: the first item that failed and why. Nothing of the batch was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchError {
    /// The position of the refused item in the batch.
    pub index: usize,
    pub error: Error,
}

impl EventLog {
    /// Append every event of `items`, or none: the first item that breaks a rule refuses the
    /// whole batch, and the log (events, surface, `rewrite_version`, caches) stays as it was.
    /// Returns the seqs given to the events.
    pub fn append_batch(
        &mut self,
        items: Vec<NewEvent>,
    ) -> std::result::Result<Vec<u64>, BatchError> {
        let first = self.next_seq();
        let rewrites = items
            .iter()
            .any(|i| i.surface_op.as_ref().is_some_and(SurfaceOp::rewrites));
        // a rewrite can fail against the surface: check the batch's ops on a copy of it
        let mut scratch = rewrites.then(|| self.surface.clone());
        let mut events = Vec::with_capacity(items.len());
        for (index, item) in items.into_iter().enumerate() {
            let fail = |error| BatchError { index, error };
            let seq = first + index as u64;
            check_new(&item.kind, &item.data).map_err(fail)?;
            let ev = Event::new(
                &item.kind,
                seq,
                item.time,
                &item.data,
                item.surface_op,
                item.sources,
            );
            self.check_envelope(&ev, seq).map_err(fail)?;
            if let (Some(surface), Some(op)) = (scratch.as_mut(), ev.surface_op()) {
                surface
                    .apply(seq, op, ev.sources().unwrap_or(&[]))
                    .map_err(fail)?;
            }
            events.push(ev);
        }
        // everything is checked: from here on nothing can fail
        let seqs = events.iter().map(|e| e.seq).collect();
        match scratch {
            Some(surface) => self.surface = surface,
            None => {
                for ev in &events {
                    if ev.surface_op().is_some() {
                        // only appends in this batch: an append always succeeds
                        let appended = self.surface.apply(ev.seq, &SurfaceOp::Append, &[]);
                        debug_assert!(appended.is_ok());
                    }
                }
            }
        }
        for mut ev in events {
            self.fill_from_call(&mut ev);
            let turn_step = match ev.kind() {
                "turn/start" | "step/start" => ev.turn_step(),
                _ => (None, None),
            };
            self.commit(ev, turn_step);
        }
        Ok(seqs)
    }

    /// Make the surface exactly `messages` (OpenAI-chat-shaped): the first recorded with
    /// `{"op":"reset","keep":[]}`, the rest appended — all of them or, when any message is
    /// refused, none.
    pub fn replace_messages(
        &mut self,
        messages: &[Value],
        time: i64,
    ) -> std::result::Result<Vec<u64>, BatchError> {
        if messages.is_empty() {
            return Err(BatchError {
                index: 0,
                error: Error::invalid(
                    "replace() needs at least one message (the surface cannot be empty)",
                ),
            });
        }
        let mut items = Vec::with_capacity(messages.len());
        for (index, m) in messages.iter().enumerate() {
            let fail = |error: Error| BatchError {
                index,
                error: Error::invalid(format!("replace(): message {index}: {error}")),
            };
            crate::event::validate::message(m).map_err(fail)?;
            let (kind, data) = self.message_event(m).map_err(fail)?;
            let op = if index == 0 {
                SurfaceOp::Reset { keep: Vec::new() }
            } else {
                SurfaceOp::Append
            };
            items.push(NewEvent {
                kind: kind.to_string(),
                data,
                time,
                surface_op: Some(op),
                sources: None,
            });
        }
        // the messages are checked; the batch checks the envelopes and the reset
        self.append_batch(items)
    }
}
