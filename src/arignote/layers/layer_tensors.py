"""The torch tensors around a layer: what it is called on (numpy arrays become torch tensors, floats
in ``floatX``, as Keras feeds them) and the Keras shapes of those (batch dim ``None``); the initial
value of a weight (from an initializer, checked against the shape) and the buffers saved beside the
weights (moving averages, not caches).

Example::

    >>> import numpy as np
    >>> x = as_torch(np.zeros((2, 3)))
    >>> x.dtype, shape_of(x), shape_of([x, x])
    (torch.float32, (None, 3), [(None, 3), (None, 3)])
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch
from torch import nn

from arignote import initializers
from arignote.runtime.precision import dtype_of

__all__ = ["shape_of", "as_torch", "persistent_buffers"]


def shape_of(x: Any) -> Any:
    """Keras shape(s) of a torch tensor or a list of them, batch dim as ``None``."""
    if isinstance(x, torch.Tensor):
        return (None, *x.shape[1:]) if x.dim() else ()
    if isinstance(x, (list, tuple)):
        return [shape_of(v) for v in x]
    if isinstance(x, dict):
        return {k: shape_of(v) for k, v in x.items()}
    raise TypeError(f"a layer takes torch tensors, numpy arrays or symbolic tensors, got {type(x).__name__}")


def as_torch(x: Any) -> Any:
    """Numpy arrays (and lists of them) as torch tensors; floats in ``floatX`` as Keras feeds them."""
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        t = torch.as_tensor(x)
        if t.is_floating_point():
            t = t.to(dtype_of())
        return t
    if isinstance(x, (list, tuple)):
        return type(x)(as_torch(v) for v in x)
    if isinstance(x, dict):
        return {k: as_torch(v) for k, v in x.items()}
    if isinstance(x, numbers.Number):
        return torch.as_tensor(x)
    return x


def persistent_buffers(module: nn.Module) -> list[torch.Tensor]:
    """The buffers of ``module`` and its children that are saved (moving averages, not caches)."""
    return [b for name, b in module.state_dict(keep_vars=True).items()
            if not isinstance(b, nn.Parameter)]


def _initial_value(initializer: Any, shape: tuple, dtype: torch.dtype, where: str) -> torch.Tensor:
    """A Keras-layout weight filled by ``initializer`` (a name, a config dict, or ``init(shape, dtype)``)."""
    init = initializers.get("glorot_uniform" if initializer is None else initializer)
    if not callable(init):
        raise ValueError(f"{where}: an initializer is a name ('glorot_uniform') or a callable "
                         f"init(shape, dtype=None), got {initializer!r}")
    value = init(shape, dtype=dtype)
    value = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
    if tuple(value.shape) != tuple(shape):
        raise ValueError(f"{where}: the initializer returned shape {tuple(value.shape)}, expected {shape}")
    return value.to(dtype).clone()
