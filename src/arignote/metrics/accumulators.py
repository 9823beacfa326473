"""Running means of metric functions, accumulated on the device without host syncs.

A :class:`FunctionMean` (what a metric name or function in ``compile`` becomes, and the base of
``MeanMetricWrapper``) keeps a running ``total`` as a device tensor and the sample ``count`` as a host
number (the loop knows the batch size), so ``update`` launches a couple of kernels and never
waits for the GPU. :meth:`FunctionMean.state` packs ``[total, count]`` into one 1-D tensor that data
parallel code can all-reduce; :meth:`FunctionMean.result_from` turns a (reduced) state into a float
(that is the sync point, done at log time). Every metric object is a Keras :class:`Metric`
(``isinstance``), as in Keras 2.3.1.

Example::

    >>> m = FunctionMean(lambda y, p: (y - p).abs(), name="mae")
    >>> m.update(torch.tensor([[0.0], [0.0]]), torch.tensor([[1.0], [3.0]])); m.result()
    2.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from arignote.losses import weighting
from arignote.metrics.base import Metric
from arignote.metrics.confusion import StatefulMetric
from arignote.metrics.functions import _hits_for
from arignote.metrics.predictions import probabilities


def _total_dtype(device: torch.device) -> torch.dtype:
    return torch.float32 if device.type == "mps" else torch.float64


class _Accumulator:
    """``total`` (device tensor) and ``count`` (host float; a device tensor too once weighted
    updates add sums of sample weights) with the state/result protocol."""

    def __init__(self, name: str = "mean") -> None:
        self.name = name
        self._total: torch.Tensor | None = None
        self._count = 0.0
        self._weight_sum: torch.Tensor | None = None  # sums of sample weights (weighted metrics)

    def state(self) -> torch.Tensor:
        """``tensor([total, count])`` on the metric's device (all-reduce it to combine ranks)."""
        if self._total is None:
            return torch.zeros(2, dtype=torch.float64)
        count = torch.tensor(self._count, dtype=self._total.dtype, device=self._total.device)
        if self._weight_sum is not None:
            count = count + self._weight_sum
        return torch.stack([self._total, count])

    @staticmethod
    def result_from(state: torch.Tensor) -> float:
        """The mean encoded by a (possibly all-reduced) :meth:`state`; 0.0 when nothing was counted."""
        total, count = state.tolist()
        return total / count if count else 0.0

    def result(self) -> float:
        """The current mean as a Python float (syncs with the device: call at log points only)."""
        return self.result_from(self.state())

    def reset(self) -> None:
        """Start a new accumulation (keeps the device buffer)."""
        if self._total is not None:
            self._total.zero_()
        if self._weight_sum is not None:
            self._weight_sum.zero_()
        self._count = 0.0

    def _add(self, value: torch.Tensor, weight: float, count: float | None = None) -> None:
        """``total += weight * value``; ``count += count`` (``weight`` when not given)."""
        if self._total is None:
            self._total = torch.zeros((), dtype=_total_dtype(value.device), device=value.device)
        self._total.add_(value.detach(), alpha=weight)
        self._count += weight if count is None else count

    def _add_weighted(self, total: torch.Tensor, weight_sum: torch.Tensor) -> None:
        """Add a weighted sum and its sum of weights (device tensors: no host sync)."""
        if self._total is None:
            self._total = torch.zeros((), dtype=_total_dtype(total.device), device=total.device)
        if self._weight_sum is None:
            self._weight_sum = torch.zeros((), dtype=self._total.dtype, device=self._total.device)
        self._total.add_(total.detach())
        self._weight_sum.add_(weight_sum.detach())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class FunctionMean(_Accumulator):
    """Mean over samples of a Keras metric function ``fn(y_true, y_pred) -> per-sample tensor``.

    ``weighted=True`` (``compile(weighted_metrics=...)``): with targets that carry sample weights
    (:class:`arignote.losses.weighting.Weighted`) the mean is Keras 2.3.1's weighted one,
    ``sum(w * v) / sum(w)``; other metrics ignore the weights. Targets that carry the output's mask
    (a model whose output has a Keras mask) weigh every metric by it, as Keras 2.3.1 does (weighted
    ones by weights times mask). ``select(y_true, y_pred) -> (y, p, w, mask)`` picks what the metric
    sees (one output of a model with several).

    Example::

        >>> from arignote.metrics.functions import binary_accuracy
        >>> m = FunctionMean(binary_accuracy, name="acc")
        >>> m.update(torch.tensor([1., 0.]), torch.tensor([0.9, 0.7])); m.result()
        0.5
        >>> from arignote.losses.weighting import Weighted
        >>> w = FunctionMean(binary_accuracy, name="acc", weighted=True)
        >>> y_true, weights = torch.tensor([[1.], [0.]]), torch.tensor([3., 1.])
        >>> w.update(Weighted((y_true, weights)), torch.tensor([[0.9], [0.7]]))
        >>> w.result()
        0.75
    """

    def __init__(
        self, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], name: str | None = None,
        weighted: bool = False, select: Callable | None = None
    ) -> None:
        super().__init__(name or getattr(fn, "__name__", "metric"))
        self.fn = fn
        self.values: Callable | None = None  # per-sample form of fn when fn returns a batch mean (a loss)
        self.hits = _hits_for(fn)  # an accuracy's 0/1 values as booleans to count (metric_hits)
        self.weighted = weighted
        self.select = select

    def update(self, y_true: torch.Tensor, y_pred: Any) -> None:
        """Accumulate this batch (no host sync). ``y_pred``: the output, or the
        :class:`~arignote.metrics.predictions.Logits` of a classifier head (an accuracy reads them)."""
        if self.select is not None:
            y_true, y_pred, weights, mask = self.select(y_true, probabilities(y_pred))
        else:
            y_true, weights, mask = weighting.parts(y_true)
        if self.hits is not None and mask is None and (weights is None or not self.weighted):
            hits = self.hits(y_true, y_pred)  # booleans: their sum is the count, exactly
            self._add(hits.sum(), y_pred.shape[0] / hits.numel() if hits.numel() else 0.0, y_pred.shape[0])
            return
        y_pred = probabilities(y_pred)
        value = (self.values or self.fn)(y_true, y_pred)
        if not value.is_floating_point():  # a user function returning bools or ints
            value = value.to(torch.float32)
        # Keras 2.3.1 call_metric_function: the output's mask weighs every metric, times the sample
        # weights for a weighted one
        weights = weighting.combine(weights if self.weighted else None, mask, value.dtype)
        if weights is not None:
            self._add_weighted(*weighting.weighted_mean_parts(value, weights))
            return
        n = y_pred.shape[0]
        # per-sample (or per-element) values -> their mean counts n samples; 0-d values are batch means
        self._add(value.mean(), n)

    # Keras 2.3.1's metric API (standalone use)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Add a batch (numpy arrays or tensors), weighted by ``sample_weight`` when given."""
        y_pred = _as_tensor(y_pred)
        if not y_pred.is_floating_point():
            y_pred = y_pred.to(torch.get_default_dtype())
        y_true = _as_tensor(y_true).to(y_pred.device)
        if sample_weight is None:
            self.update(y_true, y_pred)
            return
        value = (self.values or self.fn)(y_true, y_pred)
        if not value.is_floating_point():
            value = value.to(torch.float32)
        w = _as_tensor(sample_weight).to(value.device, value.dtype)
        self._add_weighted(*weighting.weighted_mean_parts(value, w))

    def reset_states(self) -> None:
        """Zero the state (Keras 2.3.1 name)."""
        self.reset()

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> float:
        """Update with this batch, then the result."""
        self.update_state(y_true, y_pred, sample_weight)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": getattr(self, "dtype", None), **getattr(self, "_fn_kwargs", {})}

    @classmethod
    def from_config(cls, config: dict) -> FunctionMean:
        return cls(**config)


# every metric object is a Keras Metric (isinstance), as in Keras 2.3.1
Metric.register(_Accumulator)
Metric.register(StatefulMetric)


def _as_tensor(value: Any) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
