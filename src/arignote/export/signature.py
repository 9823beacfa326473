"""What an exported model takes and gives: input/output names, shapes and dtypes, the inference
module every format traces, sample inputs, and the layer to blame when tracing fails.

Names are the Keras layer names (``in_a``, ``head``), as Keras 2's ``model.input_names`` and
``model.output_names``; shapes keep ``None`` where the Keras model has it (the batch always), and
those dimensions stay dynamic in the exported file.

Example::

    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> model = Sequential([Dense(3, input_shape=(4,), name="head")])
    >>> [(s.name, s.shape) for s in input_specs(model)], output_names(model)
    ([('head_input', (None, 4))], ['head'])
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from arignote.errors import ArignoteError

__all__ = ["ExportError", "TensorSpec", "InferenceModule", "input_specs", "output_names", "sample_inputs",
           "example_batch", "layer_to_blame", "inference_mode", "refuse_stateful"]

EXAMPLE_BATCH = 2  # torch.export specializes sizes 0 and 1: trace with 2, run the file with 1 and more
EXAMPLE_FREE_DIM = 3  # a None dimension other than the batch (timesteps), when --input-shape does not fix it


class ExportError(ArignoteError, ValueError):
    """A model, format or file that cannot be exported or verified; the message names the culprit."""


@dataclass(frozen=True)
class TensorSpec:
    """One model input: Keras name, shape with ``None`` dims (batch first), dtype, and for the input of an
    ``Embedding`` the number of rows (sample values must be indices below it)."""

    name: str
    shape: tuple
    dtype: str = "float32"
    index_limit: int | None = None


def _history_name(tensor: Any, fallback: str) -> str:
    history = getattr(tensor, "_keras_history", None)
    return history[0].name if history else fallback


def _unique(names: list[str]) -> list[str]:
    """ONNX needs distinct names: a layer with several outputs gives ``name``, ``name_1``..."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        out.append(n if k == 0 else f"{n}_{k}")
        seen[n] = k + 1
    return out


def _keras_inputs(model: Any) -> list:
    try:
        return list(model.inputs or [])
    except (AttributeError, ValueError, TypeError):  # a wrapped torch module has no symbolic inputs
        return []


def _index_limits(model: Any, inputs: list) -> dict[int, int]:
    """``{id(input tensor): input_dim}`` for inputs that feed an ``Embedding`` directly."""
    limits = {}
    for layer in getattr(model, "layers", []):
        if type(layer).__name__ != "Embedding":
            continue
        try:
            fed = layer.get_input_at(0)
        except (AttributeError, ValueError, RuntimeError, IndexError):
            continue
        if any(fed is t for t in inputs):
            limits[id(fed)] = int(layer.input_dim)
    return limits


def input_specs(model: Any, input_shapes: list[tuple] | None = None) -> list[TensorSpec]:
    """The inputs of ``model``; ``input_shapes`` (without the batch dimension, one per input) fix the
    shape where the model leaves it open, and are required for a wrapped torch module."""
    inputs = _keras_inputs(model)
    if not inputs:
        if not input_shapes:
            raise ExportError(f"{type(model).__name__} wraps a torch module with no declared inputs: give "
                              "the input shapes (input_shapes=[(28, 28, 1)], --input-shape 28,28,1)")
        return [TensorSpec(f"input_{i}", (None, *s)) for i, s in enumerate(input_shapes)]
    if input_shapes is not None and len(input_shapes) != len(inputs):
        raise ExportError(f"the model has {len(inputs)} inputs but {len(input_shapes)} input shapes were "
                          "given")
    limits = _index_limits(model, inputs)
    names = _unique([_history_name(t, f"input_{i}") for i, t in enumerate(inputs)])
    specs = []
    for i, (t, name) in enumerate(zip(inputs, names)):
        shape = tuple(t.shape)
        if input_shapes is not None:
            given = tuple(input_shapes[i])
            fits = len(given) == len(shape) - 1 and all(d in (None, g) for d, g in zip(shape[1:], given))
            if not fits:
                raise ExportError(f"input '{name}' has shape {shape}; the given shape {given} (without "
                                  "the batch) does not fit it")
            shape = (None, *given)
        specs.append(TensorSpec(name, shape, str(getattr(t, "dtype", "float32")), limits.get(id(t))))
    return specs


def output_names(model: Any) -> list[str]:
    """The Keras names of the outputs (``output_0``.. for a wrapped torch module)."""
    try:
        outputs = list(model.outputs or [])
    except (AttributeError, ValueError, TypeError):
        outputs = []
    return _unique([_history_name(t, f"output_{i}") for i, t in enumerate(outputs)]) or ["output_0"]


def example_batch(specs: list[TensorSpec], batch: int = EXAMPLE_BATCH, seed: int = 0) -> list[np.ndarray]:
    """One array per input for tracing: ``batch`` rows, open dims at :data:`EXAMPLE_FREE_DIM`."""
    return sample_inputs(specs, batch, seed, free_dim=EXAMPLE_FREE_DIM)


def sample_inputs(specs: list[TensorSpec], batch: int, seed: int = 0, free_dim: int = EXAMPLE_FREE_DIM
                  ) -> list[np.ndarray]:
    """Generated inputs: uniform [0, 1) floats, or indices below ``index_limit`` for an Embedding's input."""
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        shape = (batch, *(free_dim if d is None else d for d in s.shape[1:]))
        if s.index_limit is not None:
            out.append(rng.integers(0, s.index_limit, size=shape).astype(s.dtype))
        elif np.issubdtype(np.dtype(s.dtype), np.integer):
            out.append(rng.integers(0, 2, size=shape).astype(s.dtype))
        else:
            out.append(rng.random(shape).astype(s.dtype))
    return out


def dynamic_shapes(specs: list[TensorSpec]) -> tuple:
    """torch.export's ``dynamic_shapes`` for ``InferenceModule.forward(*inputs)``: every ``None`` dim."""
    batch = torch.export.Dim("batch", min=1)
    per_input = []
    for s in specs:
        dims = {0: batch}
        for axis, d in enumerate(s.shape[1:], start=1):
            if d is None:
                dims[axis] = torch.export.Dim(f"{s.name}_dim{axis}", min=1)
        per_input.append(dims)
    return (tuple(per_input),)


class InferenceModule(nn.Module):
    """``forward(*inputs) -> tuple of outputs`` over the model's torch module: what every format traces
    (one positional tensor per Keras input, one output tensor per Keras output, masks applied inside)."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.inner = model.module
        # a functional graph packs several outputs side by side for fit/predict: here each stays apart
        self.graph = hasattr(self.inner, "out_slots")

    def forward(self, *inputs: torch.Tensor) -> tuple:
        if self.graph:
            out = self.inner(list(inputs), packed=False)
        else:
            out = self.inner(list(inputs) if len(inputs) > 1 else inputs[0])
        if isinstance(out, dict):
            out = list(out.values())
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)


class inference_mode:
    """``with inference_mode(model):`` the module in eval mode (dropout off, BatchNormalization on its moving
    statistics), its training flags restored afterwards."""

    def __init__(self, model: Any) -> None:
        self.module = model.module
        self.flags: list = []

    def __enter__(self) -> nn.Module:
        self.flags = [(m, m.training) for m in self.module.modules()]
        self.module.eval()
        return self.module

    def __exit__(self, *exc: Any) -> None:
        for m, flag in self.flags:
            m.training = flag


def refuse_stateful(model: Any) -> None:
    """A stateful RNN carries its states from call to call: an exported graph has no such state."""
    for layer in _all_layers(model):
        if getattr(layer, "stateful", False):
            raise ExportError(f"layer '{layer.name}' ({type(layer).__name__}) is stateful: an exported "
                              "graph keeps no state between calls; rebuild it with stateful=False, copy the "
                              "weights (set_weights), and export that model")


def _all_layers(model: Any) -> list:
    out = []
    for layer in getattr(model, "layers", []):
        out.append(layer)
        out.extend(_all_layers(layer))
        inner = getattr(layer, "layer", None) or getattr(layer, "forward_layer", None)
        if inner is not None:
            out.append(inner)
    return out


def layer_to_blame(exc: BaseException) -> Any:
    """The innermost Keras layer whose ``call``/``forward`` was running when ``exc`` was raised (None if
    none was): what a tracing failure names. Walks the traceback's frames for a ``self`` that is a layer."""
    culprit = None
    tb: types.TracebackType | None = exc.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        named = isinstance(getattr(owner, "name", None), str)
        if owner is not None and hasattr(owner, "get_config") and named and not hasattr(owner, "layers"):
            culprit = owner
        tb = tb.tb_next
    if culprit is None and exc.__cause__ is not None and exc.__cause__ is not exc:
        return layer_to_blame(exc.__cause__)
    return culprit


def blame_message(exc: BaseException, what: str) -> str:
    """``layer 'lambda_1' (Lambda) has no <what> equivalent: <reason>``; with no layer found, the reason."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    layer = layer_to_blame(exc)
    if layer is None:
        return f"the model cannot be exported to {what}: {type(exc).__name__}: {reason}"
    return (f"layer '{layer.name}' ({type(layer).__name__}) has no {what} equivalent: {type(exc).__name__}: "
            f"{reason} (replace the layer, or export the model without it)")
