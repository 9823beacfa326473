"""Core Keras layers: ``Input``, ``Dense``, ``Activation``, ``Dropout``, ``Flatten``, ``Embedding``.

Defaults follow Keras 2: ``Dense`` kernels glorot_uniform, biases zeros; ``Embedding`` uniform
in [-0.05, 0.05]. Weights are stored in torch layout (``Dense.weight`` is ``(units, in)``) so
``forward`` is exactly ``F.linear``; ``get_weights()`` returns Keras layout (kernel ``(in, units)``).

Example::

    >>> import torch
    >>> d = Dense(3, activation="softmax", input_dim=4)
    >>> d(torch.ones(2, 4)).shape
    torch.Size([2, 3])
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from arignote.graph import ops
from arignote.layers import activations
from arignote.layers.activations import check_initializer, initialize
from arignote.layers.base import InputSpec, Layer, positive_int
from arignote.layers.input_layer import Input, InputLayer

__all__ = ["InputLayer", "Input", "Dense", "Activation", "LeakyReLU", "Dropout", "Flatten", "Reshape",
           "Embedding"]


def _positive_int(value: Any, what: str, layer: str) -> int:
    return positive_int(value, what, layer)


class Dense(Layer):
    """Fully connected layer: ``activation(x @ kernel + bias)`` on the last axis.

    Keras 2 arguments: ``units``, ``activation=None``, ``use_bias=True``,
    ``kernel_initializer='glorot_uniform'``, ``bias_initializer='zeros'``.
    """

    _config_keys = ("units", "activation", "use_bias", "kernel_initializer", "bias_initializer")
    supports_masking = True

    def __init__(
        self,
        units: int,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = _positive_int(units, "units", f"Dense '{self.name}'")
        self.activation = activation if activation is not None else "linear"
        self._act = activations.get(self.activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer")
        self.bias_initializer = check_initializer(bias_initializer, "bias_initializer")

    def build(self, input_shape: Any) -> None:
        dtype = self._param_dtype()
        features = input_shape[-1]
        if features is None:
            raise ValueError(
                f"Dense '{self.name}': the last input dimension must be known, got {input_shape}"
            )
        self.weight = nn.Parameter(
            initialize(torch.empty(self.units, features, dtype=dtype), self.kernel_initializer)
        )
        self.bias = (
            nn.Parameter(initialize(torch.empty(self.units, dtype=dtype), self.bias_initializer))
            if self.use_bias
            else None
        )
        self.input_spec = InputSpec(min_ndim=2, axes={-1: features})
        super().build(input_shape)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (*tuple(input_shape)[:-1], self.units)

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        y = F.linear(inputs, self.weight, self.bias)
        return y if self._act is None else self._act(y)

    def _keras_weights(self) -> list[torch.Tensor]:
        return [self.weight.t()] + ([self.bias] if self.bias is not None else [])

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        self.weight.copy_(weights[0].t())
        if self.bias is not None:
            self.bias.copy_(weights[1])


class Activation(Layer):
    """Applies a named activation (``relu``, ``softmax``, ``sigmoid``, ``tanh``, ``linear``, ...)."""

    _config_keys = ("activation",)
    supports_masking = True

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activation
        self._act = activations.get(activation)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        return inputs if self._act is None else self._act(inputs)


class LeakyReLU(Layer):
    """``x`` if ``x > 0`` else ``alpha * x`` (Keras 2 default ``alpha=0.3``)."""

    _config_keys = ("alpha",)
    supports_masking = True

    def __init__(self, alpha: float = 0.3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or alpha < 0:
            raise ValueError(f"LeakyReLU '{self.name}': alpha must be a number >= 0, got {alpha!r}")
        self.alpha = float(alpha)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(inputs, self.alpha)


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of inputs during training (scaled by 1/(1-rate)); identity in eval."""

    _config_keys = ("rate",)
    supports_masking = True

    def __init__(self, rate: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate < 1:
            raise ValueError(f"Dropout '{self.name}': rate must be in [0, 1), got {rate!r}")
        self.rate = float(rate)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def call(self, inputs: torch.Tensor, training: Any = None) -> torch.Tensor:
        return F.dropout(inputs, self.rate, bool(training)) if self.rate else inputs


class Flatten(Layer):
    """Flattens each sample; images flatten in Keras's (height, width, channels) order (a view of a
    contiguous channels-last batch)."""

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(
                f"Flatten '{self.name}': only data_format='channels_last' (Keras's default) is supported"
            )

    def compute_output_shape(self, input_shape: Any) -> tuple:
        rest = tuple(input_shape)[1:]
        return (input_shape[0], None if None in rest else math.prod(rest))

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        return inputs.reshape(inputs.shape[0], -1)


class Reshape(Layer):
    """Reshapes each sample to ``target_shape`` (Keras order; one dimension may be -1)."""

    _config_keys = ("target_shape",)

    def __init__(self, target_shape: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1 or any(d == 0 or d < -1 for d in self.target_shape):
            raise ValueError(f"Reshape '{self.name}': bad target_shape {target_shape!r}")

    def compute_output_shape(self, input_shape: Any) -> tuple:
        rest = tuple(input_shape)[1:]
        if None in rest:
            return (input_shape[0], *(None if d == -1 else d for d in self.target_shape))
        total = math.prod(rest)
        known = math.prod(d for d in self.target_shape if d != -1)
        if -1 in self.target_shape:
            if total % known:
                raise ValueError(f"Reshape '{self.name}': cannot reshape {rest} to {self.target_shape}")
            return (input_shape[0], *(total // known if d == -1 else d for d in self.target_shape))
        if known != total:
            raise ValueError(f"Reshape '{self.name}': cannot reshape {rest} to {self.target_shape}")
        return (input_shape[0], *self.target_shape)

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        return inputs.reshape(inputs.shape[0], *self.target_shape)


class Embedding(Layer):
    """Turns integer indices in ``[0, input_dim)`` into dense vectors of size ``output_dim``.

    Keras 2 arguments: ``input_dim``, ``output_dim``, ``embeddings_initializer='uniform'``
    (U(-0.05, 0.05)), ``mask_zero=False`` (index 0 is padding: the output carries a mask that
    the next layers, e.g. an RNN, receive), ``input_length`` (the input shape is
    ``(None, input_length)``; ``(None, None)`` when not given, as in Keras 2).
    """

    _config_keys = ("input_dim", "output_dim", "embeddings_initializer", "mask_zero", "input_length")

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        embeddings_initializer: Any = "uniform",
        mask_zero: bool = False,
        input_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        if "input_shape" not in kwargs and "batch_input_shape" not in kwargs:
            scalar = isinstance(input_length, (numbers.Integral, type(None)))
            kwargs["input_shape"] = (input_length,) if scalar else tuple(input_length)
        super().__init__(**kwargs)
        self.input_dim = _positive_int(input_dim, "input_dim", f"Embedding '{self.name}'")
        self.output_dim = _positive_int(output_dim, "output_dim", f"Embedding '{self.name}'")
        self.embeddings_initializer = check_initializer(embeddings_initializer, "embeddings_initializer")
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self.input_length = (
            None if input_length is None else _positive_int(input_length, "input_length", "Embedding")
        )

    def get_config(self) -> dict:
        cfg = super().get_config()
        if cfg.get("batch_input_shape") == [None, self.input_length]:
            cfg.pop("batch_input_shape")  # carried by input_length
        return cfg

    def build(self, input_shape: Any) -> None:
        self.weight = nn.Parameter(
            initialize(
                torch.empty(self.input_dim, self.output_dim, dtype=self._param_dtype()),
                self.embeddings_initializer,
            )
        )
        super().build(input_shape)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (*tuple(input_shape), self.output_dim)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if not self.mask_zero:
            return None
        return ops.apply("not_equal", torch.ne, inputs, 0)

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        # Keras users often feed indices as floats; .long() is free when they are already int64
        return F.embedding(inputs.long(), self.weight)
