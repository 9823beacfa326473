"""Keras 2.3.1's ``MeanMetricWrapper`` and the named mean metrics built on it (``BinaryAccuracy``,
``TopKCategoricalAccuracy(k=5)``, ``MeanSquaredError``, ``CategoricalCrossentropy``, ...), and
``RootMeanSquaredError``: each the running mean (:class:`~arignote.metrics.accumulators.FunctionMean`)
of a Keras 2 metric or loss function, logged under Keras's default name.

Example::

    >>> m = TopKCategoricalAccuracy(k=1)
    >>> m([[0.0, 1.0], [1.0, 0.0]], [[0.2, 0.8], [0.3, 0.7]]), m.name
    (0.5, 'top_k_categorical_accuracy')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from arignote import losses
from arignote.metrics import base as metric_base
from arignote.metrics.accumulators import FunctionMean
from arignote.metrics.base import Mean
from arignote.metrics.functions import (
    _hits_for,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    cosine_proximity,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)

__all__ = [
    "MeanMetricWrapper", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
    "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "MeanSquaredError", "MeanAbsoluteError",
    "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "Hinge", "SquaredHinge", "CategoricalHinge",
    "Poisson", "KLDivergence", "LogCoshError", "CosineSimilarity", "BinaryCrossentropy",
    "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "RootMeanSquaredError",
]


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


# Keras 2.3.1's MeanMetricWrapper is a Mean (isinstance), as here
Mean.register(MeanMetricWrapper)
