//! The per-event token counts kept in the envelope (`"tokens": {"<tokenizer>": n}`): read from the
//! envelope only, never from a look-alike field inside `data`.

use foldlog_core::Event;

#[test]
fn counts_are_read_from_the_envelope_wherever_the_field_sits() {
    let after = r#"{"type":"user/message","seq":1,"time":0,"data":{"role":"user","content":"hi"},"surfaceOp":"append","tokens":{"deepseek-v4":7,"cl100k":5}}"#;
    let before = r#"{"tokens":{"deepseek-v4":9},"type":"user/message","seq":1,"time":0,"data":{"role":"user","content":"hi"},"surfaceOp":"append"}"#;
    let a = Event::parse(after).unwrap();
    assert_eq!(a.cached_tokens("deepseek-v4"), Some(7));
    assert_eq!(a.cached_tokens("cl100k"), Some(5));
    assert_eq!(a.cached_tokens("o200k"), None);
    assert_eq!(
        Event::parse(before).unwrap().cached_tokens("deepseek-v4"),
        Some(9)
    );
}

#[test]
fn a_tokens_field_inside_data_is_not_a_count() {
    let line = r#"{"type":"user/message","seq":1,"time":0,"data":{"role":"user","content":"x","tokens":{"deepseek-v4":3}},"surfaceOp":"append"}"#;
    assert_eq!(
        Event::parse(line).unwrap().cached_tokens("deepseek-v4"),
        None
    );
    let text = r#"{"type":"user/message","seq":1,"time":0,"data":{"role":"user","content":"\"tokens\":{\"deepseek-v4\":3}"},"surfaceOp":"append"}"#;
    assert_eq!(
        Event::parse(text).unwrap().cached_tokens("deepseek-v4"),
        None
    );
}

#[test]
fn a_count_set_before_writing_reads_back() {
    let line = r#"{"type":"user/message","seq":1,"time":0,"data":{"role":"user","content":"hi","tokens":{"deepseek-v4":1}},"surfaceOp":"append"}"#;
    let mut e = Event::parse(line).unwrap();
    e.set_cached_tokens("deepseek-v4", 42);
    assert_eq!(e.cached_tokens("deepseek-v4"), Some(42));
    // data is untouched, its own look-alike field included
    assert_eq!(
        e.data_json(),
        r#"{"role":"user","content":"hi","tokens":{"deepseek-v4":1}}"#
    );
    assert_eq!(
        Event::parse(e.line()).unwrap().cached_tokens("deepseek-v4"),
        Some(42)
    );
}
