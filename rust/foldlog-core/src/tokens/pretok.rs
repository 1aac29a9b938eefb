//! Pre-tokenization: cutting text into the pieces that BPE encodes one by one.
//!
//! Every pattern used here (DeepSeek's three `Split` regexes, tiktoken's cl100k and o200k
//! patterns) is run by the `regex` crate (a lazy DFA, no backtracking). The one construct it
//! lacks is the look-ahead in the shared tail `\s+(?!\S)|\s+` (`…|\s` in cl100k). We drop the
//! look-ahead (`\s+` alone) and fix the match up afterwards, which is exactly equivalent:
//!
//! A backtracking engine reaches that tail only for a whitespace run without `\r`/`\n`
//! (`\s*[\r\n]+` comes first) that no earlier branch claims. Over a run of k whitespace
//! characters followed by a non-space, `\s+(?!\S)` gives back one character (k-1 when k ≥ 2)
//! and `\s+` / `\s` then take the single last one (k = 1); at the end of the haystack it takes
//! all k. So: a whitespace-only match with no `\r`/`\n` that does not end the haystack and has
//! two or more characters loses its last character, and the search resumes there.
//!
//! Possessive quantifiers in tiktoken's cl100k pattern (`?+`, `++`, `*+`, `{1,3}+`) never
//! change a match there (each is followed by something its class cannot match), so they are
//! written as plain greedy ones.

use regex::Regex;

/// tiktoken's cl100k_base pattern, look-ahead tail rewritten (see the module docs).
pub(crate) const CL100K_PATTERN: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"|\s+$|\s*[\r\n]|\s+"
);

/// tiktoken's o200k_base pattern, look-ahead tail rewritten (see the module docs).
pub(crate) const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+"
);

/// The look-ahead tails we know how to rewrite, and what they become.
const LOOKAHEAD_TAILS: [(&str, &str); 2] =
    [(r"|\s+(?!\S)|\s+", r"|\s+"), (r"|\s+(?!\S)|\s", r"|\s+")];

/// Rewrites a pattern whose only look-around is the `\s+(?!\S)` tail; `None` for any other
/// look-around (which this module cannot run exactly).
pub(crate) fn rewrite_lookahead(pattern: &str) -> Option<String> {
    let mut out = pattern.to_owned();
    for (tail, replacement) in LOOKAHEAD_TAILS {
        if let Some(head) = pattern.strip_suffix(tail) {
            out = format!("{head}{replacement}");
            break;
        }
    }
    if out.contains("(?=") || out.contains("(?!") || out.contains("(?<") {
        return None;
    }
    Some(out)
}

/// True for a match that came from the rewritten `\s+` tail and must give back its last char.
#[inline]
fn gives_back_last(m: &str) -> Option<usize> {
    let mut chars = m.char_indices();
    let (_, first) = chars.next()?;
    if !first.is_whitespace() || first == '\r' || first == '\n' {
        return None;
    }
    let mut last = None;
    for (i, c) in chars {
        if !c.is_whitespace() || c == '\r' || c == '\n' {
            return None;
        }
        last = Some(i);
    }
    last // None for a single character: nothing to give back
}

/// Runs `re` over `hay` the way a backtracking engine runs the original pattern, calling
/// `on_piece(start, end, matched)` for each match and, when `keep_gaps`, for each unmatched
/// stretch between matches (Hugging Face `Split` with `Isolated` behaviour keeps those).
#[inline]
pub(crate) fn split(
    re: &Regex,
    hay: &str,
    keep_gaps: bool,
    mut on_piece: impl FnMut(usize, usize, bool),
) {
    let mut pos = 0;
    while pos < hay.len() {
        let Some(m) = re.find_at(hay, pos) else { break };
        let (start, mut end) = (m.start(), m.end());
        // `char::is_whitespace` is Unicode White_Space, the same set as `\s` in the regex crate
        if end < hay.len() {
            if let Some(cut) = gives_back_last(m.as_str()) {
                end = start + cut;
            }
        }
        if keep_gaps && start > pos {
            on_piece(pos, start, false);
        }
        on_piece(start, end, true);
        pos = end;
    }
    if keep_gaps && pos < hay.len() {
        on_piece(pos, hay.len(), false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(re: &Regex, s: &str) -> Vec<String> {
        let mut v = Vec::new();
        split(re, s, true, |a, b, _| v.push(s[a..b].to_owned()));
        v
    }

    #[test]
    fn lookahead_tail_gives_back_one_space() {
        let re = Regex::new(&rewrite_lookahead(r"[a-z]+| ?[a-z]+|\s+(?!\S)|\s+").unwrap()).unwrap();
        assert_eq!(pieces(&re, "a   b"), ["a", "  ", " b"]);
        assert_eq!(pieces(&re, "a \t"), ["a", " \t"]);
        assert_eq!(pieces(&re, "\t b"), ["\t", " b"]);
    }

    #[test]
    fn other_lookarounds_are_refused() {
        assert!(rewrite_lookahead(r"a(?=b)").is_none());
        assert!(rewrite_lookahead(r"\s+(?!\S)|\s+|x").is_none());
    }
}
