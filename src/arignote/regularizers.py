"""Keras 2 ``keras.regularizers``: ``L1L2`` and the ``l1`` / ``l2`` / ``l1_l2`` shortcuts.

A regularizer maps a weight tensor to a scalar penalty. Layers take them as
``kernel_regularizer=``, ``bias_regularizer=``, ``activity_regularizer=`` (and
``recurrent_regularizer=`` for RNNs); their penalties are in ``layer.losses`` and the model adds them
to the training loss. The penalty is a sum over elements, so it does not depend on weight layout.

Example::

    >>> import torch
    >>> l2(0.1)(torch.tensor([1.0, 2.0])).item()
    0.5
"""

from __future__ import annotations

from typing import Any

import torch

from arignote import _keras_objects
from arignote._keras_objects import deserialize_object, serialize_object

__all__ = ["Regularizer", "L1L2", "l1", "l2", "l1_l2", "get", "serialize", "deserialize"]


class Regularizer:
    """Base class: ``__call__(x)`` returns a scalar penalty."""

    def __call__(self, x: torch.Tensor) -> Any:
        return 0.0

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Regularizer:
        return cls(**config)


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x ** 2)`` (both factors default 0)."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:
        for name, value in (("l1", l1), ("l2", l2)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"L1L2: {name} must be a number >= 0, got {value!r}")
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x: torch.Tensor) -> Any:
        penalty: Any = 0.0
        if self.l1:
            penalty = penalty + self.l1 * x.abs().sum()
        if self.l2:
            penalty = penalty + self.l2 * x.square().sum()
        return penalty

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}

    def __repr__(self) -> str:
        return f"L1L2(l1={self.l1}, l2={self.l2})"


def l1(l: float = 0.01) -> L1L2:  # noqa: E741 (Keras 2's argument name)
    """``L1L2(l1=l)``."""
    return L1L2(l1=l)


def l2(l: float = 0.01) -> L1L2:  # noqa: E741
    """``L1L2(l2=l)``."""
    return L1L2(l2=l)


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:
    """``L1L2(l1=l1, l2=l2)``."""
    return L1L2(l1=l1, l2=l2)


_OBJECTS = {"Regularizer": Regularizer, "L1L2": L1L2, "l1": l1, "l2": l2, "l1_l2": l1_l2}


def serialize(regularizer: Any) -> Any:
    """``{"class_name": "L1L2", "config": {"l1": ..., "l2": ...}}``."""
    return serialize_object(regularizer)


def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """A regularizer from :func:`serialize`'s output or a name (``'l2'`` = ``l2(0.01)``)."""
    return deserialize_object(config, _OBJECTS, custom_objects, "regularizer")


def get(identifier: Any) -> Any:
    """``None`` stays None; a name or config dict is deserialized; a callable passes through."""
    return _keras_objects.get(identifier, deserialize, "regularizer")
