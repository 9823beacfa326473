"""``BatchNormalization`` with Keras 2 defaults (``momentum=0.99``, ``epsilon=1e-3``, ``axis=-1``).

Keras's ``momentum`` is the weight of the old moving average, torch's the weight of the new
batch: torch momentum = ``1 - momentum``. Residual difference: torch updates the moving variance
with the unbiased batch variance (Keras 2.1.3+ does the same correction; earlier Keras used the
biased one). Normalization itself uses the biased batch variance in both.

Example::

    >>> bn = BatchNormalization(input_shape=(8, 8, 16))
    >>> bn.build((None, 8, 8, 16)); bn.weight.shape
    torch.Size([16])
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from arignote.layers.activations import check_initializer, initialize
from arignote.layers.base import Layer

__all__ = ["BatchNormalization"]


class BatchNormalization(Layer):
    """Normalizes the last (Keras) axis: features of vectors, channels of images.

    Works on ``(N, features)``, ``(N, timesteps, features)`` and ``(N, H, W, C)`` inputs.
    """

    supports_masking = True

    _config_keys = (
        "axis",
        "momentum",
        "epsilon",
        "center",
        "scale",
        "beta_initializer",
        "gamma_initializer",
        "moving_mean_initializer",
        "moving_variance_initializer",
    )

    def __init__(
        self,
        axis: int = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        moving_mean_initializer: Any = "zeros",
        moving_variance_initializer: Any = "ones",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        where = f"BatchNormalization '{self.name}'"
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(
                f"{where}: momentum must be in [0, 1] (Keras meaning: weight of the old average), "
                f"got {momentum!r}"
            )
        if epsilon <= 0:
            raise ValueError(f"{where}: epsilon must be > 0, got {epsilon!r}")
        self.axis = int(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = check_initializer(beta_initializer, "beta_initializer")
        self.gamma_initializer = check_initializer(gamma_initializer, "gamma_initializer")
        self.moving_mean_initializer = check_initializer(moving_mean_initializer, "moving_mean_initializer")
        self.moving_variance_initializer = check_initializer(
            moving_variance_initializer, "moving_variance_initializer"
        )
        self._torch_momentum = 1.0 - self.momentum
        self._rank = 2

    def build(self, input_shape: Any) -> None:
        rank = len(input_shape)
        if self.axis not in (-1, rank - 1):
            raise ValueError(
                f"BatchNormalization '{self.name}': only the last axis (axis=-1, channels_last) is "
                f"supported, got axis={self.axis} for input shape {input_shape}"
            )
        if len(input_shape) not in (2, 3, 4) or input_shape[-1] is None:
            raise ValueError(f"BatchNormalization '{self.name}': unsupported input shape {input_shape}")
        n = input_shape[-1]
        dtype = self._param_dtype()
        self.weight = (
            nn.Parameter(initialize(torch.empty(n, dtype=dtype), self.gamma_initializer))
            if self.scale
            else None
        )
        self.bias = (
            nn.Parameter(initialize(torch.empty(n, dtype=dtype), self.beta_initializer))
            if self.center
            else None
        )
        self.register_buffer(
            "running_mean", initialize(torch.empty(n, dtype=dtype), self.moving_mean_initializer)
        )
        self.register_buffer(
            "running_var", initialize(torch.empty(n, dtype=dtype), self.moving_variance_initializer)
        )
        # torch wants features at dim 1: sequences transpose, images permute (views)
        self._rank = rank
        super().build(input_shape)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def call(self, inputs: torch.Tensor, training: Any = None) -> torch.Tensor:
        x = inputs
        if self._rank == 4:
            return F.batch_norm(
                x.permute(0, 3, 1, 2),
                self.running_mean,
                self.running_var,
                self.weight,
                self.bias,
                bool(training),
                self._torch_momentum,
                self.epsilon,
            ).permute(0, 2, 3, 1)
        if self._rank == 3:
            return F.batch_norm(
                x.transpose(1, 2),
                self.running_mean,
                self.running_var,
                self.weight,
                self.bias,
                bool(training),
                self._torch_momentum,
                self.epsilon,
            ).transpose(1, 2)
        return F.batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            bool(training),
            self._torch_momentum,
            self.epsilon,
        )

    def _keras_weights(self) -> list[torch.Tensor]:
        # Keras order: gamma, beta, moving_mean, moving_variance
        out = [t for t in (self.weight, self.bias) if t is not None]
        return out + [self.running_mean, self.running_var]

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        for t, w in zip(self._keras_weights(), weights):
            t.copy_(w)
