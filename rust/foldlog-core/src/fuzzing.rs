//! The assertions of the fuzz targets (`fuzz/fuzz_targets/*.rs`), one function per target.
//!
//! They live here, not in the fuzz crate, so that `tests/fuzz_regressions.rs` replays the saved
//! inputs through exactly the same checks under plain `cargo test` (no nightly, no libFuzzer).
//! Each function takes the raw fuzz input and panics when a property breaks; inputs the code
//! under test rightly refuses (an error, a planner validation failure) are not findings.
use serde_json::Value;

use crate::event::validate;
use crate::event::Event;
use crate::log::EventLog;
use crate::plan::{self, KeepPolicy, PlanConfig, PlanMessage, Role};
use crate::reader::{self, Loaded};
use crate::repair::json_close::{close_json, is_valid};
use crate::store::jsonl;
use crate::tokens::chat;
use crate::{repair, wire, Error};

/// The derived messages as plain values (for comparing two logs).
fn derived(log: &mut EventLog) -> Vec<Value> {
    log.messages().iter().map(|m| (**m).clone()).collect()
}

fn event_lines(events: &[Event]) -> Vec<&str> {
    events.iter().map(Event::line).collect()
}

/// `reader`: arbitrary bytes through the JSONL reader. Never panics; when the bytes load, the
/// torn-tail bookkeeping is consistent, the valid prefix alone loads to the same events, the
/// serialised log reads back to the same events, and projection and the send normalizer run.
pub fn reader(data: &[u8]) {
    // the envelope scanner takes a line only when serde reads it, and reads it the same
    for line in data
        .split(|&b| b == b'\n')
        .filter_map(|l| std::str::from_utf8(l).ok())
    {
        crate::event::check_scan(line);
    }
    let Ok(Loaded {
        mut log,
        torn,
        valid_len,
        missing_newline,
    }) = reader::read(data)
    else {
        return; // refused as corrupt / unsupported: that is the contract for damaged input
    };
    assert!(valid_len <= data.len(), "valid_len past the input");
    assert_eq!(
        missing_newline,
        valid_len > 0 && data[valid_len - 1] != b'\n',
        "missing_newline disagrees with the valid prefix"
    );
    match &torn {
        Some(t) => {
            assert!(
                t.offset >= valid_len,
                "torn line starts inside the valid prefix"
            );
            assert_eq!(
                t.offset + t.bytes,
                data.len(),
                "torn tail does not reach the end"
            );
            assert!(t.bytes > 0, "empty torn tail");
        }
        None => assert!(
            data[valid_len..].iter().all(u8::is_ascii_whitespace),
            "untorn input with non-blank bytes after the valid prefix"
        ),
    }
    // what a writer keeps after cutting the tail must load to the same log, untorn
    let prefix = reader::read(&data[..valid_len]).expect("the valid prefix loads");
    assert!(prefix.torn.is_none(), "the valid prefix has a torn tail");
    assert_eq!(
        event_lines(prefix.log.events()),
        event_lines(log.events()),
        "the valid prefix loads to other events"
    );
    // serialising and reading back changes nothing
    let bytes = jsonl::file_bytes(log.header(), log.events());
    let mut back = reader::read(&bytes)
        .expect("a serialised log reads back")
        .log;
    assert!(
        event_lines(back.events()) == event_lines(log.events()),
        "the serialised log reads back to other events"
    );
    assert_eq!(
        derived(&mut back),
        derived(&mut log),
        "round trip changed the derivation"
    );
    check_shapes(&mut log);
    let sent = log.normalized_messages();
    serde_json::to_vec(&sent).expect("wire messages serialise");
}

/// The send plan and the pairing read from the log's message shapes agree with the same rules
/// run over the messages themselves.
fn check_shapes(log: &mut EventLog) {
    let messages = log.messages();
    assert_eq!(
        log.normalized_messages(),
        wire::normalize_for_send(&messages[..]),
        "the send plan over shapes differs from the plan over messages"
    );
    assert_eq!(
        wire::unanswered_calls(&log.history()),
        wire::unanswered_calls(&messages[..]),
        "pairing over shapes differs from pairing over messages"
    );
}

/// `load_normalizer`: the repair pass on whatever the reader accepts. Repairing never fails on
/// a loaded log, a repaired log needs no further repair (also after a write and re-read), the
/// send normalizer fills no placeholder for it (every call has its result), and repair only
/// appends (the original events are untouched).
pub fn load_normalizer(data: &[u8]) {
    let Ok(loaded) = reader::read(data) else {
        return;
    };
    let mut log = loaded.log;
    let before: Vec<String> = log.events().iter().map(|e| e.line().to_string()).collect();
    let report = repair::normalize_on_load(&mut log, 1)
        .unwrap_or_else(|e| panic!("repair failed on a loaded log: {e}"));
    assert_eq!(
        log.len(),
        before.len() + report.events_added,
        "report miscounts added events"
    );
    assert!(
        log.events()[..before.len()]
            .iter()
            .map(Event::line)
            .eq(before.iter().map(String::as_str)),
        "repair rewrote history"
    );
    let again = repair::plan(&mut log);
    assert!(again.is_empty(), "repaired log still needs: {again:?}");
    // the repair pairs as the send normalizer does, so nothing is left for it to fill
    check_shapes(&mut log);
    let unanswered = wire::unanswered_calls(&log.history());
    assert_eq!(
        unanswered,
        0,
        "the send normalizer fills placeholders after repair: {:?}",
        derived(&mut log)
    );
    let bytes = jsonl::file_bytes(log.header(), log.events());
    let mut back = reader::read(&bytes)
        .unwrap_or_else(|e| panic!("repaired log does not read back: {e}"))
        .log;
    assert_eq!(
        derived(&mut back),
        derived(&mut log),
        "re-read changed the derivation"
    );
    let again = repair::plan(&mut back);
    assert!(again.is_empty(), "re-read repaired log needs: {again:?}");
}

/// `message`: the input as JSON — one message, or a list of them — through the write paths.
/// The one rule ([`validate::message`]) decides: `add_message` records exactly what it accepts
/// (one event, whose data also passes the event check `append` applies) and nothing of what it
/// refuses (`InvalidEvent`, log and derivation unchanged); a recorded message derives with its
/// content a string, or — when it holds a non-text block — the blocks as given; every derived
/// message can be counted; the written log reads back to the same derivation; and the same
/// messages as one `replace_messages` batch are recorded all together or not at all.
pub fn message(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let batch: Vec<Value> = match &value {
        Value::Array(items) if items.first().is_some_and(Value::is_object) => items.clone(),
        other => vec![other.clone()],
    };
    let mut log = EventLog::new(None);
    let system = serde_json::json!({"role": "system", "content": "s"});
    log.add_message(&system, 0).expect("a plain system message");
    for m in &batch {
        let verdict = validate::message(m);
        let (len, version, before) = (log.len(), log.rewrite_version(), derived(&mut log));
        match log.add_message(m, 1) {
            Ok(seq) => {
                assert!(
                    verdict.is_ok(),
                    "add_message recorded what validate refuses: {m}"
                );
                assert_eq!(
                    (seq as usize, log.len()),
                    (len, len + 1),
                    "one event per message"
                );
                let ev = &log.events()[len];
                validate::event_data(ev.kind(), &ev.data())
                    .unwrap_or_else(|e| panic!("recorded data fails the append check: {e}"));
                check_derived_content(m, &mut log, len as u64);
            }
            Err(e) => {
                assert!(
                    verdict.is_err(),
                    "add_message refused what validate accepts: {e}"
                );
                assert!(
                    matches!(e, Error::InvalidEvent { .. }),
                    "not InvalidEvent: {e:?}"
                );
                assert!(!e.to_string().is_empty());
                assert_eq!((log.len(), log.rewrite_version()), (len, version));
                assert_eq!(
                    derived(&mut log),
                    before,
                    "a refused message changed the history"
                );
            }
        }
    }
    let estimate = |s: &str| s.chars().count().div_ceil(4);
    for m in &log.messages() {
        chat::count_message_detail(chat::Family::Estimate, &estimate, m)
            .unwrap_or_else(|e| panic!("a derived message cannot be counted: {e}: {m}"));
    }
    let bytes = jsonl::file_bytes(None, log.events());
    let mut back = reader::read(&bytes).expect("a written log reads back").log;
    assert_eq!(
        derived(&mut back),
        derived(&mut log),
        "re-read changed the derivation"
    );
    let all_valid = batch.iter().all(|m| validate::message(m).is_ok());
    let (len, version, before) = (log.len(), log.rewrite_version(), derived(&mut log));
    match log.replace_messages(&batch, 2) {
        Ok(seqs) => {
            assert!(all_valid, "replace recorded a message validate refuses");
            assert_eq!(seqs.len(), batch.len());
            assert_eq!(log.rewrite_version(), version + 1);
        }
        Err(e) => {
            assert!(
                !all_valid || batch.is_empty(),
                "replace refused valid messages: {:?}",
                e
            );
            assert!(e.index < batch.len().max(1));
            assert_eq!((log.len(), log.rewrite_version()), (len, version));
            assert_eq!(
                derived(&mut log),
                before,
                "a refused replace changed the history"
            );
        }
    }
}

/// The derived message of event `seq` (if it derives to one) carries the content as a string,
/// or the recorded list unchanged when that list holds a block that is not text.
fn check_derived_content(message: &Value, log: &mut EventLog, seq: u64) {
    let at = log.derived_seqs().iter().position(|&s| s == seq);
    let Some(at) = at else {
        return; // an assistant message with neither content nor calls derives to nothing
    };
    let derived = log.message(at).expect("a derived message");
    let content = &derived["content"];
    let given = message.get("content").unwrap_or(&Value::Null);
    let textual = crate::project::text_of(given).is_some();
    if textual {
        assert!(
            content.is_string(),
            "text-only content derived as {content}"
        );
    } else {
        assert_eq!(content, given, "non-text content was changed on derivation");
    }
}

/// Checks `close_json(text)` against its contract: no change for empty or valid text, else
/// valid JSON that is either `{}` (hopeless) or a prefix of `text` (cut at its end) followed
/// only by closing material (a quote, ` null`, closers).
fn check_close(text: &str) {
    let out = close_json(text);
    if text.is_empty() || is_valid(text) {
        assert_eq!(out, None, "valid or empty text changed: {text:?}");
        return;
    }
    let out = out.unwrap_or_else(|| panic!("invalid text not closed: {text:?}"));
    assert!(
        is_valid(&out),
        "closed text is not JSON: {text:?} -> {out:?}"
    );
    if out == "{}" {
        return;
    }
    // peel the closing material off the end: what remains must be a prefix of the input
    let mut core = out.trim_end_matches(['}', ']']);
    core = core.strip_suffix(" null").unwrap_or(core);
    core = core.strip_suffix('"').unwrap_or(core);
    assert!(
        text.starts_with(core),
        "closing changed more than the cut end: {text:?} -> {out:?}"
    );
}

/// `json_close`: the input as text (lossy UTF-8), and when it is a valid document, each of its
/// prefixes (a document cut mid-stream, what the closer exists for).
pub fn json_close(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    check_close(&text);
    if is_valid(&text) && text.len() <= 2_048 {
        for (i, _) in text.char_indices().skip(1) {
            check_close(&text[..i]);
        }
    }
}

/// Reads the planner input from bytes: a config, then 4 bytes per message.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from(self.u8()) << 8 | u16::from(self.u8())
    }
}

/// The planner input encoded in `data` (public so tests can show what a saved input means).
pub fn plan_input(data: &[u8]) -> (Vec<PlanMessage>, PlanConfig) {
    let mut b = Bytes(data);
    let flags = b.u8();
    let cfg = PlanConfig {
        // 0 = unknown window; else up to ~6.5M
        context_window: u64::from(b.u16()) * 100,
        tail_tokens: u64::from(b.u16()),
        min_recent_keep: usize::from(b.u8() % 8),
        pinned_user_turn_tokens: u64::from(b.u16()),
        min_fold_tokens: u64::from(b.u16()),
        keep_policy: KeepPolicy {
            errors: flags & 1 != 0,
            user_marked: flags & 2 != 0,
        },
        force: flags & 4 != 0,
        prune_min_bytes: u64::from(b.u8()) * 64,
        fold_target: 0,
    };
    let mut msgs: Vec<PlanMessage> = Vec::new();
    while !b.0.is_empty() {
        let kind = b.u8();
        let tokens = u32::from(b.u16());
        let link = b.u8();
        let role = match kind & 3 {
            0 => Role::System,
            1 => Role::User,
            2 => Role::Assistant,
            _ => Role::Tool,
        };
        let mut m = PlanMessage::new(role, tokens);
        // bit 7 set: only the flags that fit the role (valid input, to reach deep); else raw
        // flags, which validation must refuse where they do not fit
        let fits = |r: Role| kind & 128 == 0 || role == r;
        m.is_digest = kind & 4 != 0 && fits(Role::User);
        m.is_user_marked_keep = kind & 8 != 0 && fits(Role::User);
        m.is_error_result = kind & 16 != 0 && fits(Role::Tool);
        m.is_elided = kind & 32 != 0 && fits(Role::Tool);
        m.bytes = tokens.saturating_mul(4);
        if kind & 64 != 0 {
            // a result's call: the `link`-th assistant message back (mostly valid input)
            let callers: Vec<usize> = (0..msgs.len())
                .rev()
                .filter(|&i| msgs[i].role == Role::Assistant)
                .collect();
            m.caller = match callers.get(usize::from(link)) {
                Some(&c) => Some(c as u32),
                None => Some(u32::from(link)),
            };
        }
        msgs.push(m);
    }
    (msgs, cfg)
}

/// 0 prefix, 1 kept, 2 fold, 3 tail.
fn classes(p: &plan::Plan, n: usize) -> Vec<u8> {
    let mut class = vec![0u8; n];
    for c in class.iter_mut().skip(p.tail_start) {
        *c = 3;
    }
    for &i in &p.kept {
        class[i] = 1;
    }
    for &i in &p.fold {
        class[i] = 2;
    }
    class
}

/// `planner`: the compaction planner over arbitrary histories and configs. Never panics; input
/// it refuses is refused by validation; a plan keeps the invariants of `compaction.md`.
pub fn planner(data: &[u8]) {
    let (msgs, cfg) = plan_input(data);
    let Ok(p) = plan::plan(&msgs, &cfg) else {
        return;
    };
    check_plan(&msgs, &cfg, &p);
}

fn check_plan(msgs: &[PlanMessage], cfg: &PlanConfig, p: &plan::Plan) {
    let n = msgs.len();
    assert!(p.head <= p.tail_start && p.tail_start <= n, "bounds {p:?}");
    assert_eq!(p.head, plan::pinned_prefix_len(msgs, cfg), "pinned prefix");
    let mut region: Vec<usize> = p.kept.iter().chain(&p.fold).copied().collect();
    region.sort_unstable();
    if p.skipped == Some(plan::SkipReason::TooFewMessages) {
        assert!(region.is_empty(), "a too-short plan has a region");
    } else {
        assert_eq!(
            region,
            (p.head..p.tail_start).collect::<Vec<_>>(),
            "kept + fold is not the region"
        );
    }
    assert!(p.kept.windows(2).all(|w| w[0] < w[1]), "kept not ascending");
    assert!(p.fold.windows(2).all(|w| w[0] < w[1]), "fold not ascending");
    let class = classes(p, n);
    let small = cfg.small_user_limit();
    let horizon = msgs.iter().rposition(|m| m.is_digest).map_or(0, |d| d + 1);
    for (i, m) in msgs.iter().enumerate() {
        if let Some(c) = m.caller {
            assert_eq!(
                class[i], class[c as usize],
                "result {i} split from its call {c}"
            );
        }
        if class[i] == 2 {
            assert!(!m.is_digest, "digest {i} folded");
            assert!(
                !(m.role == Role::User && u64::from(m.tokens) <= small),
                "small user message {i} folded"
            );
            if i >= horizon {
                assert!(
                    !(cfg.keep_policy.errors && m.role == Role::Tool && m.is_error_result),
                    "protected error result {i} folded"
                );
                assert!(
                    !(cfg.keep_policy.user_marked && m.role == Role::User && m.is_user_marked_keep),
                    "user-marked message {i} folded"
                );
            }
        }
    }
    if p.tail_start < n {
        assert!(
            msgs[p.tail_start].role != Role::Tool || p.tail_start == p.head,
            "tail opens on a tool result"
        );
        assert!(
            n - p.tail_start >= cfg.min_recent_keep.min(n - p.head),
            "tail below min_recent_keep"
        );
    }
    let fold_tokens: u64 = p.fold.iter().map(|&i| u64::from(msgs[i].tokens)).sum();
    assert_eq!(p.fold_tokens, fold_tokens, "fold_tokens");
    let total: u64 = msgs.iter().map(|m| u64::from(m.tokens)).sum();
    assert_eq!(p.tokens_before, total, "tokens_before");
    assert_eq!(
        p.tokens_after + p.fold_tokens,
        p.tokens_before,
        "tokens_after"
    );
    if p.skipped.is_none() {
        assert!(!p.fold.is_empty(), "a fold plan folds nothing");
        assert!(
            cfg.force || p.fold_tokens >= cfg.min_fold_tokens,
            "uneconomic fold planned"
        );
    }
    for i in plan::prune_candidates(msgs, p, cfg) {
        assert!(
            class[i] == 2 && msgs[i].role == Role::Tool,
            "prune candidate {i} outside the fold"
        );
        assert!(!msgs[i].is_elided, "prune candidate {i} already elided");
    }
    assert_eq!(
        plan::plan(msgs, cfg).as_ref(),
        Ok(p),
        "planning is not deterministic"
    );
}
