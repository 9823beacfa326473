"""Pooling (Keras 2 ``keras.layers.pooling``): max/average 1-D, 2-D, 3-D and their global forms.

``padding='same'`` pads like TensorFlow; average pooling then divides by the number of real
(unpadded) elements in each window, as TensorFlow does. ``data_format`` as in the convolutions
(1-D layers default to ``channels_last``). No weights. A layer of a model loaded from a
Theano-backend file pads as Keras 2's Theano backend did (``layer.theano_same_padding``, see
:func:`theano_pool_pads`), and a model saved from it records that in the file's ``backend``.

Example::

    >>> MaxPooling2D().compute_output_shape((None, 32, 32, 3))
    (None, 16, 16, 3)
    >>> GlobalAveragePooling1D().compute_output_shape((None, 10, 4))
    (None, 4)
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from arignote.layers._util import (
    KerasLayer,
    channels_of,
    check_rank,
    conv_output_length,
    from_torch,
    normalize_data_format,
    normalize_padding,
    normalize_tuple,
    pad_arg,
    same_pads,
    spatial_of,
    to_torch,
    with_spatial,
)
from arignote.layers.base import Layer
from arignote.layers.max_reduction import amax

__all__ = [
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "GlobalMaxPooling3D",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalAveragePooling3D",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPool3D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalAvgPool3D",
]

_MAX = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def theano_pool_pads(n: int, k: int, s: int, rank: int) -> tuple[int, int]:
    """Keras 2's Theano ``'same'`` pooling of one axis as ``(before, after)`` pads (which the window
    never counts: max ignores them, average divides by the real elements): Theano pads ``k - 1``
    before (``k - 2`` for an odd ``k > 2``; 3-D: for any odd ``k``), then Keras keeps the first
    ``ceil(n / s)`` windows. A 2x2 pool of 4 values gives ``(x0, max(x1, x2))``, not TensorFlow's
    ``(max(x0, x1), max(x2, x3))``.

    Example::

        >>> theano_pool_pads(4, 2, 2, 2), same_pads(4, 2, 2)
        ((1, 0), (0, 0))
    """
    before = max(k - 2 if k % 2 == 1 and (k > 2 or rank == 3) else k - 1, 0)
    out = -(-n // s)
    return before, max(0, (out - 1) * s + k - n - before)


class _Pooling(KerasLayer, Layer):
    rank = 2
    _config_keys = ("pool_size", "padding", "strides", "data_format")

    def __init__(
        self, pool_size: Any, strides: Any, padding: str, data_format: str | None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        where = f"{type(self).__name__} '{self.name}'"
        self.pool_size = normalize_tuple(pool_size, self.rank, "pool_size", where)
        self.strides = (
            self.pool_size if strides is None else normalize_tuple(strides, self.rank, "strides", where)
        )
        self.padding = normalize_padding(padding, where)
        self.data_format = normalize_data_format(data_format, where)
        self.theano_same_padding = False  # see pad_as_theano

    def pad_as_theano(self, on: bool = True) -> None:
        """Pool ``'same'`` as Keras 2's Theano backend (:func:`theano_pool_pads`), not as TensorFlow."""
        self.theano_same_padding = bool(on)

    def build_keras(self, input_shape: tuple) -> None:
        self.output_shape_keras(input_shape)

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = check_rank(
            tuple(input_shape),
            self.rank + 2,
            f"{type(self).__name__} '{self.name}'",
            f"{self.rank}-D inputs with channels",
        )
        out = tuple(
            conv_output_length(n, self.pool_size[i], self.padding, self.strides[i])
            for i, n in enumerate(spatial_of(shape, self.data_format))
        )
        return with_spatial(shape[0], channels_of(shape, self.data_format), out, self.data_format)

    def _pads(self, x: torch.Tensor) -> tuple[int, ...] | None:
        if self.padding != "same":
            return None
        if self.theano_same_padding:
            pads = [theano_pool_pads(int(n), self.pool_size[i], self.strides[i], self.rank)
                    for i, n in enumerate(x.shape[2:])]
        else:
            pads = [same_pads(int(n), self.pool_size[i], self.strides[i]) for i, n in enumerate(x.shape[2:])]
        return None if all(p == (0, 0) for p in pads) else pad_arg(pads)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        t = to_torch(x, self.data_format)
        return from_torch(self._pool(t, self._pads(t)), self.data_format)


class _MaxPooling(_Pooling):
    def _pool(self, x: torch.Tensor, pads: tuple | None) -> torch.Tensor:
        if pads is not None:
            x = F.pad(x, pads, value=float("-inf"))
        return _MAX[self.rank](x, self.pool_size, self.strides)


class _AveragePooling(_Pooling):
    def _pool(self, x: torch.Tensor, pads: tuple | None) -> torch.Tensor:
        if pads is None:
            return _AVG[self.rank](x, self.pool_size, self.strides)
        # TensorFlow 'same': the mean over the real elements of each window only. The window sums are
        # means times the window size (not divisor_override=1, which ONNX's AveragePool has no form of)
        summed = _AVG[self.rank](F.pad(x, pads), self.pool_size, self.strides) * math.prod(self.pool_size)
        ones = torch.ones((1, 1, *x.shape[2:]), dtype=x.dtype, device=x.device)
        count = _AVG[self.rank](F.pad(ones, pads), self.pool_size, self.strides) * math.prod(self.pool_size)
        return summed / count


class MaxPooling1D(_MaxPooling):
    """Max over windows of ``pool_size=2`` steps (``strides=None`` = ``pool_size``)."""

    rank = 1

    def __init__(
        self,
        pool_size: Any = 2,
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = "channels_last",
        **kwargs: Any,
    ) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling1D(_AveragePooling):
    """Mean over windows of ``pool_size=2`` steps."""

    rank = 1

    def __init__(
        self,
        pool_size: Any = 2,
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = "channels_last",
        **kwargs: Any,
    ) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class MaxPooling2D(_MaxPooling):
    """Max over ``pool_size=(2, 2)`` windows."""

    def __init__(
        self,
        pool_size: Any = (2, 2),
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling2D(_AveragePooling):
    """Mean over ``pool_size=(2, 2)`` windows."""

    def __init__(
        self,
        pool_size: Any = (2, 2),
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class MaxPooling3D(_MaxPooling):
    """Max over ``pool_size=(2, 2, 2)`` windows of volumes."""

    rank = 3

    def __init__(
        self,
        pool_size: Any = (2, 2, 2),
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling3D(_AveragePooling):
    """Mean over ``pool_size=(2, 2, 2)`` windows of volumes."""

    rank = 3

    def __init__(
        self,
        pool_size: Any = (2, 2, 2),
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class _GlobalPooling(KerasLayer, Layer):
    rank = 2
    _config_keys = ("data_format",)

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format, f"{type(self).__name__} '{self.name}'")

    def build_keras(self, input_shape: tuple) -> None:
        self.output_shape_keras(input_shape)

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = check_rank(
            tuple(input_shape),
            self.rank + 2,
            f"{type(self).__name__} '{self.name}'",
            f"{self.rank}-D inputs with channels",
        )
        return (shape[0], channels_of(shape, self.data_format))

    def _dims(self) -> tuple[int, ...]:
        start = 2 if self.data_format == "channels_first" else 1
        return tuple(range(start, start + self.rank))


class _GlobalMax(_GlobalPooling):
    def call(self, x: torch.Tensor) -> torch.Tensor:
        return amax(x, self._dims())  # torch's amax, its backward in fewer passes


class _GlobalAverage(_GlobalPooling):
    def call(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if mask is not None and self.rank == 1:  # Keras 2: masked steps do not count (1-D only)
            m = mask.to(x.dtype)
            m = m.unsqueeze(-1) if self.data_format == "channels_last" else m.unsqueeze(1)
            return (x * m).sum(dim=self._dims()) / m.sum(dim=self._dims())
        return x.mean(dim=self._dims())


class GlobalMaxPooling1D(_GlobalMax):
    """Max over steps: ``(steps, C) -> (C,)``."""

    rank = 1

    def __init__(self, data_format: str | None = "channels_last", **kwargs: Any) -> None:
        super().__init__(data_format, **kwargs)


class GlobalAveragePooling1D(_GlobalAverage):
    """Mean over steps (masked steps excluded): ``(steps, C) -> (C,)``."""

    rank = 1
    supports_masking = True

    def __init__(self, data_format: str | None = "channels_last", **kwargs: Any) -> None:
        super().__init__(data_format, **kwargs)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None


class GlobalMaxPooling2D(_GlobalMax):
    """Max over height and width: ``(H, W, C) -> (C,)``."""


class GlobalAveragePooling2D(_GlobalAverage):
    """Mean over height and width: ``(H, W, C) -> (C,)``."""


class GlobalMaxPooling3D(_GlobalMax):
    """Max over the three spatial axes."""

    rank = 3


class GlobalAveragePooling3D(_GlobalAverage):
    """Mean over the three spatial axes."""

    rank = 3


MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = GlobalMaxPooling1D, GlobalMaxPooling2D, GlobalMaxPooling3D
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = (
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalAveragePooling3D,
)
