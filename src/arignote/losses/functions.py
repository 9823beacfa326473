"""Keras 2.3.1's loss functions on torch tensors: ``loss(y_true, y_pred)`` -> one value per sample
(per time step for sequences), and per built-in function the forms ``compile`` trains with.

Probabilities in, as in Keras: cross-entropies clip predictions to ``[eps, 1 - eps]`` with
``eps = backend.epsilon()`` (1e-7) and follow Keras 2's TensorFlow-backend formulas:

* ``categorical_crossentropy``: ``p /= sum(p)``; ``-sum(y * log(clip(p)))`` per sample.
* ``sparse_categorical_crossentropy``: ``-log_softmax(log(clip(p)))[label]`` (TF's logits route).
* ``binary_crossentropy``: ``-mean(y log(clip p) + (1 - y) log(1 - clip p))`` over the last axis.
* ``mean_squared_error``/``mse``, ``mean_absolute_error``/``mae`` and the rest: mean over the last
  axis.

``_FORMS`` holds, per built-in function, its values that sample weights and masks multiply and the
batch mean of those values in the fewest kernels (:mod:`arignote.losses.compile` uses them). The public
face of these functions is :mod:`arignote.losses`.

Example::

    >>> import torch
    >>> y_true, y_pred = torch.tensor([[0.0, 1.0]]), torch.tensor([[0.2, 0.8]])
    >>> [round(v, 4) for v in categorical_crossentropy(y_true, y_pred).tolist()]
    [0.2231]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from arignote import backend
from arignote.layers.op_layer import symbolic


def _cce_values(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    eps = backend.epsilon()
    p = (y_pred / y_pred.sum(dim=-1, keepdim=True)).clamp(eps, 1.0 - eps)
    return -(y_true.reshape(y_pred.shape) * p.log()).sum(dim=-1)


def _sparse_logits(y_pred: torch.Tensor) -> torch.Tensor:
    eps = backend.epsilon()
    return y_pred.clamp(eps, 1.0 - eps).log().reshape(-1, y_pred.shape[-1])


def _sparse_cce_values(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    values = F.cross_entropy(_sparse_logits(y_pred), y_true.reshape(-1).long(), reduction="none")
    return values.reshape(y_pred.shape[:-1])


def _sparse_cce_mean(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(_sparse_logits(y_pred), y_true.reshape(-1).long())


def _bce_terms(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    eps = backend.epsilon()
    p = y_pred.clamp(eps, 1.0 - eps)
    y = y_true.reshape(y_pred.shape)
    return -(y * p.log() + (1.0 - y) * torch.log1p(-p))


def _se(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    return (y_pred - y_true.reshape(y_pred.shape)).square()


def _ae(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    return (y_pred - y_true.reshape(y_pred.shape)).abs()


def _ape(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    y = y_true.reshape(y_pred.shape)
    return 100.0 * (y - y_pred).abs() / y.abs().clamp_min(backend.epsilon())


def _sle(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    eps = backend.epsilon()
    y = y_true.reshape(y_pred.shape)
    return (torch.log1p(y_pred.clamp_min(eps)) - torch.log1p(y.clamp_min(eps))).square()


def _signed_labels(y: torch.Tensor) -> torch.Tensor:
    """Keras 2.3.1 ``_maybe_convert_labels``: labels that are all 0 or 1 become -1 and 1 (decided for
    the whole batch on the device: no host sync); others stay."""
    binary = ((y == 0) | (y == 1)).all()
    return torch.where(binary, 2.0 * y - 1.0, y)


def _hinge_terms(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    y = _signed_labels(y_true.reshape(y_pred.shape).to(y_pred.dtype))
    return (1.0 - y * y_pred).clamp_min(0.0)


def _squared_hinge_terms(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    return _hinge_terms(y_true, y_pred).square()


def _kld_values(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    eps = backend.epsilon()
    y = y_true.reshape(y_pred.shape).clamp(eps, 1.0)
    p = y_pred.clamp(eps, 1.0)
    return (y * (y / p).log()).sum(dim=-1)


def _poisson_terms(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    return y_pred - y_true.reshape(y_pred.shape) * (y_pred + backend.epsilon()).log()


# Keras 2.3.1's loss functions return one value per sample (per time step for sequences): the mean
# over the last axis, or its sum for the cross-entropies and KL. compile() weighs, masks and reduces
# these values itself (arignote.losses.weighting).


@symbolic  # on symbolic tensors (a loss built into the graph with add_loss) it records a node
def categorical_crossentropy(y_true: torch.Tensor, y_pred: torch.Tensor, from_logits: bool = False,
                             label_smoothing: float = 0) -> torch.Tensor:
    """Cross-entropy between one-hot (or soft) targets and predicted probabilities, per sample.
    ``from_logits``: ``y_pred`` before the softmax; ``label_smoothing``: targets
    ``y * (1 - s) + s / classes``, where Keras 2.3.1 takes ``classes`` from the targets' axis 1."""
    if from_logits:
        y_pred = torch.softmax(y_pred, dim=-1)
    if label_smoothing:
        y = y_true.reshape(y_pred.shape).to(y_pred.dtype)
        y_true = y * (1.0 - label_smoothing) + label_smoothing / y.shape[1]
    return _cce_values(y_true, y_pred)


@symbolic
def sparse_categorical_crossentropy(y_true: torch.Tensor, y_pred: torch.Tensor, from_logits: bool = False,
                                    axis: int = -1) -> torch.Tensor:
    """Cross-entropy between integer labels (shape ``(N,)`` or ``(N, 1)``) and probabilities, per sample
    (``from_logits``: ``y_pred`` before the softmax; the classes on the last ``axis``)."""
    if axis not in (-1, y_pred.dim() - 1):
        raise ValueError(f"sparse_categorical_crossentropy takes the classes on the last axis, got "
                         f"axis={axis}")
    if from_logits:
        y_pred = torch.softmax(y_pred, dim=-1)
    return _sparse_cce_values(y_true, y_pred)


@symbolic
def binary_crossentropy(y_true: torch.Tensor, y_pred: torch.Tensor, from_logits: bool = False,
                        label_smoothing: float = 0) -> torch.Tensor:
    """Binary cross-entropy of targets in [0, 1] against sigmoid probabilities (mean over the last axis);
    ``from_logits``: ``y_pred`` before the sigmoid; ``label_smoothing``: targets ``y * (1 - s) + s / 2``."""
    if from_logits:
        y_pred = torch.sigmoid(y_pred)
    if label_smoothing:
        y = y_true.reshape(y_pred.shape).to(y_pred.dtype)
        y_true = y * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return _bce_terms(y_true, y_pred).mean(dim=-1)


@symbolic
def mean_squared_error(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """``mean((y_pred - y_true) ** 2, axis=-1)``."""
    return _se(y_true, y_pred).mean(dim=-1)


@symbolic
def mean_absolute_error(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """``mean(|y_pred - y_true|, axis=-1)``."""
    return _ae(y_true, y_pred).mean(dim=-1)


@symbolic
def mean_absolute_percentage_error(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """``100 * mean(|y_true - y_pred| / clip(|y_true|, eps), axis=-1)``."""
    return _ape(y_true, y_pred).mean(dim=-1)


@symbolic
def mean_squared_logarithmic_error(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """``mean((log(clip(y_pred, eps) + 1) - log(clip(y_true, eps) + 1)) ** 2, axis=-1)``."""
    return _sle(y_true, y_pred).mean(dim=-1)


@symbolic
def hinge(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """``mean(max(1 - y_true * y_pred, 0), axis=-1)`` for targets in {-1, 1}."""
    return _hinge_terms(y_true, y_pred).mean(dim=-1)


@symbolic
def squared_hinge(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """``mean(max(1 - y_true * y_pred, 0) ** 2, axis=-1)``."""
    return _squared_hinge_terms(y_true, y_pred).mean(dim=-1)


@symbolic
def kullback_leibler_divergence(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """``sum(y * log(y / p), axis=-1)`` with both clipped to ``[eps, 1]``."""
    return _kld_values(y_true, y_pred)


@symbolic
def poisson(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """``mean(y_pred - y_true * log(y_pred + eps), axis=-1)``."""
    return _poisson_terms(y_true, y_pred).mean(dim=-1)


@symbolic
def categorical_hinge(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """``max(0, max((1 - y) * p) - sum(y * p) + 1)`` per sample (one-hot targets)."""
    y = y_true.reshape(y_pred.shape).to(y_pred.dtype)
    pos = (y * y_pred).sum(dim=-1)
    neg = ((1.0 - y) * y_pred).amax(dim=-1)
    return (neg - pos + 1.0).clamp_min(0.0)


@symbolic
def logcosh(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, as ``x + softplus(-2x) - log 2``."""
    x = y_pred - y_true.reshape(y_pred.shape)
    return (x + F.softplus(-2.0 * x) - math.log(2.0)).mean(dim=-1)


@symbolic
def huber_loss(y_true: torch.Tensor, y_pred: torch.Tensor, delta: float = 1.0) -> torch.Tensor:
    """Huber's loss of each element (Keras 2.3.1 keeps every element: no mean over the last axis):
    ``0.5 * min(|e|, delta) ** 2 + delta * (|e| - min(|e|, delta))``."""
    error = (y_pred - y_true.reshape(y_pred.shape)).abs()
    quadratic = error.clamp_max(delta)
    return 0.5 * quadratic.square() + delta * (error - quadratic)


@symbolic
def cosine_proximity(y_true: torch.Tensor, y_pred: torch.Tensor, axis: int = -1) -> torch.Tensor:
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)`` (norms at least ``sqrt(eps)``)."""
    eps = backend.epsilon()

    def unit(t: torch.Tensor) -> torch.Tensor:
        return t / t.square().sum(dim=axis, keepdim=True).clamp_min(eps).sqrt()

    return -(unit(y_true.reshape(y_pred.shape).to(y_pred.dtype)) * unit(y_pred)).sum(dim=axis)


# Keras 2 short names
cosine = cosine_similarity = cosine_proximity
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence


# the built-in functions by their canonical name (arignote.losses.names adds the aliases)
_CANONICAL = {
    f.__name__: f
    for f in (
        categorical_crossentropy,
        sparse_categorical_crossentropy,
        binary_crossentropy,
        mean_squared_error,
        mean_absolute_error,
        mean_absolute_percentage_error,
        mean_squared_logarithmic_error,
        hinge,
        squared_hinge,
        kullback_leibler_divergence,
        poisson,
        categorical_hinge,
        logcosh,
        huber_loss,
        cosine_proximity,
    )
}


def _last_axis_mean(terms: Callable) -> Callable:
    def values(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
        t = terms(y_true, y_pred)
        return t.mean(dim=-1) if t.dim() > 1 else t  # a 1-D output: one value per sample already

    return values


def _all_mean(terms: Callable) -> Callable:
    def mean(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
        return terms(y_true, y_pred).mean()

    return mean


def _same_dtype_target(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    y = y_true.reshape(y_pred.shape)
    return y if y.is_floating_point() else y.to(y_pred.dtype)


def _mse_mean(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    # the mean over the last axis, then over the samples, is the mean of every element: one
    # operator each way (mse_loss, mse_loss_backward) instead of sub, pow, mean + div, pow, mul, mul
    return F.mse_loss(y_pred, _same_dtype_target(y_true, y_pred))


def _huber_mean(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    # Keras's huber_loss (delta 1) is torch's, element for element (0.5 e^2 up to delta, then
    # delta (|e| - delta / 2)): one operator each way instead of 9 and 15
    return F.huber_loss(y_pred, _same_dtype_target(y_true, y_pred), delta=1.0)


# per built-in loss: (its values, one per sample or time step, which sample weights and masks multiply;
# the batch mean of those values in the fewest kernels: the unweighted, unmasked fast path)
_FORMS = {
    categorical_crossentropy: (_cce_values, _all_mean(_cce_values)),
    sparse_categorical_crossentropy: (_sparse_cce_values, _sparse_cce_mean),
    binary_crossentropy: (_last_axis_mean(_bce_terms), _all_mean(_bce_terms)),
    mean_squared_error: (_last_axis_mean(_se), _mse_mean),
    mean_absolute_error: (_last_axis_mean(_ae), _all_mean(_ae)),
    mean_absolute_percentage_error: (_last_axis_mean(_ape), _all_mean(_ape)),
    mean_squared_logarithmic_error: (_last_axis_mean(_sle), _all_mean(_sle)),
    hinge: (_last_axis_mean(_hinge_terms), _all_mean(_hinge_terms)),
    squared_hinge: (_last_axis_mean(_squared_hinge_terms), _all_mean(_squared_hinge_terms)),
    kullback_leibler_divergence: (_kld_values, _all_mean(_kld_values)),
    poisson: (_last_axis_mean(_poisson_terms), _all_mean(_poisson_terms)),
}
