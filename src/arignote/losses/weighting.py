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

__all__ = ["Weighted", "compute_weighted_loss", "split", "parts", "combine", "with_masks", "weighted_loss",
           "weighted_mean_parts"]


class Weighted(tuple):
    """Targets with their sample weights: the pair ``(y, w)`` (a tuple, so the loop slices both rows);
    after the forward of a model whose outputs carry a Keras mask, the triple ``(y, w, mask)`` (``w``
    None without sample weights; :func:`with_masks`).

    >>> pair = Weighted((torch.zeros(3, 2), torch.ones(3)))
    >>> pair.y.shape, pair.w.shape, pair.mask
    (torch.Size([3, 2]), torch.Size([3]), None)
    """

    __slots__ = ()

    @property
    def y(self) -> Any:
        return self[0]

    @property
    def w(self) -> Any:
        return self[1]

    @property
    def mask(self) -> Any:
        return self[2] if len(self) > 2 else None


def split(y_true: Any) -> tuple[Any, Any]:
    """``(y, w)`` of batch targets: ``w`` is None for targets without weights.

    >>> split(torch.zeros(2))[1] is None
    True
    """
    if type(y_true) is Weighted:
        return y_true[0], y_true[1]
    return y_true, None


def parts(y_true: Any) -> tuple[Any, Any, Any]:
    """``(y, w, mask)`` of batch targets (None for what they do not carry).

    >>> parts(Weighted((torch.zeros(2), None, torch.ones(2))))[1:]
    (None, tensor([1., 1.]))
    """
    if type(y_true) is Weighted:
        return y_true[0], y_true[1], (y_true[2] if len(y_true) > 2 else None)
    return y_true, None, None


def with_masks(y_true: Any, masks: Any) -> Any:
    """The targets of a batch with the output mask(s) of its forward added (Keras 2.3.1 hands the mask
    of each output to its loss and metrics): ``Weighted((y, w, mask))``; ``y_true`` as it is when
    ``masks`` is None. ``masks``: one mask (one output) or a list, one per output (several outputs,
    whose targets stay packed).

    >>> with_masks(torch.zeros(2, 3), torch.tensor([[True, False, False]] * 2)).mask.shape
    torch.Size([2, 3])
    """
    if masks is None or y_true is None:
        return y_true
    y, w = split(y_true)
    return Weighted((y, w, masks))


def combine(sample_weight: torch.Tensor | None, mask: torch.Tensor | None,
            dtype: torch.dtype = torch.float32) -> torch.Tensor | None:
    """The weights a loss or a metric applies: Keras 2.3.1 casts the mask to the output's dtype, makes
    it the weights when there are none, else multiplies it in after matching ranks
    (``squeeze_or_expand_dimensions(mask, None, sample_weight)``): per-sample weights ``(n,)`` with a
    per-step mask ``(n, steps)`` give ``(n, steps)``.

    >>> combine(torch.tensor([2.0, 3.0]), torch.tensor([[True, False], [True, True]])).tolist()
    [[2.0, 0.0], [3.0, 3.0]]
    """
    if mask is None:
        return sample_weight
    mask = mask.to(dtype)
    if sample_weight is None:
        return mask
    mask, sample_weight = _match_ranks(mask, sample_weight.to(dtype))
    return sample_weight * mask


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


def weighted_loss(values: Callable, mean: Callable | None = None, name: str | None = None) -> Callable:
    """``loss(y_true, y_pred)`` as ``compile`` computes it (Keras 2.3.1 ``LossFunctionWrapper`` with
    ``SUM_OVER_BATCH_SIZE``): with plain targets, ``mean(y_true, y_pred)`` (the batch mean of the
    values, the fast path); with :class:`Weighted` targets, :func:`compute_weighted_loss` of
    ``values(y, y_pred)`` (one value per sample or time step: a built-in loss's Keras values, or what
    a custom loss returns; a 0-d value is scaled by the mean weight, as Keras 2.3.1 does) with the
    sample weights and the output mask combined (:func:`combine`). The denominator is the number of
    values, masked ones included, as Keras 2.3.1. ``name``: the loss's name (default ``values``'s).

    >>> from arignote import losses
    >>> mse = weighted_loss(losses.per_sample("mse"), losses.batch_mean("mse"))
    >>> y, p = torch.zeros(2, 1), torch.tensor([[1.0], [2.0]])
    >>> float(mse(y, p)), float(mse(Weighted((y, torch.tensor([1.0, 0.0]))), p))
    (2.5, 0.5)
    """
    if mean is None:
        def mean(y_true: Any, y_pred: Any) -> Any:
            value = values(y_true, y_pred)
            return value.mean() if value.dim() else value

    def loss(y_true: Any, y_pred: Any) -> Any:
        if type(y_true) is not Weighted:
            return mean(y_true, y_pred)
        y, w, mask = parts(y_true)
        return compute_weighted_loss(values(y, y_pred), combine(w, mask, y_pred.dtype))

    loss.__name__ = name or getattr(values, "__name__", type(values).__name__)
    return loss
