"""A model's own weights: Keras 2.3.1's ``Network.add_weight`` (a subclassed model creating a weight
of its own besides its layers', in the model's ``dtype``).

The weights live in one holder layer inside the model's module (so they are in its ``parameters()``,
``state_dict`` and optimizer); the holder is not one of ``model.layers``. ``model.weights``,
``trainable_weights`` and ``non_trainable_weights`` list them first, as Keras 2.3.1's ``Network``
lists its ``_trainable_weights`` before its layers'.

Example::

    >>> from arignote.models import Model
    >>> class Scaled(Model):
    ...     def __init__(self):
    ...         super().__init__(dtype="float64")
    ...         self.scale = self.add_weight("scale", (), initializer="ones")
    ...     def call(self, x):
    ...         return x * self.scale
    >>> m = Scaled()
    >>> m.scale.dtype, [tuple(w.shape) for w in m.trainable_weights]
    (torch.float64, [()])
"""

from __future__ import annotations

from typing import Any

from torch import nn

from arignote.layers.base import Layer

__all__ = ["OwnWeights", "add_weight", "holder_of"]


class OwnWeights(Layer):
    """The holder of a model's own weights (no computation; not listed in ``model.layers``)."""


def holder_of(model: Any) -> OwnWeights | None:
    """The holder of ``model``'s own weights, or None when it made none."""
    return model.__dict__.get("_own_weights")


def add_weight(model: Any, module: nn.Module, *args: Any, **kwargs: Any) -> nn.Parameter:
    """``model.add_weight(name, shape, dtype=None, initializer=None, regularizer=None, trainable=True,
    constraint=None)`` (Keras 2.3.1's arguments): a weight of the model's own, in ``model.dtype``
    unless ``dtype`` is given, held (through the holder layer) by ``module``, the model's torch
    module."""
    holder = holder_of(model)
    if holder is None:
        holder = OwnWeights(name=f"{model.name}_weights", dtype=model.dtype)
        module.add_module("_own_weights", holder)
        model.__dict__["_own_weights"] = holder
    holder.built = True
    return holder.add_weight(*args, **kwargs)
