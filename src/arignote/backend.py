"""Keras ``backend`` functions that scripts call: data format, floatX, epsilon, clear_session,
``get_value``/``set_value`` (an optimizer's ``lr``, a tensor).

``floatx()`` reads the ``floatX`` flag of :mod:`arignote.config`; ``set_floatx`` sets it from code.

Example::

    >>> from arignote import backend as K
    >>> K.image_data_format(), K.floatx(), K.epsilon()
    ('channels_last', 'float32', 1e-07)
"""

from __future__ import annotations

from typing import Any

from arignote import config
from arignote.backend_ops import *  # noqa: F403 - Keras's backend is one flat namespace
from arignote.backend_ops import __all__ as _OPS
from arignote.graph.kfunction import function, gradients, learning_phase, set_learning_phase
from arignote.hyperparameter import HyperParameter

__all__ = [
    *_OPS,
    "function",
    "gradients",
    "learning_phase",
    "set_learning_phase",
    "backend",
    "image_data_format",
    "set_image_data_format",
    "floatx",
    "set_floatx",
    "epsilon",
    "set_epsilon",
    "clear_session",
    "get_value",
    "set_value",
    "batch_get_value",
    "batch_set_value",
]

_EPSILON = [1e-7]


def backend() -> str:
    """The engine's name, ``'torch'`` (Keras returns ``'tensorflow'``, ``'theano'``...)."""
    return "torch"


def image_data_format() -> str:
    """The default ``data_format`` of image layers: ``'channels_last'`` (Keras's default) or
    ``'channels_first'`` (Theano's ordering), from :func:`set_image_data_format`, the
    ``image_data_format`` flag, or ``~/.keras/keras.json``."""
    return config.get("image_data_format")


def set_image_data_format(data_format: str) -> None:
    """Set the default image layout for layers built afterwards (Keras 2 ``K.set_image_data_format``)."""
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"Unknown data_format: {data_format!r}; use 'channels_last' or 'channels_first'")
    config.configure(image_data_format=data_format)


def floatx() -> str:
    """The default float dtype name (``floatX`` flag), e.g. ``'float32'``."""
    return config.get("floatX")


def set_floatx(value: str) -> None:
    """Set the ``floatX`` flag from code (``float16``, ``bfloat16``, ``float32``, ``float64``)."""
    config.configure(floatX=value)


def epsilon() -> float:
    """The fuzz factor of losses and optimizers (Keras default ``1e-7``)."""
    return _EPSILON[0]


def set_epsilon(value: float) -> None:
    """Change :func:`epsilon` (used by losses' clipping and as default optimizer epsilon)."""
    if not value > 0:
        raise ValueError(f"epsilon must be > 0, got {value!r}")
    _EPSILON[0] = float(value)


def clear_session() -> None:
    """Reset layer auto-names (the next ``Dense`` is ``dense_1`` again), as Keras does."""
    from arignote.layers.base import reset_name_counters

    reset_name_counters()


def get_value(x: Any) -> Any:
    """Keras 2 ``K.get_value``: an optimizer hyper-parameter (``model.optimizer.lr``) as a float,
    a tensor as a numpy array, a number or array as it is.

    >>> from arignote.optimizers import Adam
    >>> get_value(Adam(lr=0.001).lr)
    0.001
    """
    if isinstance(x, HyperParameter):
        return x.value()
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor
        return x.detach().cpu().numpy()
    return x


def set_value(x: Any, value: Any) -> None:
    """Keras 2 ``K.set_value``: write ``value`` into an optimizer hyper-parameter
    (``K.set_value(model.optimizer.lr, 1e-4)``) or, in place, into a tensor of the same shape."""
    if isinstance(x, HyperParameter):
        x.assign(value)
        return
    if hasattr(x, "copy_") and hasattr(x, "shape"):  # a torch tensor (a weight, a buffer)
        import torch

        new = torch.as_tensor(value, dtype=x.dtype, device=x.device)
        if tuple(new.shape) != tuple(x.shape):
            raise ValueError(f"set_value: the value has shape {tuple(new.shape)}, the tensor "
                             f"{tuple(x.shape)}; pass an array of the tensor's shape")
        with torch.no_grad():
            x.copy_(new)
        return
    raise TypeError(f"set_value: a {type(x).__name__} is not a variable; pass model.optimizer.lr "
                    "(or learning_rate) or a tensor, or assign the attribute directly "
                    "(e.g. model.optimizer.decay = 1e-6)")


def batch_get_value(xs: Any) -> list:
    """``[get_value(x) for x in xs]``."""
    return [get_value(x) for x in xs]


def batch_set_value(pairs: Any) -> None:
    """``set_value(x, v)`` for each ``(x, v)`` pair."""
    for x, value in pairs:
        set_value(x, value)
