"""Keras 2 losses on torch tensors: ``loss(y_true, y_pred)`` -> one value per sample (per time step
for sequences), as Keras 2.3.1's; ``compile`` weighs, masks and averages them (:mod:`arignote.weighting`).

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

Example::

    >>> import torch
    >>> y_true, y_pred = torch.tensor([[0.0, 1.0]]), torch.tensor([[0.2, 0.8]])
    >>> [round(v, 4) for v in categorical_crossentropy(y_true, y_pred).tolist()]
    [0.2231]
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from arignote import backend, logit_losses, weighting
from arignote._keras_objects import GLOBAL_CUSTOM_OBJECTS
from arignote.graph.ops import symbolic

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
# these values itself (arignote.weighting).


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
_ALIASES = {
    "mse": "mean_squared_error",
    "mae": "mean_absolute_error",
    "mape": "mean_absolute_percentage_error",
    "msle": "mean_squared_logarithmic_error",
    "kld": "kullback_leibler_divergence",
    "kl_divergence": "kullback_leibler_divergence",
    "cosine": "cosine_proximity",
    "cosine_similarity": "cosine_proximity",
}
_NAMES = {**_CANONICAL, **{a: _CANONICAL[c] for a, c in _ALIASES.items()}}


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


def per_sample(loss: str | Callable) -> Callable | None:
    """The values of a built-in loss that sample weights and masks multiply: one per sample (the mean,
    or the sum for the cross-entropies and KL, over the last axis; a 1-D output is one value per
    sample already), one per time step for sequences; None for a loss whose own values are those
    (a custom one, and ``categorical_hinge``, ``logcosh``, ``huber_loss``, ``cosine_proximity``).

    Example::

        >>> per_sample("mse")(torch.zeros(2, 2), torch.tensor([[1.0, 3.0], [0.0, 2.0]])).tolist()
        [5.0, 2.0]
    """
    try:
        fn = get(loss)
    except ValueError:
        return None
    forms = _FORMS.get(fn)
    return forms[0] if forms else None


def batch_mean(loss: str | Callable) -> Callable:
    """``fn(y_true, y_pred) -> 0-d``: the batch mean of the loss's values (Keras's
    ``SUM_OVER_BATCH_SIZE`` without weights), computed in as few kernels as possible for a built-in
    loss; a custom loss's values averaged.

    Example::

        >>> float(batch_mean("mse")(torch.zeros(2, 2), torch.tensor([[1.0, 3.0], [0.0, 2.0]])))
        3.5
    """
    fn = get(loss)
    forms = _FORMS.get(fn)
    if forms is not None:
        return forms[1]
    if fn is huber_loss:  # its values are per element (no per-sample form): their mean, in one operator
        return _huber_mean

    def mean(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
        value = fn(y_true, y_pred)
        return value.mean() if value.dim() else value

    mean.__name__ = getattr(fn, "__name__", type(fn).__name__)
    return mean


def compiled(loss: str | Callable) -> Callable:
    """The loss ``compile`` trains with: the batch mean of the loss's values with plain targets (fast),
    weighted and masked as Keras 2.3.1 with :class:`arignote.weighting.Weighted` targets.

    Example::

        >>> from arignote.weighting import Weighted
        >>> fn = compiled("mae")
        >>> y, p = torch.zeros(2, 2), torch.tensor([[1.0, 3.0], [2.0, 2.0]])
        >>> float(fn(y, p)), float(fn(Weighted((y, None, torch.tensor([True, False]))), p))
        (2.0, 1.0)
    """
    if isinstance(loss, dict):  # a stored Loss object: {'class_name': ..., 'config': ...}
        loss = deserialize(loss)
    if isinstance(loss, Loss):
        return loss._compiled()
    fn = get(loss)
    return weighting.weighted_loss(per_sample(fn) or fn, batch_mean(fn), name_of(fn))


def get(identifier: str | Callable) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """A loss function from a Keras name (``'mse'``, ``'categorical_crossentropy'``) or a callable.

    Callables are Keras order ``fn(y_true, y_pred)``; a torch loss module (``nn.MSELoss()``) is
    wrapped so that it is called as ``module(y_pred, y_true)``.

    Example::

        >>> get("mse") is mean_squared_error
        True
    """
    if isinstance(identifier, str):
        if identifier in GLOBAL_CUSTOM_OBJECTS:  # get_custom_objects(), looked at first as in Keras 2.3.1
            return get(GLOBAL_CUSTOM_OBJECTS[identifier])
        fn = _NAMES.get(identifier) or _NAMES.get(identifier.lower())
        if fn is None:
            close = difflib.get_close_matches(identifier, list(_NAMES), n=1, cutoff=0.5)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ValueError(f"unknown loss '{identifier}'.{hint} Valid losses: {', '.join(_NAMES)}")
        return fn
    if isinstance(identifier, dict):  # Keras 2.3.1's stored Loss object
        return deserialize(identifier)
    if isinstance(identifier, torch.nn.Module):
        module = identifier

        def torch_loss(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
            return module(y_pred, y_true)

        torch_loss.__name__ = type(module).__name__
        return torch_loss
    if callable(identifier):
        return identifier
    raise ValueError(f"a loss is a name such as 'categorical_crossentropy' or a callable, got {identifier!r}")


def name_of(loss: str | Callable) -> str:
    """Canonical name of a loss (``'mse'`` -> ``'mean_squared_error'``); a callable's ``__name__``; a
    :class:`LossFunctionWrapper`'s function's name (``CategoricalCrossentropy()`` ->
    ``'categorical_crossentropy'``, what picks the accuracy and checks targets as in Keras 2.3.1)."""
    if isinstance(loss, dict):
        loss = deserialize(loss)
    if isinstance(loss, LossFunctionWrapper):
        loss = loss.fn
    fn = get(loss)
    return getattr(fn, "__name__", type(fn).__name__)


def serialize(loss: str | Callable) -> str:
    """The name to store in a saved model (Keras stores the loss by name); a :class:`Loss` object as
    Keras 2.3.1 stores it, ``{'class_name': ..., 'config': get_config()}``."""
    if isinstance(loss, Loss):
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    return name_of(loss)


def deserialize(name: str | Callable, custom_objects: dict | None = None) -> Callable:
    """The loss function stored as ``name`` (``custom_objects`` first, as in Keras 2).

    Example::

        >>> deserialize("mse") is mean_squared_error
        True
    """
    if isinstance(name, str) and custom_objects and name in custom_objects:
        return custom_objects[name]
    if isinstance(name, dict):  # Keras 2.3.1 {'class_name': 'CategoricalCrossentropy', 'config': {...}}
        classes = {**_LOSS_CLASSES, **(custom_objects or {})}
        cls = classes.get(name.get("class_name"))
        if cls is None:
            raise ValueError(f"unknown loss class {name.get('class_name')!r}; known: "
                             f"{', '.join(_LOSS_CLASSES)} (pass your own in custom_objects)")
        return cls.from_config(name.get("config", {}))
    return get(name)


# --------------------------------------------------------------------------- fused with the output activation


def _sparse_cce_logits(y_true: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    logp = logit_losses.clip(torch.log_softmax(logits, dim=-1))
    # cross_entropy renormalizes the clipped probabilities exactly like the TF-backend route
    return F.cross_entropy(logp.reshape(-1, logits.shape[-1]), y_true.reshape(-1).long())


_FUSED = {
    ("softmax", "categorical_crossentropy"): logit_losses.categorical,
    ("softmax", "sparse_categorical_crossentropy"): _sparse_cce_logits,
    ("sigmoid", "binary_crossentropy"): logit_losses.binary,
}


def from_logits(loss: str | Callable, activation: str | None) -> Callable | None:
    """The loss computed from the pre-activation output, or None when there is no fused form.

    For a model ending in ``softmax`` (or ``sigmoid``) trained with a cross-entropy, the training
    loop may skip the final activation and call this instead: ``fused(y_true, logits)`` equals the
    batch mean of ``loss(y_true, activation(logits))`` with Keras's clipping (``log p`` clamped to
    ``[log eps, log(1 - eps)]``, zero gradient where clipped, like ``clip``), but saves the
    softmax backward and a few elementwise ops per step (:mod:`arignote.logit_losses`: the clamps'
    backward in one operator, the categorical loss as one autograd function). Accuracy metrics on
    logits need care: argmax is unchanged by softmax; the 0.5 threshold of a sigmoid is 0 on logits.

    Example::

        >>> z, y = torch.tensor([[2.0, 0.5, -1.0]]), torch.tensor([[0.0, 1.0, 0.0]])
        >>> fused = from_logits("categorical_crossentropy", "softmax")
        >>> bool(torch.isclose(fused(y, z), categorical_crossentropy(y, torch.softmax(z, -1))))
        True
    """
    if not isinstance(activation, str) or isinstance(loss, Loss):  # a Loss object: its own options
        return None
    try:
        name = name_of(loss)
    except ValueError:
        return None
    return _FUSED.get((activation, name))


# --------------------------------------------------------------------------- target checks


def _integral(y: np.ndarray) -> bool:
    if np.issubdtype(y.dtype, np.integer) or y.dtype == bool:
        return True
    return np.issubdtype(y.dtype, np.floating) and bool(np.all(y == np.round(y)))


def check_targets(loss: str | Callable, y, output_shape: tuple) -> None:
    """Raise ``ValueError`` when targets ``y`` (numpy-like, batch first) cannot go with ``loss``.

    ``output_shape`` is the model's per-sample output shape (Keras order), e.g. ``(10,)``.

    Example::

        >>> check_targets("sparse_categorical_crossentropy", np.array([0, 10]), (10,))
        Traceback (most recent call last):
        ...
        ValueError: sparse_categorical_crossentropy expects integer labels in [0, 10), got 10
    """
    name = name_of(loss)
    y = np.asarray(y)
    output_shape = tuple(output_shape)
    if y.ndim == 0:
        raise ValueError(f"{name}: targets must have a batch dimension, got a scalar")
    if np.issubdtype(y.dtype, np.floating) and not np.all(np.isfinite(y)):
        raise ValueError(f"{name}: targets contain NaN or Inf; clean them before fit")
    n = y.shape[0]
    per_sample = y.shape[1:]
    width = output_shape[-1] if output_shape else 1

    if name == "sparse_categorical_crossentropy":
        expected = output_shape[:-1]
        if per_sample not in (expected, (*expected, 1)):
            if per_sample == output_shape and width > 1:
                raise ValueError(
                    f"{name} expects integer labels, got one-hot targets of width {width}: "
                    "use categorical_crossentropy, or y.argmax(-1) as labels"
                )
            raise ValueError(f"{name} expects integer labels of shape {(n, *expected)}, got {y.shape}")
        if not _integral(y):
            raise ValueError(f"{name} expects integer labels, got non-integer values of dtype {y.dtype}")
        if y.size and (y.min() < 0 or y.max() >= width):
            bad = y.min() if y.min() < 0 else y.max()
            raise ValueError(f"{name} expects integer labels in [0, {width}), got {int(bad)}")
        return

    if name == "categorical_crossentropy":
        if per_sample != output_shape:
            if per_sample in (output_shape[:-1], (*output_shape[:-1], 1)) and _integral(y):
                raise ValueError(
                    f"{name} expects one-hot targets of width {width}, got integer labels: "
                    f"use to_categorical(y, {width}) or sparse_categorical_crossentropy"
                )
            got = f"width {per_sample[-1]}" if per_sample else f"shape {y.shape}"
            raise ValueError(
                f"{name} expects one-hot targets of width {width}, got {got} (targets {y.shape})"
            )
        if y.size and y.min() < 0:
            raise ValueError(f"{name} expects one-hot (or probability) targets >= 0, got {y.min()}")
        return

    if y.size != n * int(np.prod(output_shape, dtype=np.int64)):
        raise ValueError(
            f"{name}: targets of shape {y.shape} do not match the model output {(n, *output_shape)}"
        )
    # Whole numbers outside {0, 1} are class ids given to a binary loss (a mistake worth an error);
    # real targets slightly outside [0, 1] are soft or noisy labels (the Keras 2 GAN adds noise to
    # its 0/1 labels), which Keras 2 computes without complaint, so they pass.
    if name == "binary_crossentropy" and y.size and (y.min() < 0 or y.max() > 1) and _integral(y):
        bad = y.min() if y.min() < 0 else y.max()
        raise ValueError(
            f"{name} expects targets in [0, 1], got {bad}; for more than 2 classes use a softmax output "
            "with sparse_categorical_crossentropy"
        )


# --------------------------------------------------------------------------- Loss classes (Keras 2.3.1)


class Reduction:
    """Keras 2.3.1 ``losses_utils.Reduction``: how a :class:`Loss` reduces its weighted values.

    >>> Reduction.all()
    ('none', 'sum', 'sum_over_batch_size')
    """

    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple[str, str, str]:
        return (cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key!r}: use one of {', '.join(cls.all())}")


def reduce_weighted(values: torch.Tensor, sample_weight: torch.Tensor | float | None,
                    reduction: str = Reduction.SUM_OVER_BATCH_SIZE) -> torch.Tensor:
    """Keras 2.3.1 ``compute_weighted_loss``: ``values * sample_weight`` (weights broadcast as Keras:
    a scalar, per sample, or per element), then ``none`` (as is), ``sum``, or ``sum_over_batch_size``
    (the sum over the number of weighted values).

    >>> float(reduce_weighted(torch.tensor([1.0, 3.0]), torch.tensor([2.0, 0.0]), "sum"))
    2.0
    """
    Reduction.validate(reduction)
    if sample_weight is None:
        weighted = values
    else:
        if not isinstance(sample_weight, torch.Tensor):
            sample_weight = torch.tensor(float(sample_weight))
        sample_weight = sample_weight.to(device=values.device, dtype=values.dtype)
        v, w = weighting._match_ranks(values, sample_weight)
        weighted = v * w
    if reduction == Reduction.NONE:
        return weighted
    total = weighted.sum()
    return total if reduction == Reduction.SUM else total / max(weighted.numel(), 1)


class Loss:
    """Keras 2.3.1 loss base class: subclasses implement ``call(y_true, y_pred)`` (values per sample);
    ``loss(y_true, y_pred, sample_weight=None)`` weighs and reduces them (``reduction``, default
    ``'sum_over_batch_size'``). In ``compile(loss=...)`` the output mask and sample weights are the
    ``sample_weight``, and the result is averaged as Keras 2.3.1 does (``K.mean(total_loss)``).

    Example::

        >>> class Scaled(Loss):
        ...     def call(self, y_true, y_pred):
        ...         return 2.0 * (y_pred - y_true).abs().mean(dim=-1)
        >>> float(Scaled()(torch.zeros(2, 1), torch.tensor([[1.0], [2.0]])))
        3.0
    """

    def __init__(self, reduction: str = Reduction.SUM_OVER_BATCH_SIZE, name: str | None = None) -> None:
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name

    def call(self, y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred)")

    def __call__(self, y_true: torch.Tensor, y_pred: torch.Tensor, sample_weight=None) -> torch.Tensor:
        if not isinstance(y_pred, torch.Tensor):  # numpy arrays, as Keras takes them
            y_pred = torch.as_tensor(np.asarray(y_pred))
        if not isinstance(y_true, torch.Tensor):
            y_true = torch.as_tensor(np.asarray(y_true), device=y_pred.device)
        if sample_weight is not None and not isinstance(sample_weight, (torch.Tensor, float, int)):
            sample_weight = torch.as_tensor(np.asarray(sample_weight), device=y_pred.device)
        return reduce_weighted(self.call(y_true, y_pred), sample_weight, self.reduction)

    @property
    def __name__(self) -> str:  # compile and the logs read a loss's name
        return self.name or type(self).__name__

    def get_config(self) -> dict:
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        return cls(**config)

    def _fast_mean(self) -> Callable | None:
        """The batch mean in the fewest kernels when it equals this loss unweighted (else None)."""
        return None

    def _compiled(self) -> Callable:
        """``fn(y_true, y_pred)`` as ``compile`` trains with it: plain targets -> the loss
        unweighted; :class:`arignote.weighting.Weighted` targets -> weights times mask as the
        ``sample_weight`` (Keras 2.3.1 ``_prepare_total_loss``), then the mean of the result."""
        fast = self._fast_mean() if self.reduction != Reduction.SUM else None

        def loss(y_true, y_pred):
            if fast is not None and type(y_true) is not weighting.Weighted:
                return fast(y_true, y_pred)
            y, w, mask = weighting.parts(y_true)
            out = self(y, y_pred, sample_weight=weighting.combine(w, mask, y_pred.dtype))
            return out.mean() if out.dim() else out

        loss.__name__ = self.__name__
        return loss

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reduction={self.reduction!r}, name={self.name!r})"


class LossFunctionWrapper(Loss):
    """A loss function ``fn(y_true, y_pred, **kwargs)`` as a :class:`Loss` (Keras 2.3.1).

    >>> w = LossFunctionWrapper(mean_absolute_error, reduction="sum")
    >>> float(w(torch.zeros(2, 1), torch.tensor([[1.0], [2.0]])))
    3.0
    """

    def __init__(self, fn: Callable, reduction: str = Reduction.SUM_OVER_BATCH_SIZE, name: str | None = None,
                 **kwargs) -> None:
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
        if not self._fn_kwargs and self.fn in _FORMS:
            return _FORMS[self.fn][0](y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def _fast_mean(self) -> Callable | None:
        if any(self._fn_kwargs.values()) or self.fn not in _FORMS:
            return None
        return _FORMS[self.fn][1]

    def get_config(self) -> dict:
        return {**super().get_config(), **self._fn_kwargs}


def _wrapper(class_name: str, fn: Callable, doc: str, **options) -> type:
    """A Keras 2.3.1 ``LossFunctionWrapper`` subclass for ``fn`` with keyword ``options``."""

    def __init__(self, *args, reduction: str = Reduction.SUM_OVER_BATCH_SIZE, name: str = fn.__name__,
                 **kwargs) -> None:
        if len(args) > len(options):
            raise TypeError(f"{class_name} takes at most {len(options)} positional arguments "
                            f"({', '.join(options) or 'none'}), got {len(args)}")
        values = dict(zip(options, args))
        for key in kwargs:
            if key in values or key not in options:
                raise TypeError(f"{class_name} got an unexpected keyword argument {key!r}; its arguments: "
                                f"{', '.join([*options, 'reduction', 'name'])}")
        values.update(kwargs)
        LossFunctionWrapper.__init__(self, fn, reduction=reduction, name=name,
                                     **{k: values.get(k, default) for k, default in options.items()})

    return type(class_name, (LossFunctionWrapper,), {"__init__": __init__, "__doc__": doc,
                                                      "__module__": __name__})


MeanSquaredError = _wrapper("MeanSquaredError", mean_squared_error,
                            "``mean_squared_error`` as a Loss (Keras 2.3.1).")
MeanAbsoluteError = _wrapper("MeanAbsoluteError", mean_absolute_error,
                             "``mean_absolute_error`` as a Loss (Keras 2.3.1).")
MeanAbsolutePercentageError = _wrapper("MeanAbsolutePercentageError", mean_absolute_percentage_error,
                                       "``mean_absolute_percentage_error`` as a Loss (Keras 2.3.1).")
MeanSquaredLogarithmicError = _wrapper("MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
                                       "``mean_squared_logarithmic_error`` as a Loss (Keras 2.3.1).")
BinaryCrossentropy = _wrapper("BinaryCrossentropy", binary_crossentropy,
                              "``binary_crossentropy`` as a Loss: ``BinaryCrossentropy(from_logits=False, "
                              "label_smoothing=0)``.", from_logits=False, label_smoothing=0)
CategoricalCrossentropy = _wrapper("CategoricalCrossentropy", categorical_crossentropy,
                                   "``categorical_crossentropy`` as a Loss: ``CategoricalCrossentropy("
                                   "from_logits=False, label_smoothing=0)``.", from_logits=False,
                                   label_smoothing=0)
SparseCategoricalCrossentropy = _wrapper("SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
                                         "``sparse_categorical_crossentropy`` as a Loss: "
                                         "``SparseCategoricalCrossentropy(from_logits=False)``.",
                                         from_logits=False)
Hinge = _wrapper("Hinge", hinge, "``hinge`` as a Loss (Keras 2.3.1).")
SquaredHinge = _wrapper("SquaredHinge", squared_hinge, "``squared_hinge`` as a Loss (Keras 2.3.1).")
CategoricalHinge = _wrapper("CategoricalHinge", categorical_hinge, "``categorical_hinge`` as a Loss.")
Poisson = _wrapper("Poisson", poisson, "``poisson`` as a Loss (Keras 2.3.1).")
LogCosh = _wrapper("LogCosh", logcosh, "``logcosh`` as a Loss (Keras 2.3.1).")
KLDivergence = _wrapper("KLDivergence", kullback_leibler_divergence,
                        "``kullback_leibler_divergence`` as a Loss (Keras 2.3.1).")
Huber = _wrapper("Huber", huber_loss, "``huber_loss`` as a Loss: ``Huber(delta=1.0)``.", delta=1.0)

_LOSS_CLASSES = {c.__name__: c for c in (
    MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError,
    BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, Hinge, SquaredHinge,
    CategoricalHinge, Poisson, LogCosh, KLDivergence, Huber)}


def is_categorical_crossentropy(loss) -> bool:
    """Keras 2.3.1's test: a :class:`CategoricalCrossentropy`, a wrapper of
    :func:`categorical_crossentropy`, a function of that name, or the name itself.

    >>> is_categorical_crossentropy(CategoricalCrossentropy()), is_categorical_crossentropy("mse")
    (True, False)
    """
    return (isinstance(loss, CategoricalCrossentropy)
            or (isinstance(loss, LossFunctionWrapper) and loss.fn is categorical_crossentropy)
            or getattr(loss, "__name__", None) == "categorical_crossentropy"
            or (isinstance(loss, str) and loss == "categorical_crossentropy"))
