# The two commands of the README: `make demo` (the main job) and `make test`.
# `make demo` installs arignote's core only (torch, numpy, psutil, rich, nvidia-ml-py: the demo's
# digits ship inside the package); `make test`/`lint`/`bench` add the `dev` extra.
VENV ?= .venv
PY := $(VENV)/bin/python
CORE := $(VENV)/.arignote-core
DEV := $(VENV)/.arignote-dev

.PHONY: demo test lint setup clean bench

$(CORE): pyproject.toml scripts/setup-venv.sh
	bash scripts/setup-venv.sh $(VENV) ""
	@touch $(CORE)

$(DEV): pyproject.toml scripts/setup-venv.sh
	bash scripts/setup-venv.sh $(VENV) dev
	@touch $(CORE) $(DEV)

setup: $(DEV)

demo: $(CORE)
	$(PY) -m arignote demo

test: $(DEV)
	$(PY) -m pytest

lint: $(DEV)
	$(PY) -m ruff check src tests benchmarks examples

bench: $(DEV)
	$(PY) -m arignote bench --quick --out bench-out

clean:
	rm -rf $(VENV) build dist src/*.egg-info
