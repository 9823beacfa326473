"""Callbacks that stop training: EarlyStopping (no improvement) and TerminateOnNaN (loss blew up).

Example::

    >>> stop = EarlyStopping(monitor="val_loss", min_delta=0.01, patience=2, restore_best_weights=True)
    >>> stop.min_delta, stop.patience    # stored signed: a loss must fall by more than 0.01
    (-0.01, 2)
"""

from __future__ import annotations

import math
from typing import Any

from arignote.callbacks import _monitor
from arignote.callbacks.base import Callback

__all__ = ["EarlyStopping", "TerminateOnNaN"]


class EarlyStopping(Callback):
    """Stop when ``monitor`` has not improved by more than ``min_delta`` for ``patience`` epochs.

    Keras 2 arguments: ``monitor='val_loss'``, ``min_delta=0``, ``patience=0``, ``verbose=0``,
    ``mode='auto'``, ``baseline=None`` (training stops if the monitored value does not beat it
    within ``patience`` epochs), ``restore_best_weights=False`` (set the weights of the best epoch
    back when stopping). ``stopped_epoch`` is the 0-based epoch at which training stopped.
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False) -> None:
        super().__init__()
        _monitor.whole_number(patience, "patience", "EarlyStopping", 0, "epochs")
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.mode = _monitor.check_mode(mode, "EarlyStopping")
        self.monitor_op = _monitor.improvement(monitor, self.mode)
        # Keras stores min_delta signed, so ``current - min_delta`` compares in the right direction.
        self.min_delta = abs(min_delta) if _monitor.maximizes(monitor, self.mode) else -abs(min_delta)
        self.wait = 0
        self.stopped_epoch = 0
        self.best = self._initial_best()
        self.best_epoch: int | None = None
        self.best_weights: Any = None

    def _initial_best(self) -> float:
        if self.baseline is not None:
            return float(self.baseline)
        return -math.inf if _monitor.maximizes(self.monitor, self.mode) else math.inf

    def on_train_begin(self, logs=None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = self._initial_best()
        self.best_epoch = None
        self.best_weights = None

    def on_epoch_end(self, epoch, logs=None) -> None:
        current = _monitor.monitor_value(logs, self.monitor, "EarlyStopping")
        if current is None:
            return
        if self.monitor_op(current - self.min_delta, self.best):
            self.best = current
            self.best_epoch = epoch
            self.wait = 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            # No best weights when the baseline was never beaten: keep the current ones (as Keras).
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0 and _monitor.is_main(self.model):
                    _monitor.say("Restoring model weights from the end of the best epoch "
                                 f"({self.best_epoch + 1}).")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0 and _monitor.is_main(self.model):
            _monitor.say(f"Epoch {self.stopped_epoch + 1:05d}: early stopping")


class TerminateOnNaN(Callback):
    """Stop training as soon as a batch loss is NaN or infinite (Keras 2).

    Reading each batch's loss waits for the device once a batch, which is what this check costs;
    the epoch-end loss is checked as well.
    """

    def __init__(self) -> None:
        super().__init__()
        self.terminated_at: tuple[int, int] | None = None
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None) -> None:
        self._epoch = epoch

    def _check(self, loss: Any, where: str) -> bool:
        if loss is None:
            return False
        value = float(loss)
        if math.isfinite(value):
            return False
        if _monitor.is_main(self.model):
            _monitor.say(f"{where}: Invalid loss, terminating training")
        self.model.stop_training = True
        return True

    def on_train_batch_end(self, batch, logs=None) -> None:
        if self.terminated_at is None and self._check((logs or {}).get("loss"), f"Batch {batch}"):
            self.terminated_at = (self._epoch, batch)

    def on_epoch_end(self, epoch, logs=None) -> None:
        if self.terminated_at is None and self._check((logs or {}).get("loss"), f"Epoch {epoch + 1}"):
            self.terminated_at = (epoch, -1)
