"""The ``RNN`` layer (Keras 2 ``keras.layers.recurrent.RNN``): runs a cell over the time axis.

The fused torch kernel when the cell has one for its configuration (with or without a mask: a
mask's valid steps are gathered to the front); otherwise a loop over the cell's ``step`` with the
input projection of all steps done at once (an LSTM's loop as one hand-differentiated function,
:mod:`arignote.layers.recurrent.lstm_sequence`, when its ``takes`` says so).
See :mod:`arignote.layers.recurrent` for the layers built on it.

Example::

    >>> import torch
    >>> from arignote.layers.recurrent.cells import LSTMCell
    >>> RNN(LSTMCell(4), return_state=True)(torch.zeros(2, 5, 3))[1].shape
    torch.Size([2, 4])
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from arignote.graph.tensor import KerasTensor, is_symbolic
from arignote.layers import _trainable
from arignote.layers import op_layer as ops
from arignote.layers._util import KerasLayer, check_rank
from arignote.layers.base import Layer, deserialize
from arignote.layers.recurrent.cells import LSTMCell, _Cell, dropout_mask

__all__ = ["RNN", "StackedRNNCells", "build_cell", "delegate", "run_steps", "states_set_aside"]


@contextlib.contextmanager
def states_set_aside(module: torch.nn.Module) -> Iterator[Callable[[], None]]:
    """Probe ``module`` with sample batches without touching what its stateful layers carry.

    Yields ``clear()``: call it before each probe so the stateful layers start from zero states at
    the probe's batch size; on leaving, every layer gets back the states it carried before (a
    memory estimate must not change what the next real batch continues from).

    Example::

        >>> from arignote.layers import SimpleRNN
        >>> rnn = SimpleRNN(2, stateful=True); _ = rnn(torch.ones(1, 3, 1))
        >>> before = rnn.states[0].clone()
        >>> with states_set_aside(rnn) as clear:
        ...     clear(); _ = rnn(torch.ones(4, 3, 1))
        >>> bool(torch.equal(rnn.states[0], before))
        True
    """
    held = [(m, m._states) for m in module.modules()
            if getattr(m, "stateful", False) and hasattr(m, "_states")]

    def clear() -> None:
        for m, _ in held:
            m._states = None

    try:
        yield clear
    finally:
        for m, states in held:
            m._states = states


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
            padded = self._padded_fused(x, mask, states, training)
            if padded is not None:
                return padded
            training = False if 0 < cell.dropout < 1 else training  # input dropout already applied
        dp, rec = cell.masks(x[:, 0], states[0], training)
        whole = self._lstm_sequence(x, dp, mask, states, rec)
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
        extra: dict[str, Any] = {"training": training} if "training" in _params(cell.call) else {}
        if constants:
            self._check_constants()
            extra["constants"] = list(constants)

        frames = x.unbind(1)

        def step(t: int, st: list) -> tuple:
            out, new = cell.call(frames[t], st, **extra)
            return out, _as_list(new)

        return run_steps(step, x.shape[1], mask, states, self.return_sequences)

    def _check_constants(self) -> None:
        if "constants" not in _params(self.cell.call):
            raise ValueError(
                f"RNN cell does not support constants: {type(self.cell).__name__}.call has no `constants` "
                f"argument, yet layer '{self.name}' was called with constants= (write the cell's call as "
                "call(self, inputs, states, constants=None))"
            )

    def _padded_fused(
        self, x: torch.Tensor, mask: torch.Tensor, states: list, training: bool
    ) -> tuple | None:
        """A mask on the fused kernel (:meth:`_gathered`)."""
        return self._gathered(x, mask, lambda shifted: self.cell.fused(shifted, states, training)[0])

    def _lstm_sequence(self, x: torch.Tensor, dp: list | None, mask: torch.Tensor | None, states: list,
                       rec: list | None) -> tuple | None:
        """An LSTM loop as one hand-differentiated function (:mod:`.lstm_sequence`) over the input
        projection of ``x`` (input dropout masks ``dp``) when :func:`.lstm_sequence.takes` says so
        (under a mask: over each row's valid steps, :meth:`_gathered`, which moves ``x`` before its
        projection: a quarter of the data), else None (the graph's loop)."""
        cell = self.cell
        if not isinstance(cell, LSTMCell):
            return None
        from arignote.layers.recurrent import lstm_sequence as seq  # why: loaded when an LSTM runs its loop

        if not seq.takes(lstm_step=type(cell).step is LSTMCell.step, activation=cell.activation,
                         recurrent_activation=cell.recurrent_activation, recurrent_masks=len(rec or ()),
                         steps=x.shape[1], tracing=seq.tracing(),
                         autocast=torch.is_autocast_enabled(x.device.type)):
            return None
        spec = seq.Spec(cell.activation, cell.recurrent_activation)

        def run(steps: torch.Tensor) -> tuple:
            masks = None if not rec else rec[0] if len(rec) == 1 else torch.stack(rec)
            return seq.run(cell.project(steps, dp), states[0], states[1], cell.recurrent_weight, masks, spec)

        if mask is not None:
            return self._gathered(x, mask, lambda shifted: run(shifted)[0])
        out, c = run(x)
        last = out[:, -1]
        return out, last, [last, c]

    def _gathered(self, x: torch.Tensor, mask: torch.Tensor, run: Callable) -> tuple | None:
        """A mask on a whole-sequence function ``run`` (``(n, t, ...) -> outputs (n, t, units)``: the
        fused kernel, the LSTM recurrence): each row's valid steps are gathered to the front, in order
        (a masked step changes nothing, so the recurrence over them is Keras 2's), ``run`` runs over
        them (the rows' masked steps after them cannot change earlier outputs), and the outputs are
        spread back with Keras 2's masked values (zeros before a row's first valid step, the last
        output after a valid one). Padded sequences (``pad_sequences`` 'pre' or 'post') and masks with
        zeros inside alike. None when a row has no valid step, or when an LSTM's cell state at the
        last valid step is needed (``return_state``/``stateful``), and under ``torch.export``. Steps
        move as whole rows (``index_select`` on ``(batch * time, features)``: a row copy, where
        ``gather`` indexed each element, ~8x slower forward and backward); the outputs of all steps
        are spread back only for ``return_sequences``."""
        cell = self.cell
        if isinstance(cell, LSTMCell) and (self.return_state or self.stateful):
            return None
        if torch.compiler.is_exporting():  # the test below reads data: an exported graph takes the step loop
            return None
        m = mask.to(torch.bool)
        n, t = m.shape
        lengths = m.sum(1)
        if not bool((lengths > 0).all()):  # one host sync
            return None
        order = torch.argsort((~m).to(torch.int8), dim=1, stable=True)  # valid steps first, in order
        start = torch.arange(0, n * t, t, device=m.device).unsqueeze(1)  # each row's first step, flattened
        out = run(_steps_at(x, order + start))
        last = _steps_at(out, (lengths - 1).unsqueeze(1) + start)[:, 0]
        if not self.return_sequences:
            return None, last, [last]
        done = m.cumsum(1)  # valid steps up to each step
        seq = _steps_at(out, (done - 1).clamp(min=0) + start)
        seq = seq * (done > 0).unsqueeze(-1).to(seq.dtype)
        return seq, last, [last]

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

    @property
    def trainable_weights(self) -> list:
        """Keras 2.3.1: the cell's trainable weights, none while the RNN is frozen."""
        return self._keras_split()[0]

    @property
    def non_trainable_weights(self) -> list:
        """Keras 2.3.1: the cell's non-trainable weights, after its trainable ones while frozen."""
        return self._keras_split()[1]

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


def run_steps(
    step: Callable[[int, list], tuple], steps: int, mask: torch.Tensor | None, states: list,
    sequence: bool = True,
) -> tuple:
    """The time loop every RNN shares: ``step(t, states) -> (output, new_states)`` for t in
    ``range(steps)``; returns ``(outputs stacked on axis 1, last output, last states)`` (outputs None
    when ``sequence`` is false: a layer that returns only the last output need not stack them).

    A masked step (``mask[:, t]`` false) keeps the previous output (zeros before the first valid
    step) and the previous states, as Keras 2's ``K.rnn``; outputs and states may have any rank
    (vectors for RNN, images for ConvRNN2D).

    Example::

        >>> count = lambda t, st: (st[0] + 1, [st[0] + 1])
        >>> out, last, (s,) = run_steps(count, 3, None, [torch.zeros(2, 1)])
        >>> out[:, :, 0].tolist(), last.tolist()
        ([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], [[3.0], [3.0]])
    """
    if mask is not None:
        return _run_masked(step, steps, mask, states, sequence)
    outs: list[torch.Tensor] = []
    prev = None
    for t in range(steps):
        out, new = step(t, states)
        states, prev = list(new), out
        if sequence:
            outs.append(out)
    return (torch.stack(outs, 1) if sequence else None), prev, states


def _run_masked(
    step: Callable[[int, list], tuple], steps: int, mask: torch.Tensor, states: list, sequence: bool
) -> tuple:
    """:func:`run_steps` under a mask. When a step's output is its first new state (LSTM, GRU,
    SimpleRNN, ConvLSTM2D cells), the masked output at ``t`` is the masked first state where a valid
    step has been seen by ``t``, else zeros: one ``where`` per state a step, and one on the stacked
    outputs at the end, instead of one more per step on the output (the same values; in the backward
    the output's and the state's gradients are summed in another order)."""
    valid_all = mask.to(torch.bool)
    valid = valid_all.unbind(1)  # one cast; per-step views
    outs: list[torch.Tensor] = []
    prev = None
    first_is_output = None
    for t in range(steps):
        out, new = step(t, states)
        if first_is_output is None:
            first_is_output = out is new[0]
        elif first_is_output != (out is new[0]):
            how = "apart from" if first_is_output else "as"
            raise RuntimeError(f"an RNN cell's step {t} returned its output {how} its first state, unlike "
                               "its step 0: a step must do the same every time")
        m = valid[t]
        new = [torch.where(_along(m, n), n, s) for n, s in zip(new, states)]
        if first_is_output:
            out = new[0]
        else:
            prev = torch.zeros_like(out) if prev is None else prev
            out = torch.where(_along(m, out), out, prev)
        states, prev = new, out
        if sequence:
            outs.append(out)
    if not first_is_output:
        return (torch.stack(outs, 1) if sequence else None), prev, states
    seen = valid_all.to(torch.int32).cumsum(1) > 0  # a valid step seen by t (cumsum: ONNX has no cummax)
    last = torch.where(_along(seen[:, -1], prev), prev, torch.zeros((), dtype=prev.dtype, device=prev.device))
    if not sequence:
        return None, last, states
    seq = torch.stack(outs, 1)
    zero = torch.zeros((), dtype=seq.dtype, device=seq.device)
    return torch.where(seen.view(*seen.shape, *([1] * (seq.dim() - 2))), seq, zero), last, states


def _steps_at(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x`` ``(n, t, ...)`` at the flattened steps ``index`` ``(n, k)`` (row ``i``'s steps are
    ``i * t .. i * t + t - 1``): ``(n, k, ...)``, one row copy per step.

    >>> _steps_at(torch.arange(6.).view(2, 3, 1), torch.tensor([[2, 0], [3, 5]]))[..., 0].tolist()
    [[2.0, 0.0], [3.0, 5.0]]
    """
    rows = x.reshape(x.shape[0] * x.shape[1], *x.shape[2:]).index_select(0, index.reshape(-1))
    return rows.view(*index.shape, *x.shape[2:])


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


def _params(fn: Any) -> Any:
    return inspect.signature(fn).parameters


def _along(m: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A per-sample mask ``(batch,)`` shaped to broadcast over ``like`` ``(batch, ...)``."""
    return m.view(m.shape[0], *([1] * (like.dim() - 1)))


def delegate(*names: str):
    """Class decorator: read-only properties that forward ``names`` to ``self.cell`` (Keras 2's RNN
    layers expose their cell's arguments)."""

    def deco(cls: type) -> type:
        for n in names:
            setattr(cls, n, property(lambda self, n=n: getattr(self.cell, n)))
        return cls

    return deco


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
            if constants and "constants" in _params(cell.call) and not getattr(cell, "built", False):
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

    @property
    def trainable_weights(self) -> list:
        return self._keras_split()[0]

    @property
    def non_trainable_weights(self) -> list:
        return self._keras_split()[1]

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
            params = _params(cell.call)
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
