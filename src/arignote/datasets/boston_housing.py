"""Boston housing prices, as ``keras.datasets.boston_housing``: 506 samples, 13 features, price.

Reads Keras's ``boston_housing.npz`` (``x``: float64 (506, 13), ``y``: float64 (506,)) through
:func:`arignote.utils.data_utils.get_file`, with Keras's sha256.

Example::

    >>> from arignote.datasets import boston_housing
    >>> (x_train, y_train), (x_test, y_test) = boston_housing.load_data()   # doctest: +SKIP
    >>> x_train.shape, x_test.shape                                           # doctest: +SKIP
    ((404, 13), (102, 13))
"""

from __future__ import annotations

import numpy as np

from arignote.datasets._files import DatasetError
from arignote.datasets._formats import read_npz
from arignote.datasets._get_file import get_file
from arignote.datasets._sequences import shuffled

__all__ = ["load_data", "ORIGIN", "FILE_HASH"]

ORIGIN = "https://s3.amazonaws.com/keras-datasets/boston_housing.npz"
FILE_HASH = "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"


def load_data(path: str = "boston_housing.npz", test_split: float = 0.2, seed: int = 113):
    """``(x_train, y_train), (x_test, y_test)`` shuffled with ``RandomState(seed)``, the last
    ``test_split`` of the samples as the test set."""
    if not 0 <= test_split < 1:
        raise ValueError(f"boston_housing.load_data: test_split={test_split!r} must be in [0, 1)")
    where = get_file(path, origin=ORIGIN, file_hash=FILE_HASH)
    a = read_npz(where, ("x", "y"))
    if a["x"].ndim != 2 or len(a["y"]) != len(a["x"]):
        raise DatasetError(f"{where}: x {a['x'].shape} / y {a['y'].shape} are not (N, 13) / (N,)")
    x, y = shuffled(np.random.RandomState(seed), a["x"], a["y"])
    idx = int(len(x) * (1 - test_split))
    return (x[:idx], y[:idx]), (x[idx:], y[idx:])
