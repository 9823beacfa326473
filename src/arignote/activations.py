"""Keras 2 ``keras.activations``: activation functions on torch tensors, with ``get`` /
``serialize`` / ``deserialize``.

Every function takes a tensor (a torch tensor, or a symbolic one: ``Input``, ``K.placeholder``,
where it records a graph node as the backend functions do) and Keras 2's keyword arguments
(``softmax(x, axis=-1)``, ``elu(x, alpha=1.0)``, ``relu(x, alpha=0., max_value=None, threshold=0.)``);
the defaults take torch's fused kernels.

Example::

    >>> import torch
    >>> get("relu")(torch.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    >>> serialize(get("softmax")), get(None) is linear
    ('softmax', True)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from arignote._keras_objects import GLOBAL_CUSTOM_OBJECTS, deserialize_object
from arignote.graph.tensor import KerasTensor, record_symbolic

__all__ = [
    "softmax",
    "elu",
    "selu",
    "softplus",
    "softsign",
    "relu",
    "tanh",
    "sigmoid",
    "hard_sigmoid",
    "exponential",
    "linear",
    "get",
    "serialize",
    "deserialize",
]


def softmax(x: torch.Tensor, axis: int = -1) -> torch.Tensor:
    """``exp(x) / sum(exp(x), axis)``; a 1-D tensor is refused, as in Keras 2."""
    if isinstance(x, KerasTensor):  # Input / K.placeholder: a graph node
        return record_symbolic(softmax, x, axis=axis)
    if x.dim() < 2:
        raise ValueError(
            f"Cannot apply softmax to a tensor that is 1D. Received input of shape {tuple(x.shape)}"
        )
    return torch.softmax(x, dim=axis)


def elu(x: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``."""
    if isinstance(x, KerasTensor):  # Input / K.placeholder: a graph node
        return record_symbolic(elu, x, alpha=alpha)
    return F.elu(x, alpha)


def selu(x: torch.Tensor) -> torch.Tensor:
    """Scaled ELU (``scale * elu(x, alpha)`` with the self-normalizing constants)."""
    if isinstance(x, KerasTensor):  # Input / K.placeholder: a graph node
        return record_symbolic(selu, x)
    return F.selu(x)


def softplus(x: torch.Tensor) -> torch.Tensor:
    """``log(exp(x) + 1)``."""
    if isinstance(x, KerasTensor):  # Input / K.placeholder: a graph node
        return record_symbolic(softplus, x)
    return F.softplus(x)


def softsign(x: torch.Tensor) -> torch.Tensor:
    """``x / (abs(x) + 1)``."""
    if isinstance(x, KerasTensor):  # Input / K.placeholder: a graph node
        return record_symbolic(softsign, x)
    return F.softsign(x)


def relu(
    x: torch.Tensor, alpha: float = 0.0, max_value: float | None = None, threshold: float = 0.0
) -> torch.Tensor:
    """Keras 2 ``relu``: ``max_value`` for ``x >= max_value``, ``x`` for ``threshold <= x < max_value``,
    ``alpha * (x - threshold)`` otherwise (with the defaults, plain ``max(x, 0)``)."""
    if isinstance(x, KerasTensor):  # Input / K.placeholder: a graph node
        return record_symbolic(relu, x, alpha=alpha, max_value=max_value, threshold=threshold)
    if _off(alpha) and max_value is None and _off(threshold):
        return torch.relu(x)
    y = torch.where(x > threshold, x, torch.zeros_like(x)) if not _off(threshold) else torch.relu(x)
    if isinstance(max_value, torch.Tensor):  # a weight (keras-contrib's SReLU): per-unit ceilings
        y = torch.minimum(torch.clamp(y, min=0.0), max_value.to(y.dtype))
    elif max_value is not None:
        y = torch.clamp(y, 0.0, max_value)
    if not _off(alpha):
        y = y - alpha * torch.relu(threshold - x)
    return y


def _off(value: Any) -> bool:
    """True for a number that is 0: ``relu``'s ``alpha``/``threshold`` may be weights (tensors, one per
    unit), which count as set, as on Keras 2's Theano backend."""
    return not isinstance(value, torch.Tensor) and value == 0.0


def tanh(x: torch.Tensor) -> torch.Tensor:
    """Hyperbolic tangent."""
    if isinstance(x, KerasTensor):  # Input / K.placeholder: a graph node
        return record_symbolic(tanh, x)
    return torch.tanh(x)


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    """``1 / (1 + exp(-x))``."""
    if isinstance(x, KerasTensor):  # Input / K.placeholder: a graph node
        return record_symbolic(sigmoid, x)
    return torch.sigmoid(x)


def hard_sigmoid(x: torch.Tensor) -> torch.Tensor:
    """Keras 2's piecewise-linear sigmoid: ``clip(0.2 * x + 0.5, 0, 1)``."""
    if isinstance(x, KerasTensor):  # Input / K.placeholder: a graph node
        return record_symbolic(hard_sigmoid, x)
    return torch.clamp(0.2 * x + 0.5, 0.0, 1.0)


def exponential(x: torch.Tensor) -> torch.Tensor:
    """``exp(x)``."""
    if isinstance(x, KerasTensor):  # Input / K.placeholder: a graph node
        return record_symbolic(exponential, x)
    return torch.exp(x)


def linear(x: torch.Tensor) -> torch.Tensor:
    """The identity."""
    return x


_FUNCTIONS: dict[str, Callable] = {
    f.__name__: f
    for f in (softmax, elu, selu, softplus, softsign, relu, tanh, sigmoid, hard_sigmoid, exponential, linear)
}


def serialize(activation: Callable) -> str:
    """The name Keras stores for an activation: its function name, or, for an object registered
    under a name (``get_custom_objects()['swish'] = Activation(swish)``, a Keras 2 idiom whose models
    Keras 2.3.1 could not save), that name.

    >>> serialize(relu)
    'relu'
    """
    name = getattr(activation, "__name__", None)
    if name is not None:
        return name
    for key, value in GLOBAL_CUSTOM_OBJECTS.items():
        if value is activation:
            return key
    raise ValueError(f"Cannot serialize activation {activation!r}: it has no __name__; pass a function, "
                     "or register the object by name with get_custom_objects()")


def deserialize(name: Any, custom_objects: dict | None = None) -> Callable:
    """The activation function named ``name`` (custom objects first)."""
    return deserialize_object(name, _FUNCTIONS, custom_objects, "activation function")


def get(identifier: Any) -> Callable:
    """``None`` -> :func:`linear`; a name -> the function; a callable passes through."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        return deserialize(identifier)
    if callable(identifier):
        if any(klass.__name__ == "Layer" for klass in type(identifier).__mro__):
            warnings.warn(
                f"Do not pass a layer instance (such as {type(identifier).__name__}) as the activation "
                "argument of another layer. Instead, advanced activation layers should be used just "
                "like any other layer in a model.", stacklevel=2)
        return identifier
    raise ValueError(f"Could not interpret activation function identifier: {identifier!r}")
