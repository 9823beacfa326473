"""Weight attributes that a custom layer's ``build`` replaces by an expression of its weights.

Published Keras 2 layers write ``self.kernel = self.add_weight(...)`` and then, still in ``build``,
``self.kernel = K.clip(self.kernel, -c, c)`` (or ``K.transpose``, ``self.gamma * 2``, ...). On Keras 2
that attribute is a node of the symbolic graph: every call computes it again from the current weight
and gradients flow through it. On torch the expression would be a tensor computed once, stale after
the first update and with an autograd graph that can be used only once.

While a custom layer's ``build`` runs, :func:`recording` notes every torch operation (a
``TorchFunctionMode``); when ``build`` assigns a tensor computed by those operations to an
attribute, the layer keeps a :class:`Derived` recipe instead and evaluates it at each attribute read,
from the weights as they are then. The weight itself stays in ``layer.weights`` (Keras 2 the same).

Example::

    >>> import torch
    >>> w = torch.nn.Parameter(torch.tensor([2.0, -3.0]))
    >>> with recording() as tape:
    ...     clipped = torch.clamp(w, -1.0, 1.0)
    >>> recipe = recipe_of(clipped, tape)
    >>> with torch.no_grad():
    ...     _ = w.copy_(torch.tensor([0.5, 4.0]))
    >>> recipe.value().tolist()
    [0.5, 1.0]
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from arignote.graph.tensor import flatten

__all__ = ["recording", "recipe_of", "current_tape", "Derived"]

_CURRENT: list[Any] = [None]


class _Tape(TorchFunctionMode):
    """``{id(output): (output, func, args, kwargs)}`` of the torch operations run under it."""

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[int, tuple] = {}

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if isinstance(out, torch.Tensor) and not isinstance(out, torch.nn.Parameter):
            self.entries[id(out)] = (out, func, args, kwargs)
        return out


@contextmanager
def recording() -> Iterator[_Tape]:
    """Note the torch operations of the block (a custom layer's ``build``)."""
    tape = _Tape()
    old = _CURRENT[0]
    _CURRENT[0] = tape
    try:
        with tape:
            yield tape
    finally:
        _CURRENT[0] = old


def current_tape() -> _Tape | None:
    """The tape of the ``build`` in progress, or None."""
    return _CURRENT[0]


class Derived:
    """A tensor computed from a layer's weights, computed again at each :meth:`value`."""

    def __init__(self, func: Any, args: Any, kwargs: Any) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs

    def reads_weights(self) -> bool:
        """Whether a weight (an ``nn.Parameter``) is among what it is computed from."""
        return self.func is not None and _reads_weights((self.args, self.kwargs))

    def value(self) -> Any:
        if self.func is None:  # a constant the layer stored over a weight's name
            return self.args
        return self.func(*_evaluate(self.args), **_evaluate(self.kwargs))


def _reads_weights(obj: Any) -> bool:
    return any(isinstance(v, torch.nn.Parameter) or (isinstance(v, Derived) and v.reads_weights())
               for v in flatten(obj))


def _map(fn: Any, obj: Any) -> Any:
    """``fn`` on each leaf of a nest of lists/tuples/dicts (the arguments of a torch call)."""
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(fn, v) for v in obj)
    if isinstance(obj, dict):
        return {k: _map(fn, v) for k, v in obj.items()}
    return fn(obj)


def _evaluate(obj: Any) -> Any:
    return _map(lambda v: v.value() if isinstance(v, Derived) else v, obj)


def recipe_of(value: torch.Tensor, tape: _Tape | None) -> Derived:
    """How to compute ``value`` again from the tensors it came from (a constant when the tape did not
    see it made)."""
    entry = tape.entries.get(id(value)) if tape is not None else None
    if entry is None or entry[0] is not value:
        return Derived(None, value, None)
    _, func, args, kwargs = entry
    return Derived(func, _replay(args, tape), _replay(kwargs, tape))


def _replay(obj: Any, tape: _Tape) -> Any:
    def leaf(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter):
            entry = tape.entries.get(id(v))
            return recipe_of(v, tape) if entry is not None and entry[0] is v else v
        return v

    return _map(leaf, obj)
