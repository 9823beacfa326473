"""Callbacks that stop training: EarlyStopping (no improvement) and TerminateOnNaN (loss blew up).

Example::

    >>> stop = EarlyStopping(monitor="val_loss", min_delta=0.01, patience=2, restore_best_weights=True)
    >>> stop.min_delta, stop.patience    # stored signed: a loss must fall by more than 0.01
    (-0.01, 2)
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from arignote.callbacks import _guard, _monitor
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

    ``restore=True`` (beyond Keras) also rolls the in-memory model back to the last good state when
    it stops: the weights and optimizer state at the end of the last finished epoch whose weights
    were finite (or at the start of ``fit`` when no epoch finished), so a script that goes on to
    ``evaluate``, ``predict`` or ``save`` after a NaN uses usable weights. It costs one host-memory
    copy of the model's ``state_dict`` and of the optimizer's state (for Adam: about 3 x the
    weights' size), refreshed at each epoch end (one device-to-host copy of them per epoch).
    ``restored_from`` is the number of finished epochs the restored state belongs to.

    Example::

        >>> stop = TerminateOnNaN(restore=True)
        >>> # model.fit(x, y, callbacks=[stop]); after a NaN, model holds the last good epoch's weights
    """

    def __init__(self, restore: bool = False) -> None:
        super().__init__()
        if not isinstance(restore, bool):
            raise ValueError(f"TerminateOnNaN: restore={restore!r} must be True or False")
        self.restore = restore
        self.terminated_at: tuple[int, int] | None = None
        self.restored_from: int | None = None
        self._epoch = 0
        self._good: dict[str, Any] | None = None  # host copy of the last good state (restore=True)
        self._good_epochs = 0

    def on_train_begin(self, logs=None) -> None:
        self.terminated_at = None
        self.restored_from = None
        if self.restore:
            self._keep(int(getattr(self.model, "epochs_done", 0) or 0))

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
        if not self.restore:
            return
        if self.terminated_at is None and not _guard.epoch_interrupted(self.model) \
                and not _guard.nonfinite_weights(self.model):
            self._keep(epoch + 1)

    def on_train_end(self, logs=None) -> None:
        if self.restore and self.terminated_at is not None and self._good is not None:
            self._roll_back()

    # ------------------------------------------------------------------ restore=True

    def _keep(self, epochs_done: int) -> None:
        """A host copy of the model's weights and optimizer state (what a roll-back restores)."""
        module = getattr(self.model, "module", None)
        if module is None:
            return
        state: dict[str, Any] = {"module": _to_host(module.state_dict())}
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and getattr(optimizer, "built", True) and hasattr(optimizer, "state_dict"):
            try:
                state["optimizer"] = _to_host(optimizer.state_dict())
            except (RuntimeError, AttributeError):
                pass  # an optimizer that never stepped has no state yet
        self._good, self._good_epochs = state, epochs_done

    def _roll_back(self) -> None:
        assert self._good is not None
        self.model.module.load_state_dict(self._good["module"])
        optimizer = getattr(self.model, "optimizer", None)
        if "optimizer" in self._good and optimizer is not None:
            optimizer.load_state_dict(self._good["optimizer"])
        if hasattr(self.model, "epochs_done"):
            self.model.epochs_done = self._good_epochs
        self.restored_from = self._good_epochs
        if _monitor.is_main(self.model):
            _monitor.say(f"TerminateOnNaN: restored the weights of the last good state "
                         f"({self._good_epochs} epochs done)")


def _to_host(obj: Any) -> Any:
    """A deep copy of a state dict with every tensor on the host (a tensor already on the host is
    copied too: the model keeps training in place)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: _to_host(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_host(v) for v in obj)
    return copy.deepcopy(obj)
