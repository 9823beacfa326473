"""A small real ``fit`` in a subprocess, slow enough to be caught mid-run (status and dash tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

# argv: epochs, seconds to sleep after each batch, mode (ok | raise | interrupt | stop), name
FIT = r"""
import sys, time
import numpy as np
from arignote.callbacks import Callback, EarlyStopping
from arignote.layers import Dense
from arignote.models import Sequential

epochs, pause, mode = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]

class Slow(Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(pause)
        if mode in ("raise", "interrupt") and self.epoch == 1 and batch == 1:  # after one whole epoch
            if mode == "raise":
                raise RuntimeError("boom in batch %d" % batch)
            raise KeyboardInterrupt

rng = np.random.default_rng(0)
x = rng.random((64, 4), dtype="float32"); y = (x.sum(1, keepdims=True) > 2).astype("float32")
model = Sequential([Dense(8, activation="relu", input_shape=(4,)), Dense(1, activation="sigmoid")])
model.compile("sgd", "binary_crossentropy", metrics=["accuracy"])
cbs = [Slow()]
if mode == "stop":
    cbs.append(EarlyStopping(monitor="loss", patience=0, min_delta=10.0))
print("fitting", flush=True)
model.fit(x, y, epochs=epochs, batch_size=16, verbose=0, validation_split=0.25, callbacks=cbs)
print("done", flush=True)
"""


def start_fit(env: dict[str, str], epochs: int = 3, pause: float = 0.0, mode: str = "ok",
              name: str = "train_small.py", tmp: Path | None = None) -> subprocess.Popen:
    """Start the fit as ``python <name>`` (so its record's script is ``name``)."""
    folder = tmp if tmp is not None else Path(env["ARIGNOTE_LEASE_DIR"]).parent
    script = folder / name
    script.write_text(FIT)
    env = dict(env, OMP_NUM_THREADS="1", ARIGNOTE_FLAGS="print_active_device=false")
    return subprocess.Popen([sys.executable, str(script), str(epochs), str(pause), mode], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(folder))


def records(lease_dir: Path) -> list[dict]:
    folder = lease_dir / "runs"
    if not folder.exists():
        return []
    out = []
    for p in sorted(folder.glob("run-*.json")):
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            pass
    return out


def wait_for(predicate, timeout: float = 60.0, what: str = "condition"):
    """Poll ``predicate()`` until it returns something truthy; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def record_of(lease_dir: Path, pid: int) -> dict | None:
    return next((r for r in records(lease_dir) if r.get("pid") == pid), None)


def kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def env_for(lease_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ARIGNOTE_LEASE_DIR"] = str(lease_dir)
    env["ARIGNOTERC"] = str(lease_dir.parent / "no-rc")
    env.pop("ARIGNOTE_FLAGS", None)
    return env
