"""Keras 2 ``utils.layer_utils.print_summary`` (``utils.print_summary``): ``model.summary()`` as a function.

Example::

    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> lines = []
    >>> print_summary(Sequential([Dense(2, input_shape=(3,))]), print_fn=lines.append)
    >>> any("Total params: 8" in line for line in lines)
    True
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["print_summary"]


def print_summary(model: Any, line_length: int | None = None, positions: Any = None,
                  print_fn: Callable[[str], Any] | None = None) -> None:
    """Print ``model``'s summary (Keras 2 arguments; ``line_length``/``positions`` only where the
    model's ``summary`` takes them, else a ValueError naming them)."""
    if not hasattr(model, "summary"):
        raise ValueError(f"print_summary takes a model with summary(), got {type(model).__name__}")
    accepted = inspect.signature(model.summary).parameters
    kwargs: dict[str, Any] = {"print_fn": print_fn}
    for name, value in (("line_length", line_length), ("positions", positions)):
        if value is None:
            continue
        if name not in accepted:
            raise ValueError(f"print_summary: {name}={value!r} is not supported by "
                             f"{type(model).__name__}.summary; remove it")
        kwargs[name] = value
    model.summary(**kwargs)
