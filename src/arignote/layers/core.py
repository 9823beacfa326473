"""Core Keras layers: ``Input``, ``Dense``, ``Activation``, ``Dropout``, ``Flatten``, ``Embedding``.

Defaults follow Keras 2: ``Dense`` kernels glorot_uniform, biases zeros; ``Embedding`` uniform
in [-0.05, 0.05]. Weights are stored in torch layout (``Dense.weight`` is ``(units, in)``) so
``forward`` is exactly ``F.linear``; ``get_weights()`` returns Keras layout (kernel ``(in, units)``).

Example::

    >>> import torch
    >>> d = Dense(3, activation="softmax", input_dim=4)
    >>> d.build((4,))
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

from arignote.layers import activations
from arignote.layers.activations import check_initializer, initialize
from arignote.layers.base import Layer, _shape_tuple, positive_int

__all__ = ["InputLayer", "Input", "Dense", "Activation", "LeakyReLU", "Dropout", "Flatten", "Reshape",
           "Embedding"]


def _positive_int(value: Any, what: str, layer: str) -> int:
    return positive_int(value, what, layer)


class InputLayer(Layer):
    """Declares the per-sample input shape of a model; passes its input through.

    Example::

        >>> Input(shape=(28, 28, 1)).input_shape_hint
        (28, 28, 1)
    """

    _name_prefix = "input"  # Keras names these input_1, input_2, ...

    def __init__(self, input_shape: Any = None, batch_input_shape: Any = None, **kwargs: Any) -> None:
        if input_shape is None and batch_input_shape is None:
            raise ValueError(
                "Input needs shape=..., e.g. Input(shape=(32, 32, 3)) (per sample, no batch dim)"
            )
        super().__init__(input_shape=input_shape, batch_input_shape=batch_input_shape, **kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def Input(
    shape: Any = None, batch_shape: Any = None, name: str | None = None, dtype: str | None = None
) -> InputLayer:
    """Keras ``Input(shape=...)``: an :class:`InputLayer` to put first in a ``Sequential``."""
    return InputLayer(input_shape=shape, batch_input_shape=batch_shape, name=name, dtype=dtype)


class Dense(Layer):
    """Fully connected layer: ``activation(x @ kernel + bias)`` on the last axis.

    Keras 2 arguments: ``units``, ``activation=None``, ``use_bias=True``,
    ``kernel_initializer='glorot_uniform'``, ``bias_initializer='zeros'``.
    """

    _config_keys = ("units", "activation", "use_bias", "kernel_initializer", "bias_initializer")

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
        self._image = False

    def _build(self, input_shape: tuple) -> None:
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
        # Keras applies Dense to the last axis; on images that is channels (our dim 1)
        self._image = len(input_shape) == 3
        self._act = activations.get(self.activation, image=self._image)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (*tuple(input_shape)[:-1], self.units)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._image:
            y = F.linear(x.permute(0, 2, 3, 1), self.weight, self.bias).permute(0, 3, 1, 2)
        else:
            y = F.linear(x, self.weight, self.bias)
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

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activation
        self._act = activations.get(activation)

    def _build(self, input_shape: tuple) -> None:
        # softmax over Keras's last axis = channels = dim 1 of an internal image tensor
        self._act = activations.get(self.activation, image=len(input_shape) == 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x if self._act is None else self._act(x)


class LeakyReLU(Layer):
    """``x`` if ``x > 0`` else ``alpha * x`` (Keras 2 default ``alpha=0.3``)."""

    _config_keys = ("alpha",)

    def __init__(self, alpha: float = 0.3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or alpha < 0:
            raise ValueError(f"LeakyReLU '{self.name}': alpha must be a number >= 0, got {alpha!r}")
        self.alpha = float(alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, self.alpha)


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of inputs during training (scaled by 1/(1-rate)); identity in eval."""

    _config_keys = ("rate",)

    def __init__(self, rate: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate < 1:
            raise ValueError(f"Dropout '{self.name}': rate must be in [0, 1), got {rate!r}")
        self.rate = float(rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, self.rate, self.training)


class Flatten(Layer):
    """Flattens each sample; images flatten in Keras's (height, width, channels) order.

    On an internal channels_last NCHW tensor ``permute(0, 2, 3, 1)`` is contiguous, so this is a view.
    """

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(
                f"Flatten '{self.name}': only data_format='channels_last' (Keras's default) is supported"
            )
        self._image = False

    def _build(self, input_shape: tuple) -> None:
        self._image = len(input_shape) == 3
        self.image_layer = self._image  # consumes an internal image tensor, returns Keras order

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = tuple(input_shape)
        return (None,) if None in shape else (math.prod(shape),)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._image:
            x = x.permute(0, 2, 3, 1)
        return x.reshape(x.shape[0], -1)


class Reshape(Layer):
    """Reshapes each sample to ``target_shape`` (Keras order; one dimension may be -1)."""

    _config_keys = ("target_shape",)

    def __init__(self, target_shape: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1 or any(d == 0 or d < -1 for d in self.target_shape):
            raise ValueError(f"Reshape '{self.name}': bad target_shape {target_shape!r}")
        self._in_image = self._out_image = False

    def _build(self, input_shape: tuple) -> None:
        self._in_image = len(input_shape) == 3
        self._out_image = len(self.target_shape) == 3
        self._resolved = self.compute_output_shape(input_shape)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        total = math.prod(input_shape)
        known = math.prod(d for d in self.target_shape if d != -1)
        if -1 in self.target_shape:
            if total % known:
                raise ValueError(
                    f"Reshape '{self.name}': cannot reshape {tuple(input_shape)} to {self.target_shape}"
                )
            return tuple(total // known if d == -1 else d for d in self.target_shape)
        if known != total:
            raise ValueError(
                f"Reshape '{self.name}': cannot reshape {tuple(input_shape)} to {self.target_shape}"
            )
        return self.target_shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._in_image:
            x = x.permute(0, 2, 3, 1)
        y = x.reshape(x.shape[0], *self._resolved)
        return y.permute(0, 3, 1, 2) if self._out_image else y


class Embedding(Layer):
    """Turns integer indices in ``[0, input_dim)`` into dense vectors of size ``output_dim``.

    Keras 2 arguments: ``input_dim``, ``output_dim``, ``embeddings_initializer='uniform'``
    (U(-0.05, 0.05)), ``input_length``. ``mask_zero=True`` is not supported.
    """

    _config_keys = ("input_dim", "output_dim", "embeddings_initializer", "input_length")

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        embeddings_initializer: Any = "uniform",
        input_length: int | None = None,
        mask_zero: bool = False,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("input_shape", None) if input_length is not None else None
        super().__init__(**kwargs)
        if mask_zero:
            raise ValueError(
                f"Embedding '{self.name}': mask_zero=True is not supported; pad with 0 and keep "
                "mask_zero=False"
            )
        self.input_dim = _positive_int(input_dim, "input_dim", f"Embedding '{self.name}'")
        self.output_dim = _positive_int(output_dim, "output_dim", f"Embedding '{self.name}'")
        self.embeddings_initializer = check_initializer(embeddings_initializer, "embeddings_initializer")
        self.input_length = (
            None if input_length is None else _positive_int(input_length, "input_length", "Embedding")
        )
        if self.input_length is not None:
            self.input_shape_hint = (self.input_length,)

    def get_config(self) -> dict:
        cfg = super().get_config()
        cfg.pop("input_shape", None)  # carried by input_length
        return cfg

    def _build(self, input_shape: tuple) -> None:
        _shape_tuple(input_shape, "Embedding input shape")
        self.weight = nn.Parameter(
            initialize(
                torch.empty(self.input_dim, self.output_dim, dtype=self._param_dtype()),
                self.embeddings_initializer,
            )
        )

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (*tuple(input_shape), self.output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Keras users often feed indices as floats; .long() is free when they are already int64
        return F.embedding(x.long(), self.weight)
