"""``KerasTensor``: the symbolic tensor of the functional API.

It carries what Keras 2 code reads from a graph tensor: ``shape`` / ``_keras_shape`` (batch dim
``None``), ``dtype`` (a name, ``'float32'``), ``_keras_history`` ``(layer, node_index, tensor_index)``
and ``_keras_mask``. Arithmetic, comparisons and indexing (``x[:, 0]``) record operation nodes
through the dispatcher :mod:`arignote.layers.op_layer` registers, as backend functions do.

Example::

    >>> t = KerasTensor((None, 4), "float32", name="input_1")
    >>> t.shape, t.ndim, t
    ((None, 4), 2, <KerasTensor 'input_1' shape=(None, 4) dtype=float32>)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["KerasTensor", "is_symbolic", "flatten", "register_dispatch", "get_source_inputs",
           "records_symbolic_input", "record_symbolic"]

_DISPATCH: list[Callable | None] = [None]
_RECORD: list[Callable | None] = [None]  # graph.ops.record(op_name, fn, args, kwargs), set by graph.ops


def register_dispatch(fn: Callable) -> None:
    """``fn(op_name, *args)`` records an operation on symbolic arguments (set by graph.ops)."""
    _DISPATCH[0] = fn


def register_record(fn: Callable) -> None:
    """``fn(op_name, fn, args, kwargs)`` records a function applied to symbolic arguments (graph.ops)."""
    _RECORD[0] = fn


def record_symbolic(fn: Callable, x: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(x, *args, **kwargs)`` recorded as an operation node on the symbolic tensor ``x``: what a
    function of one tensor calls first when given one (the activations do, so they stay plain
    functions without a closure, which ``func_dump``/``func_load`` round-trip as Keras 2's)."""
    return _RECORD[0](fn.__name__, fn, (x, *args), kwargs)  # type: ignore[misc]


def records_symbolic_input(fn: Callable) -> Callable:
    """Decorator for a function of one tensor (an activation): given a symbolic tensor (``Input``,
    ``K.placeholder``) it records an operation node, as the backend's functions do; given a torch
    tensor it is ``fn`` plus one type check (it runs in every layer's forward).

    Example::

        >>> import torch
        >>> double = records_symbolic_input(lambda x: 2 * x)
        >>> double(torch.ones(1)).tolist()
        [2.0]
    """

    @functools.wraps(fn)
    def wrapper(x: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(x, KerasTensor):
            return _RECORD[0](fn.__name__, fn, (x, *args), kwargs)  # type: ignore[misc]
        return fn(x, *args, **kwargs)

    return wrapper


def _op(name: str, *args: Any) -> Any:
    dispatch = _DISPATCH[0]
    if dispatch is None:  # pragma: no cover - graph.ops is imported with every way to make a tensor
        raise RuntimeError("arignote.layers.op_layer is not loaded")
    return dispatch(name, *args)


class KerasTensor:
    """A symbolic tensor: shape (``None`` = unknown, batch first), dtype name, producing node."""

    __array_priority__ = 1000  # numpy scalars on the left defer to our operators

    _uses_learning_phase = False  # Keras 2: set on the outputs of layers that read the phase

    def __init__(self, shape: Any, dtype: str = "float32", name: str | None = None,
                 history: tuple | None = None) -> None:
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = str(dtype)
        self.name = name or "tensor"
        self._keras_history = history  # (layer, node_index, tensor_index)
        self._keras_mask: Any = None
        self._uses_learning_phase = False

    # Keras 2 spellings
    @property
    def _keras_shape(self) -> tuple:
        return self.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def get_shape(self) -> Any:
        return _Shape(self.shape)

    def __repr__(self) -> str:
        return f"<KerasTensor '{self.name}' shape={self.shape} dtype={self.dtype}>"

    def __hash__(self) -> int:
        return id(self)

    def __iter__(self) -> Any:
        raise TypeError(f"a symbolic tensor ({self.name}) is not iterable; index it (x[:, 0]) or use "
                        "arignote.backend functions")

    def __len__(self) -> int:
        raise TypeError(f"len() of a symbolic tensor ({self.name}) is unknown; use K.int_shape(x)")

    def __bool__(self) -> bool:
        raise TypeError(f"the truth value of a symbolic tensor ({self.name}) is unknown while the graph "
                        "is built; use K.switch(condition, a, b)")

    # arithmetic: each records an operation node
    def __add__(self, o): return _op("add", self, o)  # noqa: E704
    def __radd__(self, o): return _op("add", o, self)  # noqa: E704
    def __sub__(self, o): return _op("subtract", self, o)  # noqa: E704
    def __rsub__(self, o): return _op("subtract", o, self)  # noqa: E704
    def __mul__(self, o): return _op("multiply", self, o)  # noqa: E704
    def __rmul__(self, o): return _op("multiply", o, self)  # noqa: E704
    def __truediv__(self, o): return _op("divide", self, o)  # noqa: E704
    def __rtruediv__(self, o): return _op("divide", o, self)  # noqa: E704
    def __pow__(self, o): return _op("pow", self, o)  # noqa: E704
    def __rpow__(self, o): return _op("pow", o, self)  # noqa: E704
    def __matmul__(self, o): return _op("matmul", self, o)  # noqa: E704
    def __rmatmul__(self, o): return _op("matmul", o, self)  # noqa: E704
    def __neg__(self): return _op("negative", self)  # noqa: E704
    def __abs__(self): return _op("abs", self)  # noqa: E704
    def __lt__(self, o): return _op("less", self, o)  # noqa: E704
    def __le__(self, o): return _op("less_equal", self, o)  # noqa: E704
    def __gt__(self, o): return _op("greater", self, o)  # noqa: E704
    def __ge__(self, o): return _op("greater_equal", self, o)  # noqa: E704
    def __getitem__(self, key): return _op("getitem", self, key)  # noqa: E704


class _Shape(tuple):
    """``x.get_shape()`` (TF style): a tuple with ``as_list()``."""

    def as_list(self) -> list:
        return list(self)


def is_symbolic(x: Any) -> bool:
    """True when ``x`` (or anything in a list/tuple/dict ``x``) is a :class:`KerasTensor`."""
    if isinstance(x, KerasTensor):
        return True
    if isinstance(x, (list, tuple)):
        return any(is_symbolic(v) for v in x)
    if isinstance(x, dict):
        return any(is_symbolic(v) for v in x.values())
    return False


def flatten(x: Any) -> list:
    """The leaves of a nest of lists/tuples/dicts (dicts in key order)."""
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in flatten(v)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in flatten(x[k])]
    return [x]


def get_source_inputs(tensor: Any, layer: Any = None, node_index: Any = None) -> Any:
    """The ``Input`` tensors ``tensor`` was computed from, each once, in the order first met
    (Keras 2.3.1 ``utils.get_source_inputs``): ``[tensor]`` for an ``Input``; ``layer`` and
    ``node_index``: where ``tensor`` came from (default its ``_keras_history``; Keras's recursion
    passes them). Anything that is not a graph tensor (an array, a torch tensor) comes back as it
    is, not in a list, as Keras 2.3.1 returns a tensor without ``_keras_history``.

    >>> from arignote.layers import Dense, Input, concatenate
    >>> a, b = Input((2,)), Input((3,))
    >>> y = Dense(1)(concatenate([a, Dense(2)(b), a]))
    >>> [t is s for t, s in zip(get_source_inputs(y), [a, b])]
    [True, True]
    """
    if not isinstance(tensor, KerasTensor) or tensor._keras_history is None:
        return tensor
    if layer is None or node_index is None:
        layer, node_index, _ = tensor._keras_history
    if not layer._inbound_nodes:
        return [tensor]
    node = layer._inbound_nodes[node_index]
    if not node.inbound_layers or type(layer).__name__ == "InputLayer":  # Input(tensor=op output) too
        return list(node.output_tensors)
    out: list = []
    for t, inbound, index in zip(node.input_tensors, node.inbound_layers, node.node_indices):
        for source in get_source_inputs(t, inbound, index):
            if all(source is not o for o in out):
                out.append(source)
    return out
