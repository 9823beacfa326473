"""K's questions about a tensor, none of which records a graph node except ``K.shape``: its shape
(``int_shape``, ``ndim``, ``count_params``), dtype and kind (``is_keras_tensor``, ``is_variable``,
``is_placeholder``, ``is_sparse``).

Example::

    >>> import torch
    >>> x = torch.zeros(2, 3)
    >>> int_shape(x), ndim(x), dtype(x), count_params(x), is_variable(x)
    ((2, 3), 2, 'float32', 6, False)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from arignote.graph.tensor import KerasTensor
from arignote.layers.op_layer import symbolic
from arignote.ops.arguments import _t

__all__ = [
    "int_shape", "ndim", "dtype", "get_variable_shape", "count_params", "is_keras_tensor", "is_tensor",
    "shape", "size", "is_placeholder", "is_variable", "is_sparse",
]


def int_shape(x: Any) -> tuple:
    """The shape as a tuple of ints (``None`` for unknown dims of a symbolic tensor)."""
    if isinstance(x, KerasTensor):
        return x.shape
    return tuple(int(d) for d in _t(x).shape)


def ndim(x: Any) -> int:
    return len(int_shape(x))


def dtype(x: Any) -> str:
    return x.dtype if isinstance(x, KerasTensor) else str(_t(x).dtype).replace("torch.", "")


def get_variable_shape(x: Any) -> tuple:
    return int_shape(x)


def count_params(x: Any) -> int:
    return int(np.prod(int_shape(x)))


def is_keras_tensor(x: Any) -> bool:
    """True for the symbolic tensors of the functional API (``Input``, a layer's output); False for a
    variable and, as in Keras 2, for a bare :func:`placeholder`; Keras 2 raises for non-tensors."""
    if not isinstance(x, (KerasTensor, torch.Tensor)):  # a numpy array too, as Keras 2
        raise ValueError(f"Unexpectedly found an instance of type `{type(x)}`. Expected a symbolic tensor "
                         "instance.")
    return isinstance(x, KerasTensor) and not getattr(x, "_bare_placeholder", False)


def is_tensor(x: Any) -> bool:
    return isinstance(x, (KerasTensor, torch.Tensor))


@symbolic
def shape(x: Any) -> torch.Tensor:
    """The shape as a tensor (Keras ``K.shape``); use :func:`int_shape` for a tuple."""
    return torch.tensor(tuple(_t(x).shape))


def is_placeholder(x: Any) -> bool:
    """True for what :func:`placeholder` (or ``Input``) returns."""
    history = getattr(x, "_keras_history", None)
    return isinstance(x, KerasTensor) and history is not None and type(history[0]).__name__ == "InputLayer"


def is_variable(x: Any) -> bool:
    """True for what :func:`variable` returns (a torch ``Parameter``)."""
    return isinstance(x, torch.nn.Parameter)


def is_sparse(x: Any) -> bool:
    """True only for a torch sparse tensor (``K.variable`` of a scipy.sparse matrix, what
    ``K.ctc_label_dense_to_sparse`` returns); arignote's layers and placeholders are dense."""
    return isinstance(x, torch.Tensor) and x.is_sparse


@symbolic
def size(x: Any, name: str | None = None) -> torch.Tensor:  # noqa: ARG001 - Keras's signature
    """The number of elements, as a scalar int tensor."""
    return torch.tensor(_t(x).numel())
