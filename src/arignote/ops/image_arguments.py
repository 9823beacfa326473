"""What K's image operations (convolutions, pooling, resizing, padding) check and pad before torch
sees them: an int or a tuple of ints per spatial axis, an image of the right rank, and the zeros a
'valid' torch call needs for TensorFlow's ``padding='same'`` (the odd one after) or ``'causal'``.

Example::

    >>> import torch
    >>> _tuple(2, 3, "strides", "conv3d"), tuple(_image(torch.ones(1, 4, 4, 1), 2, "conv2d").shape)
    ((2, 2, 2), (1, 4, 4, 1))
    >>> _padded(torch.ones(1, 1, 4), "causal", (3,), (1,), (1,)).flatten().tolist()
    [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

import numbers
from typing import Any

import torch
import torch.nn.functional as F

from arignote.layers._util import pad_arg, same_pads
from arignote.ops.arguments import _t

__all__ = []


def _tuple(value: Any, n: int, name: str, where: str) -> tuple[int, ...]:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * n
    try:
        values = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        values = ()
    if len(values) != n or any(v < 1 for v in values):
        raise ValueError(f"K.{where}: {name} must be an int or a tuple of {n} ints >= 1, got {value!r}")
    return values


def _image(x: Any, rank: int, where: str) -> torch.Tensor:
    t = _t(x)
    if t.dim() != rank + 2:
        raise ValueError(f"K.{where}: x must be a {rank + 2}-D tensor (batch, {rank} spatial axes and "
                         f"channels), got shape {tuple(t.shape)}")
    return t


def _padded(x: torch.Tensor, padding: str, ks: tuple, strides: tuple, dilation: tuple,
            value: float = 0.0) -> torch.Tensor:
    """``x`` (channels first) padded for a 'valid' kernel call: TensorFlow's 'same' (the odd one after)
    or 'causal' (all before)."""
    if padding == "valid":
        return x
    if padding == "causal":
        pads = [((k - 1) * d, 0) for k, d in zip(ks, dilation)]
    else:
        pads = [same_pads(int(n), k, s, d) for n, k, s, d in zip(x.shape[2:], ks, strides, dilation)]
    if all(p == (0, 0) for p in pads):
        return x
    return F.pad(x, pad_arg(pads), value=value)
