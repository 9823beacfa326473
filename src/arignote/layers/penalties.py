"""What Keras 2 adds around an optimizer step for a model's layers: the regularization penalties
(weight regularizers, ``add_loss``, activity regularizers of the last call) added to the training
and test loss, and the weight constraints applied after each update.

The training loop builds one :class:`Penalties` per model; with no regularizer and no constraint it
costs a scan of empty lists per step.

Example::

    >>> from arignote.layers import Dense
    >>> from arignote import regularizers
    >>> d = Dense(1, kernel_initializer="ones", use_bias=False, kernel_regularizer=regularizers.l2(0.1))
    >>> d.build((None, 2))
    >>> round(Penalties(d).loss().item(), 6)
    0.2
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from arignote.graph.tensor import KerasTensor
from arignote.layers.base import Layer

__all__ = ["Penalties"]


class Penalties:
    """The layers of ``module`` (an ``nn.Module``) that can add to the loss, and its constrained weights."""

    def __init__(self, module: nn.Module) -> None:
        self.layers = [m for m in module.modules() if isinstance(m, Layer)]
        self.constrained = [(m, attr, fn) for m in self.layers for attr, fn in m.constraints.items()]

    def loss(self) -> Any:
        """The sum of the current penalties (a scalar tensor), or None when there are none."""
        total = None
        for m in self.layers:
            terms = [fn(p) for p, fn in m._regularizers]
            terms += [loss() if callable(loss) else loss for loss in m._added_losses
                      if not isinstance(loss, KerasTensor)]  # fmt: skip
            terms += m._call_losses
            for term in terms:
                total = term if total is None else total + term
        return total

    def add_to(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss`` plus the penalties (Keras 2's total loss, which it logs as ``loss``)."""
        extra = self.loss() if self.layers else None
        return loss if extra is None else loss + extra

    def constrain(self) -> None:
        """Project each constrained weight (Keras 2 applies constraints after every update)."""
        if not self.constrained:
            return
        with torch.no_grad():
            for m, attr, fn in self.constrained:
                weight = getattr(m, attr)
                weight.copy_(fn(weight))
