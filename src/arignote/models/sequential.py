"""Keras 2 ``Sequential``: a stack of :mod:`arignote.layers`, built from the first layer's input shape.

Tensors between layers keep the Keras layout (``(N, H, W, C)`` for channels_last images); image
layers view them as NCHW for torch's kernels, which is a channels-last-memory tensor (no copy).

Example::

    >>> from arignote.layers import Conv2D, Flatten, Dense
    >>> model = Sequential([Conv2D(4, (3, 3), input_shape=(8, 8, 1)), Flatten(), Dense(10)])
    >>> model.output_shape()
    (10,)
    >>> [l.name.split("_")[0] for l in model.layers]
    ['conv2d', 'flatten', 'dense']
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import numpy as np
import torch
from torch import nn

from arignote.models.model import Model
from arignote.parallel import placement

__all__ = ["Sequential"]


class _Stack(nn.Module):
    """The torch module behind a Sequential: Keras-layout tensors in and out, masks passed along
    (an ``Embedding(mask_zero=True)`` or ``Masking`` layer's mask reaches the layers after it)."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = None
        for layer in self.layers:
            y = layer(x) if mask is None or not _takes_mask(type(layer)) else layer(x, mask=mask)
            compute_mask = getattr(layer, "compute_mask", None)
            mask = compute_mask(x, mask) if compute_mask is not None else None
            x = y
        return x


@functools.cache
def _takes_mask(cls: type) -> bool:
    return "mask" in inspect.signature(cls.forward).parameters


class Sequential(Model):
    """A linear stack of layers: ``Sequential([Dense(64, input_dim=20), Dense(10)])`` or ``add()``."""

    def __init__(self, layers: list | None = None, name: str | None = None) -> None:
        super().__init__(_Stack(), name=name or "sequential")
        self._built_shape: tuple | None = None
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self) -> list[Any]:
        return list(self.module.layers)

    def add(self, layer: Any) -> None:
        """Append ``layer``; built at once when the input shape is known (Keras behaviour)."""
        from arignote.layers import Layer

        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add takes an arignote layer (arignote.layers.Dense, ...), got "
                            f"{type(layer).__name__}; wrap a torch module with arignote.models.Model")
        if self.layers and layer.input_shape_hint is not None:
            prev = self.output_shape()
            if prev is not None and tuple(layer.input_shape_hint) != tuple(prev):
                raise ValueError(f"layer '{layer.name}' declares input_shape={layer.input_shape_hint} but "
                                 f"the previous layer outputs {prev}; remove input_shape= from later layers")
        placement.mark(layer)  # inside `with arignote.device("dev1"):` the layer goes to dev1
        self.module.layers.append(layer)
        self._invalidate()
        shape = self.expected_input_shape()
        if shape is not None:
            self._build(shape)

    def pop(self) -> Any:
        """Remove and return the last layer."""
        if not self.layers:
            raise IndexError("pop from an empty Sequential model")
        layer = self.module.layers[-1]
        del self.module.layers[-1]
        self._invalidate()
        return layer

    def _invalidate(self) -> None:
        # a changed stack needs placing (device, dtype, channels-last) and an optimizer rebuilt
        self._trainer = None
        self._placed = False

    # ------------------------------------------------------------------ building and shapes

    def expected_input_shape(self) -> tuple | None:
        if self._built_shape is not None:
            return self._built_shape
        hint = self.layers[0].input_shape_hint if self.layers else None
        return tuple(hint) if hint is not None else None

    def _build(self, shape: tuple) -> None:
        shape = tuple(shape)
        self._built_shape = shape
        for layer in self.layers:
            layer.build(shape)
            shape = tuple(layer.compute_output_shape(shape))

    def _ensure_built(self, sample_shape: tuple | None) -> None:
        if not self.layers:
            raise ValueError("the Sequential model has no layers: add some with model.add(...)")
        shape = self.expected_input_shape() or (tuple(sample_shape) if sample_shape is not None else None)
        if shape is None:
            raise ValueError("the model does not know its input shape yet: pass input_shape=(...) to the "
                             "first layer, or call fit/predict with data first")
        if not all(layer.built for layer in self.layers):
            self._build(shape)

    def output_shape(self) -> tuple | None:
        shape = self.expected_input_shape()
        if shape is None:
            return None
        for layer in self.layers:
            shape = tuple(layer.compute_output_shape(shape))
        return shape

    # ------------------------------------------------------------------ Keras-layout weights

    def get_weights(self) -> list[np.ndarray]:
        """All layers' weights in Keras order and layout (Dense kernel ``(in, units)``, ...)."""
        self._ensure_built(None)
        return [w for layer in self.layers for w in layer.get_weights()]

    def set_weights(self, weights: list) -> None:
        self._ensure_built(None)
        weights = list(weights)
        expected = sum(len(layer.get_weights()) for layer in self.layers)
        if len(weights) != expected:
            raise ValueError(f"set_weights: the model has {expected} weight arrays, got {len(weights)}")
        at = 0
        for layer in self.layers:
            n = len(layer.get_weights())
            if n:
                layer.set_weights([np.asarray(w) for w in weights[at:at + n]])
            at += n

    def get_config(self) -> dict:
        """Keras 2 config: ``{"name", "layers": [{"class_name", "config"}, ...]}``."""
        from arignote.layers import serialize

        return {"name": self.name, "layers": [serialize(layer) for layer in self.layers],
                "build_input_shape": list(self._built_shape) if self._built_shape is not None else None}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Sequential:
        from arignote.layers import deserialize

        model = cls(name=config.get("name"))
        for spec in config["layers"]:
            model.module.layers.append(deserialize(spec, custom_objects))
        shape = config.get("build_input_shape")
        if shape is not None:
            model._build(tuple(shape))
        return model

    def summary(self, line_length: Any = None, positions: Any = None, print_fn: Any = None) -> None:
        """Print the Keras 2 table (Layer (type) / Output Shape / Param #) and the totals."""
        from arignote.models import summary

        self._ensure_built(None)
        rows = summary.layer_rows(self.layers, self.expected_input_shape())
        params = list(self.module.parameters())
        total = sum(p.numel() for p in params)
        trainable = sum(p.numel() for p in params if p.requires_grad)
        summary.print_summary(summary.render(rows, total, trainable), print_fn)
        from arignote.training.memory_plan import summary_lines

        summary.print_summary(summary_lines(self), print_fn)  # issue 7: the memory plan
