"""Keras 2.3.1's ``keras.metrics.Metric`` base class for metrics users write themselves, and the
``Reduce`` family built on it (``Sum``, ``Mean``).

A subclass creates its state in ``__init__`` with :meth:`Metric.add_weight` (``shape=()`` by
default, ``initializer`` a Keras initializer name or object, needed as in Keras 2.3.1, ``dtype`` the
metric's by default),
changes it in ``update_state(y_true, y_pred, sample_weight=None)`` through the weights'
``assign`` / ``assign_add`` / ``assign_sub`` (Keras variable methods; the weights are torch
tensors, so ``K`` functions and torch operations read them), and reads it in ``result()``.
``reset_states()`` zeros every weight (Keras's ``K.batch_set_value([(v, 0) ...])``); override it
for another reset.

In ``compile(metrics=[...])`` (and ``weighted_metrics``) the trainer calls ``update_state`` for each
batch with the batch's targets and predictions on the training device (``sample_weight``: the
sample weights times the output mask, as Keras 2.3.1's ``call_metric_function``; None when neither
applies), ``reset_states`` at each epoch start and before ``evaluate``, and ``result`` at log points.
Under data parallel each process updates the weights with its own rows; at a log point the weights
are **summed over the processes** and ``result()`` sees the sums (Keras 2's distributed semantic for
metric variables: ``aggregation=SUM``); a process's own weights are left as they were. State that
does not add up over processes (a maximum, a last value) therefore needs its own handling.

Example::

    >>> import torch
    >>> from arignote import backend as K
    >>> class TruePositives(Metric):
    ...     def __init__(self, name="tp", **kwargs):
    ...         super().__init__(name=name, **kwargs)
    ...         self.tp = self.add_weight(name="tp", initializer="zeros")
    ...     def update_state(self, y_true, y_pred, sample_weight=None):
    ...         hits = K.cast(K.greater(y_pred, 0.5), "float32") * K.cast(y_true, "float32")
    ...         if sample_weight is not None:
    ...             hits = hits * K.reshape(K.cast(sample_weight, "float32"), K.shape(hits))
    ...         self.tp.assign_add(K.sum(hits))
    ...     def result(self):
    ...         return self.tp
    >>> m = TruePositives()
    >>> float(m([[1.0], [1.0], [0.0]], [[0.9], [0.2], [0.8]])), m.get_config()
    (1.0, {'name': 'tp', 'dtype': 'float32'})
    >>> m.reset_states(); float(m.result())
    0.0
"""

from __future__ import annotations

import abc
import functools
import re
from typing import Any

import numpy as np
import torch

from arignote import initializers
from arignote.backend import common as backend_common
from arignote.graph.tensor import KerasTensor
from arignote.losses import weighting
from arignote.metrics.predictions import probabilities

__all__ = ["Metric", "MetricVariable", "SymbolicMetricCall", "Reduce", "Reduction", "Sum", "Mean"]

# the trainer's protocol on every metric object: a subclass must not take these names
_PROTOCOL = ("update", "state", "result_from", "reset", "_to_device")
# Layer keyword arguments Keras 2.3.1's Metric passes on to Layer (which accepts these)
_LAYER_KWARGS = ("trainable", "input_shape", "batch_input_shape", "batch_size", "weights", "input_dtype")


class MetricVariable(torch.Tensor):
    """A metric's state weight: a torch tensor with Keras's variable methods ``assign``,
    ``assign_add`` and ``assign_sub`` (in place, no gradient, the value cast to the weight's dtype
    and device; each returns the weight) and its ``name``. Operations on it give plain tensors.

    >>> v = MetricVariable(torch.zeros(2), "count")
    >>> v.assign_add([1.0, 2.0]).assign_sub(1.0).tolist(), v.name
    ([0.0, 1.0], 'count')
    """

    __torch_function__ = torch._C._disabled_torch_function_impl  # results are plain tensors

    def __new__(cls, data: torch.Tensor, name: str = "variable") -> MetricVariable:
        obj = torch.Tensor._make_subclass(cls, data.detach(), False)
        obj._metric_name = name
        return obj

    @property
    def name(self) -> str:  # type: ignore[override]
        return self._metric_name

    def _value(self, value: Any) -> torch.Tensor:
        if isinstance(value, torch.Tensor):
            return value.detach().to(self.device, self.dtype)
        return torch.as_tensor(np.asarray(value), dtype=self.dtype, device=self.device)

    def assign(self, value: Any) -> MetricVariable:
        """``self <- value`` (broadcast to the weight's shape)."""
        with torch.no_grad():
            self.copy_(self._value(value).expand_as(self))
        return self

    def assign_add(self, value: Any) -> MetricVariable:
        """``self <- self + value``."""
        with torch.no_grad():
            self.add_(self._value(value))
        return self

    def assign_sub(self, value: Any) -> MetricVariable:
        """``self <- self - value``."""
        with torch.no_grad():
            self.sub_(self._value(value))
        return self

    def value(self) -> torch.Tensor:
        """The current value as a plain tensor (a copy)."""
        return self.detach().clone()

    read_value = value

    def __deepcopy__(self, memo: dict) -> MetricVariable:
        copy = MetricVariable(self.detach().clone(), self.name)
        memo[id(self)] = copy
        return copy

    def __reduce_ex__(self, protocol: int) -> tuple:
        return _rebuild_variable, (self.detach().clone(), self.name)

    def __repr__(self) -> str:
        return (f"<MetricVariable {self.name!r} shape={tuple(self.shape)} dtype={str(self.dtype)[6:]} "
                f"value={self.detach().cpu().numpy()!r}>")


def _rebuild_variable(data: torch.Tensor, name: str) -> MetricVariable:
    return MetricVariable(data, name)


def _snake_case(name: str) -> str:
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()


def default_name(cls: type) -> str:
    """The name of a metric made without one: Keras 2.3.1's metrics are Layers, so the class name in
    snake case and a counter per class from 1 (``backend.clear_session()`` restarts it): the first
    ``Precision()`` of a session is ``precision_1`` and logs as such.

    >>> backend_common.reset_uids(); default_name(Mean), default_name(Mean)
    ('mean_1', 'mean_2')
    """
    prefix = _snake_case(cls.__name__)
    return f"{prefix}_{backend_common.get_uid(prefix)}"


def _as_tensor(value: Any) -> Any:
    """Arrays and nested lists of numbers as tensors (what Keras's backend accepted in
    ``update_state``); tensors, None and anything else as they are."""
    if isinstance(value, np.ndarray) or (isinstance(value, (list, tuple)) and value and not any(
            isinstance(v, torch.Tensor) for v in value)):
        return torch.as_tensor(np.asarray(value))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return torch.as_tensor(value)
    return value


def _tensor_args(update_state: Any) -> Any:
    """``update_state`` taking numpy arrays and lists as tensors (Keras 2.3.1 wraps it too)."""
    if getattr(update_state, "_arignote_tensor_args", False):
        return update_state

    @functools.wraps(update_state)
    def wrapped(self: Metric, *args: Any, **kwargs: Any) -> Any:
        args = tuple(_as_tensor(a) for a in args)
        kwargs = {k: _as_tensor(v) for k, v in kwargs.items()}
        return update_state(self, *args, **kwargs)

    wrapped._arignote_tensor_args = True  # type: ignore[attr-defined]
    return wrapped


class Metric(abc.ABC):
    """Keras 2.3.1 ``keras.metrics.Metric``: subclass it, create state with :meth:`add_weight` in
    ``__init__``, and define ``update_state`` and ``result`` (see the module docstring).

    ``name``: the logged name (default: the class name in snake case with a counter, ``my_metric_1``,
    as Keras layers); ``dtype``: the weights' default dtype (default ``floatX``). Every metric
    arignote provides is a ``Metric`` too (``isinstance(AUC(), Metric)``).

    Under data parallel the weights are summed over the processes before ``result()`` is called at
    a log point (Keras 2's ``aggregation=SUM`` for metric variables).
    """

    _keras_metric = True  # what layers and models track metric attributes by (layers.added_metrics)

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        unknown = [k for k in kwargs if k not in _LAYER_KWARGS]
        if unknown:
            raise TypeError(f"{type(self).__name__}: keyword argument not understood: {unknown[0]!r} "
                            f"(a Metric takes name= and dtype=; add it to your __init__'s arguments)")
        self.name = name or default_name(type(self))
        self.dtype = dtype or backend_common.floatx()
        self.stateful = True
        self.built = True
        self.trainable = kwargs.get("trainable", True)
        self.weighted = False  # compile(weighted_metrics=[...]): the sample weights apply
        self.select = None  # (y_true, y_pred) -> (y, p, w, mask): one output of a model with several
        self._metric_weights: list[MetricVariable] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        taken = [name for name in _PROTOCOL if name in cls.__dict__]
        if taken and not cls.__module__.startswith("arignote."):
            raise TypeError(f"{cls.__name__} defines {taken[0]!r}, a name arignote's trainer calls on every "
                            f"metric ({', '.join(_PROTOCOL)}); rename it")
        if "update_state" in cls.__dict__:
            cls.update_state = _tensor_args(cls.__dict__["update_state"])

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _PROTOCOL:
            raise AttributeError(f"{type(self).__name__}: {name!r} is a name arignote's trainer calls on "
                                 f"every metric ({', '.join(_PROTOCOL)}); call the attribute something else")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ Keras API

    @abc.abstractmethod
    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        """Add a batch to the state (through the weights' ``assign_add``...)."""

    @abc.abstractmethod
    def result(self) -> Any:
        """The metric's value from the state (a tensor or a number)."""

    def add_weight(self, name: str, shape: Any = (), initializer: Any = None,
                   dtype: Any = None) -> MetricVariable:
        """A state weight of ``shape`` (default a scalar) and ``dtype`` (default the metric's),
        filled by ``initializer`` (a Keras initializer name or object, needed as in Keras 2.3.1,
        usually ``'zeros'``). Not trained; zeroed by ``reset_states``."""
        if "_metric_weights" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}.add_weight({name!r}) before Metric.__init__: call "
                               "super().__init__(name=name, **kwargs) first in your __init__")
        if initializer is None:  # Keras 2.3.1: initializers.get(None) raises
            raise ValueError(f"{type(self).__name__}.add_weight({name!r}) needs an initializer, as in Keras "
                             f"2.3.1: add_weight({name!r}, initializer='zeros') (or 'ones', or an "
                             "initializer object)")
        if shape is None:
            shape = ()
        init = initializers.get(initializer)
        dtype = self.dtype if dtype is None else dtype
        torch_dtype = getattr(torch, dtype, None) if isinstance(dtype, str) else dtype
        if not isinstance(torch_dtype, torch.dtype):
            raise TypeError(f"{type(self).__name__}.add_weight({name!r}): dtype {dtype!r} is not a dtype "
                            "name such as 'float32' or 'int32'")
        shape = tuple(int(d) for d in shape) if isinstance(shape, (list, tuple)) else (int(shape),)
        value = torch.as_tensor(init(shape, dtype=dtype) if torch_dtype.is_floating_point
                                else init(shape)).to(torch_dtype)
        if tuple(value.shape) != shape:
            value = value.expand(shape).clone()
        weight = MetricVariable(value, name)
        existing = self._metric_weights[0] if self._metric_weights else None
        if existing is not None and existing.device != weight.device:
            weight.data = weight.data.to(existing.device)
        self._metric_weights.append(weight)
        return weight

    @property
    def weights(self) -> list[MetricVariable]:
        """The state weights in creation order."""
        return list(self._metric_weights)

    @property
    def non_trainable_weights(self) -> list[MetricVariable]:
        return list(self._metric_weights)

    @property
    def trainable_weights(self) -> list[MetricVariable]:
        return []

    def get_weights(self) -> list[np.ndarray]:
        """The weights as numpy arrays."""
        return [w.detach().cpu().numpy().copy() for w in self._metric_weights]

    def set_weights(self, weights: list) -> None:
        """Set the weights from arrays of their shapes (in :attr:`weights` order)."""
        if len(weights) != len(self._metric_weights):
            raise ValueError(f"{self.name}: set_weights got {len(weights)} arrays for "
                             f"{len(self._metric_weights)} weights")
        for w, value in zip(self._metric_weights, weights):
            if tuple(np.shape(value)) != tuple(w.shape):
                raise ValueError(f"{self.name}: weight {w.name!r} has shape {tuple(w.shape)}, "
                                 f"got an array of shape {np.shape(value)}")
            w.assign(value)

    def reset_states(self) -> None:
        """Zero every weight (Keras 2.3.1); the trainer calls it at each epoch start."""
        with torch.no_grad():
            for w in self._metric_weights:
                w.zero_()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``update_state(*args, **kwargs)``, then ``result()`` (carrying the metric as ``_metric_obj``,
        what ``add_metric`` tracks). On symbolic tensors of a functional graph: a
        :class:`SymbolicMetricCall` for ``model.add_metric``, which the graph runs at every forward."""
        if any(isinstance(a, KerasTensor) for a in (*args, *kwargs.values())):
            return SymbolicMetricCall(self, args, kwargs)
        self.update_state(*args, **kwargs)
        value = self.result()
        if isinstance(value, torch.Tensor) and not isinstance(value, MetricVariable):
            value._metric_obj = self
        return value

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        return cls(**config)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    # ------------------------------------------------------------------ trainer protocol

    def update(self, y_true: Any, y_pred: torch.Tensor) -> None:
        """Add a batch as ``compile`` gives it (targets maybe carrying sample weights and the output
        mask): ``update_state(y, y_pred, sample_weight=weights x mask)``, as Keras 2.3.1."""
        y_pred = probabilities(y_pred)  # a classifier head's logits: the model's output
        if self.select is not None:
            y, y_pred, w, mask = self.select(y_true, y_pred)
        else:
            y, w, mask = weighting.parts(y_true)
        weights = weighting.combine(w if self.weighted else None, mask, y_pred.dtype)
        self._to_device(y_pred.device)
        self.update_state(y, y_pred.detach(), sample_weight=weights)

    def state(self) -> torch.Tensor:
        """Every weight flattened into one 1-D tensor (summed over processes under data parallel)."""
        if not self._metric_weights:
            return torch.zeros(0, dtype=torch.float64)
        device = self._metric_weights[0].device
        dtype = torch.float32 if device.type == "mps" else torch.float64
        return torch.cat([w.detach().reshape(-1).to(device, dtype) for w in self._metric_weights])

    def result_from(self, state: torch.Tensor) -> Any:
        """``result()`` with the weights set from ``state`` (sums over the processes), as a float
        (an array for a result of several values); the weights are then put back as they were."""
        saved = [w.data for w in self._metric_weights]
        try:
            offset = 0
            for w in self._metric_weights:
                n = w.numel()
                w.data = state[offset:offset + n].reshape(w.shape).to(w.device, w.dtype)
                offset += n
            value = self.result()
            # read now: a result that is a weight itself (``return self.tp``) changes back below
            value = value.detach().cpu().clone() if isinstance(value, torch.Tensor) else np.asarray(value)
        finally:
            for w, data in zip(self._metric_weights, saved):
                w.data = data
        return float(value) if np.size(value) == 1 else np.asarray(value)

    def reset(self) -> None:
        self.reset_states()

    def _to_device(self, device: torch.device) -> None:
        for w in self._metric_weights:
            if w.device != device:
                w.data = w.data.to(device)


class SymbolicMetricCall:
    """What a metric called on symbolic tensors returns (Keras 2.3.1: the result tensor with
    ``_metric_obj``): ``model.add_metric(metrics.Mean(name='m')(y))`` tracks the metric and has the
    graph call ``update_state`` with this forward's values of the tensors in ``args``."""

    symbolic_metric_call = True

    def __init__(self, metric: Metric, args: tuple, kwargs: dict) -> None:
        self._metric_obj = metric
        self.args = tuple(args)
        self.kwargs = dict(kwargs)

    def __repr__(self) -> str:
        return f"<symbolic result of {self._metric_obj!r}>"


class Reduction:
    """Keras 2.3.1 ``metrics_utils.Reduction``: how :class:`Reduce` combines the values."""

    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"
    WEIGHTED_MEAN = "weighted_mean"


_REDUCTIONS = (Reduction.SUM, Reduction.SUM_OVER_BATCH_SIZE, Reduction.WEIGHTED_MEAN)


class Reduce(Metric):
    """Keras 2.3.1 ``Reduce(reduction, name, dtype=None)``: a running reduction of the values given
    to ``update_state(values, sample_weight=None)``. Weights ``total`` and (but for ``'sum'``)
    ``count``; ``result()``: ``total`` for ``'sum'``, ``total / count`` otherwise (NaN before any
    value, as Keras 2.3.1). ``'weighted_mean'`` counts the sum of the weights,
    ``'sum_over_batch_size'`` the number of values.

    >>> m = Reduce("sum_over_batch_size", name="r")
    >>> float(m([1.0, 3.0], sample_weight=[1.0, 0.0]))
    0.5
    """

    def __init__(self, reduction: str, name: str | None, dtype: Any = None) -> None:
        if reduction not in _REDUCTIONS:
            raise ValueError(f"Reduce: reduction must be one of {', '.join(map(repr, _REDUCTIONS))} "
                             f"(metrics_utils.Reduction), got {reduction!r}")
        super().__init__(name=name, dtype=dtype)
        self.reduction = reduction
        self.total = self.add_weight("total", initializer="zeros")
        if reduction != Reduction.SUM:
            self.count = self.add_weight("count", initializer="zeros")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        values = torch.as_tensor(values).detach().to(self.total.dtype)  # Keras: K.cast(values, dtype)
        if sample_weight is not None:
            sample_weight = torch.as_tensor(sample_weight).detach().to(values.device, values.dtype)
            values, sample_weight = weighting._match_ranks(values, sample_weight)
            values, sample_weight = torch.broadcast_tensors(values, sample_weight)
            values = values * sample_weight
        self.total.assign_add(values.sum())
        if self.reduction == Reduction.SUM:
            return
        if self.reduction == Reduction.WEIGHTED_MEAN and sample_weight is not None:
            self.count.assign_add(sample_weight.sum())
        else:
            self.count.assign_add(float(values.numel()))

    def result(self) -> torch.Tensor:
        if self.reduction == Reduction.SUM:
            return self.total.clone()
        return self.total / self.count

    def get_config(self) -> dict:
        config = super().get_config()
        return {"reduction": self.reduction, **config} if type(self) is Reduce else config


class Sum(Reduce):
    """Keras 2.3.1 ``Sum(name='sum', dtype=None)``: the running (weighted) sum of the values.

    >>> s = Sum(); s.update_state([1.0, 2.0]); float(s([3.0], sample_weight=[2.0]))
    9.0
    """

    def __init__(self, name: str = "sum", dtype: Any = None) -> None:
        super().__init__(Reduction.SUM, name=name, dtype=dtype)


class Mean(Reduce):
    """Keras 2.3.1 ``Mean(name='mean', dtype=None)``: the running (weighted) mean of the values,
    ``sum(w * v) / sum(w)``.

    >>> m = Mean(); float(m([1.0, 3.0, 5.0, 7.0], sample_weight=[1, 1, 0, 0]))
    2.0
    """

    def __init__(self, name: str = "mean", dtype: Any = None) -> None:
        super().__init__(Reduction.WEIGHTED_MEAN, name=name, dtype=dtype)
