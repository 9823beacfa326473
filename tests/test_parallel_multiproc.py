"""Data parallel with real gloo process groups on CPU: plain scripts (written to tmp_path) run as
``python script.py``; the main process launches rank 1 itself (or torchrun does)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.multiproc

# A Keras-style script: device=cpu, cpu.processes from argv, History and weights written by rank 0.
FIT_SCRIPT = """
import json, os, signal, sys
import numpy as np, torch
import arignote
from arignote.callbacks import BackupAndRestore, Callback
from arignote.layers import Dense
from arignote.models import Sequential

out, procs, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
arignote.configure(device="cpu", cpu_processes=procs, parallel_timeout=10,
                   parallel_restarts=int(sys.argv[4]) if len(sys.argv) > 4 else 0)
torch.manual_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(320, 8)).astype("float32")
y = (x[:, :1] * 2 - x[:, 1:2] + 0.5 * x[:, 2:3] ** 2).astype("float32")
model = Sequential([Dense(16, activation="tanh", input_dim=8), Dense(1)])
model.compile("sgd", "mse", metrics=["mae"])


class KillRank1Once(Callback):
    # the first attempt loses rank 1 (SIGKILL) when epoch 2 begins; the restart must resume
    def on_epoch_begin(self, epoch, logs=None):
        marker = os.path.join(out, "killed")
        if epoch == 2 and self.model._trainer.strategy.rank == 1 and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)


callbacks = []
if len(sys.argv) > 4:
    callbacks = [BackupAndRestore(os.path.join(out, "backup")), KillRank1Once()]
h = model.fit(x, y, batch_size=32, epochs=epochs, verbose=2, validation_split=0.2, callbacks=callbacks)
if model._trainer.strategy.is_main:
    np.savez(os.path.join(out, "weights.npz"), *model.get_weights())
    with open(os.path.join(out, "history.json"), "w") as fh:
        json.dump({"epoch": h.epoch, "history": h.history}, fh)
"""

# A plain torch script on the Strategy itself: failure modes, signals, torchrun.
PLAIN_SCRIPT = """
import os, signal, sys, time
import torch
from arignote import config
from arignote.parallel import strategy_for

mode, out, procs = sys.argv[1], sys.argv[2], int(sys.argv[3])
config.configure(device="cpu", cpu_processes=procs, parallel_timeout=3)
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
x = torch.randn(64, 4)
y = x.sum(1, keepdim=True)
s = strategy_for(["cpu"])
open(os.path.join(out, f"pid.{s.rank}"), "w").write(str(os.getpid()))
net = s.wrap(model)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
epochs = 3 if mode == "train" else 1000
for epoch in range(epochs):
    idx = s.shard(64, epoch, True, None)
    for i in range(0, len(idx), s.local_batch(16)):
        bi = idx[i:i + s.local_batch(16)]
        loss = ((net(x[bi]) - y[bi]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if s.is_main:
        print("epoch", epoch, flush=True)
    if mode != "train":
        time.sleep(0.1)
    if epoch == 2 and mode == "kill" and s.rank == 1:
        open(os.path.join(out, "killed_at"), "w").write(repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)
    if epoch == 2 and mode == "raise" and s.rank == 0:
        raise ValueError("boom in rank 0")
if s.is_main:
    torch.save(model.state_dict(), os.path.join(out, "weights.pt"))
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _run(args: list[str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "\nState:\tZ" not in fh.read()
    except FileNotFoundError:
        return False


def _pids(out: Path) -> list[int]:
    return [int(p.read_text()) for p in sorted(out.glob("pid.*"))]


def _load(out: Path) -> tuple[dict, list[np.ndarray]]:
    weights = np.load(out / "weights.npz")
    return json.loads((out / "history.json").read_text()), [weights[k] for k in sorted(weights.files)]


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
    assert "cpu" in r2.stdout and "1 threads" in r2.stdout  # each of the 2 processes got 1 of 2 cores
    (h1, w1), (h2, w2) = _load(one), _load(two)
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


@pytest.mark.slow
def test_with_restarts_the_job_resumes_from_the_last_finished_epoch(tmp_path):
    script = _write(tmp_path, "train.py", FIT_SCRIPT)
    r = _run([str(script), str(tmp_path), "2", "4", "1"])
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "killed").exists()
    assert "rank 1" in r.stderr and "SIGKILL" in r.stderr
    assert "restarting the job (restart 1 of 1" in r.stderr
    # epochs 1-2 ran once (not redone from scratch), the restarted job finished epochs 3-4
    assert r.stdout.count("Epoch 1/4") == 1 and r.stdout.count("Epoch 2/4") == 1
    assert "Epoch 4/4" in r.stdout
    history, _ = _load(tmp_path)
    assert history["epoch"] == [2, 3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_nodes_under_torchrun_over_loopback(tmp_path):
    script = _write(tmp_path, "train.py", PLAIN_SCRIPT)
    single, nodes = tmp_path / "single", tmp_path / "nodes"
    single.mkdir()
    nodes.mkdir()
    port = _free_port()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=arignote-test",
           str(script), "train", str(nodes), "1"]
    agents = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(2)]
    r = _run([str(script), "train", str(single), "1"], timeout=120)
    outs = [a.communicate(timeout=240) for a in agents]
    assert [a.returncode for a in agents] == [0, 0], [o[1][-2000:] for o in outs]
    assert r.returncode == 0, r.stderr
    assert len(_pids(nodes)) == 2  # rank 0 and rank 1 both ran
    import torch

    a = torch.load(single / "weights.pt")
    b = torch.load(nodes / "weights.pt")
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=1e-6)
