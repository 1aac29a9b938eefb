#!/usr/bin/env bash
# `make run`: a real agent session. DeepSeek when DEEPSEEK_API_KEY is set; otherwise, offline, the
# local Gemma 3 270M run in process by llama.cpp (installed into .venv on first use). The agent gets the built-in
# file tools rooted in a small demo workspace, streams its work to the terminal, and ends with the
# answer, token usage and the path of the session log.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${VENV:-.venv}/bin/python"
provider=local
if [ -n "${DEEPSEEK_API_KEY:-}" ]; then
    provider=deepseek
else
    bash scripts/install-local.sh
fi
workspace="${FOLDLOG_DEMO_WORKSPACE:-$(mktemp -d -t foldlog-demo-XXXXXX)}"
mkdir -p "$workspace"
printf 'foldlog demo\nThe secret word is: harbour\n' > "$workspace/notes.txt"
printf 'print("hello from foldlog")\n' > "$workspace/hello.py"
export FOLDLOG_HOME="${FOLDLOG_HOME:-$PWD/.foldlog}"
# the model chooses the tool itself; FOLDLOG_DEMO_FORCE_TOOL=read_file makes its first step call it
force=(); [ -n "${FOLDLOG_DEMO_FORCE_TOOL:-}" ] && force=(--force-tool "$FOLDLOG_DEMO_FORCE_TOOL")
exec "$PY" -m foldlog run --provider "$provider" --workspace "$workspace" --max-steps 4 "${force[@]}" \
    "${1:-Read the file notes.txt (path: notes.txt) and tell me the secret word written in it.}"
