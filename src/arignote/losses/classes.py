"""Keras 2.3.1's loss classes: :class:`Loss` (``call`` gives values per sample; ``__call__`` weighs
and reduces them by a :class:`Reduction`), :class:`LossFunctionWrapper` and the named ones
(``CategoricalCrossentropy(from_logits=False, label_smoothing=0)``, ``Huber(delta=1.0)``, ...).

Example::

    >>> loss = MeanAbsoluteError(reduction=Reduction.SUM)
    >>> float(loss(torch.zeros(2, 1), torch.tensor([[1.0], [2.0]]))), loss.__name__
    (3.0, 'mean_absolute_error')
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from arignote.losses import weighting
from arignote.losses.functions import (
    _FORMS,
    binary_crossentropy,
    categorical_crossentropy,
    categorical_hinge,
    hinge,
    huber_loss,
    kullback_leibler_divergence,
    logcosh,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    poisson,
    sparse_categorical_crossentropy,
    squared_hinge,
)


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
        unweighted; :class:`arignote.losses.weighting.Weighted` targets -> weights times mask as the
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
