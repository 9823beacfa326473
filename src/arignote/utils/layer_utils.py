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

from arignote.graph.tensor import get_source_inputs  # torch-free

__all__ = ["print_summary", "count_params", "get_source_inputs", "convert_all_kernels_in_model"]


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


def count_params(weights: Any) -> int:
    """Total number of scalars in a list of weights (tensors or arrays)."""
    return int(sum(w.numel() if hasattr(w, "numel") else int(getattr(w, "size", 0)) for w in weights))


def convert_all_kernels_in_model(model: Any) -> None:
    """Not needed: arignote converts Theano-ordered kernels when it loads a Keras 2 HDF5 file."""
    raise ValueError("convert_all_kernels_in_model is not needed in arignote: Theano-ordered kernels are "
                     "converted when a Keras 2 .h5 file is loaded (arignote.models.load_model)")
