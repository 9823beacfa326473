"""``amax`` over some dimensions with a lighter backward pass (the global max poolings' reduction).

torch's ``amax`` backward splits the gradient evenly between tied maxima as
``(grad / mask.sum(dims)) * mask`` with ``mask = (x == max)``: the boolean sum and the product are
each preceded by a full-size conversion copy of the mask (to ``int64``, to the float type), five
passes over an input-sized tensor. :func:`amax` gives the same gradient, tie for tie, in three:
the mask, its per-column count summed in ``int16`` (no conversion copy), and one
``where(mask, grad / count, 0)``. ``grad / count`` divides by the same count torch divides by, so
each entry is bit for bit torch's (an entry off the maximum is ``+0.0`` where torch's can be ``-0.0``;
a NaN input or gradient gives zeros off the maximum where torch's product spreads the NaN).

:func:`uses_light_backward` decides which calls take it (pure, unit-tested): a floating input that
needs a gradient, reduced over at most 32767 entries (the ``int16`` count). Others run torch's own.

Example::

    >>> import torch
    >>> x = torch.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]], requires_grad=True)
    >>> amax(x, (1,)).sum().backward(); x.grad.tolist()
    [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]
"""

from __future__ import annotations

import math

import torch

__all__ = ["amax", "uses_light_backward"]

_COUNT_LIMIT = torch.iinfo(torch.int16).max


def uses_light_backward(shape: tuple, dims: tuple, dtype: torch.dtype, requires_grad: bool) -> bool:
    """Whether :func:`amax` of a tensor (``shape``, ``dtype``) over ``dims`` runs the light backward:
    only when a gradient is needed, the dtype is floating and each max is over <= 32767 entries.

    >>> uses_light_backward((32, 398, 250), (1,), torch.float32, True)
    True
    >>> uses_light_backward((32, 398, 250), (1,), torch.float32, False)
    False
    >>> uses_light_backward((2, 40000, 3), (1,), torch.float32, True)
    False
    """
    if not requires_grad or not dtype.is_floating_point or not dims:
        return False
    return 0 < math.prod(int(shape[d]) for d in dims) <= _COUNT_LIMIT


class _Amax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, dims: tuple) -> torch.Tensor:  # type: ignore[override]
        y = x.amax(dim=dims, keepdim=True)
        ctx.save_for_backward(x, y)
        ctx.dims = dims
        return y.squeeze(dims)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple:  # type: ignore[override]
        x, y = ctx.saved_tensors
        mask = x == y
        count = mask.view(torch.uint8).sum(dim=ctx.dims, keepdim=True, dtype=torch.int16)
        share = grad.reshape(y.shape) / count
        return torch.where(mask, share, 0.0), None


def amax(x: torch.Tensor, dims: tuple) -> torch.Tensor:
    """``x.amax(dim=dims)``, its backward as torch's at fewer passes when :func:`uses_light_backward`."""
    dims = tuple(d % x.dim() for d in dims)
    if torch.is_grad_enabled() and uses_light_backward(tuple(x.shape), dims, x.dtype, x.requires_grad):
        return _Amax.apply(x, dims)
    return x.amax(dim=dims)
