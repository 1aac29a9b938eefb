//! A log big enough to be parsed in parallel chunks (issue 17.2) is validated exactly as a small
//! one: damage anywhere — at the start, inside any chunk, near the end — is reported with the
//! error and the line number the log cut two lines after the damage gets (other chunk bounds;
//! a single chunk when the damage is near the start).
use foldlog_core::{reader, Error};

/// Bigger than 4 × the reader's smallest chunk (256 KiB): whatever the number of threads, the
/// reader cuts it into at least four chunks (it aims at 4 per thread).
const MIN_BYTES: usize = 4 * 256 * 1024 + 1;

const HEADER: &str =
    r#"{"type":"session","version":1,"id":"big","createdAt":1,"parent":null,"meta":{}}"#;

/// The event line with `seq` (file line `seq + 2`: the header is line 1).
fn event(seq: usize) -> String {
    let text = "x".repeat(180);
    format!(
        r#"{{"type":"user/message","seq":{seq},"time":{},"data":{{"role":"user","content":"message {seq} {text}"}},"surfaceOp":"append"}}"#,
        1000 + seq
    )
}

fn lines(events: usize) -> Vec<String> {
    std::iter::once(HEADER.to_string())
        .chain((0..events).map(event))
        .collect()
}

fn join(lines: &[String]) -> String {
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// The damages: each turns line `k` (0-based) of `lines` into a bad one. One signature for all
/// of them, and the seq gap removes a line: a `Vec` where clippy would take a slice.
type Damage = fn(&mut Vec<String>, usize);

#[allow(clippy::ptr_arg)]
fn broken_json(lines: &mut Vec<String>, k: usize) {
    lines[k] = format!("{}}}{{", &lines[k][..40]);
}

fn seq_gap(lines: &mut Vec<String>, k: usize) {
    lines.remove(k); // line k now holds the event after the one removed
}

#[allow(clippy::ptr_arg)]
fn unknown_surface_op(lines: &mut Vec<String>, k: usize) {
    lines[k] = lines[k].replace(r#""surfaceOp":"append""#, r#""surfaceOp":"bogus""#);
}

#[allow(clippy::ptr_arg)]
fn later_source(lines: &mut Vec<String>, k: usize) {
    let later = format!(r#""surfaceOp":"append","sourceEventSeqs":[{}]"#, k + 5);
    lines[k] = lines[k].replace(r#""surfaceOp":"append""#, &later);
}

const DAMAGES: [(&str, Damage); 4] = [
    ("broken JSON", broken_json),
    ("seq gap", seq_gap),
    ("unknown surface op", unknown_surface_op),
    ("a source that is not an earlier event", later_source),
];

/// `(line, message)` of the error loading `text`; panics when it loads.
fn corrupt_at(text: &str) -> (usize, String) {
    match reader::read(text.as_bytes()) {
        Err(Error::Corrupt { line, message }) => (line, message),
        Err(other) => panic!("expected corruption, got {other}"),
        Ok(_) => panic!("a damaged log loaded"),
    }
}

#[test]
fn damage_in_any_chunk_of_a_big_log_is_reported_at_its_line() {
    let events = 20_000;
    let big = lines(events);
    assert!(
        join(&big).len() >= MIN_BYTES,
        "the log is parsed in several chunks"
    );
    assert!(reader::read(join(&big).as_bytes()).is_ok());
    // the start, inside each eighth of the file (one per chunk on 2 threads, several per chunk
    // on one) and the line before the last (the last one, broken, is a torn tail)
    let mut places: Vec<usize> = vec![1, 2];
    places.extend((1..8).map(|i| i * events / 8 + 3 * i));
    places.push(events - 1);
    for (what, damage) in DAMAGES {
        for &k in &places {
            // the same damage at the same line of the log cut two lines after it
            let mut small = big[..(k + 3).min(big.len())].to_vec();
            damage(&mut small, k);
            let (small_line, small_message) = corrupt_at(&join(&small));
            let mut damaged = big.clone();
            damage(&mut damaged, k);
            let (line, message) = corrupt_at(&join(&damaged));
            assert_eq!(
                line,
                k + 1,
                "{what} at line {}: reported at line {line}",
                k + 1
            );
            assert_eq!(
                (line, &message),
                (small_line, &small_message),
                "{what} at line {}: the error differs from the cut log's",
                k + 1
            );
        }
    }
}

#[test]
fn a_torn_last_line_of_a_big_log_is_cut_as_in_a_small_one() {
    let mut big = lines(20_000);
    let last = big.len() - 1;
    big[last].truncate(30);
    let text = join(&big);
    let loaded = reader::read(text.as_bytes()).expect("a torn tail is not corruption");
    let torn = loaded.torn.expect("the torn tail is reported");
    assert_eq!(torn.line, last + 1);
    assert_eq!(loaded.log.len(), 20_000 - 1);
    assert_eq!(loaded.valid_len, torn.offset);
    assert_eq!(
        &text.as_bytes()[..torn.offset],
        join(&big[..last]).as_bytes()
    );
}
