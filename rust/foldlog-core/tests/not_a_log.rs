//! A file whose first line is neither a header nor an event is not a log: it is refused whole
//! (`Error::NotALog`), never read as a log with a torn tail to cut. Only an incomplete last line
//! after a valid first line is a torn tail.
mod common;

use foldlog_core::{reader, Error};

const HEADER: &str =
    r#"{"type":"session","version":1,"id":"s","createdAt":0,"parent":null,"meta":{}}"#;
const EVENT: &str = r#"{"type":"user/message","seq":0,"time":1,"data":{"role":"user","content":"hi"},"surfaceOp":"append"}"#;

/// The refusal of `bytes` by every reading path: its line and message.
fn not_a_log(bytes: &[u8]) -> (usize, String) {
    let stored = reader::read_stored(bytes);
    let plain = reader::read(bytes);
    match (plain, stored) {
        (Err(Error::NotALog { line, message }), Err(again)) => {
            assert_eq!(
                again,
                Error::NotALog {
                    line,
                    message: message.clone()
                }
            );
            (line, message)
        }
        (other, _) => panic!("expected NotALog, got {other:?}"),
    }
}

#[test]
fn a_note_is_refused_naming_its_first_line() {
    for bytes in [
        &b"TODO: call the bank\n"[..],
        b"TODO: call the bank",
        b"TODO: call the bank\nand the landlord\n",
    ] {
        let (line, message) = not_a_log(bytes);
        assert_eq!(line, 1);
        assert!(
            message.contains("line 1 is not a foldlog header or event"),
            "{message}"
        );
        assert!(message.contains("TODO: call the bank"), "{message}");
        let shown = Error::NotALog { line, message }.to_string();
        assert!(
            shown.starts_with("not a foldlog log (left as it is)"),
            "{shown}"
        );
    }
}

#[test]
fn a_lone_torn_line_is_not_a_log() {
    // a torn header, and a torn event of a header-less file: the only line is cut, so nothing
    // shows the file is a log at all
    for text in [&HEADER[..30], &EVENT[..40]] {
        let (line, _) = not_a_log(text.as_bytes());
        assert_eq!(line, 1, "{text}");
        let (line, _) = not_a_log(format!("{text}\n").as_bytes());
        assert_eq!(line, 1, "{text}");
    }
}

#[test]
fn a_header_behind_a_byte_order_mark_is_refused_not_cut() {
    let bytes = [
        b"\xEF\xBB\xBF".as_slice(),
        HEADER.as_bytes(),
        b"\n",
        EVENT.as_bytes(),
        b"\n",
    ]
    .concat();
    let (line, message) = not_a_log(&bytes);
    assert_eq!(line, 1);
    assert!(message.contains("byte order mark"), "{message}");
    let (_, message) = not_a_log(&bytes[..3 + HEADER.len()]);
    assert!(message.contains("byte order mark"), "{message}");
}

#[test]
fn binary_and_foreign_json_are_refused() {
    let (_, message) = not_a_log(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe");
    assert!(message.contains("not UTF-8"), "{message}");
    let (_, message) = not_a_log(b"\x00\x01\x02\xff");
    assert!(message.contains("not UTF-8"), "{message}");
    // valid JSON that is neither a header nor an event (another tool's transcript, a config)
    for text in [
        "{\"name\":\"x\"}\n",
        "[1, 2, 3]\n",
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    ] {
        let (line, message) = not_a_log(text.as_bytes());
        assert_eq!(line, 1);
        assert!(message.contains("foldlog log import"), "{message}");
    }
}

#[test]
fn blank_lines_before_a_note_name_the_notes_line() {
    let (line, message) = not_a_log(b"\n\n  \nnot a log\n");
    assert_eq!(line, 4);
    assert!(message.starts_with("line 4 "), "{message}");
}

#[test]
fn a_header_without_its_newline_is_a_whole_log() {
    let loaded = reader::read(HEADER.as_bytes()).expect("a header alone is a log");
    assert!(loaded.torn.is_none());
    assert!(loaded.log.header().is_some());
    assert_eq!(loaded.valid_len, HEADER.len());
    assert!(
        loaded.missing_newline,
        "a writer adds the newline, cuts nothing"
    );
}

#[test]
fn a_torn_line_after_a_valid_first_line_is_still_a_torn_tail() {
    for first in [HEADER, EVENT] {
        let text = format!("{first}\n{}", &EVENT[..25]);
        let loaded = reader::read(text.as_bytes()).expect("loads");
        let torn = loaded.torn.expect("the torn tail is reported");
        assert_eq!((torn.line, torn.offset), (2, first.len() + 1));
        assert_eq!(loaded.valid_len, first.len() + 1);
    }
    // a note after a valid header is a torn last line too (cut, as before)
    let text = format!("{HEADER}\nTODO\n");
    assert!(reader::read(text.as_bytes()).unwrap().torn.is_some());
}

#[test]
fn an_empty_file_keeps_its_rules() {
    assert!(reader::read(b"").unwrap().log.is_empty());
    assert!(matches!(
        reader::read_stored(b"\n\n"),
        Err(Error::Corrupt { line: 1, .. })
    ));
}

#[test]
fn a_file_is_refused_by_read_file_and_left_as_it_is() {
    let dir = std::env::temp_dir().join(format!("foldlog-not-a-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("notes.jsonl");
    std::fs::write(&path, b"TODO: call the bank\n").unwrap();
    assert!(matches!(
        reader::read_file(&path),
        Err(Error::NotALog { line: 1, .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), b"TODO: call the bank\n");
    std::fs::remove_dir_all(&dir).unwrap();
}
