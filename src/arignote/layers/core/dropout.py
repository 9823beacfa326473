"""Dropout layers (Keras 2 ``keras.layers.core``): ``Dropout``, ``SpatialDropout1D/2D/3D``.

Identity outside training. ``SpatialDropout*`` drop whole feature maps (one draw per sample and
channel), as Keras 2 does. No weights.

Example::

    >>> import torch
    >>> d = SpatialDropout2D(0.5).train()
    >>> y = d(torch.ones(2, 4, 4, 3)); bool(((y == 0) | (y == 2)).all())
    True
"""

from __future__ import annotations

import numbers
from typing import Any

import torch
import torch.nn.functional as F

from arignote import random_state
from arignote.layers._util import KerasLayer, check_rank, normalize_data_format
from arignote.layers.base import Layer

__all__ = ["Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D"]


_HALF = 1 << 31  # int32 words span [-2^31, 2^31)


def cpu_dropout(x: torch.Tensor, rate: float) -> torch.Tensor:
    """``F.dropout(x, rate, True)`` on the CPU in a third of its time: the same distribution (each
    element kept with probability ``1 - rate``, to 2^-32), the kept ones scaled by ``1 / (1 - rate)``
    to the same float. torch's CPU ``bernoulli_`` draws one 32-bit word per element through a slow
    per-element path (~15 ns; 1 ms for a 128 x 512 batch); here one ``random_`` call fills int64
    words with 64 random bits each (two 32-bit words: ~3 ns an element), compared with the threshold
    ``rate * 2^32``. The draws come from torch's default generator (``random_state`` seeds it), so a
    seeded run repeats itself; they differ from ``F.dropout``'s for the same seed.

    >>> y = cpu_dropout(torch.ones(1000, 100), 0.2)
    >>> sorted(set(y.unique().tolist())), 0.78 < float((y > 0).float().mean()) < 0.82
    ([0.0, 1.25], True)
    """
    n = x.numel()
    words = torch.empty((n + 1) // 2, dtype=torch.int64).random_(-(1 << 63), None).view(torch.int32)
    keep = words[:n].view(x.shape) >= round(rate * (1 << 32)) - _HALF
    scale = 1.0 / (1.0 - rate)
    # bool * float gives the default float dtype in one operator; x of another dtype casts first
    noise = keep * scale if x.dtype == torch.get_default_dtype() else keep.to(x.dtype).mul_(scale)
    return x * noise


def _rate(rate: Any, where: str) -> float:
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real):
        raise ValueError(f"{where}: rate must be a number in [0, 1), got {rate!r}")
    return min(1.0, max(0.0, float(rate)))  # Keras 2 clips


class Dropout(KerasLayer, Layer):
    """Zeroes a fraction ``rate`` of the inputs while training (the rest scaled by ``1 / (1 - rate)``);
    ``layer(x, training=True)`` drops at inference too (Keras 2: Monte Carlo dropout).

    ``noise_shape`` (batch first, ``None`` = the input's size) shares one draw along axes of size 1;
    ``seed`` fixes the draws of this layer."""

    supports_masking = True
    _config_keys = ("rate", "noise_shape", "seed")

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate = _rate(rate, f"{type(self).__name__} '{self.name}'")
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        self._generator: torch.Generator | None = None

    def build_keras(self, input_shape: Any) -> None:
        if 0.0 < self.rate < 1.0 and self.seed is None:
            random_state.follow_numpy()  # Keras 2 drew the mask's seed from numpy when the layer was called

    def _noise_shape(self, x: torch.Tensor) -> tuple | None:
        if self.noise_shape is None:
            return None
        return tuple(x.shape[i] if d is None else int(d) for i, d in enumerate(self.noise_shape))

    @property
    def uses_learning_phase(self) -> bool:
        return 0.0 < self.rate < 1.0

    def call(self, x: torch.Tensor, training: Any = None) -> torch.Tensor:
        if not training or self.rate == 0.0:
            return x
        shape = self._noise_shape(x)
        if shape is None and self.seed is None:
            if x.device.type == "cpu" and self.rate < 1.0 and not torch.compiler.is_compiling():
                return cpu_dropout(x, self.rate)
            return F.dropout(x, self.rate, True)  # a fused kernel on GPU; Inductor fuses its own
        if self.seed is not None and self._generator is None:
            self._generator = torch.Generator(device=x.device).manual_seed(int(self.seed))
        keep = 1.0 - self.rate
        noise = torch.empty(shape or tuple(x.shape), dtype=x.dtype, device=x.device)
        noise.bernoulli_(keep, generator=self._generator)
        return x * noise / keep


class _SpatialDropout(Dropout):
    rank = 1
    _config_keys = ("rate", "data_format")

    def __init__(self, rate: float, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(rate, **kwargs)
        self.data_format = normalize_data_format(data_format, f"{type(self).__name__} '{self.name}'")

    def _noise_shape(self, x: torch.Tensor) -> tuple:
        check_rank(
            tuple(x.shape),
            self.rank + 2,
            f"{type(self).__name__} '{self.name}'",
            f"{self.rank}-D inputs with channels",
        )
        ones = (1,) * self.rank
        if self.data_format == "channels_first":
            return (x.shape[0], x.shape[1], *ones)
        return (x.shape[0], *ones, x.shape[-1])


class SpatialDropout1D(_SpatialDropout):
    """Drops entire channels of ``(steps, channels)`` sequences."""

    _config_keys = ("rate",)

    def __init__(self, rate: float, **kwargs: Any) -> None:
        super().__init__(rate, "channels_last", **kwargs)


class SpatialDropout2D(_SpatialDropout):
    """Drops entire feature maps of images."""

    rank = 2


class SpatialDropout3D(_SpatialDropout):
    """Drops entire feature maps of volumes."""

    rank = 3
