"""The Keras 1 layers Keras 2.3.1 still exported from ``keras.layers`` (``keras.legacy.layers``), for
old scripts and old ``.h5`` files: ``MaxoutDense``, ``Highway`` and the ``AtrousConvolution1D`` /
``AtrousConvolution2D`` constructors (``Conv1D`` / ``Conv2D`` with ``dilation_rate=atrous_rate``).
Their Keras 1 argument names, weight names and order (``W``, ``b``; ``W``, ``W_carry``, ``b``,
``b_carry``) and configs are Keras 2.3.1's, so their weight files load; like Keras 2.3.1 they
warn that they are deprecated. ``Recurrent`` and ``ConvRecurrent2D`` (Keras 1's abstract recurrent
bases) stay left out: :mod:`arignote.layers._left_out` says what to use.

Example::

    >>> import warnings, torch
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     layer = MaxoutDense(3, nb_feature=2, input_dim=4)
    >>> layer(torch.ones(5, 4)).shape
    torch.Size([5, 3])
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from arignote import activations, constraints, initializers, regularizers
from arignote.layers.base import Layer
from arignote.layers.convolutional import AtrousConv1D, AtrousConv2D, AtrousConvolution1D, AtrousConvolution2D

__all__ = ["MaxoutDense", "Highway", "AtrousConvolution1D", "AtrousConvolution2D", "AtrousConv1D",
           "AtrousConv2D"]


class _KerasOneDense(Layer):
    """What MaxoutDense and Highway share: Keras 1's weight arguments and config."""

    def __init__(self, init: Any = "glorot_uniform", weights: Any = None, W_regularizer: Any = None,
                 b_regularizer: Any = None, activity_regularizer: Any = None, W_constraint: Any = None,
                 b_constraint: Any = None, bias: bool = True, input_dim: int | None = None,
                 **kwargs: Any) -> None:
        warnings.warn(f"The `{type(self).__name__}` layer is deprecated and will be removed after 06/2017.",
                      stacklevel=3)
        self.init = initializers.get(init)
        self.W_regularizer = regularizers.get(W_regularizer)
        self.b_regularizer = regularizers.get(b_regularizer)
        self.W_constraint = constraints.get(W_constraint)
        self.b_constraint = constraints.get(b_constraint)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.bias = bool(bias)
        self.input_dim = input_dim
        if input_dim:
            kwargs["input_shape"] = (input_dim,)
        super().__init__(weights=weights, **kwargs)  # the base layer sets `weights` once built

    def _check_input(self, input_shape: Any) -> int:
        if len(input_shape) != 2 or input_shape[-1] is None:
            raise ValueError(f"{self.name}: {type(self).__name__} takes (batch, features) inputs with a "
                             f"known number of features, got shape {tuple(input_shape)}")
        return int(input_shape[-1])

    def _activity(self, y: torch.Tensor) -> torch.Tensor:
        if self.activity_regularizer is not None:
            self._add_activity_loss(self.activity_regularizer(y))
        return y

    def get_config(self) -> dict:
        config = {"init": initializers.serialize(self.init),
                  "W_regularizer": regularizers.serialize(self.W_regularizer),
                  "b_regularizer": regularizers.serialize(self.b_regularizer),
                  "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                  "W_constraint": constraints.serialize(self.W_constraint),
                  "b_constraint": constraints.serialize(self.b_constraint),
                  "bias": self.bias, "input_dim": self.input_dim}
        return {**super().get_config(), **config}


class MaxoutDense(_KerasOneDense):
    """Keras 1 ``MaxoutDense(output_dim, nb_feature=4)``: the element-wise maximum of ``nb_feature``
    affine maps, ``max_k(x @ W[k] + b[k])`` (``W``: ``(nb_feature, input_dim, output_dim)``)."""

    def __init__(self, output_dim: int, nb_feature: int = 4, **kwargs: Any) -> None:
        self.output_dim = int(output_dim)
        self.nb_feature = int(nb_feature)
        super().__init__(**kwargs)

    def build(self, input_shape: Any) -> None:
        input_dim = self._check_input(input_shape)
        self.W = self.add_weight(name="W", shape=(self.nb_feature, input_dim, self.output_dim),
                                 initializer=self.init, regularizer=self.W_regularizer,
                                 constraint=self.W_constraint)
        self.b = self.add_weight(name="b", shape=(self.nb_feature, self.output_dim), initializer="zeros",
                                 regularizer=self.b_regularizer,
                                 constraint=self.b_constraint) if self.bias else None
        super().build(input_shape)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.einsum("bi,kio->bko", x, self.W)
        if self.b is not None:
            out = out + self.b
        return self._activity(out.amax(dim=1))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (input_shape[0], self.output_dim)

    def get_config(self) -> dict:
        return {**super().get_config(), "output_dim": self.output_dim, "nb_feature": self.nb_feature}


class Highway(_KerasOneDense):
    """Keras 1 ``Highway(activation=None)``: ``t * activation(x @ W + b) + (1 - t) * x`` with the
    transform gate ``t = sigmoid(x @ W_carry + b_carry)`` (``b_carry`` starts at ones)."""

    def __init__(self, init: Any = "glorot_uniform", activation: Any = None, **kwargs: Any) -> None:
        if "transform_bias" in kwargs:
            kwargs.pop("transform_bias")
            warnings.warn("`transform_bias` argument is deprecated and has been removed.", stacklevel=2)
        self.activation = activations.get(activation)
        super().__init__(init=init, **kwargs)

    def build(self, input_shape: Any) -> None:
        n = self._check_input(input_shape)
        self.W = self.add_weight(name="W", shape=(n, n), initializer=self.init,
                                 regularizer=self.W_regularizer, constraint=self.W_constraint)
        self.W_carry = self.add_weight(name="W_carry", shape=(n, n), initializer=self.init)
        if self.bias:
            self.b = self.add_weight(name="b", shape=(n,), initializer="zeros",
                                     regularizer=self.b_regularizer, constraint=self.b_constraint)
            self.b_carry = self.add_weight(name="b_carry", shape=(n,), initializer="ones")
        else:
            self.b = self.b_carry = None
        super().build(input_shape)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        gate = x @ self.W_carry
        hidden = x @ self.W
        if self.b is not None:
            gate = gate + self.b_carry
            hidden = hidden + self.b
        t = torch.sigmoid(gate)
        return self._activity(self.activation(hidden) * t + (1 - t) * x)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": activations.serialize(self.activation)}
