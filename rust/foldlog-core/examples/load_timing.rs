//! Time loading and deriving a log file: `cargo run --release --example load_timing -- FILE`.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: load_timing FILE");
    let bytes = std::fs::read(&path).expect("readable file");
    let t = Instant::now();
    let mut loaded = foldlog_core::reader::read(&bytes).expect("valid log");
    let read = t.elapsed();
    let n = loaded.log.messages().len();
    let derive = t.elapsed() - read;
    let fixes = foldlog_core::repair::plan(&mut loaded.log).len();
    let total = t.elapsed();
    let mb = bytes.len() as f64 / 1e6;
    println!(
        "{} events, {n} messages, {fixes} fixes, {mb:.1} MB: read {read:?} ({:.0} MB/s), derive {derive:?}, total {total:?}",
        loaded.log.len(),
        mb / read.as_secs_f64()
    );
}
