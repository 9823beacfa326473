"""Backend functions and operators on symbolic tensors record an operation node.

``K.mean(x)`` or ``x * 2`` with ``x`` a :class:`~arignote.graph.tensor.KerasTensor` becomes an
:class:`OpLayer` called on ``x``: a node of the graph like any layer call, whose output shape comes
from one run of the torch function on small zeros. While a graph value is being computed (a custom
loss closing over ``z_mean``), symbolic arguments are replaced by their live values instead
(:mod:`arignote.graph.state`).

Example::

    >>> from arignote.layers import Input
    >>> y = Input(shape=(3,)) * 2 + 1
    >>> type(y._keras_history[0]).__name__, y.shape
    ('OpLayer', (None, 3))
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

from arignote.graph import state
from arignote.graph.node import symbolic_call
from arignote.graph.tensor import KerasTensor, is_symbolic, register_dispatch, register_record
from arignote.layers.base import Layer, auto_name

__all__ = ["OpLayer", "record", "apply", "symbolic", "OPERATORS"]

OPERATORS: dict[str, Callable] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv,
    "pow": operator.pow, "matmul": operator.matmul, "negative": operator.neg, "abs": operator.abs,
    "less": operator.lt, "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge,
    "getitem": operator.getitem,
}


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _template(x: Any, leaves: list) -> Any:
    if isinstance(x, KerasTensor):
        leaves.append(x)
        return _Slot(len(leaves) - 1)
    if isinstance(x, (list, tuple)):
        return type(x)(_template(v, leaves) for v in x)
    if isinstance(x, dict):
        return {k: _template(v, leaves) for k, v in x.items()}
    return x


def _fill(x: Any, values: list) -> Any:
    if isinstance(x, _Slot):
        return values[x.index]
    if isinstance(x, (list, tuple)) and not isinstance(x, str):
        return type(x)(_fill(v, values) for v in x)
    if isinstance(x, dict):
        return {k: _fill(v, values) for k, v in x.items()}
    return x


class OpLayer(Layer):
    """A backend function (``K.mean``, ``+``, ``x[:, 0]``) applied inside a functional graph.

    Keras 2 asks for a ``Lambda`` layer here; arignote records the operation (as tf.keras later did).
    It cannot be written to a Keras 2 config: wrap the expression in a ``Lambda`` to save the model.
    """

    static_first_dim = True  # its output's first dim is known when the inputs fix it (graph.node)

    def __init__(self, op_name: str, fn: Callable, args: Any, kwargs: dict) -> None:
        super().__init__(name=auto_name(op_name))
        self.op_name = op_name
        self.fn = fn
        self.args_template = args
        self.kwargs_template = kwargs
        self.built = True

    def call(self, inputs: Any) -> Any:
        values = list(inputs)
        return self.fn(*_fill(self.args_template, values), **_fill(self.kwargs_template, values))

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None

    def get_config(self) -> dict:
        raise ValueError(f"'{self.name}' is the backend function {self.op_name} applied to a symbolic "
                         "tensor; "
                         "Keras 2 configs cannot hold it: wrap the expression in a Lambda layer "
                         "(Lambda(lambda x: ...)) to save or serialize the model")


def record(op_name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """``fn(*args, **kwargs)`` for symbolic arguments: live values when a graph runs, else a node."""
    leaves: list = []
    args_t = _template(list(args), leaves)
    kwargs_t = _template(dict(kwargs), leaves)
    values = [state.live_value(t) for t in leaves]
    if all(v is not None for v in values):
        return fn(*_fill(args_t, values), **_fill(kwargs_t, values))
    layer = OpLayer(op_name, fn, args_t, kwargs_t)
    return symbolic_call(layer, leaves, {})


def _dispatch(op_name: str, *args: Any) -> Any:
    return record(op_name, OPERATORS[op_name], args, {})


register_dispatch(_dispatch)
register_record(record)


def apply(op_name: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, recorded as ``op_name`` when an argument is symbolic."""
    if is_symbolic(args) or is_symbolic(kwargs):
        return record(op_name, fn, args, kwargs)
    return fn(*args, **kwargs)


def symbolic(fn: Callable) -> Callable:
    """Decorator for backend functions: symbolic arguments record an :class:`OpLayer` node."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if is_symbolic(args) or is_symbolic(kwargs):
            return record(fn.__name__, fn, args, kwargs)
        return fn(*args, **kwargs)

    wrapper.__wrapped_op__ = fn  # type: ignore[attr-defined]
    return wrapper
