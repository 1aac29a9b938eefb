//! One serialised message of a request ([`crate::body::Segment`]): its JSON bytes, or — for a
//! derived message whose longest string its event's line writes exactly as the request does —
//! the bytes around that string and the string itself as a span of the line's buffer. An active
//! session keeps its request's messages serialised so that the next body costs only the new ones
//! (B2); a copy of each text beside the log's own held it at 2.3–2.5× its log (issue 31.3).
use std::sync::Arc;

use serde_json::Value;

use super::packed;
use crate::body::write_str;
use crate::event::Buffer;

/// Strings shorter than this (as written, quotes included) are not worth a span: a spliced
/// segment holds ~70 bytes more than a copied one.
const MIN_SPAN: usize = 96;

/// A segment with one borrowed span: its own bytes are those before the span, then those after.
#[derive(Debug)]
pub struct Spliced {
    own: Box<[u8]>,
    /// Where the span goes in `own`.
    at: u32,
    len: u32,
    buf: Buffer,
    start: usize,
}

/// One serialised message, shared by every body that sends it.
#[derive(Debug, Clone)]
pub enum Segment {
    Own(Arc<[u8]>),
    Spliced(Arc<Spliced>),
    /// A short message with the fixed parts of the format packed (`wire::packed`).
    Packed(Arc<[u8]>),
}

impl From<Vec<u8>> for Segment {
    fn from(bytes: Vec<u8>) -> Segment {
        Segment::Own(bytes.into())
    }
}

impl From<&[u8]> for Segment {
    fn from(bytes: &[u8]) -> Segment {
        Segment::Own(bytes.into())
    }
}

impl Segment {
    /// `json` as a segment to keep: packed when short (`wire::packed`).
    pub fn kept(json: Vec<u8>) -> Segment {
        match packed::pack(&json) {
            Some(p) => Segment::Packed(p.into()),
            None => json.into(),
        }
    }

    /// `json` (the serialised `message`), with its longest string borrowed from `buf` instead
    /// of copied when the line `buf[start..start + len]` writes it exactly as `json` does.
    pub fn of_line(
        json: Vec<u8>,
        message: &Value,
        buf: &Buffer,
        start: usize,
        len: usize,
    ) -> Segment {
        let Some(text) = longest_str(message) else {
            return Segment::kept(json);
        };
        let mut written = Vec::with_capacity(text.len() + 2);
        write_str(text, &mut written);
        if written.len() < MIN_SPAN || json.len() > u32::MAX as usize {
            return Segment::kept(json);
        }
        let line = &buf[start..start + len];
        let (Some(in_json), Some(in_line)) = (find(&json, &written), find(line, &written)) else {
            return Segment::kept(json);
        };
        let mut own = json;
        own.drain(in_json..in_json + written.len());
        Segment::Spliced(Arc::new(Spliced {
            own: own.into(),
            at: in_json as u32,
            len: written.len() as u32,
            buf: buf.clone(),
            start: start + in_line,
        }))
    }

    /// Its bytes, in order (a whole segment is their concatenation); a packed one's unpacked.
    fn parts(&self) -> [std::borrow::Cow<'_, [u8]>; 3] {
        use std::borrow::Cow::Borrowed;
        match self {
            Segment::Own(b) => [Borrowed(b), Borrowed(&[]), Borrowed(&[])],
            Segment::Packed(p) => {
                let mut all = Vec::new();
                packed::unpack_into(p, &mut all);
                [all.into(), Borrowed(&[]), Borrowed(&[])]
            }
            Segment::Spliced(s) => {
                let (before, after) = s.own.split_at(s.at as usize);
                let span = &s.buf[s.start..s.start + s.len as usize];
                [Borrowed(before), Borrowed(span), Borrowed(after)]
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Segment::Own(b) => b.len(),
            Segment::Spliced(s) => s.own.len() + s.len as usize,
            Segment::Packed(p) => packed::unpacked_len(p),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its bytes in one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        self.copy_range(0, self.len(), &mut out);
        out
    }

    /// Bytes it holds of its own (the span it borrows is the log's: see [`Segment::borrowed`]).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Segment::Own(b) | Segment::Packed(b) => b.len() + 16,
            Segment::Spliced(s) => s.own.len() + std::mem::size_of::<Spliced>() + 16,
        }
    }

    /// The buffer it borrows from (its address and length), if any.
    pub fn borrowed(&self) -> Option<(*const u8, usize)> {
        match self {
            Segment::Own(_) | Segment::Packed(_) => None,
            Segment::Spliced(s) => Some((s.buf.as_ptr(), s.buf.len())),
        }
    }

    /// Append the bytes `from..from + n` of this segment to `out`.
    pub fn copy_range(&self, mut from: usize, mut n: usize, out: &mut Vec<u8>) {
        if let Segment::Packed(p) = self {
            // a whole one (nearly always: bodies are written in large chunks) unpacks in place
            if from == 0 && n == packed::unpacked_len(p) {
                return packed::unpack_into(p, out);
            }
        }
        for part in self.parts() {
            if n == 0 {
                break;
            }
            if from >= part.len() {
                from -= part.len();
                continue;
            }
            let k = (part.len() - from).min(n);
            out.extend_from_slice(&part[from..from + k]);
            n -= k;
            from = 0;
        }
    }
}

/// The longest string anywhere in `v`.
fn longest_str(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        Value::Array(items) => items.iter().filter_map(longest_str).max_by_key(|s| s.len()),
        Value::Object(m) => m.values().filter_map(longest_str).max_by_key(|s| s.len()),
        _ => None,
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_text_written_alike_is_borrowed_and_the_bytes_are_the_same() {
        let text = "a result long enough to be worth a span of the log's own buffer, \"quoted\", \
                    and then some more words so that the span saves more than it costs";
        let line = serde_json::to_string(&json!({"data": {"content": text}})).unwrap();
        let buf: Buffer = Arc::from(format!("x{line}\n").as_bytes());
        let message = json!({"role": "tool", "content": text});
        let json = serde_json::to_vec(&message).unwrap();
        let seg = Segment::of_line(json.clone(), &message, &buf, 1, line.len());
        assert!(matches!(seg, Segment::Spliced(_)));
        assert_eq!(seg.to_vec(), json);
        assert_eq!(seg.len(), json.len());
        assert!(seg.heap_bytes() < json.len());
        for from in 0..json.len() {
            let mut out = Vec::new();
            seg.copy_range(from, 7, &mut out);
            assert_eq!(out, json[from..(from + 7).min(json.len())]);
        }
    }

    #[test]
    fn a_text_written_otherwise_or_short_is_copied() {
        let text =
            "é a result long enough to be worth a span of the log's own buffer, and then some \
                    more words so that the span would save more than it costs";
        let line = serde_json::to_string(&json!({"content": text}))
            .unwrap()
            .replace('é', "\\u00e9");
        let buf: Buffer = Arc::from(line.as_bytes());
        let message = json!({"role": "tool", "content": text});
        let json = serde_json::to_vec(&message).unwrap();
        let seg = Segment::of_line(json.clone(), &message, &buf, 0, buf.len());
        assert!(matches!(seg, Segment::Own(_)));
        let short = json!({"role": "user", "content": "hi"});
        let json = crate::body::message_json(&short, crate::body::WireStyle::Keep);
        let seg = Segment::of_line(json.clone(), &short, &buf, 0, buf.len());
        // a short message is copied, its fixed parts packed
        assert!(matches!(seg, Segment::Packed(_)));
        assert_eq!((seg.to_vec(), seg.len()), (json.clone(), json.len()));
        for from in 0..json.len() {
            let mut out = Vec::new();
            seg.copy_range(from, 5, &mut out);
            assert_eq!(out, json[from..(from + 5).min(json.len())]);
        }
    }
}
