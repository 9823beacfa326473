"""ModelCheckpoint: save the model (or its weights) every epoch, every N batches, or when it improves.

Keras 2 semantics: ``filepath`` is formatted with ``epoch`` (1-based) and the logs, so
``weights.{epoch:02d}-{val_loss:.2f}.h5`` gives ``weights.03-0.42.h5``; with ``save_best_only`` the
file is written only when ``monitor`` improves. Files are written by ``model.save`` /
``model.save_weights`` on rank 0 only, atomically: Keras 2 HDF5 for ``.h5``/``.hdf5``/``.keras``
names, arignote's checksummed checkpoint for any other.

Example::

    >>> cb = ModelCheckpoint("weights.{epoch:02d}-{val_loss:.2f}.h5", save_best_only=True)
    >>> cb.filepath_for(epoch=2, logs={"val_loss": 0.4217})
    'weights.03-0.42.h5'
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from arignote.callbacks import _monitor
from arignote.callbacks.base import Callback

__all__ = ["ModelCheckpoint"]


class ModelCheckpoint(Callback):
    """Save the model after every epoch (``save_freq='epoch'``, every ``period`` epochs) or every
    ``save_freq`` training batches (an int), optionally only when ``monitor`` improves.

    Arguments are Keras 2's: ``filepath``, ``monitor='val_loss'``, ``verbose=0``,
    ``save_best_only=False``, ``save_weights_only=False``, ``mode='auto'`` (``min``/``max``; auto
    maximises names holding ``acc``), ``period=1``; plus tf.keras's ``save_freq``.
    """

    def __init__(self, filepath: str | os.PathLike[str], monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False, mode: str = "auto",
                 period: int = 1, save_freq: str | int = "epoch") -> None:
        super().__init__()
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.mode = _monitor.check_mode(mode, "ModelCheckpoint")
        _monitor.whole_number(period, "period", "ModelCheckpoint", 1, "epochs between saves")
        if save_freq != "epoch":
            _monitor.whole_number(save_freq, "save_freq", "ModelCheckpoint", 1, "batches, or 'epoch'")
        self.period = period
        self.save_freq = save_freq
        self.monitor_op = _monitor.improvement(monitor, self.mode)
        self.best = -math.inf if _monitor.maximizes(monitor, self.mode) else math.inf
        self.epochs_since_last_save = 0
        self._batches_seen = 0
        self._epoch = 0
        self._check_pattern()

    def _check_pattern(self) -> None:
        # A typo such as {epoch:02f} or an unbalanced brace fails now, not after the first epoch.
        try:
            self.filepath.format_map(_AnyKey(epoch=1, batch=1))
        except (ValueError, IndexError, AttributeError) as exc:
            raise ValueError(f"ModelCheckpoint: filepath {self.filepath!r} is not a valid format pattern "
                             f"({exc}); use names like {{epoch:02d}} and {{val_loss:.2f}}") from None

    def filepath_for(self, epoch: int, logs: Mapping[str, Any] | None = None,
                     batch: int | None = None) -> str:
        """``filepath`` formatted for 0-based ``epoch`` (shown 1-based, as Keras) and ``logs``."""
        values = {k: v for k, v in dict(logs or {}).items() if k not in ("epoch", "batch")}
        extra = {} if batch is None else {"batch": batch + 1}
        try:
            return self.filepath.format(epoch=epoch + 1, **extra, **values)
        except KeyError as exc:
            available = ", ".join(["epoch", *extra, *sorted(values)])
            raise KeyError(f"ModelCheckpoint: filepath {self.filepath!r} uses {{{exc.args[0]}}}, which is "
                           f"not in the logs (available: {available})") from None

    # ------------------------------------------------------------------ hooks

    def on_train_begin(self, logs=None) -> None:
        self._batches_seen = 0
        self.epochs_since_last_save = 0

    def on_epoch_begin(self, epoch, logs=None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None) -> None:
        if self.save_freq == "epoch":
            return
        self._batches_seen += 1
        if self._batches_seen % self.save_freq == 0:
            self._save(self._epoch, logs, batch=batch)

    def on_epoch_end(self, epoch, logs=None) -> None:
        if self.save_freq != "epoch":
            return
        self.epochs_since_last_save += 1
        if self.epochs_since_last_save >= self.period:
            self.epochs_since_last_save = 0
            self._save(epoch, logs)

    # ------------------------------------------------------------------ saving

    def _save(self, epoch: int, logs: Mapping[str, Any] | None, batch: int | None = None) -> None:
        filepath = self.filepath_for(epoch, logs, batch)
        main = _monitor.is_main(self.model)
        if self.save_best_only:
            current = _monitor.monitor_value(logs, self.monitor, "ModelCheckpoint")
            if current is None:
                return
            if not self.monitor_op(current, self.best):
                if self.verbose > 0 and main:
                    _monitor.say(f"\nEpoch {epoch + 1:05d}: {self.monitor} did not improve "
                                 f"from {self.best:0.5f}")
                return
            if self.verbose > 0 and main:
                _monitor.say(f"\nEpoch {epoch + 1:05d}: {self.monitor} improved from {self.best:0.5f} to "
                             f"{current:0.5f}, saving model to {filepath}")
            self.best = current
        elif self.verbose > 0 and main:
            _monitor.say(f"\nEpoch {epoch + 1:05d}: saving model to {filepath}")
        if not main:
            return
        directory = os.path.dirname(filepath)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(filepath)
        else:
            self.model.save(filepath)


class _AnyKey(dict):
    """A mapping that has every key (missing ones are 0.0) so a pattern can be test-formatted up front."""

    def __missing__(self, key: str) -> float:
        return 0.0
