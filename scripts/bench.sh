#!/usr/bin/env bash
# Run every benchmark module present on the release build, then write docs/benchmarks.md.
# Called by `make bench` (which first builds the release extension). Results (pytest-benchmark
# JSON, one file per module) go to target/bench/; logs built from the corpus are cached outside
# the repository (FOLDLOG_BENCH_CACHE, default <tmp>/foldlog-bench-cache).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${BENCH_OUT:-target/bench}
export FOLDLOG_SHARED=${FOLDLOG_SHARED:-$(cd .. && pwd)/shared}
mkdir -p "$OUT"

# B1 first (it builds the cached 100 MB log), then the others; a module that fails is reported
# and the run goes on, so the report still shows every row. BENCH_MODULES="bench_x bench_y"
# re-runs only those (their old results are replaced, the others' kept) and rewrites the report.
all_modules=(bench_load bench_resume bench_step bench_tokens bench_plan bench_loop bench_import bench_concurrency bench_volume bench_store bench_local bench_batch bench_compaction)
if [ -n "${BENCH_MODULES:-}" ]; then
    read -r -a modules <<< "$BENCH_MODULES"
    for m in "${modules[@]}"; do rm -f "$OUT/$m.json"; done
else
    modules=("${all_modules[@]}")
    rm -f "$OUT"/*.json
fi
failed=()
for m in "${modules[@]}"; do
    f="benches/$m.py"
    [ -f "$f" ] || { echo "== $m: not present, skipped"; continue; }
    echo "== $m"
    if ! timeout "${BENCH_MODULE_TIMEOUT:-900}" "$PY" -m pytest -q -p no:cacheprovider "$f" \
        --benchmark-only --benchmark-json="$OUT/$m.json" --benchmark-columns=min,median,max,rounds; then
        failed+=("$m")
    fi
done
"$PY" benches/report.py --results "$OUT" --out docs/benchmarks.md
if [ ${#failed[@]} -gt 0 ]; then
    echo "modules with failures: ${failed[*]}" >&2
    exit 1
fi
