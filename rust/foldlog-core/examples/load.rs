//! Time the core load path on a log file: read + parse + validate, repair plan, derive, send
//! normalizer + JSON body. `cargo run --release -p foldlog-core --example load -- <file> [rounds]`
use std::time::Instant;

use foldlog_core::{reader, repair, wire};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: load <file.jsonl> [rounds]");
    let rounds: usize = args.next().map_or(3, |r| r.parse().expect("rounds"));
    for _ in 0..rounds {
        let t = Instant::now();
        let bytes = std::fs::read(&path).expect("read");
        let t_read = t.elapsed();
        let mut loaded = reader::read(&bytes).expect("parse");
        let t_parse = t.elapsed();
        let n = loaded.log.messages().len();
        let t_derive = t.elapsed();
        let fixes = repair::plan(&mut loaded.log).len();
        let t_plan = t.elapsed();
        let body =
            serde_json::to_vec(&wire::normalize_for_send(&loaded.log.messages()[..])).expect("json");
        let t_wire = t.elapsed();
        let mb = bytes.len() as f64 / 1e6;
        println!(
            "{mb:.1} MB, {} events, {n} messages, {fixes} fixes: read {:?}, parse {:?}, derive {:?}, \
             plan {:?}, wire {:?} ({} B) — total {:?} = {:.0} MB/s",
            loaded.log.len(),
            t_read,
            t_parse - t_read,
            t_derive - t_parse,
            t_plan - t_derive,
            t_wire - t_plan,
            body.len(),
            t_wire,
            mb / t_wire.as_secs_f64()
        );
    }
}
