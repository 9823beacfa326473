"""Keras 2's scikit-learn wrappers: an arignote model as a scikit-learn estimator.

``build_fn`` builds and compiles a fresh model (a function, a callable object, or ``None`` in a
subclass that defines ``__call__``); ``sk_params`` holds both its arguments and those of ``fit``,
``predict`` and ``evaluate`` (``epochs``, ``batch_size``, ``verbose``...), so ``GridSearchCV`` can
tune either. Each ``fit`` builds a new model. scikit-learn is only needed by scikit-learn itself
(``pip install 'arignote[sklearn]'``); the wrappers carry scikit-learn's estimator tags when it is
installed, so ``cross_val_score`` stratifies the folds of a classifier.

Example::

    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> def build(units=8):
    ...     model = Sequential([Dense(units, activation="relu", input_shape=(4,)),
    ...                         Dense(3, activation="softmax")])
    ...     model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    ...     return model
    >>> clf = KerasClassifier(build, units=4, epochs=2, verbose=0)
    >>> clf.get_params()["units"]
    4
"""

from __future__ import annotations

import copy
import inspect
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from arignote import losses
from arignote.models import Sequential
from arignote.utils.np_utils import to_categorical

__all__ = ["BaseWrapper", "KerasClassifier", "KerasRegressor"]

_ACCURACY_NAMES = ("acc", "accuracy")


def _has_arg(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    p = params.get(name)
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def _sklearn_tags(estimator: Any, kind: str) -> Any:
    from sklearn.utils import ClassifierTags, RegressorTags, Tags, TargetTags

    tags = Tags(estimator_type=kind, target_tags=TargetTags(required=True))
    if kind == "classifier":
        tags.classifier_tags = ClassifierTags()
    else:
        tags.regressor_tags = RegressorTags()
    return tags


class BaseWrapper:
    """Shared by :class:`KerasClassifier` and :class:`KerasRegressor` (not used directly)."""

    _estimator_type = ""

    def __init__(self, build_fn: Callable[..., Any] | None = None, **sk_params: Any) -> None:
        self.build_fn = build_fn
        self.sk_params = sk_params
        self.check_params(sk_params)

    def _build_signature(self) -> Callable[..., Any]:
        if self.build_fn is None:
            if type(self).__call__ is BaseWrapper.__call__:
                raise ValueError(f"{type(self).__name__}: pass build_fn=, or subclass it and define __call__ "
                                 "returning a compiled model")
            return self.__call__
        if not isinstance(self.build_fn, (types.FunctionType, types.MethodType)) and callable(self.build_fn) \
                and not isinstance(self.build_fn, type):
            return self.build_fn.__call__
        return self.build_fn

    def __call__(self, **kwargs: Any) -> Any:  # replaced by subclasses that build the model themselves
        raise NotImplementedError

    def check_params(self, params: dict[str, Any]) -> None:
        """ValueError naming any key that is neither a ``build_fn`` argument nor one of ``fit``,
        ``predict``, ``evaluate``."""
        if self.build_fn is not None and not callable(self.build_fn):
            raise ValueError(f"build_fn must be a function returning a compiled model, got {self.build_fn!r}")
        legal = [Sequential.fit, Sequential.predict, Sequential.evaluate, self._build_signature()]
        for name in params:
            if name != "nb_epoch" and not any(_has_arg(fn, name) for fn in legal):
                raise ValueError(f"{name} is not a legal parameter: use arguments of build_fn or of "
                                 "fit/predict/evaluate (epochs, batch_size, verbose...)")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """``build_fn`` and every ``sk_params`` entry (scikit-learn's ``clone`` rebuilds from these)."""
        return {"build_fn": self.build_fn, **self.sk_params}

    def set_params(self, **params: Any) -> BaseWrapper:
        """Update ``build_fn``/``sk_params`` (checked as in the constructor); returns ``self``."""
        if "build_fn" in params:
            self.build_fn = params.pop("build_fn")
        self.check_params(params)
        self.sk_params.update(params)
        return self

    def filter_sk_params(self, fn: Callable[..., Any],
                         override: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``sk_params`` that are arguments of ``fn``, then ``override`` on top."""
        out = {name: value for name, value in self.sk_params.items() if _has_arg(fn, name)}
        out.update(override or {})
        return out

    def _fit_args(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        args = copy.deepcopy(self.filter_sk_params(Sequential.fit))
        if "nb_epoch" in self.sk_params or "nb_epoch" in kwargs:
            warnings.warn("nb_epoch is the Keras 1 name of epochs; use epochs=", UserWarning, stacklevel=3)
            args["epochs"] = kwargs.pop("nb_epoch", self.sk_params.get("nb_epoch"))
        args.update(kwargs)  # sample_weight / class_weight reach Model.fit, as in Keras 2
        return args

    def fit(self, x: Any, y: Any, **kwargs: Any) -> Any:
        """Build a new model with ``build_fn`` and fit it on ``(x, y)``; returns its History."""
        build = self._build_signature()
        make = self.__call__ if self.build_fn is None else self.build_fn
        self.model = make(**self.filter_sk_params(build))
        if not hasattr(self.model, "fit") or not getattr(self.model, "compiled", True):
            raise ValueError(f"{type(self).__name__}: build_fn must return a compiled model, "
                             f"got {self.model!r}")
        if losses.name_of(self.model.loss) == "categorical_crossentropy" and np.ndim(y) != 2:
            y = to_categorical(y)
        return self.model.fit(x, y, **self._fit_args(dict(kwargs)))

    def _check_fitted(self) -> None:
        if getattr(self, "model", None) is None:
            raise ValueError(f"this {type(self).__name__} is not fitted yet: call fit(x, y) first")


class KerasClassifier(BaseWrapper):
    """scikit-learn classifier: ``fit``, ``predict`` (labels), ``predict_proba``, ``score`` (accuracy).

    Labels may be any values (``classes_`` keeps them, sorted), or one-hot rows.
    """

    _estimator_type = "classifier"

    def __sklearn_tags__(self) -> Any:
        return _sklearn_tags(self, "classifier")

    def fit(self, x: Any, y: Any, sample_weight: Any = None, **kwargs: Any) -> Any:
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] > 1:
            self.classes_ = np.arange(y.shape[1])
        elif y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1):
            self.classes_ = np.unique(y)
            y = np.searchsorted(self.classes_, y)
        else:
            raise ValueError(f"Invalid shape for y: {y.shape}; use (n_samples,) labels or one-hot rows")
        self.n_classes_ = len(self.classes_)
        return super().fit(x, y, sample_weight=sample_weight, **kwargs)

    def predict_proba(self, x: Any, **kwargs: Any) -> np.ndarray:
        """``(n_samples, n_classes)`` probabilities (a single sigmoid output becomes ``[1 - p, p]``)."""
        self._check_fitted()
        probs = np.asarray(self.model.predict(x, **self.filter_sk_params(Sequential.predict, kwargs)))
        if probs.ndim == 2 and probs.shape[1] == 1:
            probs = np.hstack([1 - probs, probs])
        return probs

    def predict(self, x: Any, **kwargs: Any) -> np.ndarray:
        """The most likely class label of each sample, shape ``(n_samples,)`` (from ``classes_``)."""
        self._check_fitted()
        proba = np.asarray(self.model.predict(x, **self.filter_sk_params(Sequential.predict, kwargs)))
        index = proba.argmax(axis=-1) if proba.shape[-1] > 1 else (proba[..., 0] > 0.5).astype("int64")
        return self.classes_[index]

    def score(self, x: Any, y: Any, **kwargs: Any) -> float:
        """The model's accuracy on ``(x, y)`` (compile it with ``metrics=['accuracy']``)."""
        self._check_fitted()
        y = np.asarray(y)
        if not (y.ndim == 2 and y.shape[1] > 1):
            y = np.searchsorted(self.classes_, y)
        if losses.name_of(self.model.loss) == "categorical_crossentropy" and y.ndim != 2:
            y = to_categorical(y, len(self.classes_))
        outputs = self.model.evaluate(x, y, **self.filter_sk_params(Sequential.evaluate, kwargs))
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        for name, value in zip(self.model.metrics_names, outputs):
            if name in _ACCURACY_NAMES:
                return float(value)
        raise ValueError("The model is not configured to compute accuracy. You should pass "
                         "`metrics=['accuracy']` to the `model.compile()` method.")


class KerasRegressor(BaseWrapper):
    """scikit-learn regressor: ``fit``, ``predict`` (a single output squeezed to ``(n,)``), ``score``
    (minus the loss, so that larger is better as scikit-learn expects)."""

    _estimator_type = "regressor"

    def __sklearn_tags__(self) -> Any:
        return _sklearn_tags(self, "regressor")

    def predict(self, x: Any, **kwargs: Any) -> np.ndarray:
        self._check_fitted()
        preds = np.asarray(self.model.predict(x, **self.filter_sk_params(Sequential.predict, kwargs)))
        return np.squeeze(preds, axis=-1) if preds.shape[-1] == 1 else preds

    def score(self, x: Any, y: Any, **kwargs: Any) -> float:
        self._check_fitted()
        loss = self.model.evaluate(x, y, **self.filter_sk_params(Sequential.evaluate, kwargs))
        return -float(loss[0] if isinstance(loss, (list, tuple)) else loss)
