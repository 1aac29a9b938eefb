//! Event lines held without a copy: a log read from a file or from bytes is one shared buffer,
//! and each event keeps its line as a span of it. A new event gets a buffer of its own (the same
//! type, so every reader of a line works the same way).
use std::sync::Arc;

/// Bytes shared by every event read from one file. Only ever handed out in UTF-8 spans.
pub type Buffer = Arc<[u8]>;

/// The text of one event line (without its newline): a span of a shared buffer.
#[derive(Clone)]
pub struct Line {
    buf: Buffer,
    start: usize,
    len: usize,
}

impl Line {
    /// A span of `buf`; the caller has checked that `buf[start..start + len]` is UTF-8.
    pub(crate) fn span(buf: &Buffer, start: usize, len: usize) -> Line {
        debug_assert!(std::str::from_utf8(&buf[start..start + len]).is_ok());
        Line {
            buf: Arc::clone(buf),
            start,
            len,
        }
    }

    /// A line in a buffer of its own (an event made by this process).
    pub fn owned(text: &str) -> Line {
        Line {
            buf: Arc::from(text.as_bytes()),
            start: 0,
            len: text.len(),
        }
    }

    pub fn as_str(&self) -> &str {
        let bytes = &self.buf[self.start..self.start + self.len];
        // SAFETY: a line is only made from text (`owned`) or from a span checked to be UTF-8
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether this line shares `buf` (it was read with it, not made apart).
    pub fn shares(&self, buf: &Buffer) -> bool {
        Arc::ptr_eq(&self.buf, buf)
    }
}

impl std::fmt::Debug for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::ops::Deref for Line {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// A string inside a line (its usual form: no escapes, so the text is the line's own bytes), or
/// one of its own (decoded from escapes, or made when the line was read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Str {
    Span { start: u32, len: u32 },
    Own(Box<str>),
}

impl Str {
    /// `text` as found in `line`: a span when it points into `line`, else a copy.
    pub fn of(text: &str, line: &str) -> Str {
        let base = line.as_ptr() as usize;
        let at = text.as_ptr() as usize;
        if at >= base && at + text.len() <= base + line.len() && line.len() <= u32::MAX as usize {
            Str::Span {
                start: (at - base) as u32,
                len: text.len() as u32,
            }
        } else {
            Str::Own(text.into())
        }
    }

    /// The text, given the line it was read from.
    pub fn get<'a>(&'a self, line: &'a str) -> &'a str {
        match self {
            Str::Span { start, len } => &line[*start as usize..(*start + *len) as usize],
            Str::Own(s) => s,
        }
    }
}
