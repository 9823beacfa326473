"""Spatial reshaping (Keras 2 ``keras.layers.convolutional``): ``ZeroPadding1D/2D/3D``,
``Cropping1D/2D/3D``, ``UpSampling1D/2D/3D``. No weights.

``padding``/``cropping``: an int (all sides), one int per axis (both sides), or one
``(before, after)`` pair per axis. ``UpSampling2D(interpolation='bilinear')`` interpolates as
Keras 2's TensorFlow backend did (``resize_images``: source = destination / size, no half-pixel
shift, edges clamped).

Example::

    >>> ZeroPadding2D(((1, 0), (2, 2))).compute_output_shape((None, 4, 4, 3))
    (None, 5, 8, 3)
    >>> Cropping1D((1, 2)).compute_output_shape((None, 10, 3))
    (None, 7, 3)
"""

from __future__ import annotations

import numbers
from typing import Any

import torch
import torch.nn.functional as F

from arignote.layers._util import (
    KerasLayer,
    channels_of,
    check_rank,
    from_torch,
    normalize_data_format,
    normalize_tuple,
    pad_arg,
    spatial_of,
    to_torch,
    with_spatial,
)
from arignote.layers.base import Layer

__all__ = [
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
    "Cropping1D",
    "Cropping2D",
    "Cropping3D",
    "UpSampling1D",
    "UpSampling2D",
    "UpSampling3D",
]


def _pairs(value: Any, rank: int, name: str, where: str) -> tuple[tuple[int, int], ...]:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return ((int(value), int(value)),) * rank if value >= 0 else _bad(value, rank, name, where)
    try:
        items = tuple(value)
    except TypeError:
        return _bad(value, rank, name, where)
    if rank == 1 and len(items) == 2 and all(isinstance(v, numbers.Integral) for v in items):
        return (normalize_tuple(items, 2, name, where, allow_zero=True),)  # type: ignore[return-value]
    if len(items) != rank:
        return _bad(value, rank, name, where)
    if all(isinstance(v, numbers.Integral) for v in items):
        return tuple((int(v), int(v)) for v in normalize_tuple(items, rank, name, where, allow_zero=True))
    return tuple(normalize_tuple(v, 2, name, where, allow_zero=True) for v in items)  # type: ignore[misc]


def _bad(value: Any, rank: int, name: str, where: str) -> Any:
    forms = "an int" if rank == 1 else f"an int, {rank} ints, or {rank} (before, after) pairs"
    if rank == 1:
        forms += " or a (before, after) pair"
    raise ValueError(f"{where}: `{name}` should be {forms} of non-negative ints, got {value!r}")


class _Spatial(KerasLayer, Layer):
    rank = 2

    def _init_format(self, data_format: str | None) -> None:
        self.data_format = normalize_data_format(data_format, f"{type(self).__name__} '{self.name}'")

    def _check(self, input_shape: tuple) -> tuple:
        return check_rank(
            tuple(input_shape),
            self.rank + 2,
            f"{type(self).__name__} '{self.name}'",
            f"{self.rank}-D inputs with channels",
        )

    def build_keras(self, input_shape: tuple) -> None:
        self.output_shape_keras(input_shape)

    def _resize(self, input_shape: tuple, fn: Any) -> tuple:
        shape = self._check(input_shape)
        spatial = tuple(
            None if n is None else fn(i, n) for i, n in enumerate(spatial_of(shape, self.data_format))
        )
        return with_spatial(shape[0], channels_of(shape, self.data_format), spatial, self.data_format)


class _ZeroPadding(_Spatial):
    _config_keys = ("padding", "data_format")

    def __init__(self, padding: Any, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._init_format(data_format)
        self.padding = _pairs(padding, self.rank, "padding", f"{type(self).__name__} '{self.name}'")
        self._pad = pad_arg(list(self.padding))

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        return self._resize(input_shape, lambda i, n: n + sum(self.padding[i]))

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return from_torch(F.pad(to_torch(x, self.data_format), self._pad), self.data_format)

    def get_config(self) -> dict:
        cfg = super().get_config()
        cfg["padding"] = [list(p) for p in self.padding]
        return cfg


class ZeroPadding1D(_ZeroPadding):
    """Zeros before/after the steps of ``(steps, C)``: ``padding=1`` or ``(before, after)``."""

    rank = 1
    _config_keys = ("padding",)

    def __init__(self, padding: Any = 1, **kwargs: Any) -> None:
        super().__init__(padding, "channels_last", **kwargs)

    def get_config(self) -> dict:
        cfg = super().get_config()
        cfg["padding"] = list(self.padding[0])
        return cfg


class ZeroPadding2D(_ZeroPadding):
    """Zero rows and columns around images: ``padding=(1, 1)`` or ``((top, bottom), (left, right))``."""

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(padding, data_format, **kwargs)


class ZeroPadding3D(_ZeroPadding):
    """Zeros around volumes: ``padding=(1, 1, 1)`` or three ``(before, after)`` pairs."""

    rank = 3

    def __init__(self, padding: Any = (1, 1, 1), data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(padding, data_format, **kwargs)


class _Cropping(_Spatial):
    _config_keys = ("cropping", "data_format")

    def __init__(self, cropping: Any, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._init_format(data_format)
        self.cropping = _pairs(cropping, self.rank, "cropping", f"{type(self).__name__} '{self.name}'")

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        def crop(i: int, n: int) -> int:
            out = n - sum(self.cropping[i])
            if out < 0:  # cropping everything leaves an empty axis, as in Keras 2.3.1
                raise ValueError(
                    f"{type(self).__name__} '{self.name}': cropping {self.cropping} is more than "
                    f"input shape {tuple(input_shape)} has"
                )
            return out

        return self._resize(input_shape, crop)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        t = to_torch(x, self.data_format)
        index = [slice(None), slice(None)] + [
            slice(a, n - b) for (a, b), n in zip(self.cropping, t.shape[2:])
        ]
        return from_torch(t[tuple(index)], self.data_format)

    def get_config(self) -> dict:
        cfg = super().get_config()
        cfg["cropping"] = [list(p) for p in self.cropping]
        return cfg


class Cropping1D(_Cropping):
    """Drops steps at the start/end of ``(steps, C)``: ``cropping=(1, 1)``."""

    rank = 1
    _config_keys = ("cropping",)

    def __init__(self, cropping: Any = (1, 1), **kwargs: Any) -> None:
        super().__init__(cropping, "channels_last", **kwargs)

    def get_config(self) -> dict:
        cfg = super().get_config()
        cfg["cropping"] = list(self.cropping[0])
        return cfg


class Cropping2D(_Cropping):
    """Drops rows/columns: ``cropping=((top, bottom), (left, right))``, default none."""

    def __init__(
        self, cropping: Any = ((0, 0), (0, 0)), data_format: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(cropping, data_format, **kwargs)


class Cropping3D(_Cropping):
    """Drops slices of volumes: ``cropping=((1, 1), (1, 1), (1, 1))``."""

    rank = 3

    def __init__(
        self, cropping: Any = ((1, 1), (1, 1), (1, 1)), data_format: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(cropping, data_format, **kwargs)


def _bilinear_axis(t: torch.Tensor, dim: int, size: int) -> torch.Tensor:
    # TF1 resize_bilinear(align_corners=False): source = dest / size, the next index clamped at the edge
    n = t.shape[dim]
    src = torch.arange(n * size, device=t.device, dtype=torch.float64) / size
    lo = src.floor().long()
    hi = torch.clamp(lo + 1, max=n - 1)
    frac = (src - lo).to(t.dtype)
    shape = [1] * t.dim()
    shape[dim] = -1
    a, b = t.index_select(dim, lo), t.index_select(dim, hi)
    return a + (b - a) * frac.view(shape)


class _UpSampling(_Spatial):
    _config_keys = ("size", "data_format")

    def __init__(self, size: Any, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._init_format(data_format)
        self.size = normalize_tuple(size, self.rank, "size", f"{type(self).__name__} '{self.name}'")

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        return self._resize(input_shape, lambda i, n: n * self.size[i])

    def call(self, x: torch.Tensor) -> torch.Tensor:
        t = to_torch(x, self.data_format)
        for i, s in enumerate(self.size):
            if s != 1:
                t = t.repeat_interleave(s, dim=2 + i)
        return from_torch(t, self.data_format)


class UpSampling1D(_UpSampling):
    """Repeats each step ``size=2`` times."""

    rank = 1
    _config_keys = ("size",)

    def __init__(self, size: int = 2, **kwargs: Any) -> None:
        super().__init__(size, "channels_last", **kwargs)

    def get_config(self) -> dict:
        cfg = super().get_config()
        cfg["size"] = self.size[0]
        return cfg


class UpSampling2D(_UpSampling):
    """Repeats rows and columns ``size=(2, 2)`` times (``interpolation='nearest'``) or interpolates
    (``'bilinear'``)."""

    _config_keys = ("size", "data_format", "interpolation")

    def __init__(
        self,
        size: Any = (2, 2),
        data_format: str | None = None,
        interpolation: str = "nearest",
        **kwargs: Any,
    ) -> None:
        super().__init__(size, data_format, **kwargs)
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(
                f"UpSampling2D '{self.name}': interpolation should be one of \"nearest\" or "
                f'"bilinear", got {interpolation!r}'
            )
        self.interpolation = interpolation

    def call(self, x: torch.Tensor) -> torch.Tensor:
        if self.interpolation == "nearest":
            return super().call(x)
        t = to_torch(x, self.data_format)
        for i, s in enumerate(self.size):
            t = _bilinear_axis(t, 2 + i, s)
        return from_torch(t, self.data_format)


class UpSampling3D(_UpSampling):
    """Repeats the three spatial axes ``size=(2, 2, 2)`` times."""

    rank = 3

    def __init__(self, size: Any = (2, 2, 2), data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(size, data_format, **kwargs)
