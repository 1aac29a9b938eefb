//! Token counts of the surface, kept per event: each event is counted at most once per
//! tokenizer, and the count travels with the event in its line (`"tokens"`) once it is flushed.
use super::events::BySeq;
use super::EventLog;
use crate::tokens::{TokenError, Tokenizer};

/// One event's count, and whether part of it is the estimate of non-text content, in 4 bytes
/// with room for "none" (the cache keeps a slot per event: 8 bytes an event as a struct, issue
/// 31.3): `tokens << 1 | estimated`, plus one. Counts saturate at 2³¹ − 2 (a message that size
/// is over 2 GB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counted(std::num::NonZeroU32);

impl Counted {
    const MAX: u32 = (1 << 31) - 2;

    fn new(tokens: u32, estimated: bool) -> Counted {
        let packed = (tokens.min(Self::MAX) << 1 | u32::from(estimated)) + 1;
        Counted(std::num::NonZeroU32::new(packed).expect("one added"))
    }
    fn tokens(self) -> u32 {
        (self.0.get() - 1) >> 1
    }
    fn estimated(self) -> bool {
        (self.0.get() - 1) & 1 == 1
    }
}

/// Per-tokenizer counts of surface events and the running total of the current surface.
#[derive(Debug, Clone, Default)]
pub(super) struct TokenCache {
    tokenizer: &'static str,
    per_seq: BySeq<Counted>,
    gen: u64,
    counted: usize,
    total: u64,
    estimated: usize,
}

impl TokenCache {
    pub(super) fn heap_bytes(&self) -> usize {
        self.per_seq.heap_bytes()
    }
}

/// The tokens of the surface's messages with one tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SurfaceTokens {
    pub tokens: u64,
    /// How many of the messages hold non-text content whose cost is an estimate
    /// (`docs/tokens.md`, "Non-text content"): 0 means the figure is exact.
    pub estimated_messages: usize,
}

impl SurfaceTokens {
    pub fn exact(&self) -> bool {
        self.estimated_messages == 0
    }
}

impl EventLog {
    /// Exact tokens of the current surface with `tok` (messages only: the request's priming and
    /// tools are the caller's). See [`EventLog::surface_token_total`].
    pub fn surface_tokens(
        &mut self,
        tok: &'static Tokenizer,
    ) -> std::result::Result<u64, TokenError> {
        self.surface_token_total(tok).map(|t| t.tokens)
    }

    /// Tokens of the current surface with `tok`, and how many messages hold an estimate. Each
    /// event is counted at most once per tokenizer: counts come from the envelope cache
    /// (`"tokens"`, `"tokensEstimated"`), else are computed — in parallel for the cold case —
    /// and cached, in memory and, for events not yet persisted, in their line. After appends
    /// only new messages are counted; after a rewrite the total is re-summed from the cache.
    /// A message that cannot be counted is left uncounted (the error is returned after every
    /// other message of the batch is counted and cached), so a later call counts it again.
    pub fn surface_token_total(
        &mut self,
        tok: &'static Tokenizer,
    ) -> std::result::Result<SurfaceTokens, TokenError> {
        let id = tok.id();
        if self.token_cache.as_ref().is_none_or(|c| c.tokenizer != id) {
            self.token_cache = Some(TokenCache {
                tokenizer: id,
                per_seq: BySeq::new(self.events.base()),
                ..TokenCache::default()
            });
        }
        let len = self.derived_len();
        let gen = self.rewrite_version;
        let mut cache = self.token_cache.take().expect("set above");
        if cache.gen != gen || cache.counted > len {
            cache.gen = gen;
            cache.counted = 0;
            cache.total = 0;
            cache.estimated = 0;
        }
        let result = self.count_new(tok, &mut cache);
        let total = SurfaceTokens {
            tokens: cache.total,
            estimated_messages: cache.estimated,
        };
        self.token_cache = Some(cache);
        result.map(|()| total)
    }

    fn count_new(
        &mut self,
        tok: &'static Tokenizer,
        cache: &mut TokenCache,
    ) -> std::result::Result<(), TokenError> {
        use rayon::prelude::*;
        let id = tok.id();
        cache.per_seq.cover(self.events.len());
        let start = cache.counted;
        let seqs: Vec<u64> = self.derived_seqs()[start..].to_vec();
        // known counts first (memory, then the envelope, read in parallel), then the rest in one
        // parallel batch
        let events = &self.events;
        let from_log: Vec<Option<Counted>> = seqs
            .par_iter()
            .map(|&seq| {
                cache.per_seq.get(seq).copied().or_else(|| {
                    events[seq as usize]
                        .cached_count(id)
                        .map(|(tokens, estimated)| Counted::new(tokens, estimated))
                })
            })
            .collect();
        let mut missing: Vec<usize> = Vec::new();
        for (k, (&seq, known)) in seqs.iter().zip(from_log).enumerate() {
            cache.per_seq.set(seq, known);
            if known.is_none() {
                missing.push(k);
            }
        }
        let mut failed = None;
        if !missing.is_empty() {
            // the messages are built for counting only, and dropped
            let counted: Vec<_> = missing
                .par_iter()
                .map(|&k| {
                    let m = super::derive::materialize(events, seqs[k])
                        .expect("a derived seq projects to a message");
                    tok.count_message_detail(&m)
                })
                .collect();
            for (&k, n) in missing.iter().zip(counted) {
                let n = match n {
                    Ok(n) => n,
                    Err(e) => {
                        failed.get_or_insert(e);
                        continue;
                    }
                };
                let counted =
                    Counted::new(u32::try_from(n.tokens).unwrap_or(u32::MAX), n.estimated);
                let seq = seqs[k];
                cache.per_seq.set(seq, Some(counted));
                // kept in the line of an event still to be written, so that it travels with
                // it; not in the line of one read with others from one buffer (a loaded log):
                // that would hold its line twice while active (issue 17.3) — the count stays in
                // memory, and goes into the line when the log is written out (`file_bytes`)
                if seq as usize >= self.flushed {
                    let ev = self.events.get_mut(seq).expect("a derived event is held");
                    if !ev.shares_buffer() {
                        ev.set_cached_count(id, counted.tokens(), counted.estimated());
                    }
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        for &s in &seqs {
            if let Some(c) = cache.per_seq.get(s) {
                cache.total += u64::from(c.tokens());
                cache.estimated += usize::from(c.estimated());
            }
        }
        cache.counted = start + seqs.len();
        Ok(())
    }

    /// The count of each derived message with `tok` (parallel to [`EventLog::derive`]), from
    /// the same per-event cache as [`EventLog::surface_tokens`].
    pub fn surface_token_counts(
        &mut self,
        tok: &'static Tokenizer,
    ) -> std::result::Result<Vec<u32>, TokenError> {
        self.surface_token_total(tok)?;
        let cache = self.token_cache.as_ref().expect("set by surface_tokens");
        Ok(self
            .derived
            .seqs_unchecked(&self.surface)
            .iter()
            .map(|&s| cache.per_seq.get(s).map_or(0, |c| c.tokens()))
            .collect())
    }

    /// The whole log as file bytes (header and events), with the counts kept in memory only
    /// (those of events read from a shared buffer, see `count_new`) written into their lines:
    /// a loaded log that is saved or released keeps what was counted. The lines are made here,
    /// for the bytes only; the events keep theirs.
    pub fn file_bytes(&self) -> Vec<u8> {
        let Some(cache) = self.token_cache.as_ref() else {
            return crate::store::jsonl::file_bytes(self.header(), self.events());
        };
        let id = cache.tokenizer;
        let mut out = crate::store::jsonl::file_bytes(self.header(), &[]);
        for ev in self.events() {
            match cache.per_seq.get(ev.seq).copied() {
                Some(c) if ev.cached_count(id).is_none() => {
                    let mut with_count = ev.clone();
                    with_count.set_cached_count(id, c.tokens(), c.estimated());
                    out.extend_from_slice(with_count.line().as_bytes());
                }
                _ => out.extend_from_slice(ev.line().as_bytes()),
            }
            out.push(b'\n');
        }
        out
    }

    /// How many events hold a count for `tokenizer` in memory (for tests: a resumed session
    /// that recounts nothing has them all from the envelope).
    pub fn cached_token_events(&self) -> usize {
        self.token_cache
            .as_ref()
            .map_or(0, |c| c.per_seq.values().count())
    }
}
