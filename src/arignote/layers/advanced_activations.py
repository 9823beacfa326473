"""Advanced activations (Keras 2 ``keras.layers.advanced_activations``): ``LeakyReLU``, ``PReLU``,
``ELU``, ``ThresholdedReLU``, ``Softmax``, ``ReLU``.

Weights: ``PReLU.alpha`` (the Keras ``alpha`` weight, same layout: the input shape without the
batch, with 1 on ``shared_axes``). The others have none.

Example::

    >>> import torch
    >>> LeakyReLU(alpha=0.1)(torch.tensor([-1.0, 2.0])).tolist()
    [-0.10000000149011612, 2.0]
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote import activations
from arignote.layers._util import KerasLayer, constraint_arg, initializer_arg, regularizer_arg
from arignote.layers.base import Layer

__all__ = ["LeakyReLU", "PReLU", "ELU", "ThresholdedReLU", "Softmax", "ReLU"]


class _Elementwise(KerasLayer, Layer):
    supports_masking = True


class LeakyReLU(_Elementwise):
    """``x`` if ``x > 0`` else ``alpha * x`` (``alpha=0.3``)."""

    _config_keys = ("alpha",)

    def __init__(self, alpha: float = 0.3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, self.alpha)


class PReLU(_Elementwise):
    """Leaky ReLU with a learned slope per element (``alpha_initializer='zeros'``); ``shared_axes``
    (axes counted with the batch, e.g. ``[1, 2]`` for images) share one slope."""

    _config_keys = ("alpha_initializer", "alpha_regularizer", "alpha_constraint", "shared_axes")

    def __init__(
        self,
        alpha_initializer: Any = "zeros",
        alpha_regularizer: Any = None,
        alpha_constraint: Any = None,
        shared_axes: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.alpha_initializer = initializer_arg(alpha_initializer)
        self.alpha_regularizer = regularizer_arg(alpha_regularizer)
        self.alpha_constraint = constraint_arg(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        else:
            self.shared_axes = [
                int(a) for a in (shared_axes if isinstance(shared_axes, (list, tuple)) else [shared_axes])
            ]

    def build_keras(self, input_shape: tuple) -> None:
        shape = list(tuple(input_shape)[1:])
        for axis in self.shared_axes or []:
            if not 1 <= axis <= len(shape):
                raise ValueError(
                    f"PReLU '{self.name}': shared axis {axis} is out of range for input shape "
                    f"{tuple(input_shape)} (axes count the batch as 0)"
                )
            shape[axis - 1] = 1
        if None in shape:
            raise ValueError(
                f"PReLU '{self.name}': needs a fully known input shape (or shared_axes over the "
                f"unknown axes), got {tuple(input_shape)}"
            )
        self.new_weight(
            "alpha", tuple(shape), self.alpha_initializer, None, self.alpha_regularizer, self.alpha_constraint
        )

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) - self.alpha * torch.relu(-x)


class ELU(_Elementwise):
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)`` (``alpha=1.0``)."""

    _config_keys = ("alpha",)

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, self.alpha)


class ThresholdedReLU(_Elementwise):
    """``x`` if ``x > theta`` else 0 (``theta=1.0``)."""

    _config_keys = ("theta",)

    def __init__(self, theta: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.theta = float(theta)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return x * (x > self.theta).to(x.dtype)


class Softmax(_Elementwise):
    """Softmax along ``axis=-1``."""

    _config_keys = ("axis",)

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = int(axis)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return activations.softmax(x, axis=self.axis)


class ReLU(_Elementwise):
    """Keras 2 ``ReLU(max_value=None, negative_slope=0., threshold=0.)``."""

    _config_keys = ("max_value", "negative_slope", "threshold")

    def __init__(
        self,
        max_value: float | None = None,
        negative_slope: float = 0.0,
        threshold: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError(f"max_value of ReLU layer cannot be negative value: {max_value}")
        if negative_slope < 0.0:
            raise ValueError(f"negative_slope of ReLU layer cannot be negative value: {negative_slope}")
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope, self.threshold = float(negative_slope), float(threshold)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return activations.relu(
            x, alpha=self.negative_slope, max_value=self.max_value, threshold=self.threshold
        )
