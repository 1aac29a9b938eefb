//! Load repair of one assistant message with many calls, half of them unanswered (issue #26:
//! 6,000 such calls took 24 s while the repair was quadratic in the calls of a message).
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use foldlog_core::{reader, repair};
use serde_json::json;
use std::hint::black_box;

/// A log whose assistant message holds `n` calls; only the even ones have a result, and a user
/// message follows (so placeholders are inserted before it, not appended).
fn many_calls(n: usize) -> Vec<u8> {
    let mut lines = vec![
        json!({"type":"session","version":1,"id":"s","createdAt":0,"parent":null,"meta":{}}),
        json!({"type":"user/message","seq":0,"time":0,"data":{"role":"user","content":"go"},
               "surfaceOp":"append"}),
    ];
    let calls: Vec<_> = (0..n)
        .map(|k| {
            json!({"id": format!("c{k}"), "type": "function",
                        "function": {"name": "ls", "arguments": "{}"}})
        })
        .collect();
    lines.push(
        json!({"type":"assistant/message","seq":1,"time":0,"data":{"turn":1,"step":1,
        "message":{"role":"assistant","content":"","tool_calls":calls}},"surfaceOp":"append"}),
    );
    for k in (0..n).step_by(2) {
        let seq = lines.len() - 1;
        lines.push(
            json!({"type":"tool/result","seq":seq,"time":0,"data":{"turn":1,"step":1,
            "message":{"role":"tool","toolCallId":format!("c{k}"),"toolName":"ls",
                       "content":"out","isError":false}},"surfaceOp":"append"}),
        );
    }
    let seq = lines.len() - 1;
    lines.push(json!({"type":"user/message","seq":seq,"time":0,
        "data":{"role":"user","content":"next"},"surfaceOp":"append"}));
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("repair");
    group.sample_size(10);
    for n in [2_000usize, 6_000, 20_000] {
        let bytes = many_calls(n);
        group.bench_with_input(
            BenchmarkId::new("half_unanswered", n),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    let mut log = reader::read(black_box(bytes)).unwrap().log;
                    let report = repair::normalize_on_load(&mut log, 0).unwrap();
                    assert_eq!(report.results_added, n / 2);
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
