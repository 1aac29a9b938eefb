//! A fast path for reading event envelopes: one pass over the line that validates it as JSON
//! (strings scanned eight bytes at a time) and picks out `type`, `seq`, `time`, `ignorable`,
//! `sourceEventSeqs` and the spans of `data` and `surfaceOp`, without building any value.
//!
//! It accepts only what `serde_json` accepts and only the plain shapes the writer produces
//! (unescaped keys and type, unsigned `seq`, integer `time`, …). Anything else — including every
//! malformed line — returns `None`, and the caller takes the `serde_json` path, which decides
//! the outcome and words the error exactly as before.

/// The envelope fields of one line. Spans are byte ranges into the line.
#[derive(Debug, Default)]
pub struct RawEnvelope<'a> {
    pub kind: Option<&'a str>,
    pub seq: Option<u64>,
    pub time: Option<i64>,
    pub data: Option<(usize, usize)>,
    pub surface_op: Option<(usize, usize)>,
    pub sources: Option<Vec<u64>>,
    pub ignorable: bool,
}

/// `serde_json` refuses deeper nesting (its recursion limit is 128); leave those to it.
const MAX_DEPTH: usize = 100;

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    /// Validate fully (a line being read) or only find the structure (already validated `data`).
    check: bool,
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Any byte below 0x20 (JSON strings must escape control characters), eight bytes at a time:
/// `(w - 0x20…) & !w` sets a byte's high bit when it was below 0x20 (no false negatives; a false
/// positive only above a true hit, which does not matter for "any").
#[inline]
fn has_control(s: &[u8]) -> bool {
    let mut words = s.chunks_exact(8);
    let mut hit = 0u64;
    for (n, c) in (&mut words).enumerate() {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        hit |= w.wrapping_sub(LO * 0x20) & !w & HI;
        if n % 8 == 7 && hit != 0 {
            return true;
        }
    }
    hit != 0 || words.remainder().iter().any(|&x| x < 0x20)
}

impl<'a> Scanner<'a> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline(always)]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    #[inline(always)]
    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// After the opening quote: skip to the closing quote, validating escapes and (when
    /// `self.check`) refusing control characters. Returns whether the string held an escape.
    fn string_tail(&mut self) -> Option<bool> {
        let b = self.b;
        let mut escaped = false;
        loop {
            // the next quote or backslash (SIMD); the bytes before it must not be control characters
            let rest = &b[self.i..];
            let pos = memchr::memchr2(b'"', b'\\', rest)?;
            if self.check && has_control(&rest[..pos]) {
                return None;
            }
            self.i += pos + 1;
            if rest[pos] == b'"' {
                return Some(escaped);
            }
            escaped = true;
            match *b.get(self.i)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                b'u' => {
                    let hex = b.get(self.i + 1..self.i + 5)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.i += 5;
                }
                _ => return None,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    /// A JSON number (grammar only, as serde_json checks when it skips a value).
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.b.get(self.i..self.i + word.len())? == word {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    /// Skip one JSON value (after leading whitespace), validating it.
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.string_tail().map(|_| ())
            }
            b'{' => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.eat(b'"')?;
                    self.string_tail()?;
                    self.eat(b':')?;
                    self.value(depth + 1)?;
                    self.ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.value(depth + 1)?;
                    self.ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    /// A plain unsigned integer (no sign, fraction or exponent), as `u64`.
    fn u64(&mut self) -> Option<u64> {
        self.ws();
        let start = self.i;
        if self.digits() == 0 {
            return None;
        }
        let text = &self.b[start..self.i];
        if text.len() > 1 && text[0] == b'0' {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return None;
        }
        std::str::from_utf8(text).ok()?.parse().ok()
    }

    fn i64(&mut self) -> Option<i64> {
        self.ws();
        let neg = self.peek() == Some(b'-');
        if neg {
            self.i += 1;
        }
        if self.peek().is_some_and(|c| !c.is_ascii_digit()) {
            return None;
        }
        let v = self.u64()?;
        if neg {
            0i64.checked_sub_unsigned(v)
        } else {
            i64::try_from(v).ok()
        }
    }

    fn span(&mut self) -> Option<(usize, usize)> {
        self.ws();
        let start = self.i;
        self.value(1)?;
        Some((start, self.i))
    }
}

/// Scan one event line. `None` means "not the plain shape": use the `serde_json` path.
pub fn envelope(line: &str) -> Option<RawEnvelope<'_>> {
    let mut s = Scanner {
        b: line.as_bytes(),
        i: 0,
        check: true,
    };
    let mut env = RawEnvelope::default();
    let mut seen_ignorable = false;
    s.eat(b'{')?;
    s.ws();
    if s.peek() == Some(b'}') {
        return None;
    }
    loop {
        s.eat(b'"')?;
        let key_start = s.i;
        if s.string_tail()? {
            return None; // escaped keys: leave to serde
        }
        let key = &s.b[key_start..s.i - 1];
        s.eat(b':')?;
        match key {
            b"type" => {
                if env.kind.is_some() {
                    return None;
                }
                s.eat(b'"')?;
                let start = s.i;
                if s.string_tail()? {
                    return None;
                }
                env.kind = Some(line.get(start..s.i - 1)?);
            }
            b"seq" => {
                if env.seq.is_some() {
                    return None;
                }
                env.seq = Some(s.u64()?);
            }
            b"time" => {
                if env.time.is_some() {
                    return None;
                }
                env.time = Some(s.i64()?);
            }
            b"data" => {
                if env.data.is_some() {
                    return None;
                }
                let sp = s.span()?;
                if &s.b[sp.0..sp.1] == b"null" {
                    return None;
                }
                env.data = Some(sp);
            }
            b"surfaceOp" => {
                if env.surface_op.is_some() {
                    return None;
                }
                env.surface_op = Some(s.span()?);
            }
            b"sourceEventSeqs" => {
                if env.sources.is_some() {
                    return None;
                }
                s.eat(b'[')?;
                let mut v = Vec::new();
                s.ws();
                if s.peek() == Some(b']') {
                    s.i += 1;
                } else {
                    loop {
                        v.push(s.u64()?);
                        s.ws();
                        match s.peek()? {
                            b',' => s.i += 1,
                            b']' => {
                                s.i += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                env.sources = Some(v);
            }
            b"ignorable" => {
                if seen_ignorable {
                    return None;
                }
                seen_ignorable = true;
                s.ws();
                env.ignorable = match s.peek()? {
                    b't' => s.literal(b"true").map(|_| true)?,
                    b'f' => s.literal(b"false").map(|_| false)?,
                    _ => return None,
                };
            }
            _ => s.value(1)?,
        }
        s.ws();
        match s.peek()? {
            b',' => s.i += 1,
            b'}' => {
                s.i += 1;
                break;
            }
            _ => return None,
        }
    }
    s.ws();
    if s.i != s.b.len() {
        return None;
    }
    Some(env)
}

/// The raw values of the given top-level keys of a JSON object (the last one wins for a repeated
/// key, as when it is parsed into a map). `None` when `json` is not a plain object.
pub fn fields<'a, const N: usize>(json: &'a str, keys: [&str; N]) -> Option<[Option<&'a str>; N]> {
    // `data` of an event was validated when it was read or written: only find its structure
    let mut s = Scanner {
        b: json.as_bytes(),
        i: 0,
        check: false,
    };
    let mut out = [None; N];
    s.eat(b'{')?;
    s.ws();
    if s.peek() == Some(b'}') {
        return Some(out);
    }
    loop {
        s.eat(b'"')?;
        let key_start = s.i;
        if s.string_tail()? {
            return None;
        }
        let key = &json[key_start..s.i - 1];
        s.eat(b':')?;
        let (a, b) = s.span()?;
        if let Some(k) = keys.iter().position(|k| *k == key) {
            out[k] = Some(&json[a..b]);
        }
        s.ws();
        match s.peek()? {
            b',' => s.i += 1,
            b'}' => return Some(out),
            _ => return None,
        }
    }
}

/// The text of a raw JSON string value (unescaped), `None` when it is not a string.
pub fn string(raw: &str) -> Option<std::borrow::Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(std::borrow::Cow::Borrowed(inner));
    }
    unescape(inner)
        .or_else(|| serde_json::from_str::<String>(raw).ok())
        .map(std::borrow::Cow::Owned)
}

fn hex4(b: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(b.get(..4)?).ok()?;
    u32::from_str_radix(text, 16).ok()
}

/// Decode the escapes of a validated JSON string body; `None` for a lone surrogate (the caller
/// lets serde_json decide those).
fn unescape(inner: &str) -> Option<String> {
    let b = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'\\', &b[i..]) {
        out.push_str(&inner[i..i + p]);
        i += p + 1;
        let c = *b.get(i)?;
        i += 1;
        out.push(match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = hex4(&b[i..])?;
                i += 4;
                if (0xD800..0xDC00).contains(&hi) {
                    if b.get(i..i + 2)? != b"\\u" {
                        return None;
                    }
                    let lo = hex4(&b[i + 2..])?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return None;
                    }
                    i += 6;
                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                } else {
                    char::from_u32(hi)?
                }
            }
            _ => return None,
        });
    }
    out.push_str(&inner[i..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_ok(text: &str) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
    }

    #[test]
    fn fields_and_strings() {
        let f = fields(r#"{"a":1,"b":"x\\ny","a":[2]}"#, ["a", "b", "c"]).unwrap();
        assert_eq!(f, [Some("[2]"), Some(r#""x\\ny""#), None]);
        assert_eq!(string(f[1].unwrap()).unwrap(), "x\\ny");
        assert_eq!(string(r#""plain""#).unwrap(), "plain");
        assert!(string("12").is_none());
        assert!(fields("[1]", ["a"]).is_none());
    }

    #[test]
    fn unescapes_like_serde() {
        for raw in [
            r#""a\nb\t\"q\" \\ \/ \b\f\r""#,
            r#""\u00e9\u20ac \ud83d\ude00 end""#,
            r#""\u0000x""#,
        ] {
            let ours = string(raw).unwrap();
            let theirs: String = serde_json::from_str(raw).unwrap();
            assert_eq!(ours, theirs, "{raw}");
        }
        assert!(unescape(r"lone \ud83d here").is_none());
        assert!(string(r#""\udc00""#).is_none());
    }

    #[test]
    fn plain_event() {
        let line = r#"{"type":"tool/result","seq":7,"time":-3,"data":{"a":"x\"y\u00e9","b":[1,2.5e-3,true,null]},"surfaceOp":"append","sourceEventSeqs":[6, 2]}"#;
        let e = envelope(line).unwrap();
        assert_eq!(e.kind, Some("tool/result"));
        assert_eq!(e.seq, Some(7));
        assert_eq!(e.time, Some(-3));
        let (a, b) = e.data.unwrap();
        assert_eq!(
            &line[a..b],
            r#"{"a":"x\"y\u00e9","b":[1,2.5e-3,true,null]}"#
        );
        let (a, b) = e.surface_op.unwrap();
        assert_eq!(&line[a..b], "\"append\"");
        assert_eq!(e.sources, Some(vec![6, 2]));
    }

    #[test]
    fn refuses_what_serde_refuses() {
        let bad = [
            "{\"type\":\"x\",\"seq\":1,\"data\":{\"a\":\"tab\there\"}}",
            r#"{"type":"x","seq":1,"data":{"a":01}}"#,
            r#"{"type":"x","seq":1,"data":{"a":1.}}"#,
            r#"{"type":"x","seq":1,"data":{"a":"\x"}}"#,
            r#"{"type":"x","seq":1,"data":{"a":"\u12"}}"#,
            r#"{"type":"x","seq":1,"data":{"a":[1,]}}"#,
            r#"{"type":"x","seq":1,"data":{"a":1,}}"#,
            r#"{"type":"x","seq":1,"data":{"a":tru}}"#,
            r#"{"type":"x","seq":1,"data":{}} x"#,
            r#"{"type":"x","seq":1,"data":{"a":"unterminated}}"#,
        ];
        for line in bad {
            assert!(!serde_ok(line), "{line}");
            assert!(envelope(line).is_none(), "{line}");
        }
    }

    #[test]
    fn odd_shapes_fall_back() {
        for line in [
            r#"{"type":"x","seq":-1,"data":{}}"#,
            r#"{"type":"x","seq":1.0,"data":{}}"#,
            r#"{"type":"x","seq":1,"seq":2,"data":{}}"#,
            r#"{"ty\u0070e":"x","seq":1,"data":{}}"#,
            r#"{"type":"x","seq":1,"data":null}"#,
            r#"{"type":"x","seq":99999999999999999999,"data":{}}"#,
        ] {
            assert!(envelope(line).is_none(), "{line}");
        }
    }

    #[test]
    fn long_strings_with_hits_at_every_offset() {
        for pad in 0..20 {
            let body = "a".repeat(pad);
            let line = format!(r#"{{"type":"x","seq":1,"data":{{"k":"{body}\n{body}\"{body}"}}}}"#);
            let e = envelope(&line).unwrap();
            assert!(serde_ok(&line));
            let (a, b) = e.data.unwrap();
            assert!(line[a..b].ends_with("\"}"));
            let ctrl =
                format!("{{\"type\":\"x\",\"seq\":1,\"data\":{{\"k\":\"{body}\u{1}{body}\"}}}}");
            assert!(envelope(&ctrl).is_none());
            let hi = format!(r#"{{"type":"x","seq":1,"data":{{"k":"{body}é€😀{body}"}}}}"#);
            assert!(envelope(&hi).is_some());
        }
    }
}
