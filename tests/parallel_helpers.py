"""Shared by the test_parallel_* files: training scripts written to tmp_path and process helpers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

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
        json.dump({"epoch": h.epoch, "history": h.history, "threads": torch.get_num_threads()}, fh)
"""

# A plain torch script on the Strategy itself: failure modes, signals, torchrun.
PLAIN_SCRIPT = """
import os, signal, sys, time
import torch
from arignote import config
from arignote.parallel import strategy_for
from arignote.parallel.sharding import row_range

mode, out, procs = sys.argv[1], sys.argv[2], int(sys.argv[3])
# the failure modes need a short collective timeout to be seen; a healthy run gets room for a slow
# start of the other rank (importing torch takes seconds on a loaded machine)
config.configure(device="cpu", cpu_processes=procs, parallel_timeout=60 if mode == "train" else 3)
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
    idx = s.order(64, epoch, True)
    for i in range(0, len(idx), 16):
        a, b = row_range(16, s.world_size, s.rank)  # this rank's rows of the global batch of 16
        bi = idx[i:i + 16][a:b]
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
    if epoch == 2 and mode == "stop" and s.rank == 1:
        open(os.path.join(out, "stopped_at"), "w").write(repr(time.time()))
        os.kill(os.getpid(), signal.SIGSTOP)  # hangs without dying: only the timeout can tell
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
