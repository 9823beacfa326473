"""Keras 2's ``InputSpec``: what a layer accepts (``ndim``, ``min_ndim``, ``axes``, ...), checked when
the layer is called on a symbolic tensor of the functional API (Keras 2's messages) by
``assert_input_compatibility`` (:class:`InputChecks`, a mixin of :class:`arignote.layers.base.Layer`).

Example::

    >>> InputSpec(ndim=2)
    InputSpec(ndim=2)
"""

from __future__ import annotations

from typing import Any

from arignote.graph.tensor import KerasTensor

__all__ = ["InputSpec", "InputChecks"]


class InputSpec:
    """What a layer accepts (Keras 2 ``InputSpec``): ``dtype``, ``shape``, ``ndim``, ``max_ndim``,
    ``min_ndim``, ``axes`` (``{axis: size}``); checked when the layer is called on a symbolic tensor.

    Example::

        >>> InputSpec(min_ndim=2, axes={-1: 8})
        InputSpec(min_ndim=2, axes={-1: 8})
    """

    def __init__(self, dtype: Any = None, shape: Any = None, ndim: int | None = None,
                 max_ndim: int | None = None, min_ndim: int | None = None, axes: dict | None = None) -> None:
        self.dtype = dtype
        self.shape = shape
        self.ndim = len(shape) if shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.axes = axes or {}

    def __repr__(self) -> str:
        spec = [f"{k}={v!r}" for k, v in (("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
                                        ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
                                        ("axes", self.axes)) if v]
        return f"InputSpec({', '.join(spec)})"


def _check_spec(layer: Any, i: int, x: KerasTensor, spec: InputSpec) -> None:
    where = f"Input {i} is incompatible with layer {layer.name}"
    nd = len(x.shape)
    if spec.ndim is not None and nd != spec.ndim:
        raise ValueError(f"{where}: expected ndim={spec.ndim}, found ndim={nd} (shape {x.shape})")
    if spec.max_ndim is not None and nd > spec.max_ndim:
        raise ValueError(f"{where}: expected max_ndim={spec.max_ndim}, found ndim={nd}")
    if spec.min_ndim is not None and nd < spec.min_ndim:
        raise ValueError(f"{where}: expected min_ndim={spec.min_ndim}, found ndim={nd}")
    if spec.dtype is not None and x.dtype != spec.dtype:
        raise ValueError(f"{where}: expected dtype={spec.dtype}, found dtype={x.dtype}")
    for axis, value in spec.axes.items():
        if value is not None and x.shape[int(axis)] not in (value, None):
            raise ValueError(f"{where}: expected axis {axis} of input shape to have value {value} but got "
                             f"shape {x.shape}")
    if spec.shape is not None:
        for want, dim in zip(spec.shape, x.shape):
            if want is not None and dim is not None and want != dim:
                raise ValueError(f"{where}: expected shape={spec.shape}, found shape={x.shape}")


class InputChecks:
    """The input check of a layer (``self`` is a ``Layer``: ``name``, ``input_spec``)."""

    def assert_input_compatibility(self, inputs: Any) -> None:
        """Check symbolic ``inputs`` against ``self.input_spec`` (Keras 2 messages)."""
        if not self.input_spec:
            return
        specs = self.input_spec if isinstance(self.input_spec, (list, tuple)) else [self.input_spec]
        xs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(xs) != len(specs):
            raise ValueError(f"Layer {self.name} expects {len(specs)} inputs, but it received {len(xs)} "
                             "input "
                             "tensors")
        for i, (x, spec) in enumerate(zip(xs, specs)):
            if spec is not None and isinstance(x, KerasTensor):
                _check_spec(self, i, x, spec)
