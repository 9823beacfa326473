"""Several cells run as one (Keras 2 ``StackedRNNCells``, what ``RNN([cell, cell])`` makes), and the
two rules of talking to any Keras-style cell that ``RNN`` shares with it: :func:`build_cell` and
:func:`call_params` (a cell's ``call`` gets ``training=`` / ``constants=`` only when it takes them).

Example::

    >>> import torch
    >>> from arignote.layers.recurrent.cells import GRUCell, SimpleRNNCell
    >>> stack = StackedRNNCells([SimpleRNNCell(3), GRUCell(2)])
    >>> stack.state_size, stack.output_size
    ((3, 2), 2)
    >>> build_cell(stack, 5)
    >>> out, states = stack.call(torch.zeros(4, 5), [torch.zeros(4, 3), torch.zeros(4, 2)])
    >>> tuple(out.shape), [tuple(s.shape) for s in states]
    ((4, 2), [(4, 3), (4, 2)])
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import torch

from arignote.layers import _trainable
from arignote.layers._util import KerasLayer
from arignote.layers.base import Layer, deserialize

__all__ = ["StackedRNNCells", "build_cell", "call_params"]


def call_params(fn: Any) -> Any:
    """The parameters of a cell's ``call`` (Keras 2.3.1 passes ``training=`` / ``constants=`` only to a
    call that names them).

    >>> list(call_params(lambda inputs, states, training=None: None))
    ['inputs', 'states', 'training']
    """
    return inspect.signature(fn).parameters


class _PlainCell(torch.nn.Module):
    """A cell that is not a layer (Keras 2.3.1 takes any object with ``call`` and ``state_size``)
    inside a stack: no weights of its own to train or save, as Keras's stack lists none for it."""

    def __init__(self, cell: Any) -> None:
        super().__init__()
        object.__setattr__(self, "cell", cell)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            return super().__getattr__(name)
        return getattr(self.__dict__["cell"], name)

    def _keras_split(self) -> tuple[list, list]:
        return [], []

    def _keras_weights(self) -> list:
        return []

    def _set_keras_weights(self, weights: list) -> None:
        pass


class StackedRNNCells(KerasLayer, Layer):
    """Several cells run as one (Keras 2): the output of each is the input of the next; the states
    are the cells' states in order (``reverse_state_order=True``: the last cell's first, as Keras
    2.3.1 still allows with a warning). A cell whose ``call`` takes ``constants`` gets the RNN's."""

    def __init__(self, cells: list, **kwargs: Any) -> None:
        self.__dict__["reverse_state_order"] = bool(kwargs.pop("reverse_state_order", False))
        if self.reverse_state_order:
            warnings.warn("`reverse_state_order=True` in `StackedRNNCells` will soon be deprecated. Please "
                          "update the code to work with the natural order of states if you rely on the RNN "
                          "states, eg `RNN(return_state=True)`.", stacklevel=2)
        super().__init__(**kwargs)
        for cell in cells:
            if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
                raise ValueError(f"StackedRNNCells: every cell needs call() and state_size, got {cell!r}")
        self.cells = torch.nn.ModuleList(c if isinstance(c, torch.nn.Module) else _PlainCell(c)
                                         for c in cells)

    def _in_state_order(self) -> list:
        return list(self.cells)[::-1] if self.reverse_state_order else list(self.cells)

    @property
    def state_size(self) -> tuple:
        """Keras 2.3.1: the cells' state sizes in one flat tuple (in state order)."""
        sizes: list = []
        for cell in self._in_state_order():
            s = cell.state_size
            sizes.extend(s if isinstance(s, (list, tuple)) else [s])
        return tuple(sizes)

    @property
    def output_size(self) -> int:
        last = self.cells[-1]
        return getattr(last, "output_size", None) or _first(last.state_size)

    def build_keras(self, input_shape: Any) -> None:
        constants: list = []
        if isinstance(input_shape, list):  # [step input shape, *constant shapes] (RNN(constants=...))
            input_shape, constants = input_shape[0], [tuple(c) for c in input_shape[1:]]
        dim = tuple(input_shape)[-1]
        for cell in self.cells:
            if constants and "constants" in call_params(cell.call) and not getattr(cell, "built", False):
                target = [(None, dim), *constants]
                cell._build_once(target) if hasattr(cell, "_build_once") else cell.build(target)
            else:
                build_cell(cell, dim)
            dim = getattr(cell, "output_size", None) or _first(cell.state_size)

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:  # as RNN's: the cells' own flags are kept
        self._trainable = bool(value)
        if "cells" in self._modules:
            _trainable.apply(self)

    def _keras_split(self) -> tuple[list, list]:
        trainable: list = []
        rest: list = []
        for cell in self.cells:
            t, nt = _trainable.keras_split(cell)
            trainable += t
            rest += nt
        return _trainable.frozen_first(trainable, rest, self._trainable)

    def call(self, inputs: torch.Tensor, states: list, training: Any = None,
             constants: Any = None) -> tuple[torch.Tensor, list]:
        per_cell, i = {}, 0
        for cell in self._in_state_order():
            n = _count(cell.state_size)
            per_cell[id(cell)] = list(states[i : i + n])
            i += n
        new_states = {}
        for cell in self.cells:
            # Keras 2.3.1 passes training= (constants=) only to a cell whose call takes it
            params = call_params(cell.call)
            extra = {"training": training} if "training" in params else {}
            if constants is not None and "constants" in params:
                extra["constants"] = constants
            inputs, s = cell.call(inputs, per_cell[id(cell)], **extra)
            new_states[id(cell)] = list(s) if isinstance(s, (list, tuple)) else [s]
        return inputs, [v for cell in self._in_state_order() for v in new_states[id(cell)]]

    def _keras_weights(self) -> list[torch.Tensor]:
        return [w for cell in self.cells for w in cell._keras_weights()]

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        for cell in self.cells:
            n = len(cell._keras_weights())
            cell._set_keras_weights(weights[:n])
            weights = weights[n:]

    def weight_names(self) -> list[str]:
        return [n for cell in self.cells for n in getattr(cell, "weight_names", list)()]

    def get_config(self) -> dict:
        cfg = super().get_config()
        cfg["cells"] = [{"class_name": type(c).__name__, "config": c.get_config()} for c in self.cells]
        return cfg

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> StackedRNNCells:
        config = dict(config)
        cells = [deserialize(c, custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)


def _first(size: Any) -> int:
    return size[0] if isinstance(size, (list, tuple)) else size


def _count(size: Any) -> int:
    return len(size) if isinstance(size, (list, tuple)) else 1


def build_cell(cell: Any, input_dim: int) -> None:
    """Build a cell for ``(batch, input_dim)`` inputs, as Keras 2's ``RNN.build`` does."""
    if getattr(cell, "built", False):
        return
    if hasattr(cell, "_build_once"):
        cell._build_once((None, input_dim))
    elif hasattr(cell, "build"):  # a cell that is no layer may have no build (Keras 2.3.1 builds Layers)
        cell.build((None, input_dim))
