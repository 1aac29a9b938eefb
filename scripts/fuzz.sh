#!/usr/bin/env bash
# Run every fuzz target for FUZZ_SECONDS (default 60) and print, per target, the executions
# and the findings. Rust targets: cargo-fuzz (nightly); Python targets: atheris. Working corpora
# live in fuzz/corpus/<target> (seeded from ../shared/corpus, not in git); a finding is written
# to fuzz/artifacts/<target>/ — minimise it, fix the bug, and save it under fuzz/regressions/.
# Usage: scripts/fuzz.sh [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
PY=${PY:-.venv/bin/python}
RUST_TARGETS=(reader load_normalizer json_close planner message)
PY_TARGETS=(session_load session_add sse)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${RUST_TARGETS[@]}" "${PY_TARGETS[@]}")

command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz missing: cargo install cargo-fuzz" >&2; exit 1; }
"$PY" -c "import atheris" 2>/dev/null || "$PY" -m pip install -q --group fuzz
if [ ! -d fuzz/corpus ]; then
  "$PY" scripts/fuzz_seeds.py fuzz/corpus
fi

summary=()
status=0
for t in "${TARGETS[@]}"; do
  corpus="$PWD/fuzz/corpus/$t"
  artifacts="$PWD/fuzz/artifacts/$t"
  regressions="$PWD/fuzz/regressions/$t"
  mkdir -p "$corpus" "$artifacts"
  before=$(ls "$artifacts" | wc -l)
  log="fuzz/artifacts/$t.log"
  # the saved regressions seed every run too, so a fixed bug's neighbourhood stays explored
  flags=(-max_total_time="$SECONDS_EACH" -artifact_prefix="$artifacts/" -print_final_stats=1)
  # tokens of the log format / of JSON for the mutator to splice in
  case $t in
    reader | load_normalizer | session_load) flags+=(-dict="$PWD/fuzz/dicts/jsonl.dict") ;;
    json_close) flags+=(-dict="$PWD/fuzz/dicts/json.dict") ;;
    message) flags+=(-dict="$PWD/fuzz/dicts/message.dict") ;;
  esac
  if [[ " ${RUST_TARGETS[*]} " == *" $t "* ]]; then
    # the core is safe Rust: panics are the findings, a sanitizer would only slow the runs
    (cd fuzz && cargo +nightly fuzz run -s none -O "$t" "$corpus" "$regressions" -- "${flags[@]}") \
      >"$log" 2>&1
  else
    # the SSE check decodes each input three ways, byte by byte among them: short inputs
    maxlen=4096; [ "$t" = sse ] && maxlen=1024
    "$PY" "fuzz/python/$t.py" -max_len=$maxlen "${flags[@]}" "$corpus" "$regressions" >"$log" 2>&1
  fi
  rc=$?
  runs=$(grep -oE 'Done [0-9]+ runs' "$log" | tail -1 | grep -oE '[0-9]+')
  runs=${runs:-$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')}
  found=$(( $(ls "$artifacts" | wc -l) - before ))
  line=$(printf '%-16s %10s executions in %ss  findings: %s' "$t" "${runs:-?}" "$SECONDS_EACH" "$found")
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    line+="  (see $log, $artifacts/)"
    status=1
  fi
  echo "$line"
  summary+=("$line")
done
echo "--- fuzz summary ($(date -u +%Y-%m-%dT%H:%MZ), ${SECONDS_EACH}s per target)"
printf '%s\n' "${summary[@]}"
exit $status
