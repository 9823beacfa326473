"""K's reductions over Keras axes (``axis=None``: all of them; ``keepdims`` as Keras 2): ``K.sum``,
``K.mean``, ``K.max``, ``K.var``, ``K.logsumexp``, ``K.argmax``, the running ``K.cumsum`` /
``K.cumprod``, and ``K.l2_normalize`` (a division by one).

Example::

    >>> import torch
    >>> x = torch.tensor([[1., 2.], [3., 4.]])
    >>> sum(x, axis=-1), mean(x, axis=0, keepdims=True), max(x)
    (tensor([3., 7.]), tensor([[2., 3.]]), tensor(4.))
"""

from __future__ import annotations

from typing import Any

import torch

from arignote.layers.op_layer import symbolic
from arignote.ops.arguments import _dims, _t

__all__ = [
    "sum", "mean", "prod", "max", "min", "var", "std", "any", "all", "argmax", "argmin", "logsumexp",
    "cumsum", "cumprod", "l2_normalize",
]


def _reduce(fn: Any, x: Any, axis: Any, keepdims: bool) -> torch.Tensor:
    x = _t(x)
    dims = _dims(x, axis)
    if dims is None:
        out = fn(x)
        return out.reshape([1] * x.dim()) if keepdims else out
    return fn(x, dim=dims, keepdim=keepdims)


@symbolic
def sum(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:  # noqa: A001
    return _reduce(torch.sum, x, axis, keepdims)


@symbolic
def mean(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    x = _t(x)
    return _reduce(torch.mean, x if x.is_floating_point() else x.float(), axis, keepdims)


@symbolic
def prod(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    x = _t(x)
    dims = _dims(x, axis)
    if dims is None:
        out = torch.prod(x)
        return out.reshape([1] * x.dim()) if keepdims else out
    for d in sorted(dims if isinstance(dims, tuple) else (dims,), reverse=True):
        x = torch.prod(x, dim=d, keepdim=keepdims)
    return x


@symbolic
def max(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:  # noqa: A001
    return _reduce(torch.amax if axis is not None else torch.max, x, axis, keepdims)


@symbolic
def min(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:  # noqa: A001
    return _reduce(torch.amin if axis is not None else torch.min, x, axis, keepdims)


@symbolic
def var(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    x = _t(x)
    dims = _dims(x, axis)
    return torch.var(x, dim=dims, unbiased=False, keepdim=keepdims) if dims is not None else \
        torch.var(x, unbiased=False)


@symbolic
def std(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    return torch.sqrt(var.__wrapped_op__(x, axis, keepdims))


@symbolic
def any(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:  # noqa: A001
    x = _t(x).bool()
    return torch.any(x) if axis is None else torch.any(x, dim=_dims(x, axis), keepdim=keepdims)


@symbolic
def all(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:  # noqa: A001
    x = _t(x).bool()
    return torch.all(x) if axis is None else torch.all(x, dim=_dims(x, axis), keepdim=keepdims)


@symbolic
def argmax(x: Any, axis: int = -1) -> torch.Tensor:
    return torch.argmax(_t(x), dim=axis)


@symbolic
def argmin(x: Any, axis: int = -1) -> torch.Tensor:
    return torch.argmin(_t(x), dim=axis)


@symbolic
def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    x = _t(x)
    dims = _dims(x, axis)
    return torch.logsumexp(x, dim=dims if dims is not None else tuple(range(x.dim())), keepdim=keepdims)


@symbolic
def cumsum(x: Any, axis: int = 0) -> torch.Tensor:
    return torch.cumsum(_t(x), dim=axis)


@symbolic
def cumprod(x: Any, axis: int = 0) -> torch.Tensor:
    return torch.cumprod(_t(x), dim=axis)


@symbolic
def l2_normalize(x: Any, axis: Any = None) -> torch.Tensor:
    """``x / sqrt(max(sum(x**2, axis), epsilon))`` (Keras 2 uses 1e-12 inside)."""
    x = _t(x)
    dims = _dims(x, axis)
    sq = torch.sum(x * x, dim=dims, keepdim=True) if dims is not None else torch.sum(x * x)
    return x * torch.rsqrt(torch.clamp(sq, min=1e-12))
