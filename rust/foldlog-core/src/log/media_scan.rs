//! Whether a log may hold a media reference, answered in O(events appended since the last
//! question). A request's messages are resolved (each reference replaced by its bytes) only when
//! some event may hold one: looking at every message of a long history for each request made one
//! more step O(history) (B2: two thirds of a step on a 113k-event session).
//!
//! The answer may be a false "yes" (then the caller looks at the messages, as before), never a
//! false "no": a log is append-only, so once an event holds a reference the answer stays yes, and
//! a log completed from its store is a new log with a new scan.
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::Value;

use super::events::Events;
use crate::event::Event;
use crate::project::project;

/// How far the events were looked at, and whether one may hold a reference.
#[derive(Debug, Default)]
pub(super) struct MediaScan {
    /// The events looked at: the first `held` of [`Events::iter`] (the held order only changes
    /// when a partial log is completed, which makes a new log).
    held: AtomicUsize,
    found: AtomicBool,
}

impl Clone for MediaScan {
    fn clone(&self) -> MediaScan {
        MediaScan {
            held: AtomicUsize::new(self.held.load(Ordering::Acquire)),
            found: AtomicBool::new(self.found.load(Ordering::Acquire)),
        }
    }
}

impl MediaScan {
    /// Whether some event of `events` may hold a media reference; looks only at the events not
    /// looked at before (callers hold the log's read lock: concurrent ones may look twice).
    pub(super) fn check(&self, events: &Events) -> bool {
        if self.found.load(Ordering::Acquire) {
            return true;
        }
        let from = self.held.load(Ordering::Acquire);
        let held = events.held();
        if from >= held {
            return false;
        }
        if events.iter().skip(from).any(may_reference_media) {
            self.found.store(true, Ordering::Release);
            return true;
        }
        self.held.fetch_max(held, Ordering::AcqRel);
        false
    }
}

/// A surface event whose message holds a content block with a `media` key (a reference, see
/// `event::media_ref`). Only messages of blocks whose line spells `media` (or escapes
/// something, where the key could hide) are projected to be sure.
pub fn may_reference_media(ev: &Event) -> bool {
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
    fn a_log_may_reference_media_once_an_event_holds_a_reference_and_stays_so() {
        let mut log = EventLog::new(None);
        user(&mut log, json!("plain text about media"));
        let url = json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}});
        user(
            &mut log,
            json!([{"type": "text", "text": "media, caf\u{e9} \\u0041"}, url]),
        );
        assert!(!log.may_reference_media(), "blocks that only say media");
        assert!(
            !log.may_reference_media(),
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
            log.may_reference_media(),
            "the event appended after the last answer"
        );
        user(&mut log, json!("more"));
        assert!(log.may_reference_media());
        assert!(
            log.clone().may_reference_media(),
            "a copy keeps what was found"
        );
    }
}
