"""Keras 2 losses on torch tensors: ``loss(y_true, y_pred)`` -> one value per sample (per time step
for sequences), as Keras 2.3.1's; ``compile`` weighs, masks and averages them
(:mod:`arignote.losses.weighting`).

Probabilities in, as in Keras: cross-entropies clip predictions to ``[eps, 1 - eps]`` with
``eps = backend.epsilon()`` (1e-7) and follow Keras 2's TensorFlow-backend formulas:

* ``categorical_crossentropy``: ``p /= sum(p)``; ``-sum(y * log(clip(p)))`` per sample.
* ``sparse_categorical_crossentropy``: ``-log_softmax(log(clip(p)))[label]`` (TF's logits route).
* ``binary_crossentropy``: ``-mean(y log(clip p) + (1 - y) log(1 - clip p))`` over the last axis.
* ``mean_squared_error``/``mse``, ``mean_absolute_error``/``mae`` and the rest: mean over the last
  axis.

:func:`get` resolves names (did-you-mean on typos), Keras-order callables, and torch loss modules
(``nn.CrossEntropyLoss()``, called as ``module(y_pred, y_true)``). :func:`check_targets` rejects
targets of the wrong kind for a loss before training starts (numpy only, no device work).

This module is the public face (``keras.losses``); the code lives by concern in
:mod:`arignote.losses.functions` (the functions and their fast forms), :mod:`arignote.losses.classes`
(``Loss``, ``Reduction`` and the named classes), :mod:`arignote.losses.names` (lookup by name,
serialization), :mod:`arignote.losses.compile` (what ``compile`` trains with, fused with the output
activation) and :mod:`arignote.losses.targets` (target checks).

Example::

    >>> import torch
    >>> y_true, y_pred = torch.tensor([[0.0, 1.0]]), torch.tensor([[0.2, 0.8]])
    >>> [round(v, 4) for v in categorical_crossentropy(y_true, y_pred).tolist()]
    [0.2231]
"""

from __future__ import annotations

# noqa F401: besides __all__, names callers use from here: Keras 2's upper-case aliases (MSE, ...),
# reduce_weighted, from_logits (the trainer's fused head), and the tables arignote.metrics and the
# tests read (_NAMES, _FORMS, _LOSS_CLASSES)
from arignote.losses.classes import (  # noqa: F401
    _LOSS_CLASSES,
    BinaryCrossentropy,
    CategoricalCrossentropy,
    CategoricalHinge,
    Hinge,
    Huber,
    KLDivergence,
    LogCosh,
    Loss,
    LossFunctionWrapper,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    Poisson,
    Reduction,
    SparseCategoricalCrossentropy,
    SquaredHinge,
    is_categorical_crossentropy,
    reduce_weighted,
)
from arignote.losses.compile import batch_mean, compiled, from_logits, per_sample  # noqa: F401
from arignote.losses.functions import (  # noqa: F401
    _FORMS,
    KLD,
    MAE,
    MAPE,
    MSE,
    MSLE,
    binary_crossentropy,
    categorical_crossentropy,
    categorical_hinge,
    cosine,
    cosine_proximity,
    cosine_similarity,
    hinge,
    huber_loss,
    kld,
    kullback_leibler_divergence,
    logcosh,
    mae,
    mape,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    mse,
    msle,
    poisson,
    sparse_categorical_crossentropy,
    squared_hinge,
)
from arignote.losses.names import _NAMES, deserialize, get, name_of, serialize  # noqa: F401
from arignote.losses.targets import check_targets

__all__ = [
    "categorical_crossentropy",
    "sparse_categorical_crossentropy",
    "binary_crossentropy",
    "mean_squared_error",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error",
    "hinge",
    "squared_hinge",
    "kullback_leibler_divergence",
    "poisson",
    "categorical_hinge",
    "logcosh",
    "huber_loss",
    "cosine_proximity",
    "cosine",
    "cosine_similarity",
    "mse",
    "mae",
    "mape",
    "msle",
    "kld",
    "get",
    "serialize",
    "deserialize",
    "check_targets",
    "name_of",
    "per_sample",
    "batch_mean",
    "compiled",
    "Reduction",
    "Loss",
    "LossFunctionWrapper",
    "MeanSquaredError",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredLogarithmicError",
    "BinaryCrossentropy",
    "CategoricalCrossentropy",
    "SparseCategoricalCrossentropy",
    "Hinge",
    "SquaredHinge",
    "CategoricalHinge",
    "Poisson",
    "LogCosh",
    "KLDivergence",
    "Huber",
    "is_categorical_crossentropy",
]
