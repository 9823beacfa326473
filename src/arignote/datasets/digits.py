"""The real 8x8 handwritten digits that scikit-learn ships (1,797 images, UCI "optdigits" test set).

Read straight from ``sklearn/datasets/data/digits.csv.gz`` inside the installed scikit-learn
package, without importing scikit-learn (it is only a data source here). Small enough to train
a CNN to > 95% accuracy in seconds on a CPU, which is what ``arignote demo`` does.

Example::

    >>> from arignote.datasets import digits
    >>> (x_train, y_train), (x_test, y_test) = digits.load_data(test_split=0.2, seed=0)
    >>> x_train.shape, x_train.dtype, y_train.dtype, len(x_test)
    ((1438, 8, 8, 1), dtype('float32'), dtype('int64'), 359)
"""

from __future__ import annotations

import gzip
import importlib.util
import os

import numpy as np

from arignote.datasets._files import DatasetError

__all__ = ["load_data", "find"]

_RELATIVE = os.path.join("datasets", "data", "digits.csv.gz")
_N, _PIXELS = 1797, 64


def find() -> str | None:
    """Path of ``digits.csv.gz`` in the installed scikit-learn, or None when it is not installed."""
    spec = importlib.util.find_spec("sklearn")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = os.path.join(location, _RELATIVE)
        if os.path.isfile(path):
            return path
    return None


def load_data(test_split: float = 0.2, seed: int = 113):
    """``(x_train, y_train), (x_test, y_test)``: float32 images (N, 8, 8, 1) in [0, 1] (pixel / 16)
    and int64 labels 0..9, split at random (``seed``) with ``test_split`` of the images held out."""
    if not 0.0 <= test_split < 1.0:
        raise ValueError(f"digits.load_data: test_split={test_split!r} must be in [0, 1)")
    path = find()
    if path is None:
        raise DatasetError("the digits data comes with scikit-learn, which is not installed; "
                           "install it with: pip install arignote[digits]")
    try:
        with gzip.open(path, "rt") as fh:
            table = np.loadtxt(fh, delimiter=",", dtype=np.float64)
    except (OSError, EOFError, ValueError) as exc:
        raise DatasetError(f"{path} cannot be read ({exc}); reinstall scikit-learn") from None
    if table.shape != (_N, _PIXELS + 1):
        raise DatasetError(f"{path} has shape {table.shape}, expected ({_N}, {_PIXELS + 1}); "
                           "reinstall scikit-learn")
    x = (table[:, :_PIXELS] / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    y = table[:, _PIXELS].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_split))
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])
