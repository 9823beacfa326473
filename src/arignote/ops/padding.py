"""Keras 2 ``K.temporal_padding``, ``K.spatial_2d_padding`` and ``K.spatial_3d_padding`` on torch:
zeros before and after each spatial axis, given as ``(before, after)`` pairs.

Example::

    >>> import torch
    >>> spatial_2d_padding(torch.ones(1, 2, 2, 1), ((1, 0), (0, 2))).shape
    torch.Size([1, 3, 4, 1])
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote.backend.common import normalize_data_format
from arignote.layers._util import pad_arg
from arignote.layers.op_layer import symbolic
from arignote.ops.image_arguments import _image

__all__ = ["temporal_padding", "spatial_2d_padding", "spatial_3d_padding"]


def _pad_pairs(padding: Any, rank: int, where: str) -> list[tuple[int, int]]:
    try:
        pairs = [tuple(int(v) for v in p) for p in padding] if rank > 1 else [tuple(int(v) for v in padding)]
    except (TypeError, ValueError):
        pairs = []
    if len(pairs) != rank or any(len(p) != 2 or min(p) < 0 for p in pairs):
        form = "(before, after)" if rank == 1 else "(" + ", ".join(["(before, after)"] * rank) + ")"
        raise ValueError(f"K.{where}: padding must be {form} of ints >= 0, got {padding!r}")
    return pairs


def _zero_pad(x: Any, padding: Any, rank: int, data_format: str, where: str) -> torch.Tensor:
    t = _image(x, rank, where)
    pairs = _pad_pairs(padding, rank, where)
    if data_format == "channels_last":
        pairs = [*pairs, (0, 0)]  # F.pad's pairs start from the last axis
    return F.pad(t, pad_arg(pairs))


@symbolic
def temporal_padding(x: Any, padding: Any = (1, 1)) -> torch.Tensor:
    """Keras 2 ``K.temporal_padding``: zeros before and after the steps of ``(batch, steps, features)``.

    >>> temporal_padding(torch.ones(1, 2, 1), (1, 2)).flatten().tolist()
    [0.0, 1.0, 1.0, 0.0, 0.0]
    """
    return _zero_pad(x, padding, 1, "channels_last", "temporal_padding")


@symbolic
def spatial_2d_padding(x: Any, padding: Any = ((1, 1), (1, 1)), data_format: Any = None) -> torch.Tensor:
    """Keras 2 ``K.spatial_2d_padding``: ``((top, bottom), (left, right))`` zeros around the images.

    >>> spatial_2d_padding(torch.ones(1, 2, 2, 1), ((1, 0), (0, 2))).shape
    torch.Size([1, 3, 4, 1])
    """
    fmt = normalize_data_format(data_format, "K.spatial_2d_padding")
    return _zero_pad(x, padding, 2, fmt, "spatial_2d_padding")


@symbolic
def spatial_3d_padding(x: Any, padding: Any = ((1, 1), (1, 1), (1, 1)),
                       data_format: Any = None) -> torch.Tensor:
    """Keras 2 ``K.spatial_3d_padding``: ``((d0, d1), (h0, h1), (w0, w1))`` zeros around the volumes.

    >>> spatial_3d_padding(torch.ones(1, 1, 2, 2, 2), data_format="channels_first").shape
    torch.Size([1, 1, 4, 4, 4])
    """
    fmt = normalize_data_format(data_format, "K.spatial_3d_padding")
    return _zero_pad(x, padding, 3, fmt, "spatial_3d_padding")
