"""Keras 2.3.1's ``add_metric(value, name=None)`` on layers and models, and the metric objects a
layer or model holds as attributes.

What Keras 2.3.1 does, and what happens here:

* ``add_metric(K.sum(x), name='m')`` creates a ``Mean`` named ``m`` the first time and feeds it the
  value; later calls with that name feed the same ``Mean`` (Keras builds the graph once; here
  ``call`` runs at every forward, so every batch gives one value). Logged under ``m``, reset at
  each epoch and each evaluate, validated as ``val_m``.
* ``add_metric(metric(y))`` (a ``Metric`` called on a tensor) tracks that metric object; the call
  itself updated it.
* A name already taken by a metric of the layer leaves the call there (no second metric); two
  metrics with that name raise ``ValueError`` (Keras's message).
* A ``Metric`` set as an attribute (``self.mean = metrics.Mean(name='m')`` in ``__init__``) is
  tracked at once, which fixes its place in the order.
* A functional model takes symbolic values (``model.add_metric(K.sum(model.output), name='s')``,
  ``model.add_metric(metrics.Mean()(y))``): the graph computes them at every forward.
* ``model.metrics``: the compile metrics, the model's own, then its layers' (each layer's own, then
  its sublayers'), Keras 2.3.1's order; the logs list the added ones after the compile metrics in
  that order (:func:`refresh` puts them on the trainer's list as :class:`Reported` entries).

Example::

    >>> import torch
    >>> from arignote.layers import Layer
    >>> class Probe(Layer):
    ...     def call(self, x):
    ...         self.add_metric(x.sum(), name="total")
    ...         return x
    >>> probe = Probe()
    >>> _ = probe(torch.ones(2, 3)); _ = probe(torch.ones(4, 3))
    >>> [m.name for m in probe.metrics], float(probe.metrics[0].result())
    (['total'], 9.0)
"""

from __future__ import annotations

from typing import Any

import torch

from arignote.graph import state
from arignote.graph.tensor import KerasTensor, is_symbolic
from arignote.layers.bookkeeping import _METRIC_GENERATION as _GENERATION
from arignote.layers.bookkeeping import layer_metrics
from arignote.layers.bookkeeping import track_metric as track

__all__ = ["add_metric", "layer_metrics", "model_metrics", "Reported", "refresh"]


def _own(owner: Any) -> list:
    return owner.__dict__.setdefault("_metrics", [])


def _existing(metrics: list, name: Any) -> Any:
    match = [m for m in metrics if m.name == name]
    if len(match) > 1:
        raise ValueError("Please provide different names for the metrics you have added. We found "
                         f"{len(match)} metrics with the name: \"{name}\"")
    return match[0] if match else None


def _feed(metric: Any, *args: Any, **kwargs: Any) -> None:
    """``metric.update_state(*args)`` with the values of this forward (not on the zeros a shape
    probe runs on)."""
    if state.is_probing():
        return
    with torch.no_grad():
        args = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if first is not None:
            metric._to_device(first.device)
        metric.update_state(*args, **kwargs)


def add_metric(owner: Any, value: Any, name: str | None = None) -> None:
    """Keras 2.3.1 ``add_metric`` on ``owner`` (a layer or a model; see the module doc)."""
    metrics = _own(owner)
    match = _existing(metrics, name)
    if match is not None:
        if id(match) in owner.__dict__.setdefault("_value_metrics", set()) and not is_symbolic(value):
            _feed(match, value)  # the Mean this name made: this forward's value
        return
    metric = getattr(value, "_metric_obj", None)
    if metric is not None:
        track(owner, metric)
        if getattr(value, "symbolic_metric_call", False):  # metric(y) on graph tensors: the graph
            _symbolic_feed(owner, metric, value.args, value.kwargs)  # calls it at every forward
        return
    from arignote.metrics.base import Mean  # why: the metric classes load with the first compile (issue 32)

    mean = Mean(name=name)
    owner.__dict__.setdefault("_value_metrics", set()).add(id(mean))
    track(owner, mean)
    if is_symbolic(value):
        _symbolic_feed(owner, mean, (value,), {})
    else:
        _feed(mean, value)


def _symbolic_feed(owner: Any, metric: Any, args: tuple, kwargs: dict) -> None:
    hook = getattr(owner, "_add_symbolic_metric", None)
    if hook is None:
        raise ValueError(f"{getattr(owner, 'name', type(owner).__name__)}.add_metric got a symbolic tensor "
                         "outside call: add it to the functional model instead, "
                         "model.add_metric(K.sum(model.output), name='...')")
    tensors = [a for a in args if isinstance(a, KerasTensor)]

    def update(*values: Any) -> None:
        it = iter(values)
        _feed(metric, *[next(it) if isinstance(a, KerasTensor) else a for a in args], **kwargs)

    hook(update, tensors)


def _layers_of(model: Any) -> list:
    has = getattr(model, "_has_layers", None)
    return list(model.layers) if has is not None and has() else []


def model_metrics(model: Any) -> list:
    """The metrics ``add_metric`` and attributes gave ``model`` and its layers, in Keras order, once."""
    found = list(model.__dict__.get("_metrics", [])) + layer_metrics(_layers_of(model))
    out: list = []
    for m in found:
        if not any(m is o for o in out):
            out.append(m)
    return out


class Reported:
    """An added metric on the trainer's list: logged and reset like a compile metric, but its values
    come from the forward (``update`` from the targets does nothing)."""

    weighted = False
    select = None

    def __init__(self, metric: Any) -> None:
        self.metric = metric

    @property
    def name(self) -> str:
        return self.metric.name

    def update(self, y_true: Any, y_pred: Any) -> None:
        """Nothing: ``add_metric`` fed the metric during the forward."""

    def state(self) -> torch.Tensor:
        return self.metric.state()

    def result_from(self, state: torch.Tensor) -> Any:
        return self.metric.result_from(state)

    def reset(self) -> None:
        self.metric.reset_states()

    def _to_device(self, device: torch.device) -> None:
        self.metric._to_device(device)


def refresh(model: Any) -> None:
    """Put ``model``'s added metrics after its compile metrics on ``model.metrics_list`` (and in
    ``metrics_names``) when a metric was added since the last look or compile made a new list."""
    held = model.__dict__.get("_reported_list")
    if held is model.metrics_list and model.__dict__.get("_reported_key") == _GENERATION[0]:
        return
    base = [m for m in model.metrics_list if not isinstance(m, Reported)]
    model.metrics_list = base + [Reported(m) for m in model_metrics(model)]
    model.metrics_names = ["loss", *[m.name for m in model.metrics_list]]
    model.__dict__["_reported_list"] = model.metrics_list
    model.__dict__["_reported_key"] = _GENERATION[0]
