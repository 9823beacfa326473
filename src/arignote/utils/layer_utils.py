"""Keras 2 ``keras.utils.layer_utils``: ``count_params``, ``print_summary``, ``get_source_inputs``.

Example::

    >>> import torch
    >>> count_params([torch.zeros(3, 4), torch.zeros(4)])
    16
"""

from __future__ import annotations

from typing import Any

from arignote.engine.topology import get_source_inputs

__all__ = ["count_params", "print_summary", "get_source_inputs", "convert_all_kernels_in_model"]


def count_params(weights: Any) -> int:
    """Total number of scalars in a list of weights."""
    return int(sum(w.numel() if hasattr(w, "numel") else int(getattr(w, "size", 0)) for w in weights))


def print_summary(model: Any, line_length: Any = None, positions: Any = None, print_fn: Any = None) -> None:
    """``model.summary()`` (Keras 2's function form)."""
    model.summary(print_fn=print_fn)


def convert_all_kernels_in_model(model: Any) -> None:
    """Not needed: arignote converts Theano kernels when it loads a Keras 2 HDF5 file."""
    raise ValueError("convert_all_kernels_in_model is not needed in arignote: Theano-ordered kernels are "
                     "converted when a Keras 2 .h5 file is loaded (arignote.models.load_model)")
