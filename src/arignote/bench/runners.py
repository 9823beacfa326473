"""The contenders: arignote ``fit``, a hand-written PyTorch loop, Keras 3 (torch backend), Lightning.

Every runner trains the same network (:mod:`arignote.bench.models`) on the same arrays with the
same optimizer (RMSprop, lr 1e-4, rho 0.9, eps 1e-7), loss (categorical cross-entropy), batch
size and device, computes training and validation loss and accuracy every epoch, and calls
``on_epoch(epoch, seconds, logs)`` after each epoch (training + validation, as Keras times it).
Each is written the way its users write it: the PyTorch loop keeps the arrays on the device and
slices batches there (NCHW), Keras gets numpy arrays, Lightning gets a DataLoader.

Peers are optional extras (``pip install arignote[peers]``); :func:`missing` says why one
cannot run.  Keras must be imported with ``KERAS_BACKEND=torch`` already set, which is why each
run happens in its own process (:mod:`arignote.bench.worker`).

Example::

    >>> from arignote.bench import data, runners
    >>> d = data.load("mlp", 256, 64, source="synthetic")
    >>> times = []
    >>> runners.run("torch", "mlp", d, 64, 1, "cpu", "fp32", lambda e, s, logs: times.append(s))
    >>> len(times)
    1
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from typing import Any

from arignote.bench import models

__all__ = ["RUNNERS", "PEERS", "missing", "run"]

RUNNERS = ("arignote", "torch", "keras", "lightning")
PEERS = RUNNERS[1:]
_PACKAGE = {"arignote": "arignote", "torch": "torch", "keras": "keras", "lightning": "pytorch_lightning"}

OnEpoch = Callable[[int, float, dict], None]


def missing(runner: str) -> str | None:
    """Why ``runner`` cannot run here (its package is absent), or None."""
    if runner not in RUNNERS:
        raise ValueError(f"unknown runner '{runner}'; choose from: {', '.join(PEERS)}")
    if importlib.util.find_spec(_PACKAGE[runner]) is None:
        return f"{_PACKAGE[runner]} is not installed (pip install 'arignote[peers]')"
    return None


def run(runner: str, model: str, data: Any, batch_size: int, epochs: int, device: str,
        precision: str, on_epoch: OnEpoch) -> None:
    """Train ``model`` on ``data`` with ``runner`` for ``epochs``; ``on_epoch`` gets each epoch's time."""
    fn = {"arignote": _arignote, "torch": _torch, "keras": _keras, "lightning": _lightning}[runner]
    fn(model, data, batch_size, epochs, device, precision, on_epoch)


# --------------------------------------------------------------------------- arignote


def _arignote(model, data, batch_size, epochs, device, precision, on_epoch) -> None:
    # device, precision, cuDNN and threads come from the configuration flags the worker set
    from arignote.callbacks import Callback
    from arignote.optimizers import RMSprop

    class EpochTimer(Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            on_epoch(epoch, time.perf_counter() - self.t0, dict(logs or {}))

    net = models.arignote_model(model)
    net.compile(loss="categorical_crossentropy", optimizer=RMSprop(lr=models.LEARNING_RATE),
                metrics=["accuracy"])
    net.fit(data.x_train, data.y_train, batch_size=batch_size, epochs=epochs, verbose=0, shuffle=True,
            validation_data=(data.x_val, data.y_val), callbacks=[EpochTimer()])


# --------------------------------------------------------------------------- hand-written PyTorch


def _torch_arrays(model: str, x, y, device):
    """Keras-layout numpy arrays -> torch tensors as a PyTorch user feeds them (NCHW, class ids)."""
    import torch

    xt = torch.from_numpy(x)
    if model == "cnn":
        xt = xt.permute(0, 3, 1, 2).contiguous()
    return xt.to(device), torch.from_numpy(y.argmax(1)).to(device)


def _torch(model, data, batch_size, epochs, device, precision, on_epoch) -> None:
    import torch
    import torch.nn.functional as F

    dev = torch.device(device)
    net = models.torch_model(model).to(dev)
    opt = torch.optim.RMSprop(net.parameters(), lr=models.LEARNING_RATE, alpha=models.RMSPROP_RHO,
                              eps=models.RMSPROP_EPS)
    amp = precision == "mixed-fp16"
    scaler = torch.amp.GradScaler(dev.type, enabled=amp)
    x, y = _torch_arrays(model, data.x_train, data.y_train, dev)
    xv, yv = _torch_arrays(model, data.x_val, data.y_val, dev)
    n = len(x)
    for epoch in range(epochs):
        t0 = time.perf_counter()
        net.train()
        loss_sum = torch.zeros((), device=dev)
        correct = torch.zeros((), device=dev, dtype=torch.long)
        order = torch.randperm(n, device=dev)
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size]
            xb, yb = x[idx], y[idx]
            opt.zero_grad(set_to_none=True)
            with torch.autocast(dev.type, dtype=torch.float16, enabled=amp):
                out = net(xb)
                loss = F.cross_entropy(out, yb)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            loss_sum += loss.detach() * len(idx)
            correct += (out.argmax(1) == yb).sum()
        net.eval()
        val_loss = torch.zeros((), device=dev)
        val_correct = torch.zeros((), device=dev, dtype=torch.long)
        with torch.no_grad(), torch.autocast(dev.type, dtype=torch.float16, enabled=amp):
            for i in range(0, len(xv), batch_size):
                out = net(xv[i:i + batch_size])
                val_loss += F.cross_entropy(out, yv[i:i + batch_size], reduction="sum").float()
                val_correct += (out.argmax(1) == yv[i:i + batch_size]).sum()
        logs = {"loss": float(loss_sum) / n, "acc": int(correct) / n,
                "val_loss": float(val_loss) / max(len(xv), 1), "val_acc": int(val_correct) / max(len(xv), 1)}
        on_epoch(epoch, time.perf_counter() - t0, logs)


# --------------------------------------------------------------------------- Keras 3 (torch backend)


def _keras(model, data, batch_size, epochs, device, precision, on_epoch) -> None:
    import keras

    if keras.backend.backend() != "torch":
        raise RuntimeError(f"Keras runs on its {keras.backend.backend()} backend; "
                           "start it with KERAS_BACKEND=torch")
    if precision == "mixed-fp16":
        keras.mixed_precision.set_global_policy("mixed_float16")

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            on_epoch(epoch, time.perf_counter() - self.t0, {k: float(v) for k, v in (logs or {}).items()})

    with keras.device(device):
        net = models.keras_model(model)
        opt = keras.optimizers.RMSprop(learning_rate=models.LEARNING_RATE, rho=models.RMSPROP_RHO,
                                       epsilon=models.RMSPROP_EPS)
        net.compile(loss="categorical_crossentropy", optimizer=opt, metrics=["accuracy"])
        net.fit(data.x_train, data.y_train, batch_size=batch_size, epochs=epochs, verbose=0, shuffle=True,
                validation_data=(data.x_val, data.y_val), callbacks=[EpochTimer()])


# --------------------------------------------------------------------------- PyTorch Lightning


def _lightning(model, data, batch_size, epochs, device, precision, on_epoch) -> None:
    import pytorch_lightning as pl
    import torch
    import torch.nn.functional as F
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler, TensorDataset

    class Lit(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = models.torch_model(model)

        def _step(self, batch, prefix):
            xb, yb = batch
            out = self.net(xb)
            loss = F.cross_entropy(out, yb)
            acc = (out.argmax(1) == yb).float().mean()
            self.log(f"{prefix}loss", loss, on_step=False, on_epoch=True)
            self.log(f"{prefix}acc", acc, on_step=False, on_epoch=True)
            return loss

        def training_step(self, batch, batch_idx):
            return self._step(batch, "")

        def validation_step(self, batch, batch_idx):
            self._step(batch, "val_")

        def configure_optimizers(self):
            return torch.optim.RMSprop(self.parameters(), lr=models.LEARNING_RATE, alpha=models.RMSPROP_RHO,
                                       eps=models.RMSPROP_EPS)

    class EpochTimer(pl.Callback):
        # Lightning runs validation inside the training epoch, before on_train_epoch_end
        def on_train_epoch_start(self, trainer, module):
            self.t0 = time.perf_counter()

        def on_train_epoch_end(self, trainer, module):
            logs = {k: float(v) for k, v in trainer.callback_metrics.items()}
            on_epoch(trainer.current_epoch, time.perf_counter() - self.t0, logs)

    def loader(x, y, shuffle):
        # whole batches indexed at once (no per-sample collation): the fast in-memory idiom
        ds = TensorDataset(*_torch_arrays(model, x, y, "cpu"))
        sampler = RandomSampler(ds) if shuffle else SequentialSampler(ds)
        return DataLoader(ds, batch_size=None, sampler=BatchSampler(sampler, batch_size, drop_last=False))

    dev = torch.device(device)
    trainer = pl.Trainer(
        accelerator="gpu" if dev.type == "cuda" else "cpu",
        devices=[dev.index or 0] if dev.type == "cuda" else 1,
        precision="16-mixed" if precision == "mixed-fp16" else "32-true",
        max_epochs=epochs, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0, callbacks=[EpochTimer()],
    )
    trainer.fit(Lit(), loader(data.x_train, data.y_train, True), loader(data.x_val, data.y_val, False))
