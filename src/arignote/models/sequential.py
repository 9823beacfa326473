"""Keras 2 ``Sequential``: a stack of :mod:`arignote.layers`, built from the first layer's input shape.

Tensors are in Keras layout between layers (images ``(N, H, W, C)``). Once the input shape is known
(``input_shape=`` on the first layer, an ``Input``/``InputLayer`` first, or the first data), the
stack is run once on a symbolic input, as Keras 2 does: every layer is built from the shape before
it (batch dim ``None``), ``layer.input``/``output`` work, and the model learns which layers pass a
mask (``Embedding(mask_zero=True)`` -> ``LSTM``) so its forward hands masks on only there. Its
config is :mod:`.sequential_config`'s, ``predict_proba`` / ``predict_classes``
:mod:`.sequential_predictions`'.

Example::

    >>> from arignote.layers import Conv2D, Flatten, Dense
    >>> model = Sequential([Conv2D(4, (3, 3), input_shape=(8, 8, 1)), Flatten(), Dense(10)])
    >>> model.output_shape
    (None, 10)
    >>> [l.name.split("_")[0] for l in model.layers]
    ['conv2d', 'flatten', 'dense']
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from arignote.graph import state
from arignote.graph.network import cast_input, float_dtype, fused_chain
from arignote.graph.node import Node, runtime_module
from arignote.graph.tensor import KerasTensor
from arignote.layers.base import Layer, auto_name, register_model_class
from arignote.layers.input_layer import Input, InputLayer
from arignote.layers.layer_args import _shape_tuple
from arignote.models.functional import forward_masks
from arignote.models.model import Model
from arignote.models.sequential_config import SequentialConfig
from arignote.models.sequential_predictions import SequentialPredictions

__all__ = ["Sequential"]



class _Stack(nn.Module):
    """The torch module behind a Sequential: its layers in order, masks handed on where they exist."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList()  # what computes each member (a model's own module for a model)
        self.members: list[Any] = []  # what the user added: layers, or models used as layers
        self.mask_plan: list[bool] | None = None  # per layer: does its output carry a mask
        self.output_masks: list | None = None  # [the last forward's output mask] when it has one
        self.input_dtype: torch.dtype | None = None  # a float Input's dtype: integer data is cast to it
        self._fused_list: list | None = None  # the members fused (fused_chain); None: to be made

    def append(self, member: Any) -> None:
        self.layers.append(runtime_module(member))
        self.members.append(member)
        self._fused_list = None

    def pop(self) -> Any:
        del self.layers[-1]
        self._fused_list = None
        return self.members.pop()

    def __getstate__(self) -> dict:
        # a copy or a pickle makes its own fused chain (of its own members) at its first forward
        state = dict(self.__dict__)
        state["_fused_list"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        state.pop("_fused_key", None)  # a stack pickled when staleness was told by the members' ids
        state["_fused_list"] = None
        super().__setstate__(state)

    def forward(self, x: torch.Tensor, mask: Any = None) -> torch.Tensor:
        """The stack on ``x``; ``mask``: the mask of ``x`` when the model is a layer of a graph that
        hands masks on (its layers then take and pass it on as Keras 2's at run time)."""
        state.set_phase(self.training)  # K.learning_phase() inside Lambda / custom layers
        if self.input_dtype is not None:
            x = cast_input(x, self.input_dtype)
        plan = self.mask_plan
        if plan is None and mask is None:
            for layer in self._fused():
                x = layer(x)
            return x
        seeded = mask is not None
        for layer, makes_mask in zip(self.members, plan or [False] * len(self.members)):
            y = layer(x, mask=mask) if mask is not None and layer._call_takes_mask else layer(x)
            inner = getattr(runtime_module(layer), "out_masked", None)
            if inner is not None:  # a model in the stack: its forward computed its output mask
                masks = runtime_module(layer).output_masks if (mask is not None or any(inner)) else None
                mask = masks[0] if masks else None
            else:
                mask = layer.compute_mask(x, mask) if makes_mask or (seeded and mask is not None) else None
            x = y
        self.output_masks = [mask]
        return x

    def _fused(self) -> list:
        """The members with fusable pairs fused (:func:`fused_chain`), made at the first forward after
        the members changed (``append``/``pop`` drop it: nothing is compared per forward)."""
        if torch.compiler.is_compiling():  # never fused there: Dynamo traces the members themselves
            return self.members
        fused = self._fused_list
        if fused is None:
            fused = self._fused_list = fused_chain(self.members)
        return fused

    @property
    def out_masked(self) -> list[bool]:
        """``[whether the output carries a Keras mask]`` (its value after a forward: ``output_masks``)."""
        plan = self.mask_plan
        return [plan is not None and len(plan) == len(self.members) and plan[-1]]


class Sequential(SequentialConfig, SequentialPredictions, Model):
    """A linear stack of layers: ``Sequential([Dense(64, input_dim=20), Dense(10)])`` or ``add()``."""

    def __init__(self, layers: list | None = None, name: str | None = None) -> None:
        super().__init__(_Stack(), name=name or auto_name("sequential"))  # Keras 2: sequential_1, _2, ...
        self._built_shape: tuple | None = None  # batch input shape the stack was built for
        self._input_layer: InputLayer | None = None
        self._graph: tuple[KerasTensor, KerasTensor] | None = None
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self) -> list[Any]:
        return list(self.module.members)

    def add(self, layer: Any) -> None:
        """Append ``layer``; built at once when the input shape is known (Keras behaviour)."""
        if isinstance(layer, KerasTensor):
            origin = layer._keras_history[0] if layer._keras_history else None
            if not isinstance(origin, InputLayer):
                raise TypeError("Sequential.add takes layers; a symbolic tensor is accepted only when it is "
                                "an Input(shape=...) starting the model")
            layer = origin
        if isinstance(layer, InputLayer):
            if self.layers or self._input_layer is not None:
                raise ValueError("an InputLayer / Input can only start a Sequential model")
            if not layer.is_placeholder:
                raise ValueError("a Sequential model is fed the data it is given: it cannot start at an "
                                 "Input(tensor=...); build the model with the functional API, "
                                 "Model(inputs, outputs), which feeds such an input itself")
            self._input_layer = layer
            self._built_shape = None
            self._build(layer.batch_input_shape)
            return
        nested = isinstance(layer, Model) and layer is not self and (
            layer._is_graph or isinstance(layer, Sequential))
        if not (isinstance(layer, Layer) or nested):
            raise TypeError(f"Sequential.add takes an arignote layer (arignote.layers.Dense, ...) or a "
                            f"functional/Sequential model, got {type(layer).__name__}; wrap a torch module "
                            "with arignote.models.Model")
        from arignote.parallel import placement  # the strategies load with the first layer added (issue 32)

        placement.mark(layer)  # inside `with arignote.device("dev1"):` the layer goes to dev1
        graph = self._graph
        self.module.append(layer)
        self._invalidate()
        if graph is not None:  # built: call only the new layer on the current output (as Keras 2)
            self._graph = (graph[0], self._append_call(layer, graph[1]))
            self._internal_node()
            return
        shape = self._batch_input_shape()
        if shape is not None:
            self._build(shape)

    def pop(self) -> Any:
        """Remove and return the last layer."""
        if not self.layers:
            raise IndexError("pop from an empty Sequential model")
        layer = self.module.pop()
        graph = self._graph
        self._invalidate()
        if graph is not None and self.layers:
            self._graph = (graph[0], self.layers[-1].get_output_at(len(self.layers[-1]._inbound_nodes) - 1))
            plan = self.module.mask_plan
            self.module.mask_plan = plan[:-1] if plan is not None and any(plan[:-1]) else None
            self._internal_node()
        return layer

    def _invalidate(self) -> None:
        # a changed stack needs placing (device, dtype, channels-last) and an optimizer rebuilt
        self._trainer = None
        self._placed = False
        self._graph = None

    # ------------------------------------------------------------------ building and shapes

    def _batch_input_shape(self) -> tuple | None:
        if self._built_shape is not None:
            return self._built_shape
        if self._input_layer is not None:
            return tuple(self._input_layer.batch_input_shape)
        first = self.layers[0] if self.layers else None
        return tuple(first.batch_input_shape) if first is not None and first.batch_input_shape else None

    def expected_input_shape(self) -> tuple | None:
        shape = self._batch_input_shape()
        return None if shape is None else tuple(shape[1:])

    def _build(self, shape: tuple) -> None:
        """Run the stack on a symbolic input of batch shape ``shape`` (builds every layer)."""
        shape = tuple(shape)
        self._built_shape = shape
        if not self.layers:
            return
        if self._input_layer is not None:
            x = self._input_layer._inbound_nodes[0].output_tensors[0]
        else:
            dtype = getattr(self.layers[0], "dtype_name", "float32")
            x = Input(batch_shape=shape, name=f"{self.layers[0].name}_input", dtype=dtype)
        inp = x
        self.module.input_dtype = float_dtype(x.dtype)
        self.module.mask_plan = None
        for i, layer in enumerate(self.layers):
            x = self._append_call(layer, x, i)
        self._graph = (inp, x)
        self._internal_node()

    def _internal_node(self) -> None:
        """Keras 2: node 0 of a built Sequential is its own input -> output (calls are nodes 1, ...)."""
        inp, out = self._graph
        nodes = self._inbound_nodes
        if nodes and getattr(nodes[0], "internal", False):
            nodes[0].output_tensors, nodes[0].output_shapes = [out], [out.shape]
            return
        node = Node(self, [inp], [out], [None], [out._keras_mask])
        node.internal = True
        nodes.remove(node)
        nodes.insert(0, node)

    def _append_call(self, layer: Any, x: KerasTensor, index: int | None = None) -> KerasTensor:
        y = layer(x)
        if not isinstance(y, KerasTensor):
            raise ValueError(f"layer '{layer.name}' returns several tensors; a Sequential model needs "
                             "single-output layers: use the functional API, Model(inputs, outputs)")
        index = len(self.layers) - 1 if index is None else index
        plan = list(self.module.mask_plan or [])[:index]
        plan += [False] * (index - len(plan)) + [y._keras_mask is not None]
        self.module.mask_plan = plan if any(plan) else None
        return y

    def _ensure_built(self, sample_shape: tuple | None) -> None:
        if not self.layers:
            raise ValueError("the Sequential model has no layers: add some with model.add(...)")
        shape = self._batch_input_shape()
        if shape is None and sample_shape is not None:
            shape = (None, *sample_shape)
        if shape is None:
            raise ValueError("the model does not know its input shape yet: pass input_shape=(...) to the "
                             "first layer, or call fit/predict with data first")
        if self._graph is None or not all(layer.built for layer in self.layers):
            self._build(shape)

    def build(self, input_shape: Any = None) -> None:
        """Keras 2 ``Sequential.build``: build every layer for the batch shape ``input_shape``; without
        it, for the shape the first layer (or the ``Input``) declares. A model already built keeps its
        graph (Keras 2.3.1 builds from ``input_shape`` only while the model has no inputs).

        Example::

            >>> from arignote.layers import Dense
            >>> m = Sequential([Dense(2)]); m.build((None, 3)); m.output_shape
            (None, 2)
        """
        if not self.layers:
            raise ValueError("the Sequential model has no layers: add some with model.add(...) before "
                             "build()")
        if self._graph is not None:
            return
        if input_shape is not None:
            self._build(_shape_tuple(input_shape, "input_shape"))
        elif self._batch_input_shape() is not None:
            self._build(self._batch_input_shape())
        else:
            raise ValueError("Sequential.build() needs input_shape=(batch, ...) when the first layer "
                             "declares no input_shape")

    def _sample_output_shape(self) -> tuple | None:
        shape = self.output_shape
        return None if shape is None else tuple(shape[1:])

    @property
    def output_shape(self) -> tuple | None:
        """Keras ``model.output_shape`` (batch dim ``None``); None while the input shape is unknown."""
        shape = self._batch_input_shape()
        if shape is None or not self.layers:
            return shape
        if self._graph is not None:
            return self._graph[1].shape
        for layer in self.layers:
            shape = tuple(layer.compute_output_shape(shape))
        return shape

    @property
    def input_shape(self) -> tuple | None:
        return self._batch_input_shape()

    @property
    def batch_input_shape(self) -> tuple | None:
        """What a Sequential used as the first layer of another one declares (Keras 2)."""
        return self._batch_input_shape()

    # a Sequential used as a layer of a functional model
    @property
    def built(self) -> bool:
        return self._graph is not None

    def _build_once(self, input_shape: Any) -> None:
        self._ensure_built(tuple(input_shape)[1:])

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape = tuple(input_shape)
        for layer in self.layers:
            shape = tuple(layer.compute_output_shape(shape))
        return shape

    @property
    def _call_takes_mask(self) -> bool:
        return True  # a Sequential used as a layer runs its stack with the mask it gets (Keras 2)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """Keras 2: the mask of the output when the stack runs on ``inputs`` with ``mask``."""
        if mask is None and not any(self.module.out_masked):
            return None
        return forward_masks(self.module, inputs, mask, 1)

    @property
    def inputs(self) -> list:
        self._ensure_built(None)
        return [self._graph[0]]

    @property
    def outputs(self) -> list:
        self._ensure_built(None)
        return [self._graph[1]]

    @property
    def input(self) -> KerasTensor:
        return self.inputs[0]

    @property
    def output(self) -> KerasTensor:
        return self.outputs[0]

    # ------------------------------------------------------------------ Keras-layout weights

    def get_weights(self) -> list[np.ndarray]:
        """All layers' weights in Keras order and layout (Dense kernel ``(in, units)``, ...)."""
        self._ensure_built(None)
        return [w for layer in self.layers for w in layer.get_weights()]

    def set_weights(self, weights: list) -> None:
        self._ensure_built(None)
        weights = list(weights)
        expected = sum(len(layer.get_weights()) for layer in self.layers)
        if len(weights) != expected:
            raise ValueError(f"set_weights: the model has {expected} weight arrays, got {len(weights)}")
        at = 0
        for layer in self.layers:
            n = len(layer.get_weights())
            if n:
                layer.set_weights([np.asarray(w) for w in weights[at:at + n]])
            at += n

    def summary(self, line_length: Any = None, positions: Any = None, print_fn: Any = None) -> None:
        """Print the Keras 2 table (Layer (type) / Output Shape / Param #) and the totals."""
        # the table and the memory plan load with the first summary (import time, issue 32)
        from arignote.diagnostics.memory_plan import summary_lines
        from arignote.models import summary as summary_table

        self._ensure_built(None)
        rows = summary_table.layer_rows(self.layers, self._built_shape)
        total = sum(layer.count_params() for layer in self.layers)
        trainable = sum(layer.count_trainable_params() for layer in self.layers)
        summary_table.print_summary(summary_table.render(rows, total, trainable), print_fn)
        summary_table.print_summary(summary_lines(self), print_fn)  # issue 7: the memory plan


register_model_class(Sequential)
