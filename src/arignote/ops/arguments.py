"""What K's operations do with their Keras arguments before torch sees them: a value becomes a
tensor (numpy floats in ``floatX``), Keras axes torch dims, a Keras dtype name a torch dtype, a shape
a tuple of ints.

Example::

    >>> import numpy as np
    >>> _t([1.5, 2.0]).dtype, _dims(_t(np.zeros((2, 3))), [-1]), _torch_dtype("int64")
    (torch.float32, (1,), torch.int64)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from arignote import config
from arignote.graph.tensor import KerasTensor

__all__ = []


def _t(x: Any) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    t = torch.as_tensor(np.asarray(x))
    return t.to(getattr(torch, config.get("floatX"))) if t.is_floating_point() else t


def _dims(x: torch.Tensor, axis: Any) -> Any:
    if axis is None:
        return None
    if isinstance(axis, np.ndarray):  # WGAN-GP's K.sum(..., axis=np.arange(1, ndim))
        axis = axis.tolist()
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) % x.dim() for a in axis)
    return int(axis)


def _torch_dtype(dtype: Any) -> torch.dtype:
    """A torch dtype from a Keras dtype name (``'float32'``), a numpy dtype or a torch dtype (what
    ``y_true.dtype`` is inside a loss)."""
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    found = getattr(torch, name, None) if name else None
    if not isinstance(found, torch.dtype):
        raise ValueError(f"K.cast: {dtype!r} is not a dtype (use a name such as 'float32', 'int64', 'bool')")
    return found


def _shape_arg(shape: Any) -> tuple:
    if isinstance(shape, KerasTensor):
        raise ValueError("a random tensor's shape must be known ints; for a per-batch shape pass the "
                         "symbolic tensor to K.random_normal_like-style code: K.random_normal(K.shape(x)) is "
                         "recorded when x is symbolic")
    if isinstance(shape, torch.Tensor):
        return tuple(int(d) for d in shape.tolist())
    return tuple(int(d) for d in shape)
