"""The ``RNN`` layer (Keras 2 ``keras.layers.recurrent.RNN``): runs a cell over the time axis.

The fused torch kernel when the cell has one for its configuration (with or without a mask: a
mask's valid steps are gathered to the front); otherwise a loop over the cell's ``step`` with the
input projection of all steps done at once (an LSTM's loop as one hand-differentiated function,
:mod:`.lstm_sequence`, when its ``takes`` says so). Here: the layer's wiring (arguments,
``initial_state=``/``constants=``, shapes, carried states, weights, config) and the choice of path;
the paths are :mod:`.whole_sequence` and :mod:`.time_loop`, stacked cells :mod:`.stacked_cells`.
The layers built on it: :mod:`arignote.layers.recurrent`.

Example::

    >>> import torch
    >>> from arignote.layers.recurrent.cells import LSTMCell
    >>> RNN(LSTMCell(4), return_state=True)(torch.zeros(2, 5, 3))[1].shape
    torch.Size([2, 4])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from arignote.graph.tensor import KerasTensor, is_symbolic
from arignote.layers import _trainable
from arignote.layers import op_layer as ops
from arignote.layers._util import KerasLayer, check_rank
from arignote.layers.base import Layer, deserialize
from arignote.layers.recurrent import whole_sequence
from arignote.layers.recurrent.cells import _Cell, dropout_mask
from arignote.layers.recurrent.stacked_cells import (
    StackedRNNCells,
    _PlainCell,  # noqa: F401 - models pickled before the split name it here
    build_cell,
    call_params,
)
from arignote.layers.recurrent.stateful_probe import states_set_aside
from arignote.layers.recurrent.time_loop import run_steps

__all__ = ["RNN", "StackedRNNCells", "build_cell", "delegate", "run_steps", "states_set_aside"]


def _sizes(cell: Any) -> list[int]:
    s = cell.state_size
    return list(s) if isinstance(s, (list, tuple)) else [s]


class RNN(KerasLayer, Layer):
    """Runs a cell over the time axis of ``(batch, timesteps, features)`` (Keras 2 ``RNN``).

    ``cell``: a cell (built-in or a Keras-style user cell with ``call(inputs, states)`` and
    ``state_size``) or a list of cells (stacked).

    ``layer(x, initial_state=..., constants=...)`` as Keras 2.3.1: the states and the constants
    (tensors fixed over time, e.g. what an attention cell looks at) become extra inputs of the call
    (``[x, *states, *constants]``, symbolic inputs of the node in the functional API); the cell's
    ``call(inputs, states, constants=...)`` gets the constants at every step, and its ``build`` the
    list ``[step input shape, *constant shapes]``. ``num_constants`` is what a saved config carries
    after such a call.
    """

    supports_masking = True
    _config_keys = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll")

    def __init__(
        self,
        cell: Any,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        num_constants: int | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(list(cell))
        if not hasattr(cell, "call"):
            raise ValueError(f"`cell` should have a `call` method. The RNN was passed: {cell!r}")
        if not hasattr(cell, "state_size"):
            raise ValueError(
                "The RNN cell should have an attribute `state_size` (an int or a tuple of ints, "
                "one per state)"
            )
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), bool(stateful), bool(unroll)
        self._states: list[torch.Tensor] | None = None
        # how many of a list input's last tensors are constants (set by constants=; saved configs carry it)
        self._num_constants = None if num_constants is None else int(num_constants)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        initial_state = kwargs.pop("initial_state", None)
        constants = kwargs.pop("constants", None)
        extra: list = []
        if initial_state is not None and is_symbolic(inputs) and not is_symbolic(initial_state):
            # Keras 2.3.1: states that are not graph tensors (K.variable) are a constant of the call
            kwargs["initial_state"] = _as_list(initial_state)
        elif initial_state is not None:
            extra += _as_list(initial_state)
        if constants is not None:
            constants = _as_list(constants)
            self._num_constants = len(constants)
            extra += constants
        return super().__call__(with_extra_inputs(self.name, inputs, extra), *args, **kwargs)

    @property
    def output_size(self) -> int:
        return getattr(self.cell, "output_size", None) or _sizes(self.cell)[0]

    @property
    def uses_learning_phase(self) -> bool:
        """Keras 2.3.1: the outputs (and states) depend on the learning phase when a cell drops out
        (``dropout`` or ``recurrent_dropout`` above 0) and the call does not fix ``training``."""
        cells = getattr(self.cell, "cells", None) or [self.cell]
        return any(0 < getattr(c, "dropout", 0) + getattr(c, "recurrent_dropout", 0) for c in cells)

    @property
    def states(self) -> list[torch.Tensor | None]:
        """The carried states of a ``stateful`` layer; ``[None] * number of states`` before the first
        batch and for a layer that carries none, as Keras 2.3.1's ``RNN.states``."""
        if self._states is None:
            return [None] * len(_sizes(self.cell))
        return self._states

    def build(self, input_shape: Any) -> None:
        # RNN(x, initial_state, constants) is built from [x shape, *state shapes, *constant shapes]
        if isinstance(input_shape, list) and input_shape and isinstance(input_shape[0], (list, tuple)):
            shapes = [tuple(s) for s in input_shape]
            k = self._num_constants or 0
            if k and not self.built and not getattr(self.cell, "built", False):
                self._check_constants()
                shape = shapes[0]  # the cell sees one step: (batch, *features)
                target = [(shape[0], *shape[2:]), *shapes[len(shapes) - k:]]
                cell = self.cell
                cell._build_once(target) if hasattr(cell, "_build_once") else cell.build(target)
            input_shape = shapes[0]
        super().build(input_shape)

    def build_keras(self, input_shape: tuple) -> None:
        shape = check_rank(
            tuple(input_shape),
            3,
            f"{type(self).__name__} '{self.name}'",
            "sequences (batch, timesteps, features)",
        )
        build_cell(self.cell, shape[-1])

    def output_shape_keras(self, input_shape: Any) -> Any:
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        shape = tuple(input_shape)
        out = (
            (shape[0], shape[1], self.output_size) if self.return_sequences else (shape[0], self.output_size)
        )
        if self.return_state:
            return [out, *[(shape[0], s) for s in _sizes(self.cell)]]
        return out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if isinstance(mask, list):
            mask = mask[0]
        out = mask if self.return_sequences else None
        return [out] + [None] * len(_sizes(self.cell)) if self.return_state else out

    # ---------------------------------------------------------------------------- states
    def get_initial_state(self, x: Any) -> list[Any]:
        """Zero states for batch ``x`` (a symbolic ``x``: graph tensors computing them, as in Keras)."""
        if isinstance(x, KerasTensor):
            return list(ops.apply(f"{self.name}_initial_state", self.get_initial_state, x))
        return [x.new_zeros(x.shape[0], s) for s in _sizes(self.cell)]

    def reset_states(self, states: Any = None) -> None:
        """Zero the carried states of a stateful layer, or set them to ``states`` (arrays)."""
        if not self.stateful:
            raise AttributeError(f"Layer '{self.name}' must be stateful (stateful=True) to reset its states")
        expected = self._stateful_shapes()
        if states is None:
            if self._states is not None:
                self._states = [torch.zeros_like(s) for s in self._states]
            elif expected is not None:  # built with its batch size: zeros, as Keras 2.3.1
                self._states = [torch.zeros(e, dtype=self._param_dtype()) for e in expected]
            return
        states = states if isinstance(states, (list, tuple)) else [states]
        if len(states) != len(_sizes(self.cell)):
            raise ValueError(
                f"Layer '{self.name}' expects {len(_sizes(self.cell))} states, got {len(states)}"
            )
        values = [torch.as_tensor(np.asarray(s), dtype=self._param_dtype()) for s in states]
        for i, (value, shape) in enumerate(zip(values, expected or [None] * len(values))):
            if shape is not None and tuple(value.shape) != shape:
                raise ValueError(f"State {i} is incompatible with layer {self.name}: expected shape={shape}, "
                                 f"found shape={tuple(value.shape)}")
        self._states = values

    def _stateful_shapes(self) -> list[tuple] | None:
        """``(batch, size)`` of each state when the layer was built with its batch size, else None."""
        shape = self._built_input_shape
        if isinstance(shape, list) and shape and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        sizes = _sizes(self.cell)
        if not shape or shape[0] is None or not all(isinstance(n, int) for n in sizes):
            return None
        return [(int(shape[0]), n) for n in sizes]

    def _initial(self, x: torch.Tensor, initial_state: Any) -> list[torch.Tensor]:
        sizes = _sizes(self.cell)
        if initial_state is not None:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            if len(states) != len(sizes):
                raise ValueError(
                    f"Layer '{self.name}' expects {len(sizes)} initial states (sizes {sizes}), "
                    f"got {len(states)}"
                )
            return states
        if self.stateful and self._states is not None:
            if self._states[0].shape[0] != x.shape[0]:
                raise ValueError(
                    f"stateful layer '{self.name}' carries states for batches of "
                    f"{self._states[0].shape[0]} samples, got {x.shape[0]}; use the same batch "
                    "size every time (Keras 2: batch_input_shape) or call reset_states() first"
                )
            return [s.to(x.device, x.dtype) for s in self._states]
        return self.get_initial_state(x)

    # ---------------------------------------------------------------------------- running
    def call(
        self,
        inputs: Any,
        mask: Any = None,
        training: Any = None,
        initial_state: Any = None,
        constants: Any = None,
    ) -> Any:
        if isinstance(inputs, (list, tuple)):  # Keras 2: [x, *initial_states, *constants]
            inputs, rest = inputs[0], list(inputs[1:])
            k = self._num_constants or 0
            if k:
                rest, constants = rest[: len(rest) - k], rest[len(rest) - k:]
            initial_state = rest or initial_state
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if constants is not None:
            constants = _as_list(constants)
        training = self.training if training is None else bool(training)
        x = inputs
        states = self._initial(x, initial_state)
        if self.go_backwards:
            x = x.flip(1)
            mask = None if mask is None else mask.flip(1)
        outputs, last, states = self._run(x, mask, states, training, constants)
        if self.stateful:
            self._states = [s.detach() for s in states]
        y = self._activity(outputs if self.return_sequences else last)
        return [y, *states] if self.return_state else y

    def _run(
        self, x: torch.Tensor, mask: torch.Tensor | None, states: list, training: bool, constants: Any = None
    ) -> tuple:
        cell = self.cell
        if constants or not isinstance(cell, _Cell):
            return self._step_cell(x, mask, states, training, constants)
        if cell.fusable(training):
            if training and 0 < cell.dropout < 1:  # one input mask for the whole sequence (Keras 2)
                x = x * dropout_mask(x[:, 0], cell.dropout, 1)[0].unsqueeze(1)
            if mask is None:
                out, states = cell.fused(x, states, training)
                return out, out[:, -1], states
            padded = whole_sequence.fused_under_mask(self, x, mask, states, training)
            if padded is not None:
                return padded
            training = False if 0 < cell.dropout < 1 else training  # input dropout already applied
        dp, rec = cell.masks(x[:, 0], states[0], training)
        whole = whole_sequence.lstm_function(self, x, dp, mask, states, rec)
        if whole is not None:
            return whole
        projected = cell.project(x, dp).unbind(1)  # one backward (a stack), not a zero-filled copy per step

        def step(t: int, st: list) -> tuple:
            return cell.step(projected[t], st, rec)

        return run_steps(step, x.shape[1], mask, states, self.return_sequences)

    def _step_cell(
        self, x: torch.Tensor, mask: torch.Tensor | None, states: list, training: bool, constants: Any
    ) -> tuple:
        """The cell's own ``call`` at every step (a user's cell, or any cell given constants)."""
        cell = self.cell
        extra: dict[str, Any] = {"training": training} if "training" in call_params(cell.call) else {}
        if constants:
            self._check_constants()
            extra["constants"] = list(constants)

        frames = x.unbind(1)

        def step(t: int, st: list) -> tuple:
            out, new = cell.call(frames[t], st, **extra)
            return out, _as_list(new)

        return run_steps(step, x.shape[1], mask, states, self.return_sequences)

    def _check_constants(self) -> None:
        if "constants" not in call_params(self.cell.call):
            raise ValueError(
                f"RNN cell does not support constants: {type(self.cell).__name__}.call has no `constants` "
                f"argument, yet layer '{self.name}' was called with constants= (write the cell's call as "
                "call(self, inputs, states, constants=None))"
            )

    # ---------------------------------------------------------------------------- weights and config
    @property
    def trainable(self) -> bool:
        """Keras 2.3.1's ``RNN.trainable``: freezing the RNN freezes its cell's weights; unfreezing it
        trains what the cell itself leaves trainable (a frozen cell, a weight created with
        ``trainable=False`` stay frozen). See :mod:`arignote.layers._trainable`."""
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value)
        if "cell" in self._modules:
            _trainable.apply(self)

    def _keras_split(self) -> tuple[list, list]:
        cell = self._modules.get("cell", self.__dict__.get("cell"))
        return _trainable.frozen_first(*_trainable.keras_split(cell), self._trainable)

    def weight_names(self) -> list[str]:
        return list(getattr(self.cell, "weight_names", list)())

    def _keras_weights(self) -> list[torch.Tensor]:
        if hasattr(self.cell, "_keras_weights"):
            return self.cell._keras_weights()
        return [*self.cell.parameters()] if isinstance(self.cell, torch.nn.Module) else []

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        self.cell._set_keras_weights(weights)

    def get_config(self) -> dict:
        cfg = super().get_config()
        if self._num_constants is not None:
            cfg["num_constants"] = self._num_constants
        if type(self) is RNN:
            cfg["cell"] = {"class_name": type(self.cell).__name__, "config": self.cell.get_config()}
        return cfg

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> RNN:
        config = dict(config)
        if cls is RNN:
            config["cell"] = deserialize(config["cell"], custom_objects)
        return cls(**config)


def with_extra_inputs(name: str, inputs: Any, extra: list) -> Any:
    """``[inputs, *extra]``: Keras 2 makes a recurrent layer's ``initial_state=`` / ``constants=``
    extra inputs of its call (``inputs`` unchanged when there are none).

    >>> with_extra_inputs("lstm", "x", []), with_extra_inputs("lstm", "x", ["h", "c"])
    ('x', ['x', 'h', 'c'])
    """
    if not extra:
        return inputs
    if isinstance(inputs, (list, tuple)):
        raise ValueError(
            f"layer '{name}': give the initial states and constants either inside the inputs "
            "list ([x, *states, *constants]) or as initial_state=/constants=, not both"
        )
    return [inputs, *extra]


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]



def delegate(*names: str):
    """Class decorator: read-only properties that forward ``names`` to ``self.cell`` (Keras 2's RNN
    layers expose their cell's arguments)."""

    def deco(cls: type) -> type:
        for n in names:
            setattr(cls, n, property(lambda self, n=n: getattr(self.cell, n)))
        return cls

    return deco
