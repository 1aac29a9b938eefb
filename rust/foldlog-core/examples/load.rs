//! Time the core load path on a log file: read + parse + validate (parallel), derive, repair
//! plan, first request body. `cargo run --release -p foldlog-core --example load -- <file> [rounds]`
use std::time::Instant;

use foldlog_core::body::{WireBody, WireStyle};
use foldlog_core::{reader, repair};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: load <file.jsonl> [rounds]");
    let rounds: usize = args.next().map_or(3, |r| r.parse().expect("rounds"));
    for _ in 0..rounds {
        let t = Instant::now();
        let mut loaded = reader::read_file(path.as_ref()).expect("a valid log");
        let t_read = t.elapsed();
        let n = loaded.log.derived_len();
        let t_derive = t.elapsed();
        let fixes = repair::plan(&mut loaded.log).len();
        let t_plan = t.elapsed();
        if std::env::var_os("NO_BODY").is_some() {
            println!("{} events, ready {:?}", loaded.log.len(), t_plan);
            continue;
        }
        let body = WireBody::new(b"[", loaded.log.wire_messages(WireStyle::Keep), b"]");
        let t_wire = t.elapsed();
        let mb = std::fs::metadata(&path).expect("stat").len() as f64 / 1e6;
        println!(
            "{mb:.1} MB, {} events, {n} messages, {fixes} fixes: read+parse {:?} ({:.0} MB/s), \
             derive {:?}, plan {:?} — ready {:?} = {:.0} MB/s; body {:?} ({} B); heap {:.1} MB",
            loaded.log.len(),
            t_read,
            mb / t_read.as_secs_f64(),
            t_derive - t_read,
            t_plan - t_derive,
            t_plan,
            mb / t_plan.as_secs_f64(),
            t_wire - t_plan,
            body.len(),
            loaded.log.heap_bytes() as f64 / 1e6,
        );
    }
}
