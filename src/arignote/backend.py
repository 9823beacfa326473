"""Keras ``backend`` functions that scripts call: data format, floatX, epsilon, clear_session.

``floatx()`` reads the ``floatX`` flag of :mod:`arignote.config`; ``set_floatx`` sets it from code.

Example::

    >>> from arignote import backend as K
    >>> K.image_data_format(), K.floatx(), K.epsilon()
    ('channels_last', 'float32', 1e-07)
"""

from __future__ import annotations

from arignote import config

__all__ = [
    "backend",
    "image_data_format",
    "set_image_data_format",
    "floatx",
    "set_floatx",
    "epsilon",
    "set_epsilon",
    "clear_session",
]

_EPSILON = [1e-7]


def backend() -> str:
    """The engine's name, ``'torch'`` (Keras returns ``'tensorflow'``, ``'theano'``...)."""
    return "torch"


def image_data_format() -> str:
    """Always ``'channels_last'``: arignote's image API is Keras's default layout (N, H, W, C)."""
    return "channels_last"


def set_image_data_format(data_format: str) -> None:
    """Accepts ``'channels_last'`` only; channels-first data should be transposed once at load time."""
    if data_format != "channels_last":
        raise ValueError(
            f"image data format {data_format!r} is not supported: arignote takes channels_last images "
            "(N, H, W, C); transpose channels-first arrays with x.transpose(0, 2, 3, 1)"
        )


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
