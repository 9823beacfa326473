"""``BatchNormalization`` (Keras 2 ``keras.layers.normalization``) on any ``axis``.

Keras's ``momentum`` is the weight of the old moving average, torch's the weight of the new batch:
torch momentum = ``1 - momentum``. The moving variance is updated with the unbiased batch variance
(Keras >= 2.1.3 does the same); normalization uses the biased one in both.

Weights (Keras order ``[gamma, beta, moving_mean, moving_variance]``): ``gamma`` and ``beta`` are
parameters, ``moving_mean`` and ``moving_variance`` buffers, all of shape ``(channels,)``.

Example::

    >>> bn = BatchNormalization(axis=1); bn.build((16, 8, 8))   # channels_first images
    >>> bn.weight_names()
    ['gamma', 'beta', 'moving_mean', 'moving_variance']
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote.graph import state
from arignote.layers._trainable import enclosing_trainable
from arignote.layers._util import KerasLayer, constraint_arg, initializer_arg, regularizer_arg
from arignote.layers.base import Layer

__all__ = ["BatchNormalization"]


class BatchNormalization(KerasLayer, Layer):
    """Normalizes ``axis`` (``-1``: features / channels_last channels; ``1``: channels_first) with
    Keras 2 defaults ``momentum=0.99``, ``epsilon=1e-3``, ``center=True``, ``scale=True``."""

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
        "beta_regularizer",
        "gamma_regularizer",
        "beta_constraint",
        "gamma_constraint",
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
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
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
        if isinstance(axis, (list, tuple)):
            raise ValueError(f"{where}: one axis is supported, got {axis!r}")
        self.axis = int(axis)
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializer_arg(beta_initializer)
        self.gamma_initializer = initializer_arg(gamma_initializer)
        self.moving_mean_initializer = initializer_arg(moving_mean_initializer)
        self.moving_variance_initializer = initializer_arg(moving_variance_initializer)
        self.beta_regularizer = regularizer_arg(beta_regularizer)
        self.gamma_regularizer = regularizer_arg(gamma_regularizer)
        self.beta_constraint = constraint_arg(beta_constraint)
        self.gamma_constraint = constraint_arg(gamma_constraint)
        self.gamma = self.beta = None
        self._dim = 1

    def build_keras(self, input_shape: tuple) -> None:
        shape = tuple(input_shape)
        if not -len(shape) <= self.axis < len(shape) or self.axis % len(shape) == 0:
            raise ValueError(
                f"BatchNormalization '{self.name}': axis {self.axis} is out of range for input shape "
                f"{shape} (axes count the batch as 0)"
            )
        self._dim = self.axis % len(shape)
        n = shape[self._dim]
        if n is None:
            raise ValueError(
                f"BatchNormalization '{self.name}': axis {self.axis} of input shape {shape} should "
                "have a defined dimension"
            )
        if self.scale:
            self.new_weight(
                "gamma", (n,), self.gamma_initializer, None, self.gamma_regularizer, self.gamma_constraint
            )
        if self.center:
            self.new_weight(
                "beta", (n,), self.beta_initializer, None, self.beta_regularizer, self.beta_constraint
            )
        self.new_weight("moving_mean", (n,), self.moving_mean_initializer, buffer=True)
        self.new_weight("moving_variance", (n,), self.moving_variance_initializer, buffer=True)

    uses_learning_phase = True

    def _updates_per_call(self) -> list:
        """Keras 2: each call adds the two moving-average updates (``layer.updates``)."""
        return [(self.moving_mean, "moving_average"), (self.moving_variance, "moving_average")]

    def call(self, x: torch.Tensor, training: Any = None) -> torch.Tensor:
        t = x.movedim(self._dim, 1) if self._dim != 1 else x
        # Keras 2.3.1: a frozen layer (trainable=False, or inside a frozen model: Network.updates is
        # [] then) still normalizes a training batch with the batch's statistics, but its updates
        # are not collected: the moving statistics stay put. `layer(x, training=True)` normalizes
        # with the batch's statistics in predict too; only a training step moves the averages.
        batch_stats = bool(training)
        updating = batch_stats and self.training and self.trainable and enclosing_trainable(self)
        if not batch_stats and self.training and state.forced_phase() == 0 and self.trainable \
                and enclosing_trainable(self):
            return self._inference_then_update(t)
        if batch_stats and t.numel() == t.shape[1]:  # one value per channel: torch refuses, Keras 2 goes on
            y = self._single_value_batch(t, updating)
            return y.movedim(1, self._dim) if self._dim != 1 else y
        y = F.batch_norm(
            t,
            self.moving_mean if updating or not batch_stats else None,
            self.moving_variance if updating or not batch_stats else None,
            self.gamma,
            self.beta,
            batch_stats,
            1.0 - self.momentum,
            self.epsilon,
        )
        return y.movedim(1, self._dim) if self._dim != 1 else y

    def _inference_then_update(self, t: torch.Tensor) -> torch.Tensor:
        """A training step under ``K.set_learning_phase(0)``: Keras 2.3.1 normalizes with the moving
        statistics (the phase says inference) yet still runs the layer's moving-average updates with
        the batch's statistics (they were added to the model's updates at build time)."""
        # copies: the update below writes the averages in place, and the backward must see these values
        y = F.batch_norm(t, self.moving_mean.clone(), self.moving_variance.clone(), self.gamma, self.beta,
                         False, 0.0, self.epsilon)
        with torch.no_grad():
            if t.numel() == t.shape[1]:
                self._single_value_batch(t, True)
            else:
                F.batch_norm(t, self.moving_mean, self.moving_variance, None, None, True, 1.0 - self.momentum,
                             self.epsilon)
        return y.movedim(1, self._dim) if self._dim != 1 else y

    def _single_value_batch(self, t: torch.Tensor, updating: bool) -> torch.Tensor:
        """Keras 2 on a batch with one value per channel: its mean is that value and its variance 0,
        so the output is ``beta`` (0 without ``center``); the moving averages take them in."""
        shape = (1, -1) + (1,) * (t.dim() - 2)
        mean = t.detach().reshape(-1)
        if updating:
            with torch.no_grad():
                self.moving_mean.mul_(self.momentum).add_(mean, alpha=1.0 - self.momentum)
                self.moving_variance.mul_(self.momentum)
        y = (t - t) * (self.gamma.reshape(shape) if self.gamma is not None else 1.0)
        return y + self.beta.reshape(shape) if self.beta is not None else y
