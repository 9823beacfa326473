# The two commands of the README: `make demo` (the main job) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.arignote-installed

.PHONY: demo test lint setup clean bench faults

$(STAMP): pyproject.toml scripts/setup-venv.sh
	bash scripts/setup-venv.sh $(VENV)
	@touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(PY) -m arignote demo

test: $(STAMP)
	$(PY) -m pytest

# The fault suite in full (every kill point, every fault class; FAULTS.md lists them). `make test`
# runs its fast form (one point per fault).
faults: $(STAMP)
	ARIGNOTE_FAULTS=full $(PY) -m pytest -p no:cacheprovider tests/faults tests/test_checkpoint.py \
		tests/test_backup_restore.py tests/test_backup_restore_ddp.py tests/test_parallel_signals.py \
		tests/test_parallel_multiproc.py tests/test_parallel_elastic.py tests/test_oom_fit.py \
		tests/test_oom_parallel.py tests/test_share.py

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks examples

bench: $(STAMP)
	$(PY) -m arignote bench --quick --out bench-out

clean:
	rm -rf $(VENV) build dist src/*.egg-info
