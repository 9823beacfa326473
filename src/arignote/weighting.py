"""Sample weights in the loss and the metrics, with Keras 2.3.1's arithmetic (``losses_utils``).

When ``fit``/``evaluate`` get ``sample_weight`` or ``class_weight`` (or a generator yields
``(x, y, sample_weight)``), every batch carries its targets as :class:`Weighted` ``(y, w)``: ``w`` is
one weight per sample ``(n,)``, or per time step ``(n, steps)`` with ``sample_weight_mode='temporal'``
(several outputs: one column, or ``steps`` columns, per output, side by side). The pair travels
through the loop like any target (sliced by rows for the ranks and the micro-batches), and the
compiled loss and the metrics unpack it.

Keras 2.3.1 reduces a weighted loss as ``SUM_OVER_BATCH_SIZE``: the per-sample losses (the loss
function's values, one per sample or per step) times their weights, summed, divided by the number
of loss values, not by the sum of the weights. So a weight of 0 removes a sample from the sum but
it still counts in the batch size; a batch mean of ``r`` rows is ``sum(w * l) / r``, and the loop's
``rows * W / B`` share of a rank (:mod:`arignote.parallel.sharding`) makes the data-parallel loss
``sum(w * l) / B`` over the global batch exactly. Weighted metrics (``compile(weighted_metrics=)``)
are Keras's weighted means instead: ``sum(w * v) / sum(w)``.

Example::

    >>> import torch
    >>> losses = torch.tensor([1.0, 2.0, 3.0, 4.0])
    >>> float(compute_weighted_loss(losses, torch.tensor([1.0, 1.0, 0.0, 0.0])))   # (1 + 2) / 4
    0.75
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

__all__ = ["Weighted", "compute_weighted_loss", "split", "weighted_loss", "weighted_mean_parts"]


class Weighted(tuple):
    """Targets with their sample weights: the pair ``(y, w)`` (a tuple, so the loop slices both rows).

    >>> pair = Weighted((torch.zeros(3, 2), torch.ones(3)))
    >>> pair.y.shape, pair.w.shape
    (torch.Size([3, 2]), torch.Size([3]))
    """

    __slots__ = ()

    @property
    def y(self) -> Any:
        return self[0]

    @property
    def w(self) -> Any:
        return self[1]


def split(y_true: Any) -> tuple[Any, Any]:
    """``(y, w)`` of batch targets: ``w`` is None for targets without weights.

    >>> split(torch.zeros(2))[1] is None
    True
    """
    if type(y_true) is Weighted:
        return y_true[0], y_true[1]
    return y_true, None


def _match_ranks(values: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Keras 2.3.1 ``squeeze_or_expand_dimensions`` then ``broadcast_weights`` (ranks only; torch
    broadcasting does the rest)."""
    if weights.dim():
        if values.dim() == 0 and weights.dim() == 1:
            values = values.reshape(1)
        elif weights.dim() - values.dim() == 1:
            weights = weights.squeeze(-1)
        elif values.dim() - weights.dim() == 1:
            weights = weights.unsqueeze(-1)
    if weights.dim() > values.dim():
        raise ValueError(f"Incompatible shapes: `values` {tuple(values.shape)} vs `sample_weight` "
                         f"{tuple(weights.shape)}")
    while weights.dim() < values.dim():
        weights = weights.unsqueeze(-1)
    return values, weights


def compute_weighted_loss(losses: torch.Tensor, sample_weight: torch.Tensor | None) -> torch.Tensor:
    """Keras 2.3.1 ``compute_weighted_loss`` with ``SUM_OVER_BATCH_SIZE``: ``sum(w * l) / size``.

    ``losses``: the loss function's values (per sample ``(n,)``, per step ``(n, steps)``, or a 0-d
    batch value, which then counts as ``n`` equal values); ``sample_weight``: ``(n,)`` or
    ``(n, steps)``. The size is that of ``w * l`` after broadcasting.

    >>> float(compute_weighted_loss(torch.tensor([[1.0, 3.0], [5.0, 7.0]]), torch.tensor([2.0, 0.0])))
    2.0
    """
    if sample_weight is None:
        return losses.mean() if losses.dim() else losses
    values, weights = _match_ranks(losses, sample_weight.to(losses.dtype))
    weighted = values * weights
    return weighted.sum() / weighted.numel()


def weighted_mean_parts(values: torch.Tensor,
                        sample_weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sum(w * v), sum(w))`` of a Keras 2.3.1 weighted ``Mean`` metric update (``w`` broadcast
    to the values, so per-step values with per-sample weights count each step).

    >>> [float(t) for t in weighted_mean_parts(torch.tensor([1.0, 0.0, 1.0]), torch.tensor([2.0, 1.0, 1.0]))]
    [3.0, 4.0]
    """
    values, weights = _match_ranks(values, sample_weight.to(values.dtype))
    values, weights = torch.broadcast_tensors(values, weights)
    return (values * weights).sum(), weights.sum()


def weighted_loss(fn: Callable, per_sample: Callable | None = None) -> Callable:
    """``fn(y_true, y_pred)`` that also takes :class:`Weighted` targets: then the loss is
    :func:`compute_weighted_loss` of ``per_sample(y, y_pred)`` (the built-in losses' Keras values,
    one per sample) or, for a custom loss, of what ``fn`` returns (a custom loss written as in Keras 2
    returns one value per sample; a 0-d value is scaled by the mean weight, as Keras 2.3.1 does).

    >>> from arignote import losses
    >>> mse = weighted_loss(losses.mean_squared_error, losses.per_sample("mse"))
    >>> y, p = torch.zeros(2, 1), torch.tensor([[1.0], [2.0]])
    >>> float(mse(y, p)), float(mse(Weighted((y, torch.tensor([1.0, 0.0]))), p))
    (2.5, 0.5)
    """
    values_of = per_sample if per_sample is not None else fn

    def loss(y_true: Any, y_pred: Any) -> Any:
        if type(y_true) is not Weighted:
            return fn(y_true, y_pred)
        y, w = y_true
        return compute_weighted_loss(values_of(y, y_pred), w)

    loss.__name__ = getattr(fn, "__name__", type(fn).__name__)
    loss.unweighted = fn  # type: ignore[attr-defined]
    return loss
