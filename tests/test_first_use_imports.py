"""First use of the Keras API loads what building a model needs, not h5py, NVML or every callback
and dataset (issue 32; the time itself is measured by benchmarks/import_time.py, never here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
FIRST_USE = "from arignote.models import Sequential; from arignote.layers import Dense, Conv2D"
HEAVY = ["h5py", "arignote.devices.nvml", "arignote.devices.snapshot", "arignote.saving.hdf5",
         "arignote.callbacks.status", "arignote.callbacks.backup", "arignote.share",
         "arignote.datasets.mnist", "arignote.utils.vis_utils"]


def _loaded(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_first_use_does_not_load_h5py_nvml_or_rare_parts():
    assert _loaded(FIRST_USE) == []


def test_the_probe_sees_them_once_used():
    # the same probe after using the lazily loaded names: each loads on first use, under its old name
    code = (FIRST_USE + "\nimport arignote.callbacks as cb, arignote.utils as u, arignote.saving as s, "
            "arignote.datasets as d\ncb.RunStatus, cb.BackupAndRestore, u.plot_model, s.save_model, "
            "d.mnist.load_data\nfrom arignote.devices import nvml")
    assert _loaded(code) == sorted(HEAVY)


def test_lazy_namespaces_keep_names_dir_and_star_import():
    import arignote.callbacks as cb
    import arignote.utils as u
    from arignote.callbacks.model_checkpoint import ModelCheckpoint
    from arignote.utils.np_utils import to_categorical

    assert cb.ModelCheckpoint is ModelCheckpoint and u.to_categorical is to_categorical
    assert set(cb.__all__) <= set(dir(cb)) and "np_utils" in dir(u)
    namespace: dict = {}
    exec("from arignote.callbacks import *", namespace)
    assert namespace["EarlyStopping"].__name__ == "EarlyStopping" and "RunStatus" in namespace
    with pytest.raises(AttributeError, match="NoSuchCallback"):
        _ = cb.NoSuchCallback
