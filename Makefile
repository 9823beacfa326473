# The two commands of the README: `make demo` (the main job) and `make test`.
# `make demo` installs arignote's core only (torch, numpy, psutil, rich, nvidia-ml-py: the demo's
# digits ship inside the package); `make test`/`lint`/`bench` add the `dev` extra.
VENV ?= .venv
PY := $(VENV)/bin/python
CORE := $(VENV)/.arignote-core
DEV := $(VENV)/.arignote-dev

.PHONY: demo test lint setup clean bench faults docs

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

# The fault suite in full (every kill point, every fault class; FAULTS.md lists them). `make test`
# runs its fast form (one point per fault).
faults: $(DEV)
	ARIGNOTE_FAULTS=full $(PY) -m pytest -p no:cacheprovider tests/faults tests/test_checkpoint.py \
		tests/test_backup_restore.py tests/test_backup_restore_ddp.py tests/test_parallel_signals.py \
		tests/test_parallel_multiproc.py tests/test_parallel_elastic.py tests/test_oom_fit.py \
		tests/test_oom_parallel.py tests/test_share.py

lint: $(DEV)
	$(PY) -m ruff check src tests benchmarks examples scripts

# The docs site (mkdocs.yml) into build/site, strict: a broken link or API reference fails. The flag
# table of docs/configuration.md is regenerated from the flag registry first. The `docs` extra is part
# of `dev`. Look at it with: python -m http.server -d build/site; `python scripts/docs_browser.py` opens
# it in headless Chromium, searches "preallocate" and saves the two screenshots under docs/.
docs: $(DEV)
	$(PY) scripts/gen_flag_table.py
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

bench: $(DEV)
	$(PY) -m arignote bench --quick --out bench-out

clean:
	rm -rf $(VENV) build dist src/*.egg-info
