# Newcomer commands: `make demo` and `make test` (each creates the environment if missing).
VENV   ?= .venv
PYTHON ?= python3
UV      = $(PYTHON) -m uv
BIN     = $(VENV)/bin

.PHONY: setup demo test app bench browser clean lock

$(VENV)/.installed: pyproject.toml uv.lock
	@$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	$(UV) sync --frozen --extra test
	@touch $@

setup: $(VENV)/.installed

demo: setup
	$(BIN)/workbench demo --out runs/demo

browser:
	@sh scripts/ensure_chromium.sh

test: setup browser
	$(BIN)/python -m pytest

app: setup
	$(BIN)/workbench app

bench: setup
	$(BIN)/python bench/bench_pipeline.py

lock:
	$(UV) lock

clean:
	rm -rf $(VENV) runs .workbench .pytest_cache
