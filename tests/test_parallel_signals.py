"""Ctrl-C / SIGTERM on the main process of a 2-process gloo job stops every rank; a hung rank
(SIGSTOP) fails the job after parallel.timeout instead of hanging it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from parallel_helpers import PLAIN_SCRIPT, _alive, _pids, _run, _write

pytestmark = pytest.mark.multiproc


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_or_ctrl_c_on_the_main_process_stops_every_rank(tmp_path, sig, code):
    script = _write(tmp_path, "train.py", PLAIN_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), "forever", str(tmp_path), "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("epoch"), proc.stderr.read()  # both ranks training
        pids = _pids(tmp_path)
        assert len(pids) == 2
        sent = time.monotonic()
        proc.send_signal(sig)
        proc.wait(timeout=30)
        assert time.monotonic() - sent < 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code
    assert signal.Signals(sig).name in proc.stderr.read()
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def test_a_hung_rank_fails_the_job_after_parallel_timeout(tmp_path):
    script = _write(tmp_path, "train.py", PLAIN_SCRIPT)
    r = _run([str(script), "stop", str(tmp_path), "2"], timeout=120)
    ended = time.time()
    assert r.returncode == 1
    assert "in a collective: another rank stopped answering for parallel.timeout=3s" in r.stderr
    assert "rank 0: the epoch order failed" in r.stderr and "rank 1 did not arrive" in r.stderr
    assert ended - float((tmp_path / "stopped_at").read_text()) < 3 + 5 + 5  # timeout, SIGKILL grace, exit
    assert not any(_alive(p) for p in _pids(tmp_path))  # the stopped rank was killed


SLOW_CALLBACK = """
import os, sys, time
import numpy as np, torch
import arignote
from arignote.callbacks import Callback
from arignote.layers import Dense
from arignote.models import Sequential

arignote.configure(device="cpu", cpu_processes=2, print_active_device=False)  # default timeouts
torch.manual_seed(0)
x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
y = x.sum(1, keepdims=True)


class SlowUpload(Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0 and self.model.is_main:
            time.sleep(float(sys.argv[1]))  # a checkpoint upload on rank 0


model = Sequential([Dense(1, input_dim=4)])
model.compile("sgd", "mse")
h = model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[SlowUpload()])
if model.is_main:
    print("done", len(h.history["loss"]), flush=True)
"""


@pytest.mark.slow
def test_a_40_second_rank_0_epoch_end_does_not_kill_a_job_with_default_settings(tmp_path):
    script = _write(tmp_path, "slow.py", SLOW_CALLBACK)
    started = time.monotonic()
    r = _run([str(script), "40"], timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "done 2" in r.stdout
    assert time.monotonic() - started >= 40  # rank 1 waited in the epoch-end agreement, and lived
