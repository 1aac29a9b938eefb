//! A hand-written reading of the envelope for the lines writers produce, in one pass with a
//! validating skip over `data` (serde's generic path, key by key through visitors, was most of a
//! small-message load).
//!
//! It never decides anything on its own: it takes a line only when the line is certainly valid
//! JSON (RFC 8259) that the envelope struct of `parse.rs` reads without error, and then reads it
//! exactly as that struct does. Anything else — an escape in a key, a duplicate key, a number
//! that is not a plain integer where one is wanted, a `\u` surrogate, deep nesting, any syntax
//! error — gives `None`, and the line goes through serde, whose reading and errors (messages,
//! lines, the syntax classification) stay the only ones.
use std::borrow::Cow;

use super::parse::Read;

/// Deeper nesting than this is left to serde (which reads any depth in a skipped value).
const MAX_DEPTH: usize = 64;

struct Scanner<'a> {
    line: &'a str,
    s: &'a [u8],
    i: usize,
}

/// The bytes of `w` (little-endian) that are `"`, `\` or a control character (below 0x20), as
/// their high bits; the lowest set bit is exact (the classic has-zero-byte test: its false
/// positives are only above a true one).
#[inline]
fn specials(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    below(w ^ (ONES * b'"' as u64), 1) | below(w ^ (ONES * b'\\' as u64), 1) | below(w, 0x20)
}

/// From `i`, past the bytes of a string that are neither `"`, `\` nor a control character, 8
/// at a time (stopping at the first such byte, or where fewer than 8 bytes are left).
#[inline]
fn skip_plain_swar(s: &[u8], mut i: usize) -> usize {
    while let Some(w) = s.get(i..i + 8) {
        let found = specials(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i
}

/// [`skip_plain_swar`] 16 bytes at a time with SSE2 (part of every x86_64 target), 8 at a time
/// where fewer are left.
#[cfg(target_arch = "x86_64")]
#[inline]
fn skip_plain(s: &[u8], mut i: usize) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64 target; each load reads 16 bytes inside `s`
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let control = _mm_set1_epi8(0x1F);
        while i + 16 <= s.len() {
            let w = _mm_loadu_si128(s.as_ptr().add(i).cast::<__m128i>());
            // a control byte is one its unsigned minimum with 0x1F leaves unchanged
            let found = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(w, quote), _mm_cmpeq_epi8(w, backslash)),
                _mm_cmpeq_epi8(_mm_min_epu8(w, control), w),
            );
            let mask = _mm_movemask_epi8(found) as u32;
            if mask != 0 {
                return i + mask.trailing_zeros() as usize;
            }
            i += 16;
        }
    }
    skip_plain_swar(s, i)
}

#[cfg(not(target_arch = "x86_64"))]
use skip_plain_swar as skip_plain;

impl<'a> Scanner<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    #[inline]
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.i += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.s[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// A string at `i` (its opening quote); the text between the quotes, and whether it has
    /// escapes (all valid, none a surrogate).
    fn string(&mut self) -> Option<(&'a str, bool)> {
        self.eat(b'"')?;
        let (s, start) = (self.s, self.i);
        let mut i = start;
        let mut escaped = false;
        loop {
            i = skip_plain(s, i);
            match *s.get(i)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    match *s.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'u' => {
                            let hex = s.get(i + 2..i + 6)?;
                            let mut c = 0u32;
                            for &h in hex {
                                c = c * 16 + (h as char).to_digit(16)?;
                            }
                            if (0xD800..=0xDFFF).contains(&c) {
                                return None; // serde's rules for surrogates depend on the reading
                            }
                            i += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1F => return None,
                _ => i += 1,
            }
        }
        self.i = i + 1;
        // both ends are ASCII quotes: character boundaries of the line
        Some((self.line.get(start..i)?, escaped))
    }

    /// `-?(0|[1-9][0-9]*)`: the digits read, and whether a `-` came first.
    fn integer(&mut self) -> Option<(&'a [u8], bool)> {
        let minus = self.eat(b'-').is_some();
        let start = self.i;
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                while let Some(b'0'..=b'9') = self.peek() {
                    self.i += 1;
                }
            }
            _ => return None,
        }
        Some((&self.s[start..self.i], minus))
    }

    /// A JSON number (the grammar's, any size).
    fn number(&mut self) -> Option<()> {
        self.integer()?;
        if self.eat(b'.').is_some() {
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.digits()?;
        }
        Some(())
    }

    fn digits(&mut self) -> Option<()> {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        (self.i > start).then_some(())
    }

    /// A plain unsigned integer that fits `u64` (what serde reads as `u64` without a question).
    fn unsigned(&mut self) -> Option<u64> {
        let (digits, minus) = self.integer()?;
        if minus || matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let digit = |d: &u8| u64::from(d - b'0');
        if digits.len() < 20 {
            // 19 digits always fit: no overflow check per digit
            return Some(digits.iter().fold(0, |n, d| n * 10 + digit(d)));
        }
        digits
            .iter()
            .try_fold(0u64, |n, d| n.checked_mul(10)?.checked_add(digit(d)))
    }

    /// A plain integer that fits `i64`.
    fn signed(&mut self) -> Option<()> {
        let (digits, minus) = self.integer()?;
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) || digits.len() > 18 {
            return None; // 18 digits always fit; longer ones are left to serde
        }
        // serde reads `-0` as a float, which is not an `i64`
        (!minus || digits != b"0").then_some(())
    }

    /// Skip one value, checking it is valid JSON; its text (without the blanks around it).
    fn value(&mut self) -> Option<&'a str> {
        let start = self.i;
        let mut depth = 0usize;
        // whether the innermost open container is an object (bit per level, deepest last)
        let mut objects: u64 = 0;
        loop {
            // one value
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    let object = self.peek() == Some(b'{');
                    self.i += 1;
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return None;
                    }
                    objects = (objects << 1) | u64::from(object);
                    self.ws();
                    let close = if object { b'}' } else { b']' };
                    if self.eat(close).is_none() {
                        if object {
                            self.key_colon()?;
                        }
                        continue; // the first member's value
                    }
                    depth -= 1;
                    objects >>= 1;
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return None,
            }
            // after a value: the next member, or the ends of the containers it closes
            loop {
                if depth == 0 {
                    // both ends are ASCII: character boundaries of the line
                    return self.line.get(start..self.i);
                }
                let object = objects & 1 == 1;
                self.ws();
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        self.ws();
                        if object {
                            self.key_colon()?;
                        }
                        break;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return None,
                }
                self.i += 1;
                depth -= 1;
                objects >>= 1;
            }
        }
    }

    /// A key and its colon, and the blanks up to the value.
    fn key_colon(&mut self) -> Option<()> {
        self.string()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(())
    }
}

/// The envelope of `line` as serde's struct reads it, when the line is certainly read by it
/// without error (`None`: ask serde).
pub(super) fn envelope(line: &str) -> Option<Read<'_>> {
    let mut p = Scanner {
        line,
        s: line.as_bytes(),
        i: 0,
    };
    p.ws();
    p.eat(b'{')?;
    let mut kind: Option<&str> = None;
    let (mut seq, mut time): (Option<Option<u64>>, bool) = (None, false);
    let mut data: Option<Option<&str>> = None;
    let mut op: Option<Option<&str>> = None;
    let mut sources: Option<Option<Vec<u64>>> = None;
    let mut ignorable: Option<bool> = None;
    let mut tokens = false;
    p.ws();
    if p.peek() == Some(b'}') {
        return None; // no `type`
    }
    loop {
        let (key, escaped) = p.string()?;
        if escaped {
            return None;
        }
        p.ws();
        p.eat(b':')?;
        p.ws();
        let null = p.s[p.i..].starts_with(b"null");
        match key {
            "type" if kind.is_none() => {
                let (text, escaped) = p.string()?;
                if escaped {
                    return None;
                }
                kind = Some(text);
            }
            "seq" if seq.is_none() => {
                seq = Some(match null {
                    true => p.literal(b"null").map(|()| None)?,
                    false => Some(p.unsigned()?),
                });
            }
            "time" if !time => {
                match null {
                    true => p.literal(b"null")?,
                    false => p.signed()?,
                }
                time = true;
            }
            "data" if data.is_none() => {
                let v = p.value()?;
                data = Some((v != "null").then_some(v));
            }
            "surfaceOp" if op.is_none() => {
                let v = p.value()?;
                op = Some((v != "null").then_some(v));
            }
            "sourceEventSeqs" if sources.is_none() => {
                sources = Some(match null {
                    true => p.literal(b"null").map(|()| None)?,
                    false => Some(p.seqs()?),
                });
            }
            "ignorable" if ignorable.is_none() => {
                ignorable = Some(match p.peek()? {
                    b't' => p.literal(b"true").map(|()| true)?,
                    _ => p.literal(b"false").map(|()| false)?,
                });
            }
            "type" | "seq" | "time" | "data" | "surfaceOp" | "sourceEventSeqs" | "ignorable" => {
                return None; // a duplicate: serde's error
            }
            other => {
                tokens |= other == "tokens";
                p.value()?;
            }
        }
        p.ws();
        match p.peek()? {
            b',' => {
                p.i += 1;
                p.ws();
            }
            b'}' => {
                p.i += 1;
                break;
            }
            _ => return None,
        }
    }
    p.ws();
    if p.i != p.s.len() {
        return None;
    }
    Some(Read {
        kind: Cow::Borrowed(kind?),
        seq: seq.flatten(),
        data: data.flatten(),
        surface_op: op.flatten(),
        sources: sources.flatten(),
        ignorable: ignorable.unwrap_or(false),
        tokens,
    })
}

impl Scanner<'_> {
    /// `[u64, …]`.
    fn seqs(&mut self) -> Option<Vec<u64>> {
        self.eat(b'[')?;
        let mut out = Vec::new();
        self.ws();
        if self.eat(b']').is_some() {
            return Some(out);
        }
        loop {
            self.ws();
            out.push(self.unsigned()?);
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(out);
                }
                _ => return None,
            }
        }
    }
}

/// Check the scanner against serde on `line` (for the tests and the `reader` fuzz target):
/// when the scanner takes it, serde reads it without error and the same, spans included.
/// Whether the scanner took it.
pub(crate) fn check(line: &str) -> bool {
    let ours = envelope(line);
    if let Some(ours) = &ours {
        let theirs = super::parse::serde_envelope(line)
            .unwrap_or_else(|e| panic!("the scanner took a line serde refuses: {line:?}: {e:?}"));
        assert_eq!(ours, &theirs, "{line:?}");
        // the same bytes of the line, not equal texts elsewhere
        assert_eq!(ours.data.map(str::as_ptr), theirs.data.map(str::as_ptr));
    }
    ours.is_some()
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
