"""Keras 2.3.1's stateful metric classes (``keras.metrics.AUC()``, ``Precision()``, ``Recall()``,
``TruePositives()``..., ``SensitivityAtSpecificity``, ``SpecificityAtSensitivity``, ``MeanIoU``).

Each metric's state is one 1-D device tensor of sums (confusion counts per threshold, a confusion
matrix): ``update`` adds a batch's sums with a few kernels and no host sync; the trainer resets it at
each epoch start, sums it over the ranks under data parallel (sums add up exactly), and turns it
into the logged value at log points (:meth:`StatefulMetric.result_from`). Standalone use follows
Keras: ``m.update_state(y_true, y_pred, sample_weight=None)``, ``m.result()``, ``m.reset_states()``,
``m(y_true, y_pred)`` (update, then the result).

Made without ``name``, a metric is named as Keras 2.3.1's (Layers) were: the class name in snake case
and a counter per class from 1 in the session, so the first ``Precision()`` logs ``precision_1``
(``history.history['val_precision_1']``), the next ``precision_2``; ``clear_session()`` restarts.

Formulas follow Keras 2.3.1's ``metrics.py`` and ``utils/metrics_utils.py``: a prediction is positive
when ``y_pred > threshold``; a label is positive when nonzero; ``AUC`` uses ``num_thresholds``
thresholds ``[-eps, 1/(n-1), ..., (n-2)/(n-1), 1+eps]`` and a Riemann sum (``interpolation``: the
trapezoid, or Davis & Goadrich's interpolation for ``curve='PR'``), so it is close to but not exactly
the rank-based AUC.

Example::

    >>> import torch
    >>> m = Precision()
    >>> m.update_state(torch.tensor([0., 1., 1., 1.]), torch.tensor([1., 0., 1., 1.]))
    >>> round(m.result(), 4)
    0.6667
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from arignote import backend
from arignote.losses import weighting
from arignote.metrics import base as metric_base
from arignote.metrics.predictions import probabilities

__all__ = [
    "StatefulMetric", "TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives",
    "Precision", "Recall", "AUC", "SensitivityAtSpecificity", "SpecificityAtSensitivity", "MeanIoU",
]


def _tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    return torch.as_tensor(np.asarray(value))


def _div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a / b`` where ``b > 0``, else 0 (Keras's ``K.switch(K.greater(...), ..., zeros)``)."""
    return torch.where(b > 0, a / torch.where(b > 0, b, torch.ones_like(b)), torch.zeros_like(a))


class StatefulMetric:
    """Base of the stateful metrics: a 1-D tensor of sums (``_size`` long) updated by ``_sums(y_true,
    y_pred, sample_weight)`` and read by ``_value(state)``. ``weighted``: use the sample weights
    (``compile(weighted_metrics=[...])``); the output's mask always weighs, as Keras 2.3.1."""

    _size = 0

    def __init__(self, name: str | None = None, dtype: Any = None) -> None:
        self.name = name or metric_base.default_name(type(self))  # Keras: precision_1, auc_1...
        self.dtype = dtype
        self.weighted = False
        self.select = None  # (y_true, y_pred) -> (y, p, w, mask): one output of several
        self._state: torch.Tensor | None = None

    # ------------------------------------------------------------------ Keras API

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Add a batch (numpy arrays or tensors) to the state."""
        y_pred = _tensor(y_pred)
        if not y_pred.is_floating_point():
            y_pred = y_pred.to(torch.get_default_dtype())
        y_true = _tensor(y_true).to(y_pred.device)
        w = None if sample_weight is None else _tensor(sample_weight).to(y_pred.device, y_pred.dtype)
        self._accumulate(self._sums(y_true, y_pred.detach(), w))

    def result(self) -> Any:
        """The metric's value now (a float; an array for several thresholds). Syncs with the device."""
        return self.result_from(self.state())

    def reset_states(self) -> None:
        """Zero the state (Keras 2.3.1 name)."""
        self.reset()

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        self.update_state(y_true, y_pred, sample_weight)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict) -> StatefulMetric:
        return cls(**config)

    # ------------------------------------------------------------------ trainer protocol

    def update(self, y_true: Any, y_pred: torch.Tensor) -> None:
        """Add a batch as ``compile`` gives it (targets maybe carrying weights and the output mask)."""
        y_pred = probabilities(y_pred)  # a classifier head's logits: the model's output
        if self.select is not None:
            y, y_pred, w, mask = self.select(y_true, y_pred)
        else:
            y, w, mask = weighting.parts(y_true)
        weights = weighting.combine(w if self.weighted else None, mask, y_pred.dtype)
        self._accumulate(self._sums(y, y_pred.detach(), weights))

    def state(self) -> torch.Tensor:
        """The sums (all-reduce them to combine ranks)."""
        if self._state is None:
            return torch.zeros(self._size, dtype=torch.float64)
        return self._state

    def result_from(self, state: torch.Tensor) -> Any:
        """The value encoded by a (possibly summed over ranks) :meth:`state`."""
        value = self._value(state.detach().cpu().to(torch.float64))
        return float(value) if value.dim() == 0 else value.numpy()

    def reset(self) -> None:
        if self._state is not None:
            self._state.zero_()

    def _accumulate(self, sums: torch.Tensor) -> None:
        if self._state is None:
            dtype = torch.float32 if sums.device.type == "mps" else torch.float64
            self._state = torch.zeros(self._size, dtype=dtype, device=sums.device)
        self._state.add_(sums.reshape(-1).to(self._state.dtype))

    def _sums(self, y_true: torch.Tensor, y_pred: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def _value(self, state: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class _Confusion(StatefulMetric):
    """TP, FP, TN, FN per threshold (Keras 2.3.1 ``update_confusion_matrix_variables``)."""

    def __init__(self, thresholds: Any = None, top_k: int | None = None, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None, default: float = 0.5) -> None:
        super().__init__(name, dtype)
        self.init_thresholds = thresholds
        listed = [default] if thresholds is None else (
            list(thresholds) if isinstance(thresholds, (list, tuple, np.ndarray)) else [thresholds])
        if thresholds is not None and self._checks_range and not all(0.0 <= float(v) <= 1.0 for v in listed):
            raise ValueError(f"Threshold values must be in [0, 1]. Invalid values: {listed}")
        self.thresholds = [float(v) for v in listed]
        self.top_k = top_k
        self.class_id = class_id
        self._size = 4 * len(self.thresholds)
        self._cut: torch.Tensor | None = None

    _checks_range = True

    def _sums(self, y_true: torch.Tensor, y_pred: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
        y_true = y_true.reshape(y_pred.shape) if y_true.numel() == y_pred.numel() else y_true
        if self.top_k is not None:
            kth = y_pred.topk(self.top_k, dim=-1).values[..., -1:]
            y_pred = torch.where(y_pred >= kth, y_pred, torch.full_like(y_pred, -float("inf")))
        if weights is not None:
            _, weights = weighting._match_ranks(y_pred, weights.to(y_pred.dtype))
            weights = torch.broadcast_to(weights, y_pred.shape)
        if self.class_id is not None:
            y_true, y_pred = y_true[..., self.class_id], y_pred[..., self.class_id]
            weights = weights[..., self.class_id] if weights is not None else None
        if self._cut is None or self._cut.device != y_pred.device:
            self._cut = torch.tensor(self.thresholds, dtype=torch.float64, device=y_pred.device)
        pred = y_pred.reshape(1, -1).to(torch.float64) > self._cut.reshape(-1, 1)  # (T, N)
        label = (y_true.reshape(1, -1) != 0)
        w = (weights.reshape(1, -1).to(torch.float64) if weights is not None
             else torch.ones((1, label.shape[1]), dtype=torch.float64, device=y_pred.device))
        pos, neg = label.to(torch.float64) * w, (~label).to(torch.float64) * w
        predf = pred.to(torch.float64)
        tp, fp = predf @ pos.T, predf @ neg.T
        fn, tn = pos.sum() - tp, neg.sum() - fp
        return torch.cat([tp, fp, tn, fn], dim=1).T.reshape(-1)  # [tp(T), fp(T), tn(T), fn(T)]

    def _parts(self, state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(state.reshape(4, -1))

    def _one(self, values: torch.Tensor) -> torch.Tensor:
        return values[0] if len(self.thresholds) == 1 else values

    def get_config(self) -> dict:
        return {"thresholds": self.init_thresholds, "name": self.name, "dtype": self.dtype}


class _Count(_Confusion):
    _which = 0

    def __init__(self, thresholds: Any = None, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(thresholds, name=name, dtype=dtype)

    def _value(self, state: torch.Tensor) -> torch.Tensor:
        return self._one(self._parts(state)[self._which])


class TruePositives(_Count):
    """Weighted count of true positives (``thresholds``, default 0.5)."""
    _which = 0


class FalsePositives(_Count):
    """Weighted count of false positives (``thresholds``, default 0.5)."""
    _which = 1


class TrueNegatives(_Count):
    """Weighted count of true negatives (``thresholds``, default 0.5)."""
    _which = 2


class FalseNegatives(_Count):
    """Weighted count of false negatives (``thresholds``, default 0.5)."""
    _which = 3


class Precision(_Confusion):
    """``tp / (tp + fp)`` (``thresholds``, ``top_k``, ``class_id`` as Keras 2.3.1)."""

    def __init__(self, thresholds: Any = None, top_k: int | None = None, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None) -> None:
        # Keras 2.3.1: with top_k every kept prediction counts as positive (threshold NEG_INF)
        super().__init__(thresholds, top_k, class_id, name, dtype, default=0.5 if top_k is None else -1e10)

    def _value(self, state: torch.Tensor) -> torch.Tensor:
        tp, fp, _, _ = self._parts(state)
        return self._one(_div(tp, tp + fp))

    def get_config(self) -> dict:
        return {**super().get_config(), "top_k": self.top_k, "class_id": self.class_id}


class Recall(Precision):
    """``tp / (tp + fn)`` (``thresholds``, ``top_k``, ``class_id`` as Keras 2.3.1)."""

    def _value(self, state: torch.Tensor) -> torch.Tensor:
        tp, _, _, fn = self._parts(state)
        return self._one(_div(tp, tp + fn))


class AUC(_Confusion):
    """Area under the ROC or PR curve from confusion counts at ``num_thresholds`` thresholds
    (``curve='ROC'|'PR'``, ``summation_method='interpolation'|'minoring'|'majoring'``)."""

    _checks_range = False

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC", summation_method: str = "interpolation",
                 name: str | None = None, dtype: Any = None, thresholds: Any = None) -> None:
        if curve.upper() not in ("ROC", "PR"):
            raise ValueError(f'Invalid AUC curve value "{curve}": use "ROC" or "PR"')
        if summation_method.lower() not in ("interpolation", "minoring", "majoring"):
            raise ValueError(f'Invalid AUC summation method value "{summation_method}": use '
                             '"interpolation", "minoring" or "majoring"')
        if thresholds is not None:
            inner = sorted(float(v) for v in thresholds)
            num_thresholds = len(inner) + 2
        else:
            if num_thresholds <= 1:
                raise ValueError("`num_thresholds` must be > 1.")
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        eps = backend.epsilon()
        super().__init__([0.0 - eps, *inner, 1.0 + eps], name=name, dtype=dtype)
        self.num_thresholds = num_thresholds
        self.curve = curve.upper()
        self.summation_method = summation_method.lower()
        self.init_thresholds = thresholds

    def _value(self, state: torch.Tensor) -> torch.Tensor:
        tp, fp, tn, fn = self._parts(state)
        n = self.num_thresholds
        if self.curve == "PR" and self.summation_method == "interpolation":
            dtp = tp[:n - 1] - tp[1:]
            p = tp + fp
            dp = (p[:n - 1] - p[1:]).clamp_min(0)
            slope = _div(dtp, dp)
            intercept = tp[1:] - slope * p[1:]
            both = (p[:n - 1] > 0) & (p[1:] > 0)
            ratio = torch.where(both, _div(p[:n - 1], p[1:]), torch.ones_like(p[1:]))
            numer = slope * (dtp + intercept * torch.log(ratio))
            denom = (tp[1:] + fn[1:]).clamp_min(0)
            return _div(numer, denom).sum()
        recall = _div(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _div(fp, fp + tn), recall
        else:
            x, y = recall, _div(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = torch.minimum(y[:n - 1], y[1:])
        else:
            heights = torch.maximum(y[:n - 1], y[1:])
        return ((x[:n - 1] - x[1:]) * heights).sum()

    def get_config(self) -> dict:
        return {"num_thresholds": self.num_thresholds, "curve": self.curve,
                "summation_method": self.summation_method, "name": self.name, "dtype": self.dtype,
                "thresholds": self.init_thresholds}


class _AtValue(_Confusion):
    _checks_range = False

    def __init__(self, value: float, num_thresholds: int = 200, name: str | None = None,
                 dtype: Any = None) -> None:
        if num_thresholds <= 0:
            raise ValueError("`num_thresholds` must be > 0.")
        if num_thresholds == 1:
            cuts = [0.5]
        else:
            cuts = [0.0, *[(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)], 1.0]
        super().__init__(cuts, name=name, dtype=dtype)
        self.value = value
        self.num_thresholds = num_thresholds

    def _at(self, rates: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        i = int(torch.argmin((rates - self.value).abs()))
        return other[i]

    def get_config(self) -> dict:
        return {"num_thresholds": self.num_thresholds, "name": self.name, "dtype": self.dtype}


class SensitivityAtSpecificity(_AtValue):
    """The sensitivity (recall) at the threshold whose specificity is closest to ``specificity``."""

    def __init__(self, specificity: float, num_thresholds: int = 200, name: str | None = None,
                 dtype: Any = None) -> None:
        if not 0 <= specificity <= 1:
            raise ValueError("`specificity` must be in the range [0, 1].")
        super().__init__(specificity, num_thresholds, name, dtype)

    def _value(self, state: torch.Tensor) -> torch.Tensor:
        tp, fp, tn, fn = self._parts(state)
        return self._at(_div(tn, tn + fp), _div(tp, tp + fn))

    def get_config(self) -> dict:
        return {**super().get_config(), "specificity": self.value}


class SpecificityAtSensitivity(_AtValue):
    """The specificity at the threshold whose sensitivity is closest to ``sensitivity``."""

    def __init__(self, sensitivity: float, num_thresholds: int = 200, name: str | None = None,
                 dtype: Any = None) -> None:
        if not 0 <= sensitivity <= 1:
            raise ValueError("`sensitivity` must be in the range [0, 1].")
        super().__init__(sensitivity, num_thresholds, name, dtype)

    def _value(self, state: torch.Tensor) -> torch.Tensor:
        tp, fp, tn, fn = self._parts(state)
        return self._at(_div(tp, tp + fn), _div(tn, tn + fp))

    def get_config(self) -> dict:
        return {**super().get_config(), "sensitivity": self.value}


class MeanIoU(StatefulMetric):
    """Mean over classes of ``tp / (tp + fp + fn)`` from a ``num_classes`` x ``num_classes`` confusion
    matrix of integer labels and integer predictions (classes absent from both are left out)."""

    def __init__(self, num_classes: int, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name, dtype)
        self.num_classes = int(num_classes)
        self._size = self.num_classes ** 2

    def _sums(self, y_true: torch.Tensor, y_pred: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
        k = self.num_classes
        index = y_true.reshape(-1).long() * k + y_pred.reshape(-1).long()
        w = None if weights is None else torch.broadcast_to(
            weights.reshape(weights.shape + (1,) * (y_pred.dim() - weights.dim())), y_pred.shape
        ).reshape(-1).to(torch.float64)
        if w is None:
            w = torch.ones(index.shape, dtype=torch.float64, device=index.device)
        # index_add_, not bincount: bincount reads the largest index on the host (a sync on a GPU)
        return torch.zeros(k * k, dtype=torch.float64, device=index.device).index_add_(0, index, w)

    def _value(self, state: torch.Tensor) -> torch.Tensor:
        cm = state.reshape(self.num_classes, self.num_classes)
        diag = cm.diagonal()
        denom = cm.sum(0) + cm.sum(1) - diag
        valid = (denom != 0).sum()
        return _div(_div(diag, denom).sum(), valid.to(state.dtype))

    def get_config(self) -> dict:
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype}
