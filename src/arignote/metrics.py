"""Keras 2 metrics, accumulated on the device without host syncs.

A :class:`FunctionMean` (what a metric name or function in ``compile`` becomes, and the base of
``MeanMetricWrapper``) keeps a running ``total`` as a device tensor and the sample ``count`` as a host
number (the loop knows the batch size), so ``update`` launches a couple of kernels and never
waits for the GPU. :meth:`FunctionMean.state` packs ``[total, count]`` into one 1-D tensor that data
parallel code can all-reduce; :meth:`FunctionMean.result_from` turns a (reduced) state into a float
(that is the sync point, done at log time).

:class:`Metric` is Keras 2.3.1's base class for metrics users write (``add_weight``, ``update_state``,
``result``; :mod:`arignote.metric_base`), with ``Reduce``, ``Sum`` and ``Mean`` on it. Every metric
object here is an instance of it.

Keras semantics of ``'acc'``/``'accuracy'`` (chosen by :func:`get` from the loss and output):
binary (threshold 0.5) when the loss is ``binary_crossentropy`` or the output has width 1;
sparse (argmax vs integer label) for ``sparse_categorical_crossentropy``; categorical (argmax
vs argmax) otherwise. The metric is logged under the name the user wrote (``acc`` or ``accuracy``),
as Keras 2.3; with the ``metrics.names=2.2`` flag under Keras 2.0-2.2's name (``acc``,
``mean_absolute_error``). See :mod:`arignote.metric_names`.

Example::

    >>> import torch
    >>> m = get("acc", loss="categorical_crossentropy")
    >>> m.update(torch.tensor([[0., 1.], [1., 0.]]), torch.tensor([[0.2, 0.8], [0.4, 0.6]]))
    >>> m.name, m.result()
    ('acc', 0.5)
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from arignote import losses, metric_base, metric_hits, metric_names, weighting
from arignote.metric_base import Mean, Metric, MetricVariable, Reduce, Reduction, Sum
from arignote.metric_classes import (
    AUC,
    FalseNegatives,
    FalsePositives,
    MeanIoU,
    Precision,
    Recall,
    SensitivityAtSpecificity,
    SpecificityAtSensitivity,
    StatefulMetric,
    TrueNegatives,
    TruePositives,
)
from arignote.predictions import probabilities

__all__ = [
    "Metric",
    "MetricVariable",
    "Reduce",
    "Reduction",
    "Mean",
    "FunctionMean",
    "get",
    "serialize",
    "deserialize",
    "categorical_accuracy",
    "sparse_categorical_accuracy",
    "binary_accuracy",
    "top_k_categorical_accuracy",
    "sparse_top_k_categorical_accuracy",
    "accuracy_for",
    "resolve",
    "unique_name",
    "accuracy",
    "hinge",
    "squared_hinge",
    "poisson",
    "kullback_leibler_divergence",
    "categorical_hinge",
    "logcosh",
    "cosine_proximity",
    "cosine_similarity",
    "cosine",
    "binary_crossentropy",
    "categorical_crossentropy",
    "sparse_categorical_crossentropy",
    "mean_squared_error",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error",
    "mse",
    "mae",
    "mape",
    "msle",
    "MSE",
    "MAE",
    "MAPE",
    "MSLE",
    "clone_metric",
    "clone_metrics",
    "StatefulMetric",
    "TruePositives",
    "FalsePositives",
    "TrueNegatives",
    "FalseNegatives",
    "Precision",
    "Recall",
    "AUC",
    "SensitivityAtSpecificity",
    "SpecificityAtSensitivity",
    "MeanIoU",
    "Sum",
    "MeanMetricWrapper",
    "Accuracy",
    "BinaryAccuracy",
    "CategoricalAccuracy",
    "SparseCategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy",
    "MeanSquaredError",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredLogarithmicError",
    "Hinge",
    "SquaredHinge",
    "CategoricalHinge",
    "Poisson",
    "KLDivergence",
    "LogCoshError",
    "CosineSimilarity",
    "BinaryCrossentropy",
    "CategoricalCrossentropy",
    "SparseCategoricalCrossentropy",
    "RootMeanSquaredError",
]


# --------------------------------------------------------------------------- per-sample functions


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


# the accuracies whose values are 0/1: as booleans to count, from probabilities or a head's logits
_HITS = {categorical_accuracy: metric_hits.categorical,
         sparse_categorical_accuracy: metric_hits.sparse_categorical,
         binary_accuracy: metric_hits.binary, top_k_categorical_accuracy: metric_hits.top_k,
         sparse_top_k_categorical_accuracy: metric_hits.sparse_top_k}


def _hits_for(fn: Callable, **kwargs: Any) -> Callable | None:
    hits = _HITS.get(fn)
    return functools.partial(hits, **kwargs) if hits is not None and kwargs else hits


# --------------------------------------------------------------------------- accumulators


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
    (:class:`arignote.weighting.Weighted`) the mean is Keras 2.3.1's weighted one,
    ``sum(w * v) / sum(w)``; other metrics ignore the weights. Targets that carry the output's mask
    (a model whose output has a Keras mask) weigh every metric by it, as Keras 2.3.1 does (weighted
    ones by weights times mask). ``select(y_true, y_pred) -> (y, p, w, mask)`` picks what the metric
    sees (one output of a model with several).

    Example::

        >>> m = FunctionMean(binary_accuracy, name="acc")
        >>> m.update(torch.tensor([1., 0.]), torch.tensor([0.9, 0.7])); m.result()
        0.5
        >>> from arignote.weighting import Weighted
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
        :class:`~arignote.predictions.Logits` of a classifier head (an accuracy reads them)."""
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


# --------------------------------------------------------------------------- names


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


def accuracy_for(loss: str | Callable | None, output_shape: tuple | None = None) -> Callable:
    """The accuracy function Keras 2 picks for ``'acc'`` given the loss and per-sample output shape."""
    name = losses.name_of(loss) if loss is not None else None
    if name == "binary_crossentropy" or (output_shape is not None and tuple(output_shape)[-1:] == (1,)):
        return binary_accuracy
    if name == "sparse_categorical_crossentropy":
        return sparse_categorical_accuracy
    return categorical_accuracy


def get(
    identifier: str | Callable | Metric, loss: str | Callable | None = None, output_shape: tuple | None = None
) -> Metric:
    """A fresh :class:`FunctionMean` for a Keras metric name or a function; a metric object (a
    :class:`Metric`: arignote's, or a user's subclass) is returned as is.

    Names: ``acc``/``accuracy`` (resolved with ``loss``/``output_shape``), the ``*_accuracy`` family,
    and any loss name (``mse``, ``mae``, ``binary_crossentropy``...), logged under the given name
    (Keras 2.2's function name with the ``metrics.names=2.2`` flag).
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, dict):  # a stored metric object: {'class_name': ..., 'config': ...}
        cls = _keras_classes().get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"unknown metric class {identifier.get('class_name')!r}; known: "
                             f"{', '.join(_keras_classes())}; a metric class of your own: pass it in "
                             "custom_objects (load_model(path, custom_objects={'Name': Name}))")
        return cls.from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        name = metric_names.logged_name(identifier)
        if identifier in ("acc", "accuracy"):
            return FunctionMean(accuracy_for(loss, output_shape), name=name)
        if identifier in _FUNCTIONS:
            return FunctionMean(_FUNCTIONS[identifier], name=name)
        try:
            metric = FunctionMean(losses.get(identifier), name=name)
            metric.values = losses.per_sample(identifier)  # one value per sample: what weights multiply
            return metric
        except ValueError:
            valid = ["acc", "accuracy", *_FUNCTIONS, *losses._NAMES]
            close = difflib.get_close_matches(identifier, valid, n=1, cutoff=0.5)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ValueError(
                f"unknown metric '{identifier}'.{hint} Valid metrics: {', '.join(valid)}"
            ) from None
    if callable(identifier):
        return FunctionMean(identifier)
    raise ValueError(f"a metric is a name such as 'accuracy', a function or a Metric, got {identifier!r}")


def unique_name(name: str, taken: list[str]) -> str:
    """Keras 2.3's ``_add_unique_metric_name``: ``name``, or ``name_1``, ``name_2``... when taken.

    >>> unique_name("acc", ["loss", "acc"])
    'acc_1'
    """
    unique, j = name, 1
    while unique in taken:
        unique, j = f"{name}_{j}", j + 1
    return unique


def resolve(ids: list[tuple[Any, bool]], loss: str | Callable | None = None,
            output_shape: tuple | None = None, taken: list[str] | None = None) -> list[Metric]:
    """Fresh metrics for ``compile``'s ``metrics`` then ``weighted_metrics``: ``ids`` is a list of
    ``(identifier, weighted)``; names already in ``taken`` (``['loss']`` by default) or given twice get
    ``_1``, ``_2``... as in Keras 2.3 (``metrics=['acc'], weighted_metrics=['acc']`` logs ``acc`` and
    ``acc_1``).

    >>> [(m.name, m.weighted) for m in resolve([("mae", False), ("mae", True)], "mse")]
    [('mae', False), ('mae_1', True)]
    """
    names = list(taken if taken is not None else ["loss"])
    out = []
    for identifier, weighted in ids:
        metric = get(identifier, loss, output_shape)
        if weighted:
            metric.weighted = True
        metric.name = unique_name(metric.name, names)
        names.append(metric.name)
        out.append(metric)
    return out


def serialize(metric: str | Callable | Metric) -> str | dict:
    """The name Keras 2 stores for a metric (a function's ``__name__``, a metric object's name); a
    Keras 2.3.1 metric class object, or an object of a user's :class:`Metric` subclass, as
    ``{'class_name': ..., 'config': get_config()}`` (as Keras 2.3.1 writes it; loading a user's
    class needs it in ``custom_objects``)."""
    if isinstance(metric, str):
        return metric
    if type(metric).__name__ in _keras_classes() and type(metric) is _keras_classes()[type(metric).__name__]:
        return {"class_name": type(metric).__name__, "config": metric.get_config()}
    if Metric in type(metric).__mro__ and not type(metric).__module__.startswith("arignote."):
        return {"class_name": type(metric).__name__, "config": metric.get_config()}
    if isinstance(metric, Metric):
        return metric.name
    name = getattr(metric, "__name__", None)
    if name is None:
        raise ValueError(f"Cannot serialize metric {metric!r}: it has no __name__")
    return name


def deserialize(name: str, custom_objects: dict | None = None) -> Callable:
    """The metric function stored as ``name`` (``custom_objects`` first, then metric and loss names).

    ``'acc'``/``'accuracy'`` need the loss to pick binary/categorical/sparse: :func:`get` does that.

    Example::

        >>> deserialize("binary_accuracy") is binary_accuracy
        True
    """
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if name in _FUNCTIONS:
        return _FUNCTIONS[name]
    if name in ("acc", "accuracy"):
        return categorical_accuracy
    return get(name).fn


# Keras 2 re-exports the loss functions in keras.metrics (metrics.binary_crossentropy in custom losses)
binary_crossentropy = losses.binary_crossentropy
categorical_crossentropy = losses.categorical_crossentropy
sparse_categorical_crossentropy = losses.sparse_categorical_crossentropy
mean_squared_error = mse = MSE = losses.mean_squared_error
mean_absolute_error = mae = MAE = losses.mean_absolute_error
mean_absolute_percentage_error = mape = MAPE = losses.mean_absolute_percentage_error
mean_squared_logarithmic_error = msle = MSLE = losses.mean_squared_logarithmic_error
hinge = losses.hinge
squared_hinge = losses.squared_hinge
poisson = losses.poisson
kullback_leibler_divergence = losses.kullback_leibler_divergence
categorical_hinge = losses.categorical_hinge
logcosh = losses.logcosh
cosine = cosine_similarity = cosine_proximity


class MeanMetricWrapper(FunctionMean):
    """Keras 2.3.1 ``MeanMetricWrapper(fn, name=None, dtype=None, **kwargs)``: the running mean of
    ``fn(y_true, y_pred, **kwargs)``; the named classes below are this with Keras's default names.
    Without ``name``: ``mean_metric_wrapper_1``, ``_2``... (Keras 2.3.1's metrics are Layers).

    >>> m = BinaryAccuracy(threshold=0.7)
    >>> m([[1.0], [0.0]], [[0.6], [0.6]])
    0.5
    """

    def __init__(self, fn: Callable, name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        call = fn
        if kwargs:
            def call(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
                return fn(y_true, y_pred, **kwargs)
        super().__init__(call, name=name or metric_base.default_name(type(self)))  # mean_metric_wrapper_1
        self.hits = _hits_for(fn, **kwargs)
        self.dtype = dtype
        self._fn_kwargs = kwargs


def _wrapper_class(class_name: str, fn: Callable, default_name: str, **options: Any) -> type:
    def __init__(self, *args: Any, name: str = default_name, dtype: Any = None, **kwargs: Any) -> None:
        keys = list(options)
        if "k" in options:  # Keras order: TopKCategoricalAccuracy(k=5, name=..., dtype=...)
            values = dict(zip(["k", "name", "dtype"], args))
        else:
            values = dict(zip(["name", "dtype", *keys], args))
        name, dtype = values.pop("name", name), values.pop("dtype", dtype)
        for key in kwargs:
            if key not in options:
                raise TypeError(f"{class_name} got an unexpected keyword argument {key!r}; its arguments: "
                                f"{', '.join(['name', 'dtype', *keys])}")
        values.update(kwargs)
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype,
                                   **{k: values.get(k, d) for k, d in options.items()})

    doc = (f"Keras 2.3.1 ``{class_name}``: the running mean of ``{fn.__name__}`` (logged as "
           f"``{default_name}``).")
    return type(class_name, (MeanMetricWrapper,),
                {"__init__": __init__, "__doc__": doc, "__module__": __name__})


Accuracy = _wrapper_class("Accuracy", accuracy, "accuracy")
BinaryAccuracy = _wrapper_class("BinaryAccuracy", binary_accuracy, "binary_accuracy", threshold=0.5)
CategoricalAccuracy = _wrapper_class("CategoricalAccuracy", categorical_accuracy, "categorical_accuracy")
SparseCategoricalAccuracy = _wrapper_class("SparseCategoricalAccuracy", sparse_categorical_accuracy,
                                           "sparse_categorical_accuracy")
TopKCategoricalAccuracy = _wrapper_class("TopKCategoricalAccuracy", top_k_categorical_accuracy,
                                         "top_k_categorical_accuracy", k=5)
SparseTopKCategoricalAccuracy = _wrapper_class("SparseTopKCategoricalAccuracy",
                                               sparse_top_k_categorical_accuracy,
                                               "sparse_top_k_categorical_accuracy", k=5)
MeanSquaredError = _wrapper_class("MeanSquaredError", losses.mean_squared_error, "mean_squared_error")
MeanAbsoluteError = _wrapper_class("MeanAbsoluteError", losses.mean_absolute_error, "mean_absolute_error")
MeanAbsolutePercentageError = _wrapper_class("MeanAbsolutePercentageError",
                                             losses.mean_absolute_percentage_error,
                                             "mean_absolute_percentage_error")
MeanSquaredLogarithmicError = _wrapper_class("MeanSquaredLogarithmicError",
                                             losses.mean_squared_logarithmic_error,
                                             "mean_squared_logarithmic_error")
Hinge = _wrapper_class("Hinge", losses.hinge, "hinge")
SquaredHinge = _wrapper_class("SquaredHinge", losses.squared_hinge, "squared_hinge")
CategoricalHinge = _wrapper_class("CategoricalHinge", losses.categorical_hinge, "categorical_hinge")
Poisson = _wrapper_class("Poisson", losses.poisson, "poisson")
KLDivergence = _wrapper_class("KLDivergence", losses.kullback_leibler_divergence,
                              "kullback_leibler_divergence")
LogCoshError = _wrapper_class("LogCoshError", losses.logcosh, "logcosh")
CosineSimilarity = _wrapper_class("CosineSimilarity", cosine_proximity, "cosine_similarity", axis=-1)
BinaryCrossentropy = _wrapper_class("BinaryCrossentropy", losses.binary_crossentropy, "binary_crossentropy",
                                    from_logits=False, label_smoothing=0)
CategoricalCrossentropy = _wrapper_class("CategoricalCrossentropy", losses.categorical_crossentropy,
                                         "categorical_crossentropy", from_logits=False, label_smoothing=0)
SparseCategoricalCrossentropy = _wrapper_class("SparseCategoricalCrossentropy",
                                               losses.sparse_categorical_crossentropy,
                                               "sparse_categorical_crossentropy", from_logits=False, axis=-1)


def _squared_error(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    return (y_pred - y_true.reshape(y_pred.shape).to(y_pred.dtype)).square()


class RootMeanSquaredError(FunctionMean):
    """Keras 2.3.1 ``RootMeanSquaredError``: ``sqrt`` of the (weighted) mean of every squared error.

    >>> RootMeanSquaredError()([[0.0], [0.0]], [[3.0], [4.0]]) == (12.5) ** 0.5
    True
    """

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None) -> None:
        super().__init__(_squared_error, name=name)
        self.dtype = dtype

    @staticmethod
    def result_from(state: torch.Tensor) -> float:
        return float(FunctionMean.result_from(state)) ** 0.5


def _keras_classes() -> dict[str, type]:
    """Keras 2.3.1's metric classes arignote provides, by class name (what a saved model stores)."""
    return {name: globals()[name] for name in __all__ if name[:1].isupper() and name not in (
        "Metric", "MetricVariable", "Reduction", "StatefulMetric", "MeanMetricWrapper", "FunctionMean")}


def clone_metric(metric: Any) -> Any:
    """Keras 2.3.1 ``clone_metric``: a fresh accumulator with the same function, name and weighting
    for a stateful metric object, the metric itself otherwise (a name, a function).

    >>> m = get("mae"); c = clone_metric(m)
    >>> c is not m and c.name == m.name
    True
    """
    if isinstance(metric, MeanMetricWrapper) or type(metric) is RootMeanSquaredError:
        return type(metric).from_config(metric.get_config())
    if isinstance(metric, FunctionMean):
        clone = FunctionMean(metric.fn, name=metric.name, weighted=metric.weighted, select=metric.select)
        clone.values = metric.values
        return clone
    if isinstance(metric, Metric):  # the confusion-count ones, Reduce/Sum/Mean, a user's subclass
        return type(metric).from_config(metric.get_config())
    return metric


def clone_metrics(metrics: Any) -> Any:
    """Keras 2.3.1 ``clone_metrics``: :func:`clone_metric` of each in a list or dict (None stays None).

    >>> clone_metrics(None), clone_metrics(["acc"])
    (None, ['acc'])
    """
    if metrics is None:
        return None
    if isinstance(metrics, dict):
        return {key: clone_metric(value) for key, value in metrics.items()}
    return [clone_metric(metric) for metric in metrics]


# Keras 2.3.1's MeanMetricWrapper is a Mean (isinstance), as here
Mean.register(MeanMetricWrapper)
