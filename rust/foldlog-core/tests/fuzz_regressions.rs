//! Replays the saved fuzz inputs (`fuzz/regressions/<target>/`) through the fuzz targets' own
//! checks (`foldlog_core::fuzzing`), so every bug the fuzzers found stays fixed under plain
//! `cargo test`.
use std::fs;
use std::path::PathBuf;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no saved inputs in {}", dir.display());
    for path in files {
        let data = fs::read(&path).expect("readable input");
        // name the input when its check panics
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{target}: {} fails again", path.display());
    }
}

#[test]
fn reader_inputs() {
    replay("reader", foldlog_core::fuzzing::reader);
}

#[test]
fn load_normalizer_inputs() {
    replay("load_normalizer", foldlog_core::fuzzing::load_normalizer);
}

#[test]
fn json_close_inputs() {
    replay("json_close", foldlog_core::fuzzing::json_close);
}

#[test]
fn planner_inputs() {
    replay("planner", foldlog_core::fuzzing::planner);
}

#[test]
fn message_inputs() {
    replay("message", foldlog_core::fuzzing::message);
}
