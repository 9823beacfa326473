"""What a new user sees of data parallel: the banner names the layout; a script read from stdin is
refused before any rank starts."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace as NS

import pytest
import torch

from arignote.config import ConfigError
from arignote.parallel.ddp import DataParallel
from arignote.parallel.env import relaunch_command


def test_layout_line_names_processes_and_threads_or_gpus(monkeypatch):
    env = NS(rank=0, world_size=2)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert DataParallel("cpu", env, "gloo").layout == "data parallel: 2 processes x 1 thread (gloo)"
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    assert DataParallel("cpu", env, "gloo").layout == "data parallel: 2 processes x 4 threads (gloo)"
    four = NS(rank=0, world_size=4)
    assert DataParallel("cuda:0", four, "nccl").layout == "data parallel: 4 processes, one GPU each (nccl)"


def test_banner_prints_the_layout(capsys):
    from arignote.runtime import setup

    setup.prepare("cpu", layout="data parallel: 2 processes x 1 thread (gloo)")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("arignote ") and out[1] == "data parallel: 2 processes x 1 thread (gloo)"


def test_script_from_stdin_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match=r"read from stdin \(python -\).*python train.py"):
        relaunch_command("/py", ["python", "-"], ["-"], None, "/w")


@pytest.mark.multiproc
def test_stdin_script_under_cpu_processes_fails_clearly(tmp_path):
    script = ("import numpy as np\nfrom arignote.layers import Dense\n"
              "from arignote.models import Sequential\nm = Sequential()\n"
              "m.add(Dense(1, input_shape=(2,)))\nm.compile('sgd', 'mse')\n"
              "m.fit(np.zeros((8, 2), 'float32'), np.zeros((8, 1), 'float32'), verbose=0)\n")
    env = {**os.environ, "ARIGNOTERC": "", "ARIGNOTE_FLAGS": "device=cpu,cpu.processes=2"}
    proc = subprocess.run([sys.executable, "-"], input=script, env=env, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("arignote.errors.ConfigError: data parallel")
    assert "read from stdin" in proc.stderr and "can't open file" not in proc.stderr
