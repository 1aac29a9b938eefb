//! Which events hold a media reference, kept as events come: each event is looked at once (the
//! events appended since the last question), so a request of a log without references reads
//! none of its messages, and one with references finds them by seq. Looking at every message of
//! a long history for each request made one more step O(history) (B2: two thirds of a step on a
//! 113k-event session).
//!
//! A log is append-only, so an event once looked at keeps its answer; a log completed from its
//! store is a new log with a new scan.
use std::sync::Mutex;

use serde_json::Value;

use super::events::Events;
use crate::event::Event;
use crate::project::project;

/// How far the events were looked at, and the seqs of those holding a reference.
#[derive(Debug, Default)]
struct Scanned {
    /// The events looked at: the first `held` of [`Events::iter`] (the held order only changes
    /// when a partial log is completed, which makes a new log).
    held: usize,
    /// In seq order.
    seqs: Vec<u64>,
}

#[derive(Debug, Default)]
pub(super) struct MediaScan(Mutex<Scanned>);

impl Clone for MediaScan {
    fn clone(&self) -> MediaScan {
        let s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        MediaScan(Mutex::new(Scanned {
            held: s.held,
            seqs: s.seqs.clone(),
        }))
    }
}

impl MediaScan {
    /// `f` of the seqs (in order) of the events of `events` that hold a media reference; looks
    /// only at the events not looked at before.
    pub(super) fn with_references<R>(&self, events: &Events, f: impl FnOnce(&[u64]) -> R) -> R {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let held = events.held();
        if s.held < held {
            let before = s.seqs.len();
            let found: Vec<u64> = events
                .iter()
                .skip(s.held)
                .filter(|ev| references_media(ev))
                .map(|ev| ev.seq)
                .collect();
            s.seqs.extend(found);
            if s.seqs.len() > before {
                // held order is seq order but for the events a partial log holds below its base
                s.seqs.sort_unstable();
                s.seqs.dedup(); // had a scan stopped by a panic added some before
            }
            s.held = held;
        }
        f(&s.seqs)
    }
}

/// A surface event whose message holds a content block with a `media` key (a reference, see
/// `event::media_ref`). Only messages of blocks whose line spells `media` (or escapes
/// something, where the key could hide) are projected to be sure.
pub fn references_media(ev: &Event) -> bool {
    if !ev.shape().is_some_and(|s| s.blocks) {
        return false;
    }
    let line = ev.line();
    if !line.contains("media") && !line.contains("\\u") {
        return false;
    }
    project(ev, |_| None).is_some_and(|m| holds_reference(&m))
}

/// A message's content holds a block with a `media` key: the one definition of a message that
/// references media (the Python layer asks the core; see `MessageItems.media_indexes`).
pub fn holds_reference(message: &Value) -> bool {
    message
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| b.as_object().is_some_and(|o| o.contains_key("media")))
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::event::SurfaceOp;
    use crate::log::EventLog;

    fn user(log: &mut EventLog, content: serde_json::Value) {
        let data = json!({"content": content});
        log.append("user/message", &data, 0, Some(SurfaceOp::Append), None)
            .unwrap();
    }

    #[test]
    fn the_events_holding_a_reference_are_found_once_each_and_kept() {
        let mut log = EventLog::new(None);
        user(&mut log, json!("plain text about media"));
        let url = json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}});
        user(
            &mut log,
            json!([{"type": "text", "text": "media, caf\u{e9} \\u0041"}, url]),
        );
        assert!(!log.references_media(), "blocks that only say media");
        assert!(
            !log.references_media(),
            "asked again: nothing new looked at"
        );
        let hash = "0".repeat(64);
        let reference = json!({
            "type": "image_url",
            "image_url": {"url": format!("data:image/png;base64,foldlog-media:sha256:{hash}")},
            "media": {"sha256": hash, "mediaType": "image/png", "size": 1},
        });
        user(&mut log, json!([reference]));
        assert!(
            log.references_media(),
            "the event appended after the last answer"
        );
        user(&mut log, json!("more"));
        user(
            &mut log,
            json!([{"type": "text", "text": "again"}, reference]),
        );
        let seqs = log.with_media_references(<[u64]>::to_vec);
        let want: Vec<u64> = log
            .events()
            .iter()
            .filter(|ev| ev.line().contains("\"media\""))
            .map(|ev| ev.seq)
            .collect();
        assert_eq!(seqs, want);
        assert_eq!(seqs.len(), 2);
        assert_eq!(
            log.clone().with_media_references(<[u64]>::to_vec),
            seqs,
            "a copy keeps what was found"
        );
    }
}
