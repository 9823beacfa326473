"""What a layer's constructor arguments become: its Keras auto name (``dense_1``, ``conv2d_2``, counted
per prefix until ``clear_session()``), sizes and shapes checked with an error naming the culprit, and
the ``TypeError`` for an unknown keyword argument with a did-you-mean hint.

Example::

    >>> positive_int(3, "units", "Dense"), _shape_tuple(784, "input_dim"), _snake_case("MaxPooling2D")
    (3, (784,), 'max_pooling2d')
    >>> unknown_argument_error("Dense", "unit", ["units", "activation"])
    TypeError("Dense got an unexpected keyword argument 'unit'. Did you mean 'units'?")
"""

from __future__ import annotations

import difflib
import numbers
import re
from typing import Any

from arignote.backend import common as backend_common

__all__ = ["reset_name_counters", "auto_name", "unknown_argument_error", "positive_int"]


def reset_name_counters() -> None:
    """Restart auto names at ``dense_1`` etc. (what ``backend.clear_session()`` does)."""
    backend_common.reset_uids()


def _snake_case(name: str) -> str:
    # Keras 2's rule: Conv2D -> conv2d, MaxPooling2D -> max_pooling2d, LSTM -> lstm
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()


def auto_name(prefix: str) -> str:
    """``prefix_N`` with N counting from 1 per prefix (Keras's ``K.get_uid``)."""
    return f"{prefix}_{backend_common.get_uid(prefix)}"


def _auto_name(cls: type) -> str:
    return auto_name(getattr(cls, "_name_prefix", None) or _snake_case(cls.__name__))


def unknown_argument_error(where: str, key: str, valid: list[str]) -> TypeError:
    """A ``TypeError`` naming the unknown keyword argument, with a did-you-mean hint."""
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f" Did you mean '{close[0]}'?" if close else f" Valid arguments: {', '.join(sorted(valid))}."
    return TypeError(f"{where} got an unexpected keyword argument '{key}'.{hint}")


def positive_int(value: Any, what: str, where: str) -> int:
    """``value`` as a Python int > 0 (numpy integers welcome), else a ValueError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or int(value) != value or value <= 0:
        raise ValueError(f"{where}: {what} must be a positive integer, got {value!r}")
    return int(value)


def _shape_tuple(value: Any, what: str) -> tuple:
    if isinstance(value, numbers.Integral):
        return (int(value),)
    try:
        shape = tuple(None if d is None else int(d) for d in value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a tuple of ints such as (32, 32, 3), got {value!r}") from None
    if any(d is not None and d <= 0 for d in shape):
        raise ValueError(f"{what} must have positive dimensions, got {value!r}")
    return shape
