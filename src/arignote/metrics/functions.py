"""Keras 2's metric functions: ``metric(y_true, y_pred)`` -> one value per sample (the accuracy
family, ``top_k``, the elementwise ``accuracy``, and ``cosine_proximity`` as the similarity), and per
accuracy its 0/1 values as booleans to count (:mod:`arignote.metrics.hits`, from probabilities or a
classifier head's logits). The public face of these functions is :mod:`arignote.metrics`.

Example::

    >>> import torch
    >>> binary_accuracy(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.9, 0.7]])).tolist()
    [0.5]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from arignote import losses
from arignote.metrics import hits as metric_hits


def categorical_accuracy(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """1.0 where ``argmax(y_pred) == argmax(y_true)`` (one-hot targets), per sample."""
    return (y_pred.argmax(dim=-1) == y_true.argmax(dim=-1)).to(y_pred.dtype)


def sparse_categorical_accuracy(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """1.0 where ``argmax(y_pred)`` equals the integer label (shape ``(N,)`` or ``(N, 1)``), per sample."""
    return (y_pred.argmax(dim=-1) == y_true.reshape(y_pred.shape[:-1])).to(y_pred.dtype)


def binary_accuracy(y_true: torch.Tensor, y_pred: torch.Tensor, threshold: float = 0.5) -> torch.Tensor:
    """Fraction of outputs where ``y_pred > threshold`` matches the 0/1 target, per sample (Keras
    ``round``)."""
    hit = (y_pred > threshold) == (y_true.reshape(y_pred.shape) > 0.5)
    return hit.to(y_pred.dtype).mean(dim=-1)


def top_k_categorical_accuracy(y_true: torch.Tensor, y_pred: torch.Tensor, k: int = 5) -> torch.Tensor:
    """1.0 where the true class (argmax of one-hot ``y_true``) is among the ``k`` largest predictions."""
    top = y_pred.topk(min(k, y_pred.shape[-1]), dim=-1).indices
    return (top == y_true.argmax(dim=-1, keepdim=True)).any(dim=-1).to(y_pred.dtype)


def accuracy(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """Keras 2.3.1 ``metrics.accuracy``: 1.0 where ``y_true == y_pred`` elementwise (labels compared
    with labels, e.g. after an argmax).

    >>> accuracy(torch.tensor([1, 2, 3]), torch.tensor([1.0, 0.0, 3.0])).tolist()
    [1.0, 0.0, 1.0]
    """
    if not y_pred.is_floating_point():
        y_pred = y_pred.to(torch.get_default_dtype())
    return (y_true.to(y_pred.dtype).reshape(y_pred.shape) == y_pred).to(y_pred.dtype)


def cosine_proximity(y_true: torch.Tensor, y_pred: torch.Tensor, axis: int = -1) -> torch.Tensor:
    """Keras 2.3.1 ``metrics.cosine_proximity``: ``sum(l2_normalize(y_true) * l2_normalize(y_pred))``
    over ``axis`` (the similarity: the loss of the same name is its negative).

    >>> round(float(cosine_proximity(torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]]))), 4)
    0.7071
    """
    return -losses.cosine_proximity(y_true, y_pred, axis=axis)


def sparse_top_k_categorical_accuracy(y_true: torch.Tensor, y_pred: torch.Tensor, k: int = 5) -> torch.Tensor:
    """Like :func:`top_k_categorical_accuracy` with integer labels."""
    top = y_pred.topk(min(k, y_pred.shape[-1]), dim=-1).indices
    return (top == y_true.reshape(*y_pred.shape[:-1], 1).long()).any(dim=-1).to(y_pred.dtype)


# Keras 2 short names of the similarity
cosine = cosine_similarity = cosine_proximity



# the functions by name (arignote.metrics.lookup adds the loss names and acc/accuracy)
_FUNCTIONS: dict[str, Callable] = {
    "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "binary_accuracy": binary_accuracy,
    "top_k_categorical_accuracy": top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy,
    # keras.metrics' cosine_proximity is the similarity (+), keras.losses' its negative
    "cosine_proximity": cosine_proximity,
    "cosine_similarity": cosine_proximity,
    "cosine": cosine_proximity,
}

# the accuracies whose values are 0/1: as booleans to count, from probabilities or a head's logits
_HITS = {categorical_accuracy: metric_hits.categorical,
         sparse_categorical_accuracy: metric_hits.sparse_categorical,
         binary_accuracy: metric_hits.binary, top_k_categorical_accuracy: metric_hits.top_k,
         sparse_top_k_categorical_accuracy: metric_hits.sparse_top_k}


def _hits_for(fn: Callable, **kwargs: Any) -> Callable | None:
    hits = _HITS.get(fn)
    return functools.partial(hits, **kwargs) if hits is not None and kwargs else hits
