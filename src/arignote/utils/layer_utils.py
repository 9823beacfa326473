"""Keras 2 ``utils.layer_utils``: ``print_summary`` (``model.summary()`` as a function),
``count_params``, ``get_source_inputs``, and the kernel conversions ``convert_kernel``,
``convert_all_kernels_in_model`` (Theano <-> TensorFlow convolution kernels) and
``convert_dense_weights_data_format`` (a Dense after a Flatten, between data formats).

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

import numpy as np

from arignote.graph.tensor import get_source_inputs  # torch-free

__all__ = ["print_summary", "count_params", "get_source_inputs", "convert_kernel",
           "convert_all_kernels_in_model", "convert_dense_weights_data_format"]

# the layers whose kernels Keras 2.3.1's convert_all_kernels_in_model flips (by class name, as Keras)
_CONV_CLASSES = ("Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose")


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


def convert_kernel(kernel: Any) -> np.ndarray:
    """A copy of a Keras-layout convolution kernel (``(*spatial, in, out)``, 3-D to 5-D) with its
    spatial axes reversed: a Theano kernel (a true convolution) as a TensorFlow one (a correlation),
    and back (Keras 2.3.1 ``convert_kernel``).

    >>> convert_kernel(np.array([1, 2, 3]).reshape(3, 1, 1))[:, 0, 0].tolist()
    [3, 2, 1]
    """
    kernel = np.asarray(kernel)
    if not 3 <= kernel.ndim <= 5:
        raise ValueError(f"convert_kernel takes a 3-D to 5-D kernel (*spatial, input channels, filters), "
                         f"got shape {kernel.shape}")
    slices = [slice(None, None, -1)] * (kernel.ndim - 2) + [slice(None), slice(None)]
    return np.copy(kernel[tuple(slices)])


def convert_all_kernels_in_model(model: Any) -> None:
    """Flip the spatial axes of the kernel of every ``Conv1D``, ``Conv2D``, ``Conv3D`` and
    ``Conv2DTranspose`` among ``model.layers``, in place (Keras 2.3.1: a model built from Theano
    weights set by hand made TensorFlow's, and back; nested models are left as they are, as Keras).

    Not needed for files: ``load_model`` / ``load_weights`` flip a Theano ``.h5`` file's kernels
    themselves. Biases and other weights stay as they are.
    """
    layers = getattr(model, "layers", None)
    if layers is None:
        raise ValueError(f"convert_all_kernels_in_model takes a model with layers, got "
                         f"{type(model).__name__}")
    for layer in layers:
        if type(layer).__name__ in _CONV_CLASSES:
            weights = layer.get_weights()
            layer.set_weights([convert_kernel(weights[0]), *weights[1:]])


def convert_dense_weights_data_format(dense: Any, previous_feature_map_shape: Any,
                                      target_data_format: str = "channels_first") -> None:
    """Reorder the kernel rows of ``dense``, a Dense layer right after a ``Flatten`` of a feature
    map, in place, for a model whose feature maps change data format (Keras 2.3.1).

    ``previous_feature_map_shape``: the feature map's shape in the *target* format (what Keras 2.3.1's
    code reads): ``(C, H, W)`` for ``target_data_format='channels_first'`` (the kernel was trained
    on ``(H, W, C)`` flattening), ``(H, W, C)`` for ``'channels_last'``. Other ranks work the same
    way (``(C, L)``, ``(C, D, H, W)``).

    Example::

        >>> from arignote.layers import Dense
        >>> from arignote.models import Sequential
        >>> d = Dense(1, use_bias=False, input_shape=(6,)); _ = Sequential([d])
        >>> d.set_weights([np.arange(6.0).reshape(6, 1)])   # rows in (H=3, W=1, C=2) order
        >>> convert_dense_weights_data_format(d, (2, 3, 1)); d.get_weights()[0][:, 0].tolist()
        [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
    """
    if target_data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"target_data_format must be 'channels_last' or 'channels_first', got "
                         f"{target_data_format!r}")
    shape = tuple(int(d) for d in previous_feature_map_shape)
    weights = dense.get_weights()
    if not weights or np.ndim(weights[0]) != 2:
        raise ValueError(f"convert_dense_weights_data_format takes a built Dense layer (a 2-D kernel), got "
                         f"{getattr(dense, 'name', type(dense).__name__)!r}")
    kernel = np.asarray(weights[0])
    if len(shape) < 2 or int(np.prod(shape)) != kernel.shape[0]:
        raise ValueError(f"previous_feature_map_shape {shape} (C, *spatial or *spatial, C) does not give the "
                         f"{kernel.shape[0]} inputs of {dense.name!r}'s kernel")
    n, units = len(shape), kernel.shape[1]
    if target_data_format == "channels_first":  # rows were (*spatial, C): make them (C, *spatial)
        original, order = (*shape[1:], shape[0]), (n - 1, *range(n - 1))
    else:  # rows were (C, *spatial): make them (*spatial, C)
        original, order = (shape[-1], *shape[:-1]), (*range(1, n), 0)
    converted = kernel.reshape(*original, units).transpose(*order, n).reshape(kernel.shape)
    dense.set_weights([np.ascontiguousarray(converted).astype(kernel.dtype), *weights[1:]])
