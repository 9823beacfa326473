"""Keras 2 ``K.batch_normalization``, ``K.normalize_batch_in_training`` and
``K.moving_average_update`` on torch.

Example::

    >>> import torch
    >>> normed, mean, var = normalize_batch_in_training(torch.tensor([[1.], [3.]]), None, None, [0], 0.0)
    >>> normed.flatten().tolist(), mean.tolist(), var.tolist()
    ([-1.0, 1.0], [2.0], [1.0])
"""

from __future__ import annotations

from typing import Any

import torch

from arignote.layers.op_layer import symbolic
from arignote.ops.arguments import _t

__all__ = ["batch_normalization", "normalize_batch_in_training", "moving_average_update"]


def _along(p: Any, x: torch.Tensor, axis: int) -> Any:
    """A 1-D parameter reshaped to broadcast along ``axis`` of ``x``; others as they are."""
    if p is None:
        return None
    p = _t(p).to(x.dtype)
    if p.dim() == 1 and x.dim() > 1:
        shape = [1] * x.dim()
        shape[axis] = -1
        return p.reshape(shape)
    return p


@symbolic
def batch_normalization(x: Any, mean: Any, var: Any, beta: Any, gamma: Any, axis: int = -1,
                        epsilon: float = 1e-3) -> torch.Tensor:
    """Keras 2 ``K.batch_normalization``: ``(x - mean) / sqrt(var + epsilon) * gamma + beta``; 1-D
    parameters lie along ``axis`` (``beta``/``gamma`` may be ``None``).

    >>> batch_normalization(torch.tensor([[1., 3.]]), torch.tensor([1., 1.]), torch.tensor([4., 4.]),
    ...                     None, None, epsilon=0.0).tolist()
    [[0.0, 1.0]]
    """
    t = _t(x)
    axis = int(axis) % t.dim()
    y = (t - _along(mean, t, axis)) * torch.rsqrt(_along(var, t, axis) + epsilon)
    if gamma is not None:
        y = y * _along(gamma, t, axis)
    if beta is not None:
        y = y + _along(beta, t, axis)
    return y


@symbolic
def normalize_batch_in_training(x: Any, gamma: Any, beta: Any, reduction_axes: Any,
                                epsilon: float = 1e-3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Keras 2 ``K.normalize_batch_in_training``: ``(normed, mean, var)`` with the batch's mean and
    (biased) variance over ``reduction_axes``; ``mean``/``var`` have the other axes only.

    >>> normed, mean, var = normalize_batch_in_training(torch.tensor([[1.], [3.]]), None, None, [0], 0.0)
    >>> normed.flatten().tolist(), mean.tolist(), var.tolist()
    ([-1.0, 1.0], [2.0], [1.0])
    """
    t = _t(x)
    axes = sorted({int(a) % t.dim() for a in reduction_axes})
    kept = [a for a in range(t.dim()) if a not in axes]
    mean = t.mean(dim=axes, keepdim=True)
    var = t.var(dim=axes, unbiased=False, keepdim=True)
    target = [1 if a in axes else t.shape[a] for a in range(t.dim())]
    y = (t - mean) * torch.rsqrt(var + epsilon)
    if gamma is not None:
        y = y * _t(gamma).to(t.dtype).reshape(target)
    if beta is not None:
        y = y + _t(beta).to(t.dtype).reshape(target)
    out_shape = [t.shape[a] for a in kept]
    return y, mean.reshape(out_shape), var.reshape(out_shape)


def moving_average_update(x: torch.Tensor, value: Any, momentum: float) -> torch.Tensor:
    """Keras 2 ``K.moving_average_update``: in place ``x = x * momentum + value * (1 - momentum)``
    (torch runs the update at once; it returns ``x``).

    >>> moving_average_update(torch.zeros(2), torch.ones(2), 0.9).tolist()
    [0.10000000149011612, 0.10000000149011612]
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"K.moving_average_update: x must be a tensor updated in place (K.variable or a "
                        f"layer's weight), got a {type(x).__name__}")
    with torch.no_grad():
        x.sub_((x - _t(value).to(x.dtype)) * (1.0 - momentum))
    return x
