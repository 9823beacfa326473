"""The training loop: train/test steps, epochs, validation and callbacks, on one strategy.

The hot path per batch is: slice (device-side), forward under autocast, loss, scaled backward,
optimizer step, zero grads (set to None), and a few device ops that accumulate the loss and the
metrics. Nothing reads a value back to the host until a log point (epoch end, a progress-bar
redraw, or a callback that reads the batch logs).

The step is split in :meth:`Trainer._forward_backward` (one micro-batch, gradients scaled by its
share of the batch) and :meth:`Trainer._optimizer_step`, so out-of-memory recovery can re-run a
batch as smaller pieces without duplicating the step.

Example::

    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> import numpy as np
    >>> m = Sequential([Dense(1, input_dim=2)]); m.compile("sgd", "mse")
    >>> h = m.fit(np.zeros((8, 2), "float32"), np.zeros((8, 1), "float32"), verbose=0)
    >>> list(h.history)
    ['loss']
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch

from arignote.callbacks.base import CallbackList, LazyLogs
from arignote.training.data import ArrayData, IterableData

__all__ = ["Trainer"]


class Trainer:
    """Runs ``fit``/``evaluate``/``predict`` of one compiled model on one strategy.

    ``model`` provides ``module`` (the torch module), ``loss_fn(y_true, y_pred)``, ``metrics_list``
    (metric objects), ``optimizer`` and ``stop_training``/``resume_epoch``; ``precision`` provides
    ``autocast()`` and ``scaler`` (a ``torch.amp.GradScaler``, disabled when not needed).
    """

    def __init__(self, model: Any, strategy: Any, precision: Any) -> None:
        self.model = model
        self.strategy = strategy
        self.device: torch.device = strategy.device
        self.precision = precision
        self.scaler = precision.scaler
        self.net = self._wrapped = strategy.wrap(model.module)
        self.accumulate = 1
        self.oom: Any = None  # the out-of-memory guard (arignote.training.oom.OOMGuard)
        self._local, self._sync = contextlib.nullcontext, None
        self._scaler_view: _ScalerView | None = None
        self._stale_grads = False  # gradients of a finished step, not yet released
        self._loss_sum = torch.zeros((), dtype=torch.float64 if self.device.type != "mps" else torch.float32,
                                     device=self.device)
        self._count = 0

    # ------------------------------------------------------------------ accumulation on the device

    @property
    def metric_names(self) -> list[str]:
        return ["loss", *[m.name for m in self.model.metrics_list]]

    def reset_state(self) -> None:
        self._loss_sum.zero_()
        self._count = 0
        for m in self.model.metrics_list:
            m.reset()

    def _record(self, loss: torch.Tensor, y_true: Any, y_pred: torch.Tensor, n: int) -> None:
        self._loss_sum.add_(loss.detach(), alpha=n)
        self._count += n
        if self.model.metrics_list and y_true is not None:
            with torch.no_grad():
                for m in self.model.metrics_list:
                    m.update(y_true, y_pred.detach())

    def results(self, reduce: bool = True) -> dict[str, float]:
        """Loss and metrics so far as floats (one device sync; averaged over ranks when ``reduce``)."""
        f64 = torch.float64 if self.device.type != "mps" else torch.float32
        parts = [self._loss_sum.reshape(1).to(f64),
                 torch.tensor([float(self._count)], dtype=f64, device=self.device)]
        sizes = []
        for m in self.model.metrics_list:
            s = m.state().to(self.device, f64).reshape(-1)
            parts.append(s)
            sizes.append(s.numel())
        state = torch.cat(parts)
        if reduce and self.strategy.world_size > 1:
            state = self.strategy.all_reduce_mean(state)
        state = state.cpu()
        count = float(state[1])
        out = {"loss": float(state[0]) / count if count else float("nan")}
        offset = 2
        for m, size in zip(self.model.metrics_list, sizes):
            out[m.name] = float(m.result_from(state[offset:offset + size]))
            offset += size
        return out

    # ------------------------------------------------------------------ steps

    def _forward_backward(self, xb: Any, yb: Any, weight: float = 1.0) -> tuple:
        """Forward, loss and backward of one (micro-)batch; gradients are scaled by ``weight``.
        Returns what :meth:`_record` takes; :meth:`train_step` records it once the whole step has
        succeeded (an out-of-memory retry must not count a micro-batch twice)."""
        with self.precision.autocast():
            y_pred = self.net(xb)
            loss = self.model.loss_fn(yb, y_pred)
        if self._stale_grads:
            # the previous step's gradients are released here, just before the backward that
            # allocates new ones, so the allocator hands their memory straight back (releasing
            # them after the step instead let the forward take it: 5-10 % slower on the CPU CNN)
            self.model.optimizer.zero_grad()
            self._stale_grads = False
        self.scaler.scale(loss if weight == 1.0 else loss * weight).backward()
        return loss.detach(), yb, y_pred.detach(), len(xb)

    def _optimizer_step(self) -> None:
        """Apply the accumulated gradients (unscaled by the grad scaler); the next backward releases them."""
        opt = self.model.optimizer
        if self.scaler.is_enabled():
            view = self._scaler_view
            if view is None or view.optimizer is not opt:
                view = self._scaler_view = _ScalerView(opt)
            self.scaler.step(view)  # unscales, skips the step on inf/nan gradients
            self.scaler.update()
        else:
            opt.step()
        self._stale_grads = True  # cleared (to None) by the next backward: see _forward_backward

    def train_step(self, xb: Any, yb: Any) -> None:
        """One optimizer step on a batch, run as ``self.oom.k`` micro-batches (``accumulate``, raised
        on out-of-memory: see :mod:`arignote.training.oom`)."""
        if self.oom is None:
            self.new_oom_guard()
        for record in self.oom.step(xb, yb, self._forward_backward, self._optimizer_step,
                                    self.model.optimizer.zero_grad, local=self._local, sync=self._sync):
            self._record(*record)

    def new_oom_guard(self) -> None:
        """A fresh out-of-memory guard starting at ``accumulate`` micro-batches (at each ``fit``).
        Under data parallel with ``memory.on_oom=split``, steps run on the unwrapped module (no DDP
        collective inside a step, so a rank that runs out cannot leave another waiting) and one
        reduction carries the gradients and every rank's out-of-memory flag; ``raise`` keeps DDP's
        overlapped path."""
        from arignote.training.oom import OOMGuard, sync_gradients

        self.oom = OOMGuard(accumulate=self.accumulate, strategy=self.strategy, device=self.device)
        self.net, self._sync = self._wrapped, None
        if self.oom.distributed:
            self.net = self.model.module
            self._sync = lambda failed: sync_gradients(self.model.module, self.strategy, failed)

    def test_step(self, xb: Any, yb: Any) -> None:
        with self.precision.autocast():
            y_pred = self.net(xb)
            loss = self.model.loss_fn(yb, y_pred)
        self._record(loss, yb, y_pred, len(xb))

    def predict_step(self, xb: Any) -> torch.Tensor:
        with self.precision.autocast():
            return self.net(xb)

    # ------------------------------------------------------------------ batches

    def _train_batches(self, data: Any, epoch: int, batch_size: int, shuffle: bool,
                       steps: int | None) -> Iterator[tuple[Any, Any]]:
        if isinstance(data, IterableData) and not data.indexable:
            return data.batches(epoch=epoch)
        # arrays: sample indices sliced into local batches; a Sequence: the order of its batches
        # (each index one batch), so under data parallel each rank runs its share of them
        n, bs = self._units(data, batch_size)
        idx = self.strategy.shard(n, epoch, shuffle, None)
        if steps is not None:
            # an epoch of `steps` batches may need more than one pass over the data
            per_pass = max(1, math.ceil(len(idx) / bs))
            passes = math.ceil(steps / per_pass)
            if passes > 1:
                idx = torch.cat([idx] + [self.strategy.shard(n, epoch * passes + p, shuffle, None)
                                         for p in range(1, passes)])
            idx = idx[:steps * bs]
        return data.batches(idx, bs)

    def _eval_batches(self, data: Any, batch_size: int) -> Iterator[tuple[Any, Any]]:
        if isinstance(data, IterableData) and not data.indexable:
            return data.batches()
        if self.strategy.world_size == 1:
            return data.batches(None, batch_size)
        n, bs = self._units(data, batch_size)
        return data.batches(self.strategy.shard(n, 0, False, None), bs)

    def _units(self, data: Any, batch_size: int) -> tuple[int, int]:
        """What the strategy shards: (samples, local batch) of arrays, (batches, 1) of a Sequence."""
        if isinstance(data, ArrayData):
            return data.n, self.strategy.local_batch(batch_size)
        return len(data), 1

    # ------------------------------------------------------------------ loops

    def fit(self, train: ArrayData | IterableData, val: Any, *, epochs: int, initial_epoch: int,
            batch_size: int, shuffle: bool, steps_per_epoch: int | None,
            validation_batch_size: int, callbacks: CallbackList, validation_freq: Any = 1) -> None:
        model = self.model
        model.stop_training = False
        callbacks.on_train_begin()
        # a resume point set by load_training_state (before fit, or by BackupAndRestore in
        # on_train_begin) wins over initial_epoch, once
        start = model.resume_epoch if model.resume_epoch is not None else initial_epoch
        model.resume_epoch = None
        keys = self.metric_names
        single = self.strategy.world_size == 1
        logs: dict[str, float] = {}
        for epoch in range(start, epochs):
            model.module.train()
            self.reset_state()
            callbacks.on_epoch_begin(epoch)
            listen = callbacks.has_batch_hooks("train")
            local = self._local_results
            for step, (xb, yb) in enumerate(self._train_batches(train, epoch, batch_size, shuffle,
                                                                steps_per_epoch)):
                if listen:
                    fixed = {"batch": step, "size": len(xb)}
                    callbacks.on_train_batch_begin(step, fixed)
                self.train_step(xb, yb)
                if listen:
                    callbacks.on_train_batch_end(step, LazyLogs(fixed, local, keys))
                    if single and model.stop_training:
                        break
            if self._count == 0:
                raise ValueError("the training data yielded no batch this epoch; check the data or "
                                 "steps_per_epoch")
            logs = self.results()
            if val is not None and _due(epoch, validation_freq):
                callbacks.on_test_begin()
                val_logs = self.evaluate(val, validation_batch_size, None)
                callbacks.on_test_end(val_logs)
                logs.update({f"val_{k}": v for k, v in val_logs.items()})
            model.epochs_done = epoch + 1
            callbacks.on_epoch_end(epoch, logs)
            stop = model.stop_training if single else bool(self.strategy.agree_max(int(model.stop_training)))
            if stop:
                break
        if self._stale_grads:  # nothing needs the last step's gradients after training
            model.optimizer.zero_grad()
            self._stale_grads = False
        callbacks.on_train_end(logs)

    def _local_results(self) -> dict[str, float]:
        return self.results(reduce=False)

    def evaluate(self, data: Any, batch_size: int, callbacks: CallbackList | None) -> dict[str, float]:
        """Loss and metrics over ``data`` in eval mode without autograd."""
        module = self.model.module
        was_training = module.training
        module.eval()
        self.reset_state()
        listen = callbacks is not None and callbacks.has_batch_hooks("test")
        keys = self.metric_names
        try:
            with torch.no_grad():  # not inference_mode: metric buffers created here are reused in training
                for step, (xb, yb) in enumerate(self._eval_batches(data, batch_size)):
                    if listen:
                        fixed = {"batch": step, "size": len(xb)}
                        callbacks.on_test_batch_begin(step, fixed)
                    self.test_step(xb, yb)
                    if listen:
                        callbacks.on_test_batch_end(step, LazyLogs(fixed, self._local_results, keys))
            if self._count == 0:
                raise ValueError("the evaluation data yielded no batch")
            return self.results()
        finally:
            module.train(was_training)

    def predict(self, data: Any, batch_size: int, callbacks: CallbackList | None) -> torch.Tensor:
        """Outputs for every sample of ``data``, concatenated on the host."""
        module = self.model.module
        was_training = module.training
        module.eval()
        outs = []
        listen = callbacks is not None and callbacks.has_batch_hooks("predict")
        try:
            with torch.no_grad():  # not inference_mode: metric buffers created here are reused in training
                batches = (data.batches(None, batch_size) if isinstance(data, ArrayData)
                           else data.batches())
                for step, (xb, _) in enumerate(batches):
                    if listen:
                        callbacks.on_predict_batch_begin(step, {"batch": step, "size": len(xb)})
                    out = self.predict_step(xb)
                    outs.append(out)
                    if listen:
                        callbacks.on_predict_batch_end(step, {"batch": step, "size": len(xb), "outputs": out})
        finally:
            module.train(was_training)
        if not outs:
            raise ValueError("the prediction data yielded no batch")
        return torch.cat(outs).cpu()


class _ScalerView:
    """What ``GradScaler.step`` needs of an optimizer: the torch param groups to unscale, and a
    ``step`` that runs the arignote optimizer (clipping, decay, iteration count)."""

    def __init__(self, optimizer: Any) -> None:
        self.optimizer = optimizer
        self.param_groups = optimizer.torch.param_groups
        self.state = optimizer.torch.state

    def step(self) -> None:
        self.optimizer.step()


def _due(epoch: int, freq: Any) -> bool:
    """Keras's ``validation_freq``: every ``freq`` epochs (an int), or at the listed epochs (1-based)."""
    if isinstance(freq, int):
        return (epoch + 1) % freq == 0
    return epoch + 1 in freq


def _split(t: Any, k: int) -> list[Any]:
    if t is None:
        return [None] * k
    return list(t.tensor_split(k))
