"""Keras 2's ``BaseLogger``: epoch averages of the batch logs, written into the epoch logs.

Keras 2 added it to every model; ``fit`` here computes exact epoch means itself (on the device,
one sync per epoch), so it is never added automatically. Adding it by hand reproduces Keras's
own bookkeeping: each batch value weighted by the batch ``size``, divided by the samples seen,
and ``stateful_metrics`` copied as their last batch value. Reading every batch's logs waits for
the device once per batch.

Example::

    >>> b = BaseLogger(); b.set_params({"metrics": ["loss"]}); b.on_epoch_begin(0)
    >>> b.on_batch_end(0, {"size": 2, "loss": 1.0}); b.on_batch_end(1, {"size": 1, "loss": 4.0})
    >>> logs = {}; b.on_epoch_end(0, logs); logs
    {'loss': 2.0}
"""

from __future__ import annotations

from typing import Any

from arignote.callbacks.base import Callback

__all__ = ["BaseLogger"]


class BaseLogger(Callback):
    """Accumulates sample-weighted epoch means of the metrics in ``params['metrics']``."""

    def __init__(self, stateful_metrics: Any = None) -> None:
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or ())
        self.seen = 0
        self.totals: dict[str, float] = {}

    def on_epoch_begin(self, epoch, logs=None) -> None:
        self.seen = 0
        self.totals = {}

    def on_batch_end(self, batch, logs=None) -> None:
        logs = logs or {}
        size = logs.get("size", 0) or 0
        self.seen += size
        for key in logs:
            if key in ("batch", "size"):
                continue
            value = logs[key]
            if key in self.stateful_metrics:
                self.totals[key] = value
            else:
                self.totals[key] = self.totals.get(key, 0.0) + value * size

    def on_epoch_end(self, epoch, logs=None) -> None:
        if logs is None:
            return
        for key in self.params.get("metrics", ()):
            if key in self.totals:
                logs[key] = self.totals[key] if key in self.stateful_metrics else self.totals[key] / self.seen
