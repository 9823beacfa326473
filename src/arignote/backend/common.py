"""The backend's settings and counters, a floor below everything that uses them (Keras 2's
``keras/backend/common.py``): data format, floatX, epsilon, and the per-prefix name counters.

:mod:`arignote.backend` re-exports these; initializers, constraints and layers import them from
here, so the backend (which grows graph operations over layers) can sit above the layers without an
import circle.

Example::

    >>> from arignote.backend import common
    >>> common.image_data_format(), common.floatx(), common.epsilon()
    ('channels_last', 'float32', 1e-07)
    >>> common.reset_uids(); common.get_uid("dense"), common.get_uid("dense"), common.get_uid("conv2d")
    (1, 2, 1)
    >>> common.reset_uids()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from arignote import config

__all__ = ["image_data_format", "set_image_data_format", "image_dim_ordering", "set_image_dim_ordering",
           "normalize_data_format", "floatx", "set_floatx",
           "cast_to_floatx", "epsilon", "set_epsilon", "get_uid", "reset_uids", "symbolic", "eager"]

_F = TypeVar("_F", bound=Callable[..., Any])

_EPSILON = [1e-7]
_UIDS: dict[str, int] = {}


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


def set_image_dim_ordering(dim_ordering: str) -> None:
    """Keras 2.0-2.2's legacy setter (``K.set_image_dim_ordering('th')`` in many published
    scripts): ``'th'`` is ``channels_first``, ``'tf'`` is ``channels_last``.

    >>> set_image_dim_ordering("th"); image_data_format(), image_dim_ordering()
    ('channels_first', 'th')
    >>> set_image_dim_ordering("tf"); image_data_format()
    'channels_last'
    """
    if dim_ordering not in ("th", "tf"):
        raise ValueError(f"Unknown dim_ordering: {dim_ordering!r}; use 'th' (channels_first) or 'tf' "
                         "(channels_last), or set_image_data_format")
    set_image_data_format("channels_first" if dim_ordering == "th" else "channels_last")


def image_dim_ordering() -> str:
    """Keras 2.0-2.2's legacy getter: ``'th'`` for ``channels_first``, else ``'tf'``."""
    return "th" if image_data_format() == "channels_first" else "tf"


def normalize_data_format(value: str | None, where: str | None = None) -> str:
    """``value`` checked and lower-cased, ``None`` -> :func:`image_data_format` (Keras 2
    ``K.normalize_data_format``); ``where`` names the caller in the error.

    >>> normalize_data_format("Channels_First"), normalize_data_format(None)
    ('channels_first', 'channels_last')
    """
    if value is None:
        value = image_data_format()
    fmt = value.lower() if isinstance(value, str) else value
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(f"{where + ': ' if where else ''}data_format must be 'channels_first' or "
                         f"'channels_last', got {value!r}")
    return fmt


def floatx() -> str:
    """The default float dtype name (``floatX`` flag), e.g. ``'float32'``."""
    return config.get("floatX")


def set_floatx(value: str) -> None:
    """Set the ``floatX`` flag from code (``float16``, ``bfloat16``, ``float32``, ``float64``)."""
    config.configure(floatX=value)


def cast_to_floatx(x: Any) -> Any:
    """``x`` as a numpy array of :func:`floatx` (Keras 2 ``K.cast_to_floatx``).

    >>> cast_to_floatx([1.0, 2.0]).dtype
    dtype('float32')
    """
    name = floatx()
    out = np.asarray(x, dtype="float32" if name == "bfloat16" else name)  # numpy has no bfloat16
    # a scalar comes back as a numpy scalar, not a 0-d array: ``self.epsilon = K.cast_to_floatx(0.01)``
    # then multiplies a torch tensor (keras-contrib's SineReLU), which a 0-d ndarray refuses to do
    return out[()] if out.ndim == 0 else out


def epsilon() -> float:
    """The fuzz factor of losses and optimizers (Keras default ``1e-7``)."""
    return _EPSILON[0]


def set_epsilon(value: float) -> None:
    """Change :func:`epsilon` (used by losses' clipping and as default optimizer epsilon)."""
    if not value > 0:
        raise ValueError(f"epsilon must be > 0, got {value!r}")
    _EPSILON[0] = float(value)


def get_uid(prefix: str = "") -> int:
    """1, 2, 3 ... per ``prefix`` (Keras 2 ``K.get_uid``): what layer auto-names (``dense_2``) count with."""
    _UIDS[prefix] = _UIDS.get(prefix, 0) + 1
    return _UIDS[prefix]


def reset_uids() -> None:
    """Restart every counter (``backend.clear_session()`` calls this: the next Dense is ``dense_1``)."""
    _UIDS.clear()


def symbolic(func: _F) -> _F:
    """Keras 2.3's decorator for entering TensorFlow 2's graph; arignote has one mode: ``func`` as it is."""
    return func


def eager(func: _F) -> _F:
    """Keras 2.3's decorator for leaving TensorFlow 2's graph; arignote has one mode: ``func`` as it is."""
    return func
