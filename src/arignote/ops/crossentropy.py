"""Keras 2's backend cross-entropies (``K.categorical_crossentropy(target, output)`` and its
sparse and binary forms): probabilities clipped to ``[epsilon, 1 - epsilon]`` (and, for the
categorical ones, scaled to sum to 1 first) unless ``from_logits``.

Example::

    >>> import torch
    >>> categorical_crossentropy(torch.tensor([[0., 1.]]), torch.tensor([[0.5, 0.5]]))
    tensor([0.6931])
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote import backend
from arignote.layers.op_layer import symbolic
from arignote.ops.arguments import _t

__all__ = ["categorical_crossentropy", "sparse_categorical_crossentropy", "binary_crossentropy"]


@symbolic
def categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                             axis: int = -1) -> torch.Tensor:
    output, target = _t(output), _t(target)
    if from_logits:
        return -(target * torch.log_softmax(output, dim=axis)).sum(dim=axis)
    output = output / output.sum(dim=axis, keepdim=True)
    eps = _epsilon()
    return -(target * torch.log(torch.clamp(output, eps, 1.0 - eps))).sum(dim=axis)


@symbolic
def sparse_categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                                    axis: int = -1) -> torch.Tensor:
    output, target = _t(output), _t(target)
    if axis % output.dim() != output.dim() - 1:
        # Keras 2.3.1: channels on another axis (channels_first maps) move last, the target's too
        output, target = output.movedim(axis, -1), target.movedim(axis, -1)
    if not from_logits:  # Keras 2.3.1 (Theano) goes through categorical_crossentropy: sums to 1 first
        output = output / output.sum(dim=-1, keepdim=True)
    logp = torch.log_softmax(output, dim=-1) if from_logits else torch.log(
        torch.clamp(output, _epsilon(), 1.0 - _epsilon()))
    idx = target.long().reshape(*logp.shape[:-1], 1)
    return -logp.gather(-1, idx).squeeze(-1)


@symbolic
def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> torch.Tensor:
    output, target = _t(output), _t(target)
    if from_logits:
        return F.binary_cross_entropy_with_logits(output, target.to(output), reduction="none")
    eps = _epsilon()
    output = torch.clamp(output, eps, 1.0 - eps)
    return -(target * torch.log(output) + (1.0 - target) * torch.log(1.0 - output))


def _epsilon() -> float:
    return backend.epsilon()
