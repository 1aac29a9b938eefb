//! A big log is read the same from any thread: from a caller outside the thread pool the log's
//! rules run while later chunks are still being parsed; on a pool thread (a load inside a
//! parallel job) every chunk is parsed first. Same events, same memory, same errors at the same
//! lines.
use foldlog_core::{reader, Error};

const HEADER: &str =
    r#"{"type":"session","version":1,"id":"big","createdAt":1,"parent":null,"meta":{}}"#;

/// A log of `events` user messages (~230 bytes a line: several of the reader's chunks).
fn log(events: usize) -> Vec<String> {
    let text = "y".repeat(180);
    std::iter::once(HEADER.to_string())
        .chain((0..events).map(|seq| {
            format!(
                r#"{{"type":"user/message","seq":{seq},"time":1,"data":{{"role":"user","content":"{seq} {text}"}},"surfaceOp":"append"}}"#
            )
        }))
        .collect()
}

fn join(lines: &[String]) -> Vec<u8> {
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}

/// What reading `bytes` gives, compared across threads: the events' lines, the valid length and
/// the bytes the log holds, or the error.
fn outcome(bytes: &[u8]) -> Result<(Vec<String>, usize, usize), String> {
    match reader::read(bytes) {
        Ok(l) => Ok((
            l.log
                .events()
                .iter()
                .map(|e| e.line().to_string())
                .collect(),
            l.valid_len,
            l.log.heap_bytes(),
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// `outcome` on a thread of a pool of two.
fn on_pool(bytes: &[u8]) -> Result<(Vec<String>, usize, usize), String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool");
    pool.install(|| {
        assert!(rayon::current_thread_index().is_some());
        outcome(bytes)
    })
}

#[test]
fn a_big_log_reads_the_same_on_the_pool_and_off_it() {
    let lines = log(30_000);
    let bytes = join(&lines);
    assert!(bytes.len() > 4 * 256 * 1024, "several chunks");
    let off = outcome(&bytes).expect("a valid log");
    assert_eq!(off.0.len(), 30_000);
    assert_eq!(off.0[..], lines[1..]);
    assert_eq!(Ok(off), on_pool(&bytes));
}

#[test]
fn damage_in_a_late_chunk_is_reported_at_its_line_on_the_pool_and_off_it() {
    let mut lines = log(30_000);
    let k = 29_000;
    lines[k] = lines[k].replace("\"seq\":", "\"seq\":1");
    let bytes = join(&lines);
    let off = outcome(&bytes).expect_err("a seq gap is refused");
    assert!(
        off.contains(&format!("line {}", k + 1)),
        "the error names line {}: {off}",
        k + 1
    );
    assert_eq!(Err(off), on_pool(&bytes));
    assert!(matches!(
        reader::read(&bytes),
        Err(Error::Corrupt { line, .. }) if line == k + 1
    ));
}

#[test]
fn a_surface_event_whose_data_is_not_an_object_is_refused_at_its_line() {
    // whether `data` is an object is noted when the line is parsed, in parallel chunks
    let mut lines = log(30_000);
    let k = 25_000;
    let seq = k - 1;
    lines[k] = format!(
        r#"{{"type":"user/message","seq":{seq},"time":1,"data":["not", "an object"],"surfaceOp":"append"}}"#
    );
    match reader::read(&join(&lines)) {
        Err(Error::Corrupt { line, message }) => {
            assert_eq!(line, k + 1);
            assert!(message.contains("data must be an object"), "{message}");
        }
        other => panic!("expected corruption at line {}, got {other:?}", k + 1),
    }
}
