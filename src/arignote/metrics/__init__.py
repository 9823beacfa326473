"""Keras 2 metrics, accumulated on the device without host syncs.

A :class:`FunctionMean` (what a metric name or function in ``compile`` becomes, and the base of
``MeanMetricWrapper``) keeps a running ``total`` as a device tensor and the sample ``count`` as a host
number (the loop knows the batch size), so ``update`` launches a couple of kernels and never
waits for the GPU. :meth:`FunctionMean.state` packs ``[total, count]`` into one 1-D tensor that data
parallel code can all-reduce; :meth:`FunctionMean.result_from` turns a (reduced) state into a float
(that is the sync point, done at log time).

:class:`Metric` is Keras 2.3.1's base class for metrics users write (``add_weight``, ``update_state``,
``result``; :mod:`arignote.metrics.base`), with ``Reduce``, ``Sum`` and ``Mean`` on it. Every metric
object here is an instance of it.

This module is the public face (``keras.metrics``); the code lives by concern in
:mod:`arignote.metrics.functions` (the per-sample functions), :mod:`arignote.metrics.accumulators`
(``FunctionMean``), :mod:`arignote.metrics.wrappers` (``MeanMetricWrapper`` and the named mean
metrics), :mod:`arignote.metrics.confusion` (the confusion-count ones) and :mod:`arignote.metrics.lookup`
(``get``, ``resolve``, ``serialize``, ``clone_metric``).

Keras semantics of ``'acc'``/``'accuracy'`` (chosen by :func:`get` from the loss and output):
binary (threshold 0.5) when the loss is ``binary_crossentropy`` or the output has width 1;
sparse (argmax vs integer label) for ``sparse_categorical_crossentropy``; categorical (argmax
vs argmax) otherwise. The metric is logged under the name the user wrote (``acc`` or ``accuracy``),
as Keras 2.3; with the ``metrics.names=2.2`` flag under Keras 2.0-2.2's name (``acc``,
``mean_absolute_error``). See :mod:`arignote.metrics.names`.

Example::

    >>> import torch
    >>> m = get("acc", loss="categorical_crossentropy")
    >>> m.update(torch.tensor([[0., 1.], [1., 0.]]), torch.tensor([[0.2, 0.8], [0.4, 0.6]]))
    >>> m.name, m.result()
    ('acc', 0.5)
"""

from __future__ import annotations

from arignote import losses
from arignote.metrics.accumulators import FunctionMean
from arignote.metrics.base import Mean, Metric, MetricVariable, Reduce, Reduction, Sum
from arignote.metrics.confusion import (
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
from arignote.metrics.functions import (
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    cosine,
    cosine_proximity,
    cosine_similarity,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from arignote.metrics.lookup import (
    accuracy_for,
    clone_metric,
    clone_metrics,
    deserialize,
    get,
    resolve,
    serialize,
    unique_name,
)
from arignote.metrics.wrappers import (
    Accuracy,
    BinaryAccuracy,
    BinaryCrossentropy,
    CategoricalAccuracy,
    CategoricalCrossentropy,
    CategoricalHinge,
    CosineSimilarity,
    Hinge,
    KLDivergence,
    LogCoshError,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanMetricWrapper,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    Poisson,
    RootMeanSquaredError,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    SparseTopKCategoricalAccuracy,
    SquaredHinge,
    TopKCategoricalAccuracy,
)

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
