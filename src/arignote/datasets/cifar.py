"""Keras 2's ``keras.datasets.cifar``: one CIFAR batch file (a Python 2 pickle) read safely.

:func:`load_batch` is Keras 2's function; :func:`check_batch` is the structure check CIFAR-10 and
CIFAR-100 share (``b'data'``: uint8 rows of 3072 = R, G, B planes of 32x32; labels one per row).
The pickle is read by the restricted unpickler of :mod:`arignote.datasets._formats`, which allows
numpy arrays and nothing else, so a tampered file cannot run code.

Example::

    >>> import pickle, tempfile, numpy as np
    >>> path = tempfile.mktemp()
    >>> with open(path, "wb") as fh:
    ...     pickle.dump({b"data": np.zeros((2, 3072), np.uint8), b"labels": [3, 7]}, fh)
    >>> data, labels = load_batch(path)
    >>> data.shape, labels
    ((2, 3, 32, 32), [3, 7])
"""

from __future__ import annotations

import numpy as np

from arignote.datasets._files import DatasetError
from arignote.datasets._formats import safe_unpickle

__all__ = ["load_batch", "check_batch"]


def check_batch(d: object, label_key: str, where: str) -> tuple[np.ndarray, np.ndarray]:
    """``(data (N, 3, 32, 32) uint8, labels (N,) int64)`` of one unpickled batch dict, or one
    :class:`DatasetError` naming ``where`` and what is wrong."""
    key = label_key.encode()
    if not isinstance(d, dict) or b"data" not in d or key not in d:
        raise DatasetError(f"{where} is not a CIFAR batch (expected a dict with b'data' and b'{label_key}')")
    data, labels = np.asarray(d[b"data"]), np.asarray(d[key])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072 or labels.shape != (len(data),):
        raise DatasetError(f"{where}: data {data.shape} {data.dtype} / labels {labels.shape} are not "
                           "a CIFAR batch's (N, 3072) uint8 / (N,)")
    return data.reshape(-1, 3, 32, 32), labels.astype(np.int64)


def load_batch(fpath: str, label_key: str = "labels") -> tuple[np.ndarray, list]:
    """Keras 2 ``cifar.load_batch``: ``(data, labels)`` of the batch file ``fpath``, data uint8
    ``(N, 3, 32, 32)`` (channels first, as Keras returns it), labels a list of ints; ``label_key``
    is ``'labels'`` for CIFAR-10 and ``'fine_labels'`` / ``'coarse_labels'`` for CIFAR-100."""
    try:
        with open(fpath, "rb") as fh:
            d = safe_unpickle(fh, fpath)
    except FileNotFoundError:
        raise DatasetError(f"{fpath} is missing; download the dataset again (load_data does)") from None
    data, labels = check_batch(d, label_key, fpath)
    return data, labels.tolist()
