"""The functional side of ``arignote.models.Model`` (Keras 2 ``Network``): ``Model(inputs, outputs)``,
models used as layers, ``layers`` / ``get_layer`` / ``inputs`` / ``outputs``, subclassed models with
``call``, masks, ``model.losses`` and ``add_loss``.

The pieces around it live by concern: :mod:`.model_construction` (what ``Model(...)`` was asked
for), :mod:`.model_losses` (a model's own losses and the total loss ``compile`` builds),
:mod:`.multi_output` (per-output losses, loss weights and metrics), :mod:`.model_config` (the Keras 2
``model_config`` layout); ``summary()``'s "Connected to" table is
:func:`arignote.models.summary.graph_summary` and packing the data of several inputs is
:mod:`arignote.models.fit_data`.

Example::

    >>> from arignote.layers import Input, Dense, concatenate
    >>> from arignote.models import Model
    >>> a, b = Input(shape=(3,), name="a"), Input(shape=(2,), name="b")
    >>> out = Dense(1, name="out")(concatenate([a, b]))
    >>> model = Model([a, b], out)
    >>> [l.name for l in model.layers], model.output_shape
    (['a', 'b', 'concatenate_1', 'out'], (None, 1))
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from arignote.graph import state
from arignote.graph.network import GraphModule
from arignote.graph.node import Node, symbolic_call
from arignote.graph.packing import Packing
from arignote.graph.tensor import KerasTensor, flatten, is_symbolic
from arignote.graph.topology import feed_inputs, topology
from arignote.layers import _trainable
from arignote.layers.base import Layer, auto_name
from arignote.layers.bookkeeping import is_model
from arignote.models.construction import construction_args
from arignote.models.functional_config import graph_config, graph_from_config
from arignote.models.output_losses import model_losses

__all__ = ["Functional", "construction_args", "model_losses", "forward_masks"]


class _CallModule(nn.Module):
    """The module of a subclassed ``Model``: its layers as children, ``forward`` = the model's ``call``."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        object.__setattr__(self, "_model", model)

    def forward(self, inputs: Any, **kwargs: Any) -> Any:
        # Keras 2: what call adds (add_loss) is that call's: the last forward's losses go (they held
        # its autograd graph), those of a model shared inside one outer forward stay
        model, forward_id = self._model, state.model_forward_id()
        if forward_id is None or forward_id != model.__dict__.get("_call_losses_forward"):
            model.__dict__["_call_model_losses"] = []
        model.__dict__["_call_losses_forward"] = forward_id
        model.__dict__["_in_call"] = model.__dict__.get("_in_call", 0) + 1
        try:
            return model.call(inputs, **kwargs)
        finally:
            model.__dict__["_in_call"] -= 1


class Functional:
    """Mixin of ``Model``: everything that needs the graph (see the module doc)."""

    module: Any

    def _init_functional(self, inputs: Any, outputs: Any, name: str | None) -> None:
        self._output_structure = outputs
        self.inputs = list(flatten(inputs)) if isinstance(inputs, (list, tuple, dict)) else [inputs]
        self.outputs = list(flatten(outputs)) if isinstance(outputs, (list, tuple, dict)) else [outputs]
        self._graph_inputs = list(self.inputs)  # what _set_inputs takes back after `model.inputs = None`
        self._layer_depths: dict = {}
        self._order, self._layers = topology(self.inputs, self.outputs, self._layer_depths)
        self.input_names = [t._keras_history[0].name for t in self.inputs]
        # Keras 2's _feed_inputs: what fit/predict/evaluate take data for (not the Input(tensor=...) ones)
        self._feed_inputs = feed_inputs(self.inputs)
        self._feed_input_names = [t._keras_history[0].name for t in self._feed_inputs]
        self.output_names = [t._keras_history[0].name for t in self.outputs]
        self._compile_graph()
        self.name = name or auto_name("model")
        # Keras 2: a model's node 0 is its own inputs -> outputs; calls as a layer are nodes 1, 2, ...
        node = Node(self, self.inputs, self.outputs, [t._keras_mask for t in self.inputs],
                    [t._keras_mask for t in self.outputs])
        node.internal = True

    def _compile_graph(self, extra: list | None = None, feeds: list | None = None) -> None:
        out_struct = self._output_structure if isinstance(self._output_structure, dict) else None
        self.module = GraphModule(self.inputs, self.outputs, self._order, out_struct, self._feed_input_names,
                                  extra, feeds)
        if len(self._feed_inputs) > 1:
            self.module.input_packing = Packing([t.shape[1:] for t in self._feed_inputs],
                                                self._feed_input_names)
        if len(self.outputs) > 1:
            self.module.output_packing = Packing([t.shape[1:] for t in self.outputs], self.output_names)

    @property
    def _is_graph(self) -> bool:
        return getattr(self, "_order", None) is not None

    # ------------------------------------------------------------------ Keras 2 Network API

    @property
    def layers(self) -> list:
        if self._is_graph:
            return list(self._layers)
        module = getattr(self, "module", None)
        if isinstance(module, _CallModule):
            held = self._held_models()  # a model it holds as an attribute: listed as that model
            own = self.__dict__.get("_own_weights")  # add_weight's holder (own_weights): not a layer
            return [held.get(id(m), m) for m in module.children()
                    if (isinstance(m, Layer) or hasattr(m, "name") or id(m) in held) and m is not own]
        raise AttributeError(f"this Model wraps a torch module ({type(module).__name__}), which has no Keras "
                             "layers: use model.module")

    def _held_models(self) -> dict:
        """``{id(model.module): model}`` for the models a subclassed model holds as attributes."""
        return {id(v.module): v for v in self.__dict__.values() if is_model(v) and v is not self}

    def get_layer(self, name: str | None = None, index: int | None = None) -> Any:
        """Keras 2 ``get_layer(name=None, index=None)``."""
        layers = self.layers
        if index is not None:
            if len(layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only has "
                                 f"{len(layers)} layers.")
            return layers[index]
        if not name:
            raise ValueError("Provide either a layer name or layer index.")
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. The model has {[layer.name for layer in layers]}")

    @property
    def input(self) -> Any:
        return self.inputs[0] if len(self.inputs) == 1 else list(self.inputs)

    @property
    def output(self) -> Any:
        return self.outputs[0] if len(self.outputs) == 1 else list(self.outputs)

    @property
    def input_shape(self) -> Any:
        shapes = [t.shape for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def built(self) -> bool:
        return True

    @property
    def trainable(self) -> bool:
        """Keras ``model.trainable``: setting it (before compile) freezes or unfreezes the model's
        weights, e.g. a pretrained convolutional base inside a new model, or the discriminator of a
        GAN inside the combined model. As in Keras 2.3.1 the layers keep their own flags (``[]`` as
        ``trainable_weights`` while the model is frozen), so freezing and unfreezing a model gives
        back the per-layer freezing the user had."""
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self.__dict__["_trainable"] = bool(value)
        if getattr(self, "module", None) is None:  # Model() of a subclass without call: nothing to set yet
            return
        if not self._has_layers():  # a wrapped torch module: its parameters
            for p in self.module.parameters():
                p.requires_grad_(bool(value))
            return
        _trainable.apply(self)

    def _has_layers(self) -> bool:
        return self._is_graph or isinstance(getattr(self, "module", None), _CallModule) or hasattr(
            self.module, "members")

    @property
    def batch_input_shape(self) -> tuple | None:
        """The input's batch shape, for a single-input model used as the first layer of a Sequential."""
        if not self._is_graph or len(self.inputs) != 1:
            return None
        return tuple(self.inputs[0].shape)

    @property
    def trainable_weights(self) -> list:
        """Keras 2.3.1's ``Network.trainable_weights``: every layer's trainable weights, ``[]`` while
        the model is frozen (a wrapped torch module: its parameters that require grad)."""
        if not self._has_layers():
            return _trainable.WeightList(p for p in self.module.parameters() if p.requires_grad)
        return _trainable.WeightList(_trainable.model_split(self)[0])

    @property
    def non_trainable_weights(self) -> list:
        if not self._has_layers():
            return _trainable.WeightList(p for p in self.module.parameters() if not p.requires_grad)
        return _trainable.WeightList(_trainable.model_split(self)[1])

    @property
    def weights(self) -> list:
        """Keras 2.3.1's ``model.weights``: ``trainable_weights + non_trainable_weights`` (in Keras
        layouts), every layer's trainable weights first; ``get_weights()`` keeps the layer order. The
        three lists compare weights by identity, as Keras's variables (``_trainable.WeightList``: a
        Keras-layout view is the same weight as its torch parameter)."""
        return _trainable.WeightList(_trainable.model_weights(self))

    @property
    def losses(self) -> list:
        """Keras ``model.losses``: regularization penalties and added losses (current values)."""
        return model_losses(self)

    @property
    def updates(self) -> list:
        """Keras 2.3.1's ``Network.updates``: each layer's updates for its calls inside this model and
        its unconditional ones (BatchNormalization's moving averages: two per call); ``[]`` while the
        model is frozen (torch runs them in place in the training step: this is the bookkeeping)."""
        if not self.trainable or not self._has_layers():
            return []
        ours = {id(n) for n in self._order} if self._is_graph else None
        out: list = []
        for layer in self.layers:
            if not hasattr(layer, "get_updates_for"):
                continue
            if ours is None or not isinstance(layer, Layer):  # a Sequential's layers, a nested model
                inside = ours is None or any(id(n) in ours for n in layer._inbound_nodes)
                out += layer.updates if inside else []
                continue
            for node in layer._inbound_nodes:
                if id(node) in ours:
                    out += layer.get_updates_for(node.input_tensors)
            out += layer.get_updates_for(None)
        return out

    def get_updates_for(self, inputs: Any) -> list:
        """Keras 2: the model's updates that depend on ``inputs``; unconditional ones for None."""
        return self.updates if inputs is None else []

    def get_losses_for(self, inputs: Any) -> list:
        """Keras 2: the losses that depend on ``inputs`` (None: the unconditional ones)."""
        return [loss for layer in self.layers if hasattr(layer, "get_losses_for")
                for loss in layer.get_losses_for(inputs)]

    @property
    def uses_learning_phase(self) -> bool:
        """Keras 2: whether an output depends on the learning phase (a dropout or noise layer on the
        way, called without a fixed ``training=``)."""
        return any(t._uses_learning_phase for t in self.outputs)

    @property
    def _layers_by_depth(self) -> dict:
        """Keras 2.3.1's ``Network._layers_by_depth``: ``{depth: [layers]}`` (0: the output layers; a
        layer is one deeper than the deepest layer it feeds; the inputs share the deepest level)."""
        depths = self.__dict__.get("_layer_depths", {})
        out: dict = {}
        for layer in self.layers:
            out.setdefault(depths.get(id(layer), 0), []).append(layer)
        return out

    @property
    def _input_layers(self) -> list:
        """Keras 2 bookkeeping: the InputLayer of each input."""
        return [t._keras_history[0] for t in self.inputs]

    @property
    def _output_layers(self) -> list:
        return [t._keras_history[0] for t in self.outputs]

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Keras 2 ``model.add_loss``: a symbolic tensor of the graph (the VAE's KL term), a tensor or a
        callable, added to the training loss. Inside a subclassed model's ``call`` it counts for that
        call (the next forward replaces it)."""
        losses = losses if isinstance(losses, (list, tuple)) else [losses]
        if self.__dict__.get("_in_call") and not any(isinstance(t, KerasTensor) for t in losses):
            self._call_model_losses += [t for t in losses if t is not None]  # this call's (forward)
            return
        self._model_losses += list(losses)
        if any(isinstance(t, KerasTensor) for t in self._model_losses):
            if not self._is_graph:
                raise ValueError("add_loss(symbolic tensor) needs a functional model, Model(inputs, outputs)")
            self._recompile_extras()

    def _added_losses(self) -> list:
        """The ``add_loss`` terms: those given outside ``call`` (kept), then the last call's."""
        return self._model_losses + self.__dict__.get("_call_model_losses", [])

    def _add_symbolic_metric(self, update: Any, tensors: list) -> None:
        """``add_metric`` of graph tensors (:mod:`arignote.layers.added_metrics`): the graph computes
        ``tensors`` at every forward and hands their values to ``update``."""
        if not self._is_graph:
            raise ValueError("add_metric(symbolic tensor) needs a functional model, Model(inputs, outputs)")
        self.__dict__.setdefault("_metric_feeds", []).append((update, list(tensors)))
        self._recompile_extras()

    def _recompile_extras(self) -> None:
        """The graph again with the symbolic losses and metric tensors added to it."""
        symbolic = [t for t in self._model_losses if isinstance(t, KerasTensor)]
        feeds = self.__dict__.get("_metric_feeds", [])
        order, _ = topology(self.inputs, [*self.outputs, *symbolic, *(t for _, ts in feeds for t in ts)])
        self._order = order
        self._compile_graph(symbolic, feeds)
        self._trainer = None
        self._placed = False

    # ------------------------------------------------------------------ a model as a layer

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:
        if is_symbolic(inputs):
            return symbolic_call(self, inputs, kwargs)
        if isinstance(self.module, GraphModule):
            kwargs.setdefault("packed", False)
        return self.module(inputs, **kwargs)

    @property
    def _inbound_nodes(self) -> list:
        return self.__dict__.setdefault("_inbound_nodes_list", [])

    @property
    def _outbound_nodes(self) -> list:
        return self.__dict__.setdefault("_outbound_nodes_list", [])

    _declares_output_shape = True
    input_spec = None

    def _build_once(self, input_shape: Any) -> None:
        """A functional model is built; a subclassed one builds its layers on a first run."""

    def compute_output_shape(self, input_shape: Any) -> Any:
        if not self._is_graph:
            raise NotImplementedError("a subclassed Model has no static output shape")
        shapes = [t.shape for t in self.outputs]
        first = input_shape if isinstance(input_shape, tuple) else (input_shape[0] if input_shape else None)
        batch = first[0] if first else None
        shapes = [(batch, *s[1:]) for s in shapes]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def _call_takes_mask(self) -> bool:
        """A functional model used as a layer takes the masks of its inputs (Keras 2 runs its graph
        with them); a subclassed one does not."""
        return self._is_graph

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """Keras 2 ``Network.compute_mask``: the masks of the outputs when the graph runs on ``inputs``
        with the input masks ``mask`` (one output: a mask or None; several: a list). Runs the graph
        (in eval mode, without gradients); a graph used as a layer of another hands its output masks
        on from its own forward instead."""
        if not self._is_graph:
            return None
        module = self.module
        if mask is None and not module.masked:
            return None if len(self.outputs) == 1 else [None] * len(self.outputs)
        return forward_masks(module, inputs, mask, len(self.outputs))

    def count_params(self) -> int:
        return sum(layer.count_params() for layer in self.layers if getattr(layer, "built", True))

    def count_trainable_params(self) -> int:
        return sum(layer.count_trainable_params() for layer in self.layers)

    def get_output_at(self, node_index: int) -> Any:
        out = self._inbound_nodes[node_index].output_tensors
        return out[0] if len(out) == 1 else out

    def get_input_at(self, node_index: int) -> Any:
        ins = self._inbound_nodes[node_index].input_tensors
        return ins[0] if len(ins) == 1 else ins

    # ------------------------------------------------------------------ config (Keras 2 model_config)

    def get_config(self) -> dict:
        """Keras 2 layout: ``name``, ``layers`` (each with ``inbound_nodes`` as
        ``[[layer_name, node_index, tensor_index, kwargs], ...]`` per call), ``input_layers``,
        ``output_layers`` (``[layer_name, node_index, tensor_index]``);
        :mod:`arignote.models.functional_config`."""
        return graph_config(self)

    @classmethod
    def _functional_from_config(cls, config: dict, custom_objects: dict | None = None) -> Any:
        return graph_from_config(cls, config, custom_objects)


def forward_masks(module: nn.Module, inputs: Any, mask: Any, n_outputs: int) -> Any:
    """The output masks of ``module`` (a ``GraphModule`` or a Sequential's stack) run on ``inputs``
    with input masks ``mask``, in eval mode and without gradients (no moving-average updates)."""
    modes = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        with torch.no_grad():
            if isinstance(module, GraphModule):
                module(inputs, packed=False, mask=mask)
            else:
                module(inputs, mask=mask)
    finally:
        for m, mode in modes:
            m.training = mode
    masks = module.output_masks or [None] * n_outputs
    return masks[0] if n_outputs == 1 else list(masks)
