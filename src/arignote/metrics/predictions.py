"""What a training step hands the metrics as ``y_pred``: a tensor, or the :class:`Logits` of a
classifier head trained from its logits (:mod:`arignote.training.fused_head`).

A model ending in ``softmax`` (``sigmoid``) outputs probabilities, and that is what Keras's metrics
see. When the training forward stops at the logits, the metrics get :class:`Logits`: the accuracy
metrics read the logits directly where the answer is the same (the argmax of a softmax is the argmax
of its logits; a sigmoid is over 0.5 where its logit is over 0), so the step computes no softmax for
them; every other metric gets :func:`probabilities`, the activation of the logits computed once
per batch and shared.

Example::

    >>> import torch
    >>> out = Logits(torch.tensor([[2.0, 0.0]]), torch.sigmoid, "sigmoid")
    >>> out.detach() is out, probabilities(out).tolist() == torch.sigmoid(out.logits).tolist()
    (True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

__all__ = ["Logits", "probabilities", "logits_of"]


class Logits:
    """Detached ``logits`` of a head whose output is ``activation(logits)``; ``kind`` names the
    activation (``'softmax'`` or ``'sigmoid'``). ``shape``, ``dtype``, ``device`` and ``detach()``
    answer as the output tensor would."""

    __slots__ = ("logits", "activation", "kind", "_probabilities")

    def __init__(self, logits: torch.Tensor, activation: Callable, kind: str) -> None:
        self.logits, self.activation, self.kind = logits, activation, kind
        self._probabilities: torch.Tensor | None = None

    def probabilities(self) -> torch.Tensor:
        """``activation(logits)``, computed on the first call."""
        if self._probabilities is None:
            self._probabilities = self.activation(self.logits)
        return self._probabilities

    def detach(self) -> Logits:
        return self

    @property
    def shape(self) -> torch.Size:
        return self.logits.shape

    @property
    def dtype(self) -> torch.dtype:
        return self.logits.dtype

    @property
    def device(self) -> torch.device:
        return self.logits.device

    def __repr__(self) -> str:
        return f"Logits({self.kind}, shape={tuple(self.shape)})"


def probabilities(y_pred: Any) -> Any:
    """The model's output: ``y_pred`` itself, or the activation of :class:`Logits`."""
    return y_pred.probabilities() if type(y_pred) is Logits else y_pred


def logits_of(y_pred: Any, kind: str) -> torch.Tensor | None:
    """The logits when ``y_pred`` is the :class:`Logits` of a ``kind`` head, else None."""
    return y_pred.logits if type(y_pred) is Logits and y_pred.kind == kind else None
