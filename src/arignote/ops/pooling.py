"""Keras 2 ``K.pool2d`` and ``K.pool3d`` on torch: max or average pooling, TensorFlow's ``'same'``
padding (an average counts the real elements of each window only).

Example::

    >>> import torch
    >>> pool2d(torch.ones(1, 4, 4, 1), (2, 2), strides=(2, 2), pool_mode="avg").shape
    torch.Size([1, 2, 2, 1])
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote.backend.common import normalize_data_format
from arignote.layers._util import from_torch, normalize_padding, to_torch
from arignote.layers.op_layer import symbolic
from arignote.ops.image_arguments import _image, _padded, _tuple

__all__ = ["pool2d", "pool3d"]

_MAX = {2: F.max_pool2d, 3: F.max_pool3d}
_AVG = {2: F.avg_pool2d, 3: F.avg_pool3d}


def _pool(x: Any, pool_size: Any, strides: Any, padding: str, data_format: Any, pool_mode: str,
          rank: int, where: str) -> torch.Tensor:
    data_format = normalize_data_format(data_format, f"K.{where}")
    padding = normalize_padding(padding, f"K.{where}")
    if pool_mode not in ("max", "avg"):
        raise ValueError(f"K.{where}: Invalid pool_mode: {pool_mode!r}; use 'max' or 'avg'")
    size = _tuple(pool_size, rank, "pool_size", where)
    strides = _tuple(strides, rank, "strides", where)
    xt = to_torch(_image(x, rank, where), data_format)
    ones = (1,) * rank
    if pool_mode == "max":
        y = _MAX[rank](_padded(xt, padding, size, strides, ones, float("-inf")), size, strides)
    else:  # TensorFlow's 'same' averages over the real elements of each window only
        summed = _AVG[rank](_padded(xt, padding, size, strides, ones), size, strides, divisor_override=1)
        ones_t = torch.ones((1, 1, *xt.shape[2:]), dtype=xt.dtype, device=xt.device)
        count = _AVG[rank](_padded(ones_t, padding, size, strides, ones), size, strides, divisor_override=1)
        y = summed / count
    return from_torch(y, data_format)


@symbolic
def pool2d(x: Any, pool_size: Any, strides: Any = (1, 1), padding: str = "valid", data_format: Any = None,
           pool_mode: str = "max") -> torch.Tensor:
    """Keras 2 ``K.pool2d``: ``pool_mode`` ``'max'`` or ``'avg'`` (``'same'`` averages exclude padding).

    >>> pool2d(torch.arange(9.).reshape(1, 3, 3, 1), (2, 2), (2, 2), "same")[0, :, :, 0].tolist()
    [[4.0, 5.0], [7.0, 8.0]]
    """
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 2, "pool2d")


@symbolic
def pool3d(x: Any, pool_size: Any, strides: Any = (1, 1, 1), padding: str = "valid", data_format: Any = None,
           pool_mode: str = "max") -> torch.Tensor:
    """Keras 2 ``K.pool3d``.

    >>> pool3d(torch.ones(1, 4, 4, 4, 2), (2, 2, 2), (2, 2, 2), pool_mode="avg").shape
    torch.Size([1, 2, 2, 2, 2])
    """
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 3, "pool3d")
