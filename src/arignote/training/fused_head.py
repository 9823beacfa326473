"""The training forward of a classifier head: its loss computed from the logits when it can be.

A ``Sequential`` model ending in ``Dense(n, activation='softmax')`` (or ``Activation('softmax')``)
trained with ``categorical_crossentropy`` / ``sparse_categorical_crossentropy``, or ending in a
``sigmoid`` trained with ``binary_crossentropy``, computes Keras 2's loss on the probabilities:
softmax, ``p / sum(p)``, ``clip(p, eps, 1 - eps)``, ``log``, and the backward of each. Training
such a model, :class:`FusedHead` runs the last layer without its activation and computes the same
loss from the logits (:func:`arignote.losses.from_logits`: ``log_softmax`` clamped to ``[log eps,
log(1 - eps)]``, zero gradient where clamped, as the clip): the same values and gradients up to
float rounding, about 20 operators fewer a step (forward and backward). The metrics get the
detached logits as :class:`~arignote.metrics.predictions.Logits`: Keras's accuracies read the logits
where that gives the same answer (:mod:`arignote.metrics.hits`), every other metric the
probabilities the model outputs (the activation, computed once per batch and only if one asks).

Only the training forward changes: ``evaluate``, ``predict`` and the model itself keep their
activation. A batch with sample weights or output masks takes Keras's weighted route
(:class:`PlainHead`'s); so do models with an activity regularizer on the last layer, losses of
their own (``add_loss``), graphs and wrapped torch modules; the trainer keeps the plain head
under ``jit_compile`` (the compiler fuses the step itself).

Example::

    >>> import torch
    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> m = Sequential([Dense(3, activation="softmax", input_dim=4)])
    >>> m.compile("sgd", "categorical_crossentropy")
    >>> head = for_model(m)
    >>> type(head).__name__
    'FusedHead'
    >>> loss, out = head.loss_and_pred(m.module, torch.ones(2, 4), torch.eye(3)[:2], m.loss_fn)
    >>> bool(torch.allclose(out.probabilities(), m.module(torch.ones(2, 4))))
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from arignote import activations, losses
from arignote.layers.core import Activation, Dense
from arignote.losses.weighting import Weighted
from arignote.metrics.predictions import Logits

__all__ = ["PlainHead", "FusedHead", "for_model"]


class PlainHead:
    """The model's output and the compiled loss on it (any model)."""

    def loss_and_pred(self, net: Any, xb: Any, yb: Any, loss_fn: Callable) -> tuple[torch.Tensor, Any]:
        y_pred = net(xb)
        return loss_fn(yb, y_pred), y_pred


class FusedHead(PlainHead):
    """``layer``'s ``activation`` left out of the training forward; ``fused(y_true, logits)`` is the
    loss. Falls back to :class:`PlainHead` for a batch with weights or masks."""

    def __init__(self, layer: Any, fused: Callable, kind: str = "softmax") -> None:
        self.layer = layer
        self.activation = layer.activation
        self.fused = fused
        self.kind = kind

    def loss_and_pred(self, net: Any, xb: Any, yb: Any, loss_fn: Callable) -> tuple[torch.Tensor, Any]:
        if isinstance(yb, Weighted):  # sample weights or masks: Keras's weighted loss
            return super().loss_and_pred(net, xb, yb, loss_fn)
        layer = self.layer
        layer.activation = activations.linear
        try:
            logits = net(xb)
        finally:
            layer.activation = self.activation
        return self.fused(yb, logits), Logits(logits.detach(), self.activation, self.kind)


_ACTIVATIONS = {activations.softmax: "softmax", activations.sigmoid: "sigmoid"}


def for_model(model: Any) -> PlainHead:
    """:class:`FusedHead` when ``model`` (compiled) qualifies (see the module's docstring), else
    :class:`PlainHead`."""
    members = getattr(model.module, "members", None)  # a Sequential's stack of layers
    if getattr(model, "_is_graph", True) or not members or getattr(model, "_model_losses", True):
        return PlainHead()
    if getattr(model, "_loss_weight", 1.0) != 1.0:  # compile(loss_weights=...) scales the loss
        return PlainHead()
    last = members[-1]
    if type(last) not in (Dense, Activation) or getattr(last, "activity_regularizer", None) is not None:
        return PlainHead()
    name = _ACTIVATIONS.get(last.activation)
    fused = losses.from_logits(model.loss, name) if name is not None else None
    return PlainHead() if fused is None else FusedHead(last, fused, name)
