"""The real 8x8 handwritten digits (1,797 images, the test set of UCI "optdigits"), shipped inside
arignote as ``arignote/datasets/data/digits.csv.gz`` (57 KB; the copy scikit-learn distributes;
CC BY 4.0, attribution in ``data/DIGITS-SOURCE.txt``). Nothing to download or install.

Small enough to train a CNN to > 95% accuracy in seconds on a CPU, which is what ``arignote demo``
does.

Example::

    >>> from arignote.datasets import digits
    >>> (x_train, y_train), (x_test, y_test) = digits.load_data(test_split=0.2, seed=0)
    >>> x_train.shape, x_train.dtype, y_train.dtype, len(x_test)
    ((1438, 8, 8, 1), dtype('float32'), dtype('int64'), 359)
"""

from __future__ import annotations

import gzip
import hashlib
import os

import numpy as np

from arignote.errors import DatasetError

__all__ = ["load_data", "path", "SHA256"]

SHA256 = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"
_N, _PIXELS = 1797, 64


def path() -> str:
    """Where the packaged ``digits.csv.gz`` is."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.csv.gz")


def load_data(test_split: float = 0.2, seed: int = 113):
    """``(x_train, y_train), (x_test, y_test)``: float32 images (N, 8, 8, 1) in [0, 1] (pixel / 16)
    and int64 labels 0..9, split at random (``seed``) with ``test_split`` of the images held out."""
    if not 0.0 <= test_split < 1.0:
        raise ValueError(f"digits.load_data: test_split={test_split!r} must be in [0, 1)")
    where = path()
    try:
        with open(where, "rb") as fh:
            blob = fh.read()
    except OSError as exc:
        raise DatasetError(f"{where} cannot be read ({exc.strerror}); reinstall arignote") from None
    if hashlib.sha256(blob).hexdigest() != SHA256:
        raise DatasetError(f"{where} is damaged (sha256 differs from {SHA256}); reinstall arignote")
    table = np.loadtxt(gzip.decompress(blob).decode("ascii").splitlines(), delimiter=",", dtype=np.float64)
    x = (table[:, :_PIXELS] / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    y = table[:, _PIXELS].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_split))
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])
