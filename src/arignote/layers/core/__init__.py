"""Core layers (Keras 2 ``keras.layers.core``): ``Dense``, ``Activation``, ``Dropout``, ``Flatten``,
``Reshape``, ``Permute``, ``RepeatVector``, ``Lambda``, ``ActivityRegularization``, ``Masking``,
``SpatialDropout1D/2D/3D`` (the last three in :mod:`arignote.layers.core.lambda_layer`), and ``Input``.

Weights: ``Dense.weight`` ``(units, in)`` (torch) is Keras's ``kernel`` ``(in, units)`` transposed;
``Dense.bias`` is ``bias``. Order ``[kernel, bias]``.

Example::

    >>> import torch
    >>> d = Dense(3, activation="softmax", input_dim=4)
    >>> d(torch.ones(2, 4)).shape   # built on first call
    torch.Size([2, 3])
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from arignote import activations
from arignote._lazy import lazy_namespace
from arignote.layers._util import (
    KerasLayer,
    check_rank,
    constraint_arg,
    initializer_arg,
    normalize_data_format,
    regularizer_arg,
)
from arignote.layers.base import Layer, positive_int
from arignote.layers.input_layer import Input, InputLayer

# the dropout and Lambda families load on first use (`from arignote.layers import Dense` needs neither,
# issue 32); arignote.layers's table names these modules, so a config naming one loads it first
_NAMES = {
    "Dropout": "arignote.layers.core.dropout", "SpatialDropout1D": "arignote.layers.core.dropout",
    "SpatialDropout2D": "arignote.layers.core.dropout", "SpatialDropout3D": "arignote.layers.core.dropout",
    **dict.fromkeys(["ActivityRegularization", "Lambda", "Masking"], "arignote.layers.core.lambda_layer"),
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES, globals())

__all__ = [
    "InputLayer",
    "Input",
    "Dense",
    "Activation",
    "Dropout",
    "Flatten",
    "Reshape",
    "Permute",
    "RepeatVector",
    "Lambda",
    "ActivityRegularization",
    "Masking",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
]


class Dense(KerasLayer, Layer):
    """Fully connected layer ``activation(x @ kernel + bias)`` on the last axis (Keras 2 ``Dense``)."""

    supports_masking = True
    _config_keys = (
        "units",
        "activation",
        "use_bias",
        "kernel_initializer",
        "bias_initializer",
        "kernel_regularizer",
        "bias_regularizer",
        "activity_regularizer",
        "kernel_constraint",
        "bias_constraint",
    )

    def __init__(
        self,
        units: int,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = positive_int(units, "units", f"Dense '{self.name}'")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializer_arg(kernel_initializer)
        self.bias_initializer = initializer_arg(bias_initializer)
        self.kernel_regularizer = regularizer_arg(kernel_regularizer)
        self.bias_regularizer = regularizer_arg(bias_regularizer)
        self.activity_regularizer = regularizer_arg(activity_regularizer)
        self.kernel_constraint = constraint_arg(kernel_constraint)
        self.bias_constraint = constraint_arg(bias_constraint)
        self.bias = None

    def build_keras(self, input_shape: tuple) -> None:
        features = tuple(input_shape)[-1]
        if len(input_shape) < 2 or features is None:
            raise ValueError(
                f"Dense '{self.name}': the last input dimension must be known, got {tuple(input_shape)}"
            )
        self.new_weight(
            "kernel",
            (features, self.units),
            self.kernel_initializer,
            (1, 0),
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        if self.use_bias:
            self.new_weight(
                "bias",
                (self.units,),
                self.bias_initializer,
                None,
                self.bias_regularizer,
                self.bias_constraint,
            )

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        return (*tuple(input_shape)[:-1], self.units)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return self._activity(self.activation(F.linear(x, self.weight, self.bias)))


class Activation(KerasLayer, Layer):
    """Applies an activation function (a name such as ``'relu'`` or a callable)."""

    supports_masking = True
    _config_keys = ("activation",)

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(x)


class Flatten(KerasLayer, Layer):
    """Flattens each sample; with ``data_format='channels_first'`` images flatten in channels-last
    order first (so a Dense after it sees the same order as in Keras 2)."""

    _config_keys = ("data_format",)

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format, f"Flatten '{self.name}'")

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        if not all(shape[1:]):
            raise ValueError(
                f"Flatten '{self.name}': the shape of the input is not fully defined (got "
                f"{shape[1:]}); make sure to pass a complete input_shape to the first layer"
            )
        return (shape[0], math.prod(shape[1:]))

    def call(self, x: torch.Tensor) -> torch.Tensor:
        if self.data_format == "channels_first" and x.dim() > 2:
            x = x.permute(0, *range(2, x.dim()), 1)
        return x.reshape(x.shape[0], math.prod(x.shape[1:]))  # not -1: a batch of 0 samples flattens too


class Reshape(KerasLayer, Layer):
    """Reshapes each sample to ``target_shape`` (one dimension may be -1)."""

    _config_keys = ("target_shape",)

    def __init__(self, target_shape: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1 or any(d == 0 or d < -1 for d in self.target_shape):
            raise ValueError(
                f"Reshape '{self.name}': bad target_shape {target_shape!r} (positive sizes and at "
                "most one -1)"
            )

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        if None in shape[1:]:
            return (shape[0], *(None if d == -1 else d for d in self.target_shape))
        total = math.prod(shape[1:])
        known = math.prod(d for d in self.target_shape if d != -1)
        if (-1 in self.target_shape and total % known) or (-1 not in self.target_shape and known != total):
            raise ValueError(
                f"Reshape '{self.name}': total size of the new array must be unchanged, cannot "
                f"reshape {shape[1:]} to {self.target_shape}"
            )
        return (shape[0], *(total // known if d == -1 else d for d in self.target_shape))

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], *self.target_shape)


class Permute(KerasLayer, Layer):
    """Permutes the non-batch axes: ``dims`` counts from 1, e.g. ``Permute((2, 1))`` swaps them."""

    _config_keys = ("dims",)

    def __init__(self, dims: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(
                f"Permute '{self.name}': invalid permutation `dims` {dims!r}; it should be a "
                f"permutation of 1..{len(self.dims)} (the batch axis is not counted)"
            )

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = check_rank(
            tuple(input_shape),
            len(self.dims) + 1,
            f"Permute '{self.name}'",
            f"inputs with {len(self.dims)} axes besides the batch",
        )
        return (shape[0], *(shape[d] for d in self.dims))

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(0, *self.dims)


class RepeatVector(KerasLayer, Layer):
    """Repeats a vector ``n`` times: ``(features,) -> (n, features)``."""

    _config_keys = ("n",)

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n = positive_int(n, "n", f"RepeatVector '{self.name}'")

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = check_rank(tuple(input_shape), 2, f"RepeatVector '{self.name}'", "vectors (batch, features)")
        return (shape[0], self.n, shape[1])

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return x.unsqueeze(1).expand(x.shape[0], self.n, x.shape[1])
