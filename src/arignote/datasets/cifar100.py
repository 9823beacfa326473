"""CIFAR-100, as ``keras.datasets.cifar100``: 50,000 + 10,000 32x32 colour images, 100 (or 20) classes.

Fetched as Keras does: :func:`arignote.utils.data_utils.get_file` with ``untar=True`` gives the
folder ``cifar-100-python/`` (files ``train`` and ``test``: Python pickles with ``data`` (N, 3072)
uint8 and ``fine_labels`` / ``coarse_labels``), extracted from ``cifar-100-python.tar.gz`` in
``~/.keras/datasets`` (or arignote's dataset directories). The pickles are read by the restricted
unpickler of :mod:`arignote.datasets.cifar10`.

Example::

    >>> from arignote.datasets import cifar100
    >>> (x_train, y_train), _ = cifar100.load_data(label_mode="coarse")   # doctest: +SKIP
    >>> x_train.shape, y_train.shape, int(y_train.max())                   # doctest: +SKIP
    ((50000, 32, 32, 3), (50000, 1), 19)
"""

from __future__ import annotations

import os

import numpy as np

from arignote import backend
from arignote.datasets._files import DatasetError
from arignote.datasets._formats import safe_unpickle
from arignote.datasets._get_file import get_file
from arignote.datasets.cifar import check_batch, load_batch

__all__ = ["load_data", "load_batch", "ORIGIN", "FILE_HASH"]

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
# md5 published on the CIFAR page; checked when the archive is downloaded.
FILE_HASH = "eb9058c3a382ffc7106e4002c42a8d85"
_LABEL_MODES = ("fine", "coarse")


def load_data(label_mode: str = "fine"):
    """``(x_train, y_train), (x_test, y_test)``: uint8 images (N, 32, 32, 3) (channels-first when
    ``backend.image_data_format()`` says so), labels (N, 1): 100 ``'fine'`` or 20 ``'coarse'`` classes."""
    if label_mode not in _LABEL_MODES:
        raise ValueError(f"cifar100.load_data: label_mode={label_mode!r} must be one of 'fine', 'coarse'")
    folder = get_file("cifar-100-python", origin=ORIGIN, untar=True, file_hash=FILE_HASH)
    out = []
    for split in ("train", "test"):
        x, y = _read(os.path.join(folder, split), label_mode + "_labels")
        if backend.image_data_format() == "channels_last":
            x = x.transpose(0, 2, 3, 1)
        out.append((np.ascontiguousarray(x), y.reshape(-1, 1)))
    return out[0], out[1]


def _read(path: str, label_key: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        with open(path, "rb") as fh:
            d = safe_unpickle(fh, path)
    except FileNotFoundError:
        raise DatasetError(f"{path} is missing: the cifar-100-python folder is incomplete; delete it "
                           "and load again") from None
    return check_batch(d, label_key, path)
