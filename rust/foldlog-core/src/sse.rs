//! Incremental server-sent-events decoding: bytes in arbitrary pieces → complete events.
//!
//! A provider's stream arrives in pieces cut anywhere (inside a line, between a CR and its LF);
//! [`SseDecoder`] gives the same events however the bytes are split. Line ends are LF, CRLF or CR;
//! a line starting with `:` is a comment (keep-alive); `data:` lines make an event's data (joined
//! with LF), `event:` names it (default `message`), a blank line ends it; `id` and `retry` are
//! ignored (one-shot completions). A last event without its blank line counts at [`close`].
//!
//! Two bounds keep a broken or hostile server from costing unbounded memory or time, each failing
//! as soon as it is passed: `max_line_bytes` for one line and for the data lines of one event,
//! `max_noise_bytes` for comments, blank lines and other non-data lines in a row without an event.
//!
//! [`close`]: SseDecoder::close

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `data:` lines of the event joined with LF (invalid UTF-8 replaced).
    pub data: String,
    /// The `event:` name, `message` when none (or an empty one) was given.
    pub event: String,
}

/// A bound passed: the stream is abandoned before reading the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// A line (`what` = `"a line"`) or the data lines of one event (`"an event"`) longer than
    /// `limit` bytes.
    TooLong { what: &'static str, limit: usize },
    /// More than `limit` bytes of comments, blank lines and other non-data lines in a row.
    TooNoisy { limit: usize },
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseError::TooLong { what, limit } => write!(
                f,
                "the stream sent {what} longer than {limit} bytes (max_line_bytes); \
                 it was abandoned before reading the rest"
            ),
            SseError::TooNoisy { limit } => write!(
                f,
                "the stream sent more than {limit} bytes of keep-alives, comments or blank lines \
                 without an event (max_noise_bytes)"
            ),
        }
    }
}

impl std::error::Error for SseError {}

/// Feed bytes, get the events they complete.
#[derive(Debug, Default)]
pub struct SseDecoder {
    max_line_bytes: Option<usize>,
    max_noise_bytes: Option<usize>,
    buf: Vec<u8>,
    /// bytes of `buf` already known to hold no line end (a long line is scanned once)
    scanned: usize,
    /// the data lines of the event being read, joined with LF
    data: String,
    /// whether the event being read has a data line (an empty `data:` line makes an event)
    has_data: bool,
    /// bytes of the data lines of the event being read, line ends included
    data_bytes: usize,
    /// bytes of non-data lines since the last event with data
    noise: usize,
    event: String,
    /// a CR ended the last piece: an LF starting the next one belongs to the same line end
    pending_cr: bool,
}

impl SseDecoder {
    /// A decoder with these bounds (`None`: unbounded).
    pub fn new(max_line_bytes: Option<usize>, max_noise_bytes: Option<usize>) -> Self {
        SseDecoder {
            max_line_bytes,
            max_noise_bytes,
            ..SseDecoder::default()
        }
    }

    /// The events completed by `piece`.
    pub fn feed(&mut self, piece: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        if piece.is_empty() {
            return Ok(events);
        }
        let mut piece = piece;
        if self.pending_cr {
            self.pending_cr = false;
            if piece[0] == b'\n' {
                piece = &piece[1..];
            }
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.extend_from_slice(piece);
        let n = buf.len();
        let mut start = 0;
        let mut scan = self.scanned;
        let result = loop {
            if start >= n {
                self.scanned = 0;
                break Ok(());
            }
            let from = start.max(scan);
            scan = 0;
            let found = buf[from..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')
                .map(|i| from + i);
            let Some(end) = found else {
                self.scanned = n - start;
                break self.check_line(n - start, "a line");
            };
            let mut next = end + 1;
            if buf[end] == b'\r' {
                if next < n && buf[next] == b'\n' {
                    next += 1;
                } else if next == n {
                    self.pending_cr = true;
                }
            }
            if let Err(e) = self.check_line(end - start, "a line") {
                break Err(e);
            }
            let line = String::from_utf8_lossy(&buf[start..end]);
            if let Err(e) = self.line(&line, &mut events, next - start) {
                break Err(e);
            }
            start = next;
        };
        buf.drain(..start.min(n));
        self.buf = buf;
        result.map(|()| events)
    }

    /// End of stream: the rest of the buffer as a last line, and a last event without its blank
    /// line (servers omit it).
    pub fn close(&mut self) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        if !self.buf.is_empty() {
            let buf = std::mem::take(&mut self.buf);
            self.line(&String::from_utf8_lossy(&buf), &mut events, buf.len())?;
        }
        self.line("", &mut events, 0)?;
        Ok(events)
    }

    fn check_line(&self, size: usize, what: &'static str) -> Result<(), SseError> {
        match self.max_line_bytes {
            Some(limit) if size > limit => Err(SseError::TooLong { what, limit }),
            _ => Ok(()),
        }
    }

    /// One line, without its line end (`size`: its bytes with the line end).
    fn line(
        &mut self,
        line: &str,
        events: &mut Vec<SseEvent>,
        size: usize,
    ) -> Result<(), SseError> {
        if line.is_empty() {
            if self.has_data {
                let event = std::mem::take(&mut self.event);
                events.push(SseEvent {
                    data: std::mem::take(&mut self.data),
                    event: if event.is_empty() {
                        "message".to_string()
                    } else {
                        event
                    },
                });
                self.noise = 0;
            } else {
                self.count_noise(size)?;
            }
            self.data.clear();
            self.has_data = false;
            self.data_bytes = 0;
            self.event.clear();
            return Ok(());
        }
        if line.starts_with(':') {
            return self.count_noise(size); // a comment / keep-alive
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match name {
            "data" => {
                self.data_bytes += size;
                // many data lines make one event: bound it too
                self.check_line(self.data_bytes, "an event")?;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                return Ok(());
            }
            "event" => value.clone_into(&mut self.event),
            _ => {} // "id" and "retry" do not matter for one-shot completions
        }
        self.count_noise(size)
    }

    fn count_noise(&mut self, size: usize) -> Result<(), SseError> {
        self.noise += size;
        match self.max_noise_bytes {
            Some(limit) if self.noise > limit => Err(SseError::TooNoisy { limit }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(data: &str, event: &str) -> SseEvent {
        SseEvent {
            data: data.to_string(),
            event: event.to_string(),
        }
    }

    fn decode(pieces: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new(None, None);
        let mut out = Vec::new();
        for p in pieces {
            out.extend(d.feed(p).unwrap());
        }
        out.extend(d.close().unwrap());
        out
    }

    #[test]
    fn events_are_the_same_however_the_bytes_are_split() {
        let stream =
            b"event: ping\r\ndata: a\r\ndata:b\r\n\r\n: keep\rdata: {\"x\":1}\n\ndata: last";
        let whole = decode(&[stream]);
        assert_eq!(
            whole,
            vec![
                ev("a\nb", "ping"),
                ev("{\"x\":1}", "message"),
                ev("last", "message")
            ]
        );
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(decode(&bytes), whole);
        for cut in 1..stream.len() {
            assert_eq!(
                decode(&[&stream[..cut], &stream[cut..]]),
                whole,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn an_empty_data_line_makes_an_event_and_a_blank_one_does_not() {
        assert_eq!(decode(&[b"data:\n\n\n\n"]), vec![ev("", "message")]);
        assert_eq!(decode(&[b"event:\ndata: x\n\n"]), vec![ev("x", "message")]);
    }

    #[test]
    fn bounds_fail_as_soon_as_they_are_passed() {
        let mut d = SseDecoder::new(Some(10), None);
        assert_eq!(
            d.feed(b"data: 0123456789").unwrap_err(),
            SseError::TooLong {
                what: "a line",
                limit: 10
            }
        );
        let mut d = SseDecoder::new(Some(10), None);
        assert_eq!(
            d.feed(b"data: 0\ndata: 1\n").unwrap_err(),
            SseError::TooLong {
                what: "an event",
                limit: 10
            }
        );
        let mut d = SseDecoder::new(None, Some(5));
        assert_eq!(
            d.feed(b": a\n: b\n").unwrap_err(),
            SseError::TooNoisy { limit: 5 }
        );
        // an event resets the noise count
        let mut d = SseDecoder::new(None, Some(5));
        assert_eq!(
            d.feed(b": a\ndata:\n\n: b\n").unwrap(),
            vec![ev("", "message")]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(
            decode(&[b"data: \xff\n\n"]),
            vec![ev("\u{fffd}", "message")]
        );
    }
}
