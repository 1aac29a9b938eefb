//! Planning a compaction of a 100k-message history (benchmark B4, the Rust side).
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use foldlog_core::plan::{plan, prune_candidates, PlanConfig, PlanMessage, Role};
use std::hint::black_box;

/// A coding-agent shaped history: user turns, assistant replies, calls with 1–3 results,
/// an occasional failing result and an earlier digest.
fn history(n: usize) -> Vec<PlanMessage> {
    let mut msgs = vec![
        PlanMessage::new(Role::System, 900),
        PlanMessage::new(Role::User, 400),
    ];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    while msgs.len() < n {
        let r = next();
        match r % 10 {
            0 => msgs.push(PlanMessage::new(Role::User, (r % 300) as u32 + 5)),
            1 => msgs.push(PlanMessage::new(Role::Assistant, (r % 800) as u32 + 20)),
            2 if r % 97 == 0 => msgs.push(PlanMessage {
                is_digest: true,
                ..PlanMessage::new(Role::User, 1_500)
            }),
            _ => {
                let call = msgs.len();
                msgs.push(PlanMessage::new(Role::Assistant, (r % 120) as u32 + 30));
                for k in 0..(r >> 8) % 3 + 1 {
                    let tokens = ((r >> (12 + k)) % 4_000) as u32 + 10;
                    let mut m = PlanMessage::tool_result(tokens, call);
                    m.bytes = tokens * 4;
                    m.is_error_result = (r >> 20) % 17 == 0;
                    msgs.push(m);
                }
            }
        }
    }
    msgs.truncate(n);
    // never end on a dangling call group cut in half: the planner does not need it, but keep
    // the shape realistic
    msgs
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan");
    for n in [1_000usize, 100_000] {
        let msgs = history(n);
        let cfg = PlanConfig::with_window(1_000_000);
        group.bench_with_input(BenchmarkId::new("plan", n), &msgs, |b, msgs| {
            b.iter(|| plan(black_box(msgs), black_box(&cfg)).unwrap())
        });
        let p = plan(&msgs, &cfg).unwrap();
        group.bench_with_input(BenchmarkId::new("prune_candidates", n), &msgs, |b, msgs| {
            b.iter(|| prune_candidates(black_box(msgs), black_box(&p), &cfg))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
