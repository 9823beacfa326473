"""Metrics from what ``compile`` and a saved model give: :func:`get` (a Keras name, a function, a
metric object or a stored ``{'class_name': ..., 'config': ...}``), :func:`resolve` (``compile``'s
``metrics`` and ``weighted_metrics`` with Keras 2.3's unique names), :func:`serialize`,
:func:`deserialize`, and :func:`clone_metric` for a fresh copy.

Keras semantics of ``'acc'``/``'accuracy'`` (:func:`accuracy_for`): binary (threshold 0.5) when the
loss is ``binary_crossentropy`` or the output has width 1; sparse for
``sparse_categorical_crossentropy``; categorical otherwise.

Example::

    >>> [m.name for m in resolve([("acc", False), ("mae", False)], "binary_crossentropy")]
    ['acc', 'mae']
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from arignote import losses
from arignote.metrics import confusion as metric_classes
from arignote.metrics import names as metric_names
from arignote.metrics import wrappers as metric_wrappers
from arignote.metrics.accumulators import FunctionMean
from arignote.metrics.base import Mean, Metric, Reduce, Sum
from arignote.metrics.confusion import StatefulMetric
from arignote.metrics.functions import (
    _FUNCTIONS,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
)
from arignote.metrics.wrappers import MeanMetricWrapper, RootMeanSquaredError

__all__ = ["get", "resolve", "accuracy_for", "unique_name", "serialize", "deserialize", "clone_metric",
           "clone_metrics"]


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


def _keras_classes() -> dict[str, type]:
    """Keras 2.3.1's metric classes arignote provides, by class name (what a saved model stores)."""
    named = [getattr(module, name) for module in (metric_classes, metric_wrappers) for name in module.__all__]
    return {cls.__name__: cls for cls in (Reduce, Mean, Sum, *named)
            if cls not in (StatefulMetric, MeanMetricWrapper)}


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
