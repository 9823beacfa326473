"""Keras 2's accuracy metrics as hits (booleans) to count, from probabilities or from the logits of
a classifier head trained from its logits (:mod:`arignote.metrics.predictions`).

Keras's ``categorical_accuracy`` and its kin are means of 0/1 values; a :class:`~arignote.metrics.
FunctionMean` that knows its values are hits adds ``sum(hits)`` to its total (exact integer counts)
instead of casting them to floats and averaging: ``argmax, argmax, eq, sum, add_`` a step for the
categorical accuracy, where it was those plus a cast, a mean, and the softmax the metric needed.

From logits (:func:`arignote.metrics.predictions.logits_of`): the argmax (top k) of a softmax is that of its
logits, and a sigmoid is over 0.5 exactly where its logit is over 0, so the hits are Keras's but for
exact ties made by rounding: two different logits whose probabilities round to the same float (the
probabilities' argmax then takes the first of them, the logits' the larger logit), or a logit in
``(0, ~1e-7]``, whose float32 sigmoid rounds to 0.5 (not over 0.5 on probabilities, over 0 on the
logit). Equal logits give the first index both ways. Other thresholds than 0.5 use the
probabilities.

Example::

    >>> import torch
    >>> y = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    >>> categorical(y, torch.tensor([[0.2, 0.8], [0.4, 0.6]])).tolist()
    [True, False]
"""

from __future__ import annotations

from typing import Any

import torch

from arignote.metrics.predictions import logits_of, probabilities

__all__ = ["categorical", "sparse_categorical", "binary", "top_k", "sparse_top_k"]


def _scores(y_pred: Any) -> torch.Tensor:
    """What an argmax may read: a softmax head's logits, else the probabilities."""
    z = logits_of(y_pred, "softmax")
    return probabilities(y_pred) if z is None else z


def categorical(y_true: torch.Tensor, y_pred: Any) -> torch.Tensor:
    """``argmax(y_pred) == argmax(y_true)`` per sample."""
    return _scores(y_pred).argmax(dim=-1) == y_true.argmax(dim=-1)


def sparse_categorical(y_true: torch.Tensor, y_pred: Any) -> torch.Tensor:
    """``argmax(y_pred) == label`` per sample (labels ``(N,)`` or ``(N, 1)``)."""
    scores = _scores(y_pred)
    return scores.argmax(dim=-1) == y_true.reshape(scores.shape[:-1])


def binary(y_true: torch.Tensor, y_pred: Any, threshold: float = 0.5) -> torch.Tensor:
    """``(y_pred > threshold) == (y_true > 0.5)`` per output (a sigmoid head's logit over 0 for the
    default threshold)."""
    z = logits_of(y_pred, "sigmoid") if threshold == 0.5 else None
    predicted = (probabilities(y_pred) > threshold) if z is None else (z > 0)
    return predicted == (y_true.reshape(predicted.shape) > 0.5)


def top_k(y_true: torch.Tensor, y_pred: Any, k: int = 5) -> torch.Tensor:
    """The true class (argmax of one-hot ``y_true``) among the ``k`` largest predictions, per sample."""
    scores = _scores(y_pred)
    top = scores.topk(min(k, scores.shape[-1]), dim=-1).indices
    return (top == y_true.argmax(dim=-1, keepdim=True)).any(dim=-1)


def sparse_top_k(y_true: torch.Tensor, y_pred: Any, k: int = 5) -> torch.Tensor:
    """:func:`top_k` with integer labels."""
    scores = _scores(y_pred)
    top = scores.topk(min(k, scores.shape[-1]), dim=-1).indices
    return (top == y_true.reshape(*scores.shape[:-1], 1).long()).any(dim=-1)
