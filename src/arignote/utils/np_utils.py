"""Keras 2 ``np_utils``: ``to_categorical`` and ``normalize``.

Example::

    >>> to_categorical([0, 2], 3)
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    >>> normalize([[3.0, 4.0]]).tolist()
    [[0.6, 0.8]]
"""

from __future__ import annotations

import numpy as np

__all__ = ["to_categorical", "normalize"]


def to_categorical(y, num_classes: int | None = None, dtype: str = "float32") -> np.ndarray:
    """One-hot encode integer class labels ``y`` (any shape; a trailing dim of 1 is dropped, as in Keras).

    ``num_classes`` defaults to ``max(y) + 1``. Labels must be integers in ``[0, num_classes)``.
    """
    arr = np.asarray(y)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if (
            not np.issubdtype(arr.dtype, np.floating)
            or not np.all(np.isfinite(arr))
            or np.any(arr != np.round(arr))
        ):
            raise ValueError(
                f"to_categorical expects integer class labels, got dtype {arr.dtype} with non-integer values"
            )
    arr = arr.astype(np.int64)
    if arr.ndim > 1 and arr.shape[-1] == 1:
        arr = arr.reshape(arr.shape[:-1])
    if num_classes is None:
        num_classes = int(arr.max()) + 1 if arr.size else 0
    if arr.size and (arr.min() < 0 or arr.max() >= num_classes):
        bad = int(arr.min()) if arr.min() < 0 else int(arr.max())
        raise ValueError(
            f"to_categorical: label {bad} is outside [0, {num_classes}); pass the right num_classes"
        )
    out = np.zeros((arr.size, num_classes), dtype=dtype)
    out[np.arange(arr.size), arr.reshape(-1)] = 1
    return out.reshape(*arr.shape, num_classes)


def normalize(x, axis: int = -1, order: int = 2) -> np.ndarray:
    """``x`` divided by its ``order``-norm along ``axis`` (vectors of norm 0 are left as they are)."""
    x = np.asarray(x)
    norms = np.atleast_1d(np.linalg.norm(x, order, axis))
    norms[norms == 0] = 1
    return x / np.expand_dims(norms, axis)
