"""Keras 2 ``keras.constraints``: projections applied to a weight after each optimizer step.

``axis`` refers to the Keras layout of the weight (Dense kernel ``(in, units)``: ``axis=0`` bounds
the incoming-weight norm of each unit; Conv2D ``(kh, kw, in, filters)``: use ``axis=[0, 1, 2]``).
Layers apply their constraints on a Keras-layout view of their torch weights
(``layer.apply_constraints()``, called by the training loop after ``optimizer.step()``).

Example::

    >>> import torch
    >>> MaxNorm(1.0)(torch.tensor([[3.0], [4.0]])).flatten().tolist()  # norm 5 -> 1
    [0.6000000238418579, 0.800000011920929]
"""

from __future__ import annotations

from typing import Any

import torch

from arignote import _keras_objects
from arignote._keras_objects import deserialize_object, serialize_object
from arignote.backend import common as backend_common

__all__ = [
    "Constraint",
    "MaxNorm",
    "NonNeg",
    "UnitNorm",
    "MinMaxNorm",
    "max_norm",
    "non_neg",
    "unit_norm",
    "min_max_norm",
    "maxnorm",
    "nonneg",
    "unitnorm",
    "get",
    "serialize",
    "deserialize",
]


def _eps() -> float:
    return backend_common.epsilon()


def _norms(w: torch.Tensor, axis: Any) -> torch.Tensor:
    dims = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    return torch.sqrt(torch.sum(w.square(), dim=dims, keepdim=True))


class Constraint:
    """Base class: ``__call__(w)`` returns the projected weight."""

    def __call__(self, w: torch.Tensor) -> torch.Tensor:
        return w

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Constraint:
        return cls(**config)


class MaxNorm(Constraint):
    """Rescales slices along ``axis`` whose L2 norm exceeds ``max_value`` (default 2, ``axis=0``)."""

    def __init__(self, max_value: float = 2, axis: Any = 0) -> None:
        self.max_value, self.axis = max_value, axis

    def __call__(self, w: torch.Tensor) -> torch.Tensor:
        norms = _norms(w, self.axis)
        desired = torch.clamp(norms, 0, self.max_value)
        return w * (desired / (_eps() + norms))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Zeroes negative weights."""

    def __call__(self, w: torch.Tensor) -> torch.Tensor:
        return w * (w >= 0).to(w.dtype)


class UnitNorm(Constraint):
    """Divides slices along ``axis`` by their L2 norm (default ``axis=0``)."""

    def __init__(self, axis: Any = 0) -> None:
        self.axis = axis

    def __call__(self, w: torch.Tensor) -> torch.Tensor:
        return w / (_eps() + _norms(w, self.axis))

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Keeps slice norms in ``[min_value, max_value]``, moving them by ``rate`` toward the interval
    (defaults ``0.0, 1.0, rate=1.0, axis=0``)."""

    def __init__(
        self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0, axis: Any = 0
    ) -> None:
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w: torch.Tensor) -> torch.Tensor:
        norms = _norms(w, self.axis)
        desired = self.rate * torch.clamp(norms, self.min_value, self.max_value) + (1 - self.rate) * norms
        return w * (desired / (_eps() + norms))

    def get_config(self) -> dict:
        return {
            "min_value": self.min_value,
            "max_value": self.max_value,
            "rate": self.rate,
            "axis": self.axis,
        }


max_norm = maxnorm = MaxNorm
non_neg = nonneg = NonNeg
unit_norm = unitnorm = UnitNorm
min_max_norm = MinMaxNorm

_OBJECTS = {
    name: obj for name, obj in globals().items() if isinstance(obj, type) and issubclass(obj, Constraint)
}
_OBJECTS.update(
    max_norm=MaxNorm,
    non_neg=NonNeg,
    unit_norm=UnitNorm,
    min_max_norm=MinMaxNorm,
    maxnorm=MaxNorm,
    nonneg=NonNeg,
    unitnorm=UnitNorm,
)


def serialize(constraint: Any) -> Any:
    """``{"class_name": "MaxNorm", "config": {...}}``."""
    return serialize_object(constraint)


def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """A constraint from :func:`serialize`'s output or a name (``'max_norm'``, ``'non_neg'``...)."""
    return deserialize_object(config, _OBJECTS, custom_objects, "constraint")


def get(identifier: Any) -> Any:
    """``None`` stays None; a name or config dict is deserialized; a callable passes through."""
    return _keras_objects.get(identifier, deserialize, "constraint")
