# The two commands of the README: `make demo` (the main job) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.arignote-installed

.PHONY: demo test lint setup clean bench

$(STAMP): pyproject.toml scripts/setup-venv.sh
	bash scripts/setup-venv.sh $(VENV)
	@touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(PY) -m arignote demo

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks examples

bench: $(STAMP)
	$(PY) -m arignote bench --quick --out bench-out

clean:
	rm -rf $(VENV) build dist src/*.egg-info
