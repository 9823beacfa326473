"""ModelCheckpoint: save the model (or its weights) every epoch, every N batches, or when it improves.

Keras 2 semantics: ``filepath`` is formatted with ``epoch`` (1-based) and the logs, so
``weights.{epoch:02d}-{val_loss:.2f}.h5`` gives ``weights.03-0.42.h5``; with ``save_best_only`` the
file is written only when ``monitor`` improves. Files are written by ``model.save`` /
``model.save_weights`` on rank 0 only, atomically: Keras 2 HDF5 for ``.h5``/``.hdf5``/``.keras``
names, arignote's checksummed checkpoint for any other.

Beyond Keras, a checkpoint is never made of a bad state: weights holding NaN/Inf are not saved (a
warning names the tensors and the last good file, which stays), and an epoch that ended early
(``stop_training`` during its batches) is not saved as if it were finished. A save that fails (disk
full, quota, file-size limit, read-only, a directory in the way) raises
:class:`arignote.checkpoint.CheckpointSaveError` naming the file, the cause and the last checkpoint
this callback wrote, which is intact. Temporary files left by saves that were killed midway are
removed at this callback's next save.

Example::

    >>> cb = ModelCheckpoint("weights.{epoch:02d}-{val_loss:.2f}.h5", save_best_only=True)
    >>> cb.filepath_for(epoch=2, logs={"val_loss": 0.4217})
    'weights.03-0.42.h5'
"""

from __future__ import annotations

import math
import os
import re
import string
import time
import warnings
from collections.abc import Mapping
from typing import Any

from arignote import checkpoint
from arignote.callbacks import _guard, _monitor
from arignote.callbacks.base import Callback
from arignote.metrics.names import Logs

__all__ = ["ModelCheckpoint"]

# file times come from the kernel's coarse clock, a little behind time.time(): a temporary file is
# a leftover when it is older than this run's start by more than this many seconds
_CLOCK_SLACK = 2.0


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
        self.last_saved: str | None = None  # the newest file this callback wrote
        self._started = time.time()  # temporary files older than this run's start are leftovers
        self._names = _name_pattern(os.path.basename(self.filepath))

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
        try:  # Logs answers either era's names: {val_acc:.2f} finds val_accuracy and vice versa
            return self.filepath.format_map(Logs(epoch=epoch + 1, **extra, **values))
        except KeyError as exc:
            available = ", ".join(["epoch", *extra, *sorted(values)])
            raise KeyError(f"ModelCheckpoint: filepath {self.filepath!r} uses {{{exc.args[0]}}}, which is "
                           f"not in the logs (available: {available})") from None

    # ------------------------------------------------------------------ hooks

    def on_train_begin(self, logs=None) -> None:
        self._batches_seen = 0
        self.epochs_since_last_save = 0
        self._started = time.time()

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
        if _guard.epoch_interrupted(self.model):
            if _monitor.is_main(self.model):
                _monitor.notice(f"ModelCheckpoint: epoch {epoch + 1} was interrupted before its end; "
                                f"not saving it as a finished epoch ({self._kept()})")
            return
        self.epochs_since_last_save += 1
        if self.epochs_since_last_save >= self.period:
            self.epochs_since_last_save = 0
            self._save(epoch, logs)

    # ------------------------------------------------------------------ saving

    def _kept(self) -> str:
        return f"the last good checkpoint {self.last_saved} is kept" if self.last_saved else \
            "no checkpoint was written yet"

    def _save(self, epoch: int, logs: Mapping[str, Any] | None, batch: int | None = None) -> None:
        filepath = self.filepath_for(epoch, logs, batch)
        main = _monitor.is_main(self.model)
        when = f"epoch {epoch + 1}" + ("" if batch is None else f", batch {batch + 1}")
        if main:
            bad = _guard.nonfinite_weights(self.model)
            if bad:
                warnings.warn(f"ModelCheckpoint: the weights at {when} are not finite (NaN/Inf in "
                              f"{_guard.describe_nonfinite(bad)}); not saving {filepath}; {self._kept()}",
                              RuntimeWarning, stacklevel=2)
                return
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
        self._remove_leftovers(filepath)
        try:
            directory = os.path.dirname(filepath)
            if directory:
                os.makedirs(directory, exist_ok=True)
            if self.save_weights_only:
                self.model.save_weights(filepath)
            else:
                self.model.save(filepath)
        except OSError as exc:  # CheckpointSaveError, or a writer of another format (h5py)
            first = str(exc) if isinstance(exc, checkpoint.CheckpointSaveError) else \
                str(checkpoint.save_error(filepath, exc.errno))
            kept = (f"; the last checkpoint it saved, {self.last_saved}, is intact"
                    if self.last_saved and self.last_saved != filepath else "")
            raise checkpoint.CheckpointSaveError(
                f"ModelCheckpoint: could not save {when}: {first}{kept}", exc.errno, filepath) from exc
        self.last_saved = filepath

    def _remove_leftovers(self, filepath: str) -> None:
        """Delete temporary files of this callback's saves that were killed midway (older than this
        run's start, so a save in progress elsewhere is never touched)."""
        directory = os.path.dirname(os.path.abspath(filepath))
        for tmp in checkpoint.temporary_files(directory, self._names):
            try:
                if os.path.getmtime(tmp) < self._started - _CLOCK_SLACK:
                    os.remove(tmp)
            except OSError:
                pass  # gone already, or not ours to remove


def _name_pattern(name: str) -> re.Pattern[str]:
    """A regex matching every file name that ``name`` (a format pattern) can produce.

    >>> bool(_name_pattern("w.{epoch:02d}-{val_loss:.2f}.h5").fullmatch("w.03-0.42.h5"))
    True
    """
    parts = []
    for literal, field, _spec, _conv in string.Formatter().parse(name):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append(".+")
    return re.compile("".join(parts))


class _AnyKey(dict):
    """A mapping that has every key (missing ones are 0.0) so a pattern can be test-formatted up front."""

    def __missing__(self, key: str) -> float:
        return 0.0
