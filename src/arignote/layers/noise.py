"""Noise layers (Keras 2 ``keras.layers.noise``): ``GaussianNoise``, ``GaussianDropout``,
``AlphaDropout``. Active only while training (or when called with ``training=True``, as Keras 2
allows); identity otherwise. No weights.

Example::

    >>> import torch
    >>> GaussianNoise(1.0).eval()(torch.ones(2)).tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import math
from typing import Any

import torch

from arignote import random_state
from arignote.layers._util import KerasLayer
from arignote.layers.base import Layer
from arignote.layers.core.dropout import _rate

__all__ = ["GaussianNoise", "GaussianDropout", "AlphaDropout"]

# SELU constants
_ALPHA = 1.6732632423543772848170429916717
_SCALE = 1.0507009873554804934193349852946


class GaussianNoise(KerasLayer, Layer):
    """Adds zero-centred normal noise of std ``stddev`` while training."""

    supports_masking = True
    _config_keys = ("stddev",)

    def __init__(self, stddev: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stddev = float(stddev)

    def build_keras(self, input_shape: Any) -> None:
        random_state.follow_numpy()  # Keras 2 drew the noise's seed from numpy when the layer was called

    uses_learning_phase = True

    def call(self, x: torch.Tensor, training: Any = None) -> torch.Tensor:
        return x + torch.randn_like(x) * self.stddev if training else x


class GaussianDropout(KerasLayer, Layer):
    """Multiplies by normal noise of mean 1 and std ``sqrt(rate / (1 - rate))`` while training."""

    supports_masking = True
    _config_keys = ("rate",)

    def __init__(self, rate: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate = _rate(rate, f"GaussianDropout '{self.name}'")

    def build_keras(self, input_shape: Any) -> None:
        if 0 < self.rate < 1:
            random_state.follow_numpy()  # as GaussianNoise

    @property
    def uses_learning_phase(self) -> bool:
        return 0 < self.rate < 1

    def call(self, x: torch.Tensor, training: Any = None) -> torch.Tensor:
        if not training or not 0 < self.rate < 1:
            return x
        return x * (1.0 + torch.randn_like(x) * math.sqrt(self.rate / (1.0 - self.rate)))


class AlphaDropout(KerasLayer, Layer):
    """Dropout that keeps SELU's self-normalizing mean and variance: dropped units are set to
    ``-alpha * scale``, then an affine map restores mean and variance (``noise_shape``, ``seed``
    as in :class:`Dropout`)."""

    supports_masking = True
    _config_keys = ("rate", "noise_shape", "seed")

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate = _rate(rate, f"AlphaDropout '{self.name}'")
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        self._generator: torch.Generator | None = None

    def build_keras(self, input_shape: Any) -> None:
        if 0 < self.rate < 1 and self.seed is None:
            random_state.follow_numpy()  # as GaussianNoise

    @property
    def uses_learning_phase(self) -> bool:
        return 0 < self.rate < 1

    def call(self, x: torch.Tensor, training: Any = None) -> torch.Tensor:
        if not training or not 0 < self.rate < 1:
            return x
        shape = (
            tuple(x.shape)
            if self.noise_shape is None
            else tuple(x.shape[i] if d is None else int(d) for i, d in enumerate(self.noise_shape))
        )
        if self.seed is not None and self._generator is None:
            self._generator = torch.Generator(device=x.device).manual_seed(int(self.seed))
        u = torch.empty(shape, dtype=x.dtype, device=x.device).uniform_(generator=self._generator)
        kept = (u >= self.rate).to(x.dtype)
        alpha_p = -_ALPHA * _SCALE
        a = ((1 - self.rate) * (1 + self.rate * alpha_p**2)) ** -0.5
        b = -a * alpha_p * self.rate
        return a * (x * kept + alpha_p * (1 - kept)) + b
