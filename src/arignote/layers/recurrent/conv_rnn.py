"""``ConvRNN2D`` (Keras 2 ``keras.layers.convolutional_recurrent.ConvRNN2D``): runs a convolutional
cell over the time axis of image sequences ``(batch, time, rows, cols, channels)``
(``channels_first``: ``(batch, time, channels, rows, cols)``).

The cell is a Keras 2 cell: ``state_size`` (one channel count per state), ``call(inputs, states,
training=None)`` returning ``(output, new_states)`` on one time step of images in the cell's
``data_format``, and the convolution geometry ConvRNN2D reads to shape outputs and zero states:
``filters``, ``kernel_size``, ``strides``, ``padding``, ``data_format``, ``dilation_rate``. A cell
whose ``runs_sequences`` is true (``ConvLSTM2DCell``) runs the whole sequence in its
``run_sequence`` (the input convolution of all time steps as one batched convolution); any other
cell is stepped through its ``call`` by the loop :class:`~arignote.layers.RNN` uses.
``initial_state=``, ``constants=`` (passed to ``cell.call(..., constants=...)``), masks (a masked
step keeps the previous output and states), ``go_backwards``, ``return_state`` and ``stateful``
(``reset_states``) behave as Keras 2.3.1's. A mask is one flag per sample and step; the per-pixel
mask of ``Masking`` on images (which Keras 2.3.1's ``K.rnn`` refuses) counts a step when any of its
pixels is unmasked, so frames of padding are skipped.

Example::

    >>> import torch
    >>> from arignote.layers import ConvLSTM2DCell
    >>> layer = ConvRNN2D(ConvLSTM2DCell(4, 3, padding="same"), return_state=True)
    >>> y, h, c = layer(torch.zeros(2, 5, 8, 8, 3))
    >>> tuple(y.shape), tuple(c.shape)
    ((2, 8, 8, 4), (2, 8, 8, 4))
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

from arignote.graph.tensor import KerasTensor
from arignote.layers import op_layer as ops
from arignote.layers._util import check_rank, conv_output_length, normalize_tuple
from arignote.layers.base import Layer, deserialize
from arignote.layers.recurrent.rnn import RNN

__all__ = ["ConvRNN2D", "ZeroStates"]

_GEOMETRY = ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate")


class _Geometry(NamedTuple):
    filters: int
    kernel_size: tuple
    strides: tuple
    padding: str
    first: bool  # channels_first
    dilation_rate: tuple


def _sizes(cell: Any) -> list[int]:
    s = cell.state_size
    return list(s) if isinstance(s, (list, tuple)) else [s]


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _shape_list(shape: Any) -> list:
    """``[input shape, *more]`` whether ``shape`` is one shape or a list of them."""
    if isinstance(shape, list) and shape and isinstance(shape[0], (list, tuple)):
        return [tuple(s) for s in shape]
    return [tuple(shape)]


class ZeroStates(list):
    """The zero states :meth:`ConvRNN2D.get_initial_state` starts a sequence from: a cell may skip
    the recurrent convolution of its first step (its result is exactly zero)."""


class ConvRNN2D(RNN):
    """Runs a convolutional cell over sequences of images (Keras 2 ``ConvRNN2D``).

    ``ConvRNN2D(cell, return_sequences=False, return_state=False, go_backwards=False,
    stateful=False, unroll=False)``; ``unroll=True`` and a list of cells are refused, as in Keras 2.
    ``num_constants`` is what a saved config carries after a call with ``constants=``.
    """

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
        if unroll:
            raise TypeError("Unrolling isn't possible with convolutional RNNs: ConvRNN2D needs unroll=False")
        if isinstance(cell, (list, tuple)):
            raise TypeError(
                "It is not possible at the moment to stack convolutional cells: pass ConvRNN2D one "
                "cell, and chain several ConvRNN2D layers (return_sequences=True) to stack them"
            )
        super().__init__(cell, return_sequences, return_state, go_backwards, stateful, False, num_constants,
                         **kwargs)

    # ---------------------------------------------------------------------------- geometry
    def _geometry(self) -> _Geometry:
        cell = self.cell
        missing = [a for a in _GEOMETRY if not hasattr(cell, a)]
        if missing:
            raise ValueError(
                f"ConvRNN2D '{self.name}': its cell {type(cell).__name__} has no {', '.join(missing)}; "
                "a convolutional cell sets filters, kernel_size, strides, padding, data_format and "
                "dilation_rate (ConvRNN2D reads them to shape its outputs and zero states, as Keras 2's)"
            )
        where = f"ConvRNN2D '{self.name}' (cell {type(cell).__name__})"
        data_format = cell.data_format
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError(
                f"{where}: data_format must be 'channels_last' or 'channels_first', got {data_format!r}"
            )
        return _Geometry(
            int(cell.filters),
            normalize_tuple(cell.kernel_size, 2, "kernel_size", where),
            normalize_tuple(cell.strides, 2, "strides", where),
            str(cell.padding).lower(),
            data_format == "channels_first",
            normalize_tuple(cell.dilation_rate, 2, "dilation_rate", where),
        )

    def _state_shapes(self, input_shape: tuple) -> list[tuple]:
        """Keras shapes of the states for a ``(batch, time, ...)`` input shape (None where unknown)."""
        g = self._geometry()
        rows, cols = (input_shape[3], input_shape[4]) if g.first else (input_shape[2], input_shape[3])
        r, c = (
            conv_output_length(n, g.kernel_size[i], g.padding, g.strides[i], g.dilation_rate[i])
            for i, n in enumerate((rows, cols))
        )
        batch = input_shape[0]
        return [(batch, s, r, c) if g.first else (batch, r, c, s) for s in _sizes(self.cell)]

    def _image_shape(self, input_shape: tuple) -> tuple:
        g = self._geometry()
        one = self._state_shapes(input_shape)[0]
        return (*one[:1], g.filters, *one[2:]) if g.first else (*one[:3], g.filters)

    # ---------------------------------------------------------------------------- building and shapes
    def build(self, input_shape: Any) -> None:
        if self.built:
            return
        shapes = _shape_list(input_shape)
        k = self._num_constants or 0
        constant_shapes = shapes[len(shapes) - k:] if k else []
        what = "sequences of images (batch, time, rows, cols, channels)"
        shape = check_rank(shapes[0], 5, f"ConvRNN2D '{self.name}'", what)
        cell = self.cell
        if k:
            self._check_constants()
        if not getattr(cell, "built", False):
            step = (shape[0], *shape[2:])
            target = [step, *constant_shapes] if constant_shapes else step
            cell._build_once(target) if hasattr(cell, "_build_once") else cell.build(target)
        self._geometry()  # a cell without the convolution geometry fails here, naming what it lacks
        Layer.build(self, shape)

    def output_shape_keras(self, input_shape: Any) -> Any:
        shape = _shape_list(input_shape)[0]
        one = self._image_shape(shape)
        out = (one[0], shape[1], *one[1:]) if self.return_sequences else one
        return [out, *self._state_shapes(shape)] if self.return_state else out

    # ---------------------------------------------------------------------------- states
    def get_initial_state(self, inputs: torch.Tensor) -> list[torch.Tensor]:
        """Zero states for the batch ``inputs``: one image per state, of the convolution's output size
        (Keras 2 gets the same zeros by convolving zeros with a kernel of the cell's shape); a symbolic
        ``inputs``: graph tensors computing them."""
        if isinstance(inputs, KerasTensor):
            return list(ops.apply(f"{self.name}_initial_state", self.get_initial_state, inputs))
        return ZeroStates(inputs.new_zeros(s) for s in self._state_shapes(tuple(inputs.shape)))

    def _initial(self, x: torch.Tensor, initial_state: Any) -> list[torch.Tensor]:
        states = super()._initial(x, initial_state)
        if initial_state is not None:
            for i, (s, want) in enumerate(zip(states, self._state_shapes(tuple(x.shape)))):
                if tuple(s.shape) != want:
                    raise ValueError(
                        f"ConvRNN2D '{self.name}': initial state {i} has shape {tuple(s.shape)}, expected "
                        f"{want} (the cell's state_size {self.cell.state_size} gives the channels; rows "
                        "and cols are those of the convolution's output)"
                    )
        return states

    def _known_input_shape(self) -> tuple | None:
        shape = self.batch_input_shape or self._built_input_shape
        return None if shape is None else _shape_list(shape)[0]

    def reset_states(self, states: Any = None) -> None:
        """Zero the carried states of a stateful layer, or set them to ``states`` (arrays in Keras
        layout, one per state); shapes are checked against the layer's input shape where known."""
        if not self.stateful:
            raise AttributeError(f"Layer '{self.name}' must be stateful (stateful=True) to reset its states")
        shape = self._known_input_shape()
        expected = None if shape is None else self._state_shapes(shape)
        if states is None:
            if self._states is not None:
                self._states = [torch.zeros_like(s) for s in self._states]
            elif expected is not None and all(d is not None for e in expected for d in e):
                self._states = [torch.zeros(e, dtype=self._param_dtype()) for e in expected]
            return
        values = [torch.as_tensor(np.asarray(s), dtype=self._param_dtype()) for s in _as_list(states)]
        if len(values) != len(_sizes(self.cell)):
            raise ValueError(f"Layer {self.name} expects {len(_sizes(self.cell))} states, but it received "
                             f"{len(values)} state values")
        for i, v in enumerate(values):
            want = expected[i] if expected is not None else None
            if v.dim() != 4 or (want is not None and any(
                    w is not None and w != d for w, d in zip(want, v.shape))):
                raise ValueError(f"State {i} is incompatible with layer {self.name}: expected shape="
                                 f"{want or '(batch, rows, cols, channels)'}, found shape={tuple(v.shape)}")
        self._states = values

    # ---------------------------------------------------------------------------- running
    def call(
        self,
        inputs: Any,
        mask: Any = None,
        training: Any = None,
        initial_state: Any = None,
        constants: Any = None,
    ) -> Any:
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if mask is not None and mask.dim() > 2:  # Masking on images: one flag per pixel
            mask = mask.flatten(2).any(-1)  # a step counts when any of its pixels does
        return super().call(inputs, mask, training, initial_state, constants)

    def _run(
        self, x: torch.Tensor, mask: torch.Tensor | None, states: list, training: bool, constants: Any = None
    ) -> tuple:
        cell = self.cell
        if not constants and getattr(cell, "runs_sequences", False):
            return cell.run_sequence(x, mask, states, training, self.return_sequences)
        return self._step_cell(x, mask, states, training, constants)

    # ---------------------------------------------------------------------------- config
    def get_config(self) -> dict:
        cfg = super().get_config()
        if type(self) is ConvRNN2D:
            cfg["cell"] = {"class_name": type(self.cell).__name__, "config": self.cell.get_config()}
        return cfg

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> ConvRNN2D:
        config = dict(config)
        if cls is ConvRNN2D:
            config["cell"] = deserialize(config["cell"], custom_objects)
        return cls(**config)
