"""Learning-rate callbacks: LearningRateScheduler (a function of the epoch) and ReduceLROnPlateau.

Both read and write ``model.optimizer.lr`` (arignote optimizers expose the learning rate of every
parameter group as that one property), and record the rate as ``logs['lr']`` at epoch end so
History, CSVLogger and TensorBoard show it.

Example::

    >>> sched = LearningRateScheduler(lambda epoch: 0.1 * 0.5 ** epoch)
    >>> sched.rate_for(2, 0.1)
    0.025
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from typing import Any

from arignote.callbacks import _monitor
from arignote.callbacks.base import Callback

__all__ = ["LearningRateScheduler", "ReduceLROnPlateau"]


def _positional_arity(fn: Callable[..., Any]) -> int:
    """How many positional arguments ``fn`` accepts (2 or more means ``schedule(epoch, lr)``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature: assume schedule(epoch)
        return 1
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return 2
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(k in positional for k in kinds)


class LearningRateScheduler(Callback):
    """Set the learning rate at the start of each epoch to ``schedule(epoch)`` or
    ``schedule(epoch, lr)`` (0-based epoch, current rate), as Keras 2.

    ``verbose=1`` prints ``Epoch 00003: LearningRateScheduler setting learning rate to 0.025.``
    """

    def __init__(self, schedule: Callable[..., float], verbose: int = 0) -> None:
        super().__init__()
        if not callable(schedule):
            raise TypeError(f"LearningRateScheduler: schedule must be a function of the epoch, "
                            f"got {schedule!r}")
        self.schedule = schedule
        self.verbose = verbose
        self._takes_lr = _positional_arity(schedule) >= 2

    def rate_for(self, epoch: int, lr: float) -> float:
        """The schedule's rate for 0-based ``epoch`` given the current rate ``lr``, checked."""
        value = self.schedule(epoch, lr) if self._takes_lr else self.schedule(epoch)
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
            raise ValueError(f"LearningRateScheduler: schedule({epoch}) returned {value!r}; "
                             "it must return a float")
        value = float(value)
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"LearningRateScheduler: schedule({epoch}) returned {value!r}; "
                             "a learning rate must be finite and >= 0")
        return value

    def on_epoch_begin(self, epoch, logs=None) -> None:
        lr = self.rate_for(epoch, _monitor.get_lr(self.model, "LearningRateScheduler"))
        _monitor.set_lr(self.model, lr, "LearningRateScheduler")
        if self.verbose > 0 and _monitor.is_main(self.model):
            _monitor.say(f"\nEpoch {epoch + 1:05d}: LearningRateScheduler setting learning rate to {lr}.")

    def on_epoch_end(self, epoch, logs=None) -> None:
        if isinstance(logs, dict):
            logs["lr"] = _monitor.get_lr(self.model, "LearningRateScheduler")


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by ``factor`` when ``monitor`` has not improved for ``patience``
    epochs (Keras 2): ``monitor='val_loss'``, ``factor=0.1``, ``patience=10``, ``verbose=0``,
    ``mode='auto'``, ``min_delta=1e-4`` (``epsilon`` is the Keras 2.0 spelling), ``cooldown=0``
    epochs to wait after a reduction, ``min_lr=0`` floor.
    """

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10, verbose: int = 0,
                 mode: str = "auto", min_delta: float = 1e-4, cooldown: int = 0, min_lr: float = 0,
                 epsilon: float | None = None) -> None:
        super().__init__()
        if epsilon is not None:
            # Keras 2.3.1's words and category (a UserWarning: shown by default, as there)
            warnings.warn("`epsilon` argument is deprecated and will be removed, use `min_delta` instead.",
                          stacklevel=2)
            min_delta = epsilon
        if not 0 <= factor < 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor={factor!r} must be in [0, 1) "
                             "(the rate is multiplied by it)")
        _monitor.whole_number(patience, "patience", "ReduceLROnPlateau", 0, "epochs")
        _monitor.whole_number(cooldown, "cooldown", "ReduceLROnPlateau", 0, "epochs")
        if min_lr < 0:
            raise ValueError(f"ReduceLROnPlateau: min_lr={min_lr!r} must be >= 0")
        self.monitor = monitor
        self.factor = float(factor)
        self.patience = patience
        self.verbose = verbose
        self.mode = _monitor.check_mode(mode, "ReduceLROnPlateau")
        self.min_delta = float(min_delta)
        self.cooldown = cooldown
        self.min_lr = float(min_lr)
        self._reset()

    def _reset(self) -> None:
        if _monitor.maximizes(self.monitor, self.mode):
            self.monitor_op = lambda a, b: a > b + self.min_delta
            self.best = -math.inf
        else:
            self.monitor_op = lambda a, b: a < b - self.min_delta
            self.best = math.inf
        self.cooldown_counter = 0
        self.wait = 0

    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def on_train_begin(self, logs=None) -> None:
        self._reset()

    def on_epoch_end(self, epoch, logs=None) -> None:
        lr = _monitor.get_lr(self.model, "ReduceLROnPlateau")
        if isinstance(logs, dict):
            logs["lr"] = lr
        current = _monitor.monitor_value(logs, self.monitor, "ReduceLROnPlateau")
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience and lr > self.min_lr:
                new_lr = max(lr * self.factor, self.min_lr)
                _monitor.set_lr(self.model, new_lr, "ReduceLROnPlateau")
                if self.verbose > 0 and _monitor.is_main(self.model):
                    _monitor.say(f"\nEpoch {epoch + 1:05d}: ReduceLROnPlateau reducing learning rate "
                                 f"to {new_lr}.")
                self.cooldown_counter = self.cooldown
                self.wait = 0
