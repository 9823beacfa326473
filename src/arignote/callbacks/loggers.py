"""Callbacks that record training to files: CSVLogger and TensorBoard (real event files).

Only rank 0 writes. TensorBoard needs the optional ``tensorboard`` package
(``pip install arignote[tensorboard]``); the error says so when it is missing.

Example::

    >>> import os, tempfile
    >>> log = CSVLogger(os.path.join(tempfile.mkdtemp(), "training.log"))
    >>> log.on_train_begin()
    >>> log.on_epoch_end(0, {"loss": 0.5, "acc": 0.75})
    >>> log.on_train_end()
    >>> open(log.filename).read().splitlines()
    ['epoch,acc,loss', '0,0.75,0.5']
"""

from __future__ import annotations

import collections
import csv
import os
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from arignote.callbacks import _monitor
from arignote.callbacks.base import Callback

__all__ = ["CSVLogger", "TensorBoard"]


class CSVLogger(Callback):
    """Stream epoch results to a CSV file: an ``epoch`` column, then the log keys sorted (Keras 2).

    ``separator`` is the column delimiter; ``append=True`` continues an existing file (the header
    is written only when the file is empty), which suits a run resumed by BackupAndRestore.
    """

    def __init__(self, filename: str | os.PathLike[str], separator: str = ",", append: bool = False) -> None:
        super().__init__()
        if not isinstance(separator, str) or len(separator) != 1:
            raise ValueError(f"CSVLogger: separator={separator!r} must be a single character")
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self.keys: list[str] | None = None
        self.writer: csv.DictWriter | None = None
        self.append_header = True
        self.csv_file: Any = None

    def on_train_begin(self, logs=None) -> None:
        self.keys = None
        self.writer = None
        if not _monitor.is_main(self.model):
            return
        directory = os.path.dirname(self.filename)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename, encoding="utf-8") as fh:
                    self.append_header = not bool(len(fh.readline()))
            mode = "a"
        else:
            self.append_header = True
            mode = "w"
        self.csv_file = open(self.filename, mode, newline="", encoding="utf-8")  # noqa: SIM115 - closed at train end

    @staticmethod
    def _handle_value(value: Any) -> Any:
        is_zero_dim = isinstance(value, np.ndarray) and value.ndim == 0
        if isinstance(value, str):
            return value
        if isinstance(value, Iterable) and not is_zero_dim:
            return '"[{}]"'.format(", ".join(map(str, value)))
        return value

    def on_epoch_end(self, epoch, logs=None) -> None:
        if self.csv_file is None:
            return
        logs = dict(logs or {})
        if self.keys is None:
            self.keys = sorted(logs)
        if self.model is not None and getattr(self.model, "stop_training", False):
            # The epoch that stopped training may lack validation values: write NA, as Keras.
            logs = {k: logs.get(k, "NA") for k in self.keys}
        if self.writer is None:
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch", *self.keys], delimiter=self.sep,
                                         lineterminator="\n", extrasaction="ignore")
            if self.append_header:
                self.writer.writeheader()
        row = collections.OrderedDict({"epoch": epoch})
        row.update((key, self._handle_value(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None) -> None:
        if self.csv_file is not None:
            self.csv_file.close()
        self.csv_file = None
        self.writer = None


def _summary_writer_class() -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise ImportError(
            "TensorBoard callback needs the tensorboard package, which is not installed "
            f"({exc}); install it with: pip install arignote[tensorboard]"
        ) from None
    return SummaryWriter


class TensorBoard(Callback):
    """Write TensorBoard event files to ``log_dir`` (Keras 2 layout: one run directory, scalars named
    as the logs, ``loss``, ``val_loss``, ``acc``..., step = 0-based epoch).

    ``histogram_freq=N`` also writes a histogram of every weight every N epochs;
    ``update_freq='batch'`` or an int N writes ``batch_<name>`` scalars every N batches (step =
    samples seen; reading batch values waits for the device, so it costs a little speed);
    ``write_graph`` and ``batch_size`` are accepted for Keras 2 compatibility and change nothing
    (graphs of eager PyTorch models are not written). Keras 2's ``write_grads``, ``write_images``
    and embeddings options are not supported and raise when set.
    """

    def __init__(self, log_dir: str | os.PathLike[str] = "./logs", histogram_freq: int = 0,
                 batch_size: int | None = None, write_graph: bool = True, write_grads: bool = False,
                 write_images: bool = False, embeddings_freq: int = 0, embeddings_layer_names: Any = None,
                 embeddings_metadata: Any = None, embeddings_data: Any = None,
                 update_freq: str | int = "epoch") -> None:
        super().__init__()
        self._writer_class = _summary_writer_class()
        for name, value in (("write_grads", write_grads), ("write_images", write_images),
                            ("embeddings_freq", embeddings_freq),
                            ("embeddings_layer_names", embeddings_layer_names),
                            ("embeddings_metadata", embeddings_metadata),
                            ("embeddings_data", embeddings_data)):
            if value is not None and value is not False and not (isinstance(value, int) and value == 0):
                raise ValueError(f"TensorBoard: {name}={value!r} is not supported by arignote; remove it")
        _monitor.whole_number(histogram_freq, "histogram_freq", "TensorBoard", 0, "epochs")
        if update_freq not in ("epoch", "batch"):
            _monitor.whole_number(update_freq, "update_freq", "TensorBoard", 1, "batches, 'batch' or 'epoch'")
        if write_graph not in (True, False):
            raise ValueError(f"TensorBoard: write_graph={write_graph!r} must be True or False")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.batch_size = batch_size
        self.write_graph = write_graph
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.writer: Any = None
        self._samples_seen = 0
        self._batches_seen = 0

    def on_train_begin(self, logs=None) -> None:
        self._samples_seen = 0
        self._batches_seen = 0
        if _monitor.is_main(self.model) and self.writer is None:
            self.writer = self._writer_class(log_dir=self.log_dir)

    def on_train_batch_end(self, batch, logs=None) -> None:
        if self.writer is None or self.update_freq == "epoch":
            return
        logs = logs or {}
        size = logs.get("size")
        self._samples_seen += int(size) if size is not None else int(self.params.get("batch_size") or 1)
        self._batches_seen += 1
        if self._batches_seen % self.update_freq:
            return
        for name in logs:
            if name in ("batch", "size"):
                continue
            self.writer.add_scalar(f"batch_{name}", float(logs[name]), self._samples_seen)

    def on_epoch_end(self, epoch, logs=None) -> None:
        if self.writer is None:
            return
        for name, value in _scalars(logs or {}):
            self.writer.add_scalar(name, value, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_histograms(epoch)
        self.writer.flush()

    def _write_histograms(self, epoch: int) -> None:
        named = self._named_weights()
        for name, array in named:
            self.writer.add_histogram(name, array, epoch)

    def _named_weights(self) -> list[tuple[str, Any]]:
        # Prefer parameter names (a torch module); fall back to Keras-style get_weights() indices.
        module = getattr(self.model, "module", None)
        if module is not None and hasattr(module, "named_parameters"):
            return [(name, p.detach().cpu()) for name, p in module.named_parameters()]
        return [(f"weight_{i}", w) for i, w in enumerate(self.model.get_weights())]

    def on_train_end(self, logs=None) -> None:
        if self.writer is not None:
            self.writer.close()
        self.writer = None


def _scalars(logs: Mapping[str, Any]) -> list[tuple[str, float]]:
    out = []
    for name, value in logs.items():
        try:
            out.append((name, float(value)))
        except (TypeError, ValueError):
            warnings.warn(f"TensorBoard: log value {name}={value!r} is not a number; not written",
                          RuntimeWarning, stacklevel=3)
    return out
