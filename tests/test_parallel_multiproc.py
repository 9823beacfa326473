"""Data parallel with real gloo process groups on CPU: plain scripts (written to tmp_path) run as
``python script.py``; the main process launches rank 1 itself (or torchrun does)."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from parallel_helpers import FIT_SCRIPT, PLAIN_SCRIPT, _alive, _load, _pids, _run, _write

pytestmark = pytest.mark.multiproc


@pytest.mark.slow
def test_two_processes_train_like_one_process_with_the_same_global_batch(tmp_path):
    script = _write(tmp_path, "train.py", FIT_SCRIPT)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    r1 = _run([str(script), str(one), "1", "3"])
    r2 = _run([str(script), str(two), "2", "3"])
    assert r1.returncode == 0, r1.stderr
    assert r2.returncode == 0, r2.stderr
    assert r2.stdout.count("Epoch 1/3") == 1  # only rank 0 prints
    (h1, w1), (h2, w2) = _load(one), _load(two)
    assert h2["threads"] == max(1, len(os.sched_getaffinity(0)) // 2)  # cores split between processes
    assert h1["epoch"] == h2["epoch"] == [0, 1, 2]
    for key in ("loss", "mae", "val_loss", "val_mae"):
        np.testing.assert_allclose(h2["history"][key], h1["history"][key], rtol=1e-5, err_msg=key)
    for a, b in zip(w1, w2):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert h1["history"]["loss"][-1] < h1["history"]["loss"][0]  # it did train


def test_a_killed_rank_stops_the_job_within_the_timeout_and_is_named(tmp_path):
    script = _write(tmp_path, "train.py", PLAIN_SCRIPT)
    r = _run([str(script), "kill", str(tmp_path), "2"], timeout=120)
    ended = time.time()
    assert r.returncode == 1, r.stderr
    assert "rank 1" in r.stderr and "SIGKILL (exit code -9)" in r.stderr
    killed_at = float((tmp_path / "killed_at").read_text())
    assert ended - killed_at < 3 + 5  # parallel.timeout=3, plus interpreter exit
    assert not any(_alive(p) for p in _pids(tmp_path))


def test_an_exception_in_rank_0_stops_the_other_ranks(tmp_path):
    script = _write(tmp_path, "train.py", PLAIN_SCRIPT)
    r = _run([str(script), "raise", str(tmp_path), "2"], timeout=120)
    assert r.returncode == 1
    assert "ValueError: boom in rank 0" in r.stderr
    assert "rank 0 (this process) failed with ValueError" in r.stderr
    assert not any(_alive(p) for p in _pids(tmp_path))
