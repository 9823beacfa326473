"""Shared by the fault suite: the full/fast switch and a training script that can be hurt on purpose.

``make test`` runs the fast form (one point per fault); ``make faults`` sets ARIGNOTE_FAULTS=full
and runs every point.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

FULL = os.environ.get("ARIGNOTE_FAULTS") == "full"


def points(fast: list, full: list) -> list:
    """Parametrize values: ``fast`` always, ``full`` only in the full fault suite (skipped with a reason)."""
    skip = pytest.mark.skip(reason="full fault suite only: run `make faults`")
    def param(p: object) -> object:
        return pytest.param(*p, marks=() if FULL else skip) if isinstance(p, tuple) else \
            pytest.param(p, marks=() if FULL else skip)

    return [*fast, *[param(p) for p in full]]


# One training job with every checkpoint callback; `mode` hurts it at (epoch, batch). Rank 0 of a
# finished run writes its final weights, optimizer state and history to work/final.ckpt.
TRAIN = textwrap.dedent('''
    import os, resource, signal, sys
    import numpy as np, torch
    torch.set_num_threads(1)
    import arignote
    arignote.configure(device="cpu", print_active_device=False)
    from arignote import checkpoint
    from arignote.callbacks import BackupAndRestore, Callback, ModelCheckpoint, TerminateOnNaN
    from arignote.datasets import synthetic
    from arignote.layers import Dense, Dropout
    from arignote.models import Sequential

    work, mode, epoch_at, batch_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    processes = int(sys.argv[5])
    if processes > 1:
        arignote.configure(cpu_processes=processes, parallel_timeout=60)
    torch.manual_seed(0)
    x, y = synthetic(shape=(12,), classes=3, samples=192, seed=1)
    # Dropout in 1 process only: under data parallel BackupAndRestore restores rank 0's random
    # state on every rank, so ranks > 0 would draw other masks than in the uninterrupted run
    model = Sequential([Dense(16, activation="relu", input_shape=(12,)),
                        *([Dropout(0.3)] if processes == 1 else []), Dense(3, activation="softmax")])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past RLIMIT_FSIZE a write fails with EFBIG

    class Hurt(Callback):
        epoch = 0
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch
            if mode == "fsize" and epoch == epoch_at:
                resource.setrlimit(resource.RLIMIT_FSIZE, (2000, resource.RLIM_INFINITY))
        def on_train_batch_begin(self, batch, logs=None):
            if (self.epoch, batch) != (epoch_at, batch_at):
                return
            rank = getattr(self.model._trainer.strategy, "rank", 0)
            if mode == "nan" and rank == processes - 1:   # the last rank alone blows up
                with torch.no_grad():
                    for p in self.model.module.parameters():
                        p.fill_(float("inf"))
            elif mode in ("sigkill", "sigint", "sigterm"):
                os.kill(os.getpid(), getattr(signal, mode.upper()))
        def on_epoch_end(self, epoch, logs=None):
            if mode == "sigkill-save" and epoch == epoch_at:
                real = checkpoint._RecordingFile.write
                def write_then_die(self, data):
                    n = real(self, data)
                    self.fh.flush()
                    os.kill(os.getpid(), signal.SIGKILL)   # mid-save: the temporary file is half written
                checkpoint._RecordingFile.write = write_then_die

    ckpt = os.path.join(work, "ckpt")
    stop = TerminateOnNaN(restore=True)
    callbacks = [Hurt(), stop, ModelCheckpoint(os.path.join(ckpt, "e{epoch:02d}.h5")),
                 ModelCheckpoint(os.path.join(ckpt, "last.h5")),
                 BackupAndRestore(os.path.join(work, "backup"))]
    history = model.fit(x, y, batch_size=32, epochs=5, verbose=0, validation_split=0.25, callbacks=callbacks)
    if processes > 1 and not model._trainer.strategy.is_main:
        sys.exit(0)
    checkpoint.save(os.path.join(work, "final.ckpt"), {
        "weights": model.get_weights(), "optimizer": model.optimizer.state_dict(),
        "epochs_done": model.epochs_done, "history_epochs": history.epoch,
        "val_loss": history.history.get("val_loss", []), "restored_from": stop.restored_from})
''')


def run(work: Path, mode: str = "none", epoch: int = -1, batch: int = -1, processes: int = 1,
        timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the training job in ``work`` (created), hurt by ``mode`` at (``epoch``, ``batch``), in
    ``processes`` data-parallel processes (rank 0 writes final.ckpt)."""
    work.mkdir(parents=True, exist_ok=True)
    script = work / "train.py"
    script.write_text(TRAIN)
    env = dict(os.environ, ARIGNOTERC=str(work / "no-rc"), OMP_NUM_THREADS="1")
    for name in ("ARIGNOTE_FLAGS", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    args = [str(work), mode, str(epoch), str(batch), str(processes)]
    # SIGINT back to its default in the job: a shell without job control (`cmd &`, nohup, some CI
    # runners) starts background commands with SIGINT ignored, and the job inherits that, so the
    # "sigint" fault would be ignored and the run end normally (seen in a full run started with &)
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=timeout, env=env,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
