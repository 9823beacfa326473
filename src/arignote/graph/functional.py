"""The functional side of ``arignote.models.Model`` (Keras 2 ``Network``): ``Model(inputs, outputs)``,
models used as layers, ``layers`` / ``get_layer`` / ``inputs`` / ``outputs``, ``summary()`` with the
"Connected to" column, the Keras 2 ``model_config`` layout, subclassed models with ``call``, and
per-output losses, loss weights and metrics.

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

import warnings
from typing import Any

import numpy as np
import torch
from torch import nn

from arignote import losses as losses_mod
from arignote import metrics as metrics_mod
from arignote import weighting
from arignote.graph.network import GraphModule, Packing, feed_inputs, topology
from arignote.graph.node import Node, symbolic_call
from arignote.graph.tensor import KerasTensor, flatten, is_symbolic
from arignote.layers.base import Layer, auto_name, deserialize, serialize

__all__ = ["Functional", "construction_args", "model_losses", "forward_masks"]


def _is_tensors(x: Any) -> bool:
    leaves = flatten(x) if isinstance(x, (list, tuple, dict)) else [x]
    return bool(leaves) and all(isinstance(t, KerasTensor) for t in leaves)


def construction_args(args: tuple, kwargs: dict) -> tuple[str, dict]:
    """What ``Model(...)`` was asked for: ``("graph", {inputs, outputs, name})``, ``("module", {...})``
    or ``("empty", {name})``; a wrong call is one clear error."""
    kwargs = dict(kwargs)
    for legacy, new in (("input", "inputs"), ("output", "outputs")):  # Keras 1 spellings, Keras 2 accepts
        if legacy in kwargs:
            kwargs.setdefault(new, kwargs.pop(legacy))
    name = kwargs.pop("name", None)
    inputs, outputs = kwargs.pop("inputs", None), kwargs.pop("outputs", None)
    module = kwargs.pop("module", None)
    if kwargs:
        raise TypeError(f"Model() got unexpected keyword arguments {sorted(kwargs)}; use Model(inputs, "
                        "outputs, "
                        "name=...) or Model(torch_module, name=...)")
    args = list(args)
    if args and isinstance(args[0], nn.Module) and not isinstance(args[0], Layer):
        module = args.pop(0)
        if args:
            name = args.pop(0)
    elif args:
        if inputs is None:
            inputs = args.pop(0)
        if args and outputs is None:
            outputs = args.pop(0)
        if args and name is None:
            name = args.pop(0)
    if args:
        raise TypeError("Model() takes (inputs, outputs, name) or (torch_module, name); got "
                        f"{len(args)} extra "
                        "positional arguments")
    if module is not None:
        if inputs is not None or outputs is not None:
            raise TypeError("Model() takes either a torch module or inputs/outputs, not both")
        return "module", {"module": module, "name": name}
    if inputs is None and outputs is None:
        return "empty", {"name": name}
    if inputs is None or outputs is None or not _is_tensors(inputs) or not _is_tensors(outputs):
        what = inputs if inputs is not None else outputs
        raise TypeError("Model(inputs, outputs) takes the symbolic tensors of the functional API (from "
                        f"arignote.layers.Input and layers called on them), got {type(what).__name__}; "
                        "to train a torch.nn.Module use Model(my_module), for a layer stack "
                        "Sequential([...])")
    return "graph", {"inputs": inputs, "outputs": outputs, "name": name}


class _CallModule(nn.Module):
    """The module of a subclassed ``Model``: its layers as children, ``forward`` = the model's ``call``."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        object.__setattr__(self, "_model", model)

    def forward(self, inputs: Any, **kwargs: Any) -> Any:
        return self._model.call(inputs, **kwargs)


def model_losses(model: Any) -> list:
    """The current extra losses of ``model``: weight/activity penalties of its layers, ``add_loss``
    tensors, and the symbolic losses added to a functional model (computed by its last forward)."""
    module = model.module
    out = []
    for m in module.modules():
        if isinstance(m, Layer):
            out += m._own_losses()
    out += [loss() if callable(loss) else loss for loss in model._model_losses
            if not isinstance(loss, KerasTensor)]
    if isinstance(module, GraphModule):
        out += [t.mean() if t.dim() else t for t in module.extra_losses]
    return out


def has_losses(model: Any) -> bool:
    """Whether ``model`` has losses of its own (Keras 2's ``model.losses`` is not empty): a model-level
    ``add_loss``, a layer's ``add_loss`` (also one its ``call`` made on symbolic tensors while the
    graph was built: the Keras 2 VAE's custom loss layer) or a weight regularizer. Keras 2.3.1 then
    compiles with ``loss=None``."""
    if model._model_losses:
        return True
    module = model.module
    if not isinstance(module, nn.Module):
        return False
    return any(m._added_losses or m._call_losses or m._regularizers
               for m in module.modules() if isinstance(m, Layer))


class Functional:
    """Mixin of ``Model``: everything that needs the graph (see the module doc)."""

    module: Any

    def _init_functional(self, inputs: Any, outputs: Any, name: str | None) -> None:
        self._output_structure = outputs
        self.inputs = list(flatten(inputs)) if isinstance(inputs, (list, tuple, dict)) else [inputs]
        self.outputs = list(flatten(outputs)) if isinstance(outputs, (list, tuple, dict)) else [outputs]
        self._order, self._layers = topology(self.inputs, self.outputs)
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

    def _compile_graph(self, extra: list | None = None) -> None:
        out_struct = self._output_structure if isinstance(self._output_structure, dict) else None
        self.module = GraphModule(self.inputs, self.outputs, self._order, out_struct, self._feed_input_names,
                                  extra)
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
            return [m for m in module.children() if isinstance(m, Layer) or hasattr(m, "name")]
        raise AttributeError(f"this Model wraps a torch module ({type(module).__name__}), which has no Keras "
                             "layers: use model.module")

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
        """Keras ``model.trainable``: setting it (before compile) freezes or unfreezes every layer's
        weights, e.g. a pretrained convolutional base inside a new model."""
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self.__dict__["_trainable"] = bool(value)
        if not self._is_graph and not isinstance(getattr(self, "module", None), _CallModule) and not hasattr(
                self.module, "members"):  # a wrapped torch module: its parameters
            for p in self.module.parameters():
                p.requires_grad_(bool(value))
            return
        for layer in self.layers:
            layer.trainable = bool(value)

    @property
    def batch_input_shape(self) -> tuple | None:
        """The input's batch shape, for a single-input model used as the first layer of a Sequential."""
        if not self._is_graph or len(self.inputs) != 1:
            return None
        return tuple(self.inputs[0].shape)

    @property
    def trainable_weights(self) -> list:
        return [p for p in self.module.parameters() if p.requires_grad]

    @property
    def non_trainable_weights(self) -> list:
        return [p for p in self.module.parameters() if not p.requires_grad]

    @property
    def weights(self) -> list:
        return [w for layer in self.layers for w in getattr(layer, "weights", [])]

    @property
    def losses(self) -> list:
        """Keras ``model.losses``: regularization penalties and added losses (current values)."""
        return model_losses(self)

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Keras 2 ``model.add_loss``: a symbolic tensor of the graph (the VAE's KL term), a tensor or a
        callable, added to the training loss."""
        losses = losses if isinstance(losses, (list, tuple)) else [losses]
        self._model_losses += list(losses)
        symbolic = [t for t in self._model_losses if isinstance(t, KerasTensor)]
        if symbolic:
            if not self._is_graph:
                raise ValueError("add_loss(symbolic tensor) needs a functional model, Model(inputs, outputs)")
            _, extra_layers = topology(self.inputs, symbolic)
            order, _ = topology(self.inputs, [*self.outputs, *symbolic])
            self._order = order
            self._compile_graph(symbolic)
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
        ``output_layers`` (``[layer_name, node_index, tensor_index]``)."""
        if not self._is_graph:
            raise NotImplementedError("a subclassed Model has no config (Keras 2 neither): save its weights")
        node_ids: dict[int, int] = {}  # node -> its index among the nodes kept in this model
        kept = {id(n) for n in self._order}
        for layer in self._layers:
            k = 1 if _skips_first_node(layer) else 0  # Keras 2 does not save a model's own node
            for node in layer._inbound_nodes:
                if id(node) in kept or not node.inbound_layers:
                    node_ids[id(node)] = k
                    k += 1
        layers = []
        for layer in self._layers:
            spec = serialize(layer) if isinstance(layer, Layer) else {
                "class_name": "Model" if layer._is_graph else type(layer).__name__,
                "config": layer.get_config()}
            inbound = []
            for node in layer._inbound_nodes:
                if id(node) not in kept or not node.inbound_layers:
                    continue
                data = []
                for src, ni, ti in zip(node.inbound_layers, node.node_indices, node.tensor_indices):
                    src_node = src._inbound_nodes[ni]
                    data.append([src.name, node_ids.get(id(src_node), ni), ti, dict(node.arguments)])
                inbound.append(data)
            layers.append({"name": layer.name, "class_name": spec["class_name"], "config": spec["config"],
                           "inbound_nodes": inbound})

        def ref(t: KerasTensor) -> list:
            layer, ni, ti = t._keras_history
            return [layer.name, node_ids.get(id(layer._inbound_nodes[ni]), ni), ti]

        return {"name": self.name, "layers": layers, "input_layers": [ref(t) for t in self.inputs],
                "output_layers": [ref(t) for t in self.outputs]}

    @classmethod
    def _functional_from_config(cls, config: dict, custom_objects: dict | None = None) -> Any:
        created: dict[str, Any] = {}
        pending: list = []
        for spec in config["layers"]:
            if spec["class_name"] in ("Model", "Functional"):
                layer = cls._functional_from_config(spec["config"], custom_objects)
            elif spec["class_name"] == "Sequential":
                # Sequential subclasses Model: found among cls's subclasses (no import back up)
                sequential = next(c for c in cls.__subclasses__() if c.__name__ == "Sequential")
                layer = sequential.from_config(spec["config"], custom_objects)
            else:
                layer = deserialize({"class_name": spec["class_name"], "config": spec["config"]},
                                    custom_objects)
            created[spec["name"]] = layer
            pending += [(layer, node) for node in spec.get("inbound_nodes", [])]
        # call the layers in an order where their inputs exist (Keras 2 re-runs until all are done)
        while pending:
            progress = False
            rest = []
            for layer, node in pending:
                try:
                    args = [created[n[0]].get_output_at(n[1]) if not hasattr(created[n[0]], "_order")
                            else created[n[0]].get_output_at(n[1]) for n in node]
                    args = [a[item[2]] if isinstance(a, list) else a for a, item in zip(args, node)]
                except (IndexError, ValueError, AttributeError):
                    rest.append((layer, node))
                    continue
                kwargs = node[0][3] if node and len(node[0]) > 3 else {}
                layer(args[0] if len(args) == 1 else args, **kwargs)
                progress = True
            if not progress:
                raise ValueError(f"cannot rebuild the graph: the inputs of {[lay.name for lay, _ in rest]} "
                                 "are never produced")
            pending = rest

        def tensor(item: list) -> Any:
            out = created[item[0]].get_output_at(item[1])
            return out[item[2]] if isinstance(out, list) else out

        inputs = [tensor(i) for i in config["input_layers"]]
        outputs = [tensor(o) for o in config["output_layers"]]
        return cls(inputs if len(inputs) > 1 else inputs[0], outputs if len(outputs) > 1 else outputs[0],
                   name=config.get("name"))

    # ------------------------------------------------------------------ summary

    def _graph_summary(self, print_fn: Any = None, line_length: int | None = None) -> None:
        # upward (KNOWN_UPWARD debt): models/summary.py renders devices through parallel/'s placement
        from arignote.models import summary

        kept = {id(n) for n in self._order}
        rows = []
        layer_nodes = []
        for layer in self._layers:
            nodes = [n for n in layer._inbound_nodes if id(n) in kept or not n.inbound_layers]
            layer_nodes.append(nodes)
            shapes = [n.output_shapes[0] if len(n.output_shapes) == 1 else list(n.output_shapes)
                      for n in nodes]
            shape = shapes[0] if len({str(s) for s in shapes}) == 1 else None
            connected = []
            for n in nodes:
                connected += [f"{src.name}[{ni}][{ti}]" for src, ni, ti in
                              zip(n.inbound_layers, n.node_indices, n.tensor_indices)]
            params = layer.count_params() if getattr(layer, "built", True) else 0
            kind = type(layer).__name__
            rows.append((f"{layer.name} ({kind})", summary.format_shape(shape), params, connected))
        total = self.count_params()
        trainable = self.count_trainable_params()
        if summary.is_chain(layer_nodes) and len(self.inputs) == 1 and len(self.outputs) == 1:
            text = summary.render([row[:3] + (None,) for row in rows], total, trainable, title=self.name)
        else:
            text = summary.render_graph(rows, total, trainable, title=self.name)
        summary.print_summary(text, print_fn)


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


def _skips_first_node(layer: Any) -> bool:
    nodes = getattr(layer, "_inbound_nodes", [])
    return bool(nodes) and getattr(nodes[0], "internal", False)


def pack_data(model: Any, x: Any, names: list[str], what: str, first_sets_length: bool = False) -> Any:
    """Several arrays for a multi-input (or multi-output) model, as one packed ``(n, features)`` array.

    ``first_sets_length`` (``predict``): as Keras 2.3, the first array's length is the number of
    samples and longer arrays give only their first rows (with a warning)."""
    if x is None:
        return None
    if isinstance(x, dict):
        missing = [n for n in names if n not in x]
        if missing:
            raise ValueError(f"{what}: no data for {missing}; the dict has {sorted(x)} (keys are the model's "
                             f"{'input' if what == 'x' else 'output'} names {names})")
        x = [x[n] for n in names]
    if not isinstance(x, (list, tuple)) or len(x) != len(names):
        kind = "inputs" if what == "x" else "outputs"
        raise ValueError(f"{what}: the model has {len(names)} {kind} {names}; "
                         f"pass a list of {len(names)} arrays (or a dict keyed by name)")
    arrays = [np.asarray(a) if not isinstance(a, torch.Tensor) else a for a in x]
    n = {len(a) for a in arrays}
    if len(n) > 1 and first_sets_length and all(len(a) >= len(arrays[0]) for a in arrays):
        lengths, first = [len(a) for a in arrays], len(arrays[0])
        warnings.warn(f"{what}: the inputs {names} have {lengths} samples; predicting for the first input's "
                      f"{first}, as Keras 2.3 (the other rows are not used)", stacklevel=3)
        arrays, n = [a[:first] for a in arrays], {first}
    if len(n) > 1:
        raise ValueError(f"{what}: all arrays need the same number of samples, got "
                         f"{[len(a) for a in arrays]}")
    return Packing.pack(arrays), [tuple(a.shape[1:]) for a in arrays]


def per_output(model: Any, value: Any, what: str) -> list:
    """A compile argument given once, as a list, or as a dict by output name -> one per output."""
    names = model.output_names
    if isinstance(value, dict):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ValueError(f"compile: unknown output names {unknown} in {what}; the outputs are {names}")
        return [value.get(n) for n in names]
    if isinstance(value, (list, tuple)) and what != "metrics":
        if len(value) != len(names):
            raise ValueError(f"compile: {what} has {len(value)} entries, the model has {len(names)} outputs "
                             f"{names}")
        return list(value)
    return [value] * len(names)


# ---------------------------------------------------------------------- compile


def with_model_losses(model: Any, fn: Any) -> Any:
    """``fn(y_true, y_pred)`` plus the model-level losses (``model.add_loss``: symbolic terms the
    graph computes, tensors, callables); a custom loss reads symbolic tensors of the graph it closes
    over from the current forward (the Keras 2.0 VAE's ``z_mean``). The layers' own penalties
    (regularizers, ``layer.add_loss``) are added by the training loop (:mod:`arignote.layers.penalties`)."""

    own = has_losses(model)

    def total_loss(y_true: Any, y_pred: Any) -> Any:
        module = model.module
        value = None
        if fn is not None:
            if getattr(module, "keep_values", False):
                with module.live_values():
                    value = fn(y_true, y_pred)
            else:
                value = fn(y_true, y_pred)
            if value.dim():
                value = value.mean()
        extra = [loss() if callable(loss) else loss for loss in model._model_losses
                 if not isinstance(loss, KerasTensor)]
        if isinstance(module, GraphModule):
            extra += [t.mean() if t.dim() else t for t in module.extra_losses]
        for loss in extra:
            value = loss if value is None else value + loss
        if value is None:
            if not own:
                raise ValueError("the model has no loss: compile(loss=...) or add_loss(...)")
            # compile(loss=None) on a model whose layers add their losses in call (the training loop
            # adds those): the compiled part is 0, as in Keras 2.3.1 (`total_loss = 0.`)
            ref = y_pred if isinstance(y_pred, torch.Tensor) else next(module.parameters())
            value = ref.new_zeros(())
        return value

    total_loss.__name__ = getattr(fn, "__name__", "loss")
    return total_loss


def _is_custom(loss: Any) -> bool:
    return (callable(loss) and not isinstance(loss, (str, nn.Module))
            and loss not in losses_mod._NAMES.values())


def compile_outputs(model: Any, loss: Any, loss_weights: Any, metrics: Any,
                    weighted_metrics: Any = None) -> tuple[Any, list, list]:
    """Keras 2 ``compile`` of a model with several outputs: per-output ``loss``/``loss_weights``/
    ``metrics``/``weighted_metrics`` (a value for all, a list in output order, or a dict by output
    name). Returns the total loss ``fn(packed y_true, packed y_pred)`` and the metric objects
    (``{output}_loss`` per output first, then per output its metrics and its weighted metrics,
    ``{output}_{metric}``: the names Keras 2.3 logs). Targets with sample weights
    (:class:`arignote.weighting.Weighted`, the weights packed by ``model._w_packing``) give each
    output its own weights."""
    names = model.output_names
    raw = per_output(model, loss, "loss")
    fns = [losses_mod.compiled(v) if v is not None else None for v in raw]
    weights = per_output(model, 1.0 if loss_weights is None else loss_weights, "loss_weights")
    weights = [1.0 if w is None else float(w) for w in weights]

    def per_metrics(value: Any) -> list:
        if isinstance(value, dict):
            return per_output(model, value, "metrics")
        if isinstance(value, (list, tuple, metrics_mod.Metric)):
            # Keras 2.3.1: metric objects listed for all outputs are cloned, one state per output
            return [metrics_mod.clone_metrics(list(value) if isinstance(value, (list, tuple)) else [value])
                    for _ in names]
        return [value] * len(names)

    def split(y_true: Any, y_pred: Any) -> tuple[list, list]:
        """Per-output targets (each ``Weighted`` with its own weights when the batch has some) and
        predictions."""
        packed, w, masks = weighting.parts(y_true)
        layout = model._y_packing
        outputs = model.module.packed_outputs()
        if layout is None and outputs is not None and isinstance(packed, torch.Tensor) and \
                packed.shape[1:] == (outputs.width,):  # targets shaped like the outputs, packed no data yet
            layout = outputs
        trues = layout.unpack(packed) if layout is not None else [None] * len(names)
        if w is not None or masks is not None:
            ws = model._w_packing.unpack(w) if w is not None else [None] * len(trues)
            ms = masks if masks is not None else [None] * len(trues)
            trues = [weighting.Weighted((t, wi, mi)) for t, wi, mi in zip(trues, ws, ms)]
        return trues, model.module.packed_outputs().unpack(y_pred)

    def fn(y_true: Any, y_pred: Any) -> Any:
        trues, preds = split(y_true, y_pred)
        total = None
        for f, w, t, p in zip(fns, weights, trues, preds):
            if f is None:
                continue
            value = f(t, p)
            value = value.mean() if value.dim() else value
            total = value * w if total is None else total + value * w
        return total

    objs: list = []
    for i, (name, f) in enumerate(zip(names, fns)):
        if f is not None:
            objs.append(metrics_mod.FunctionMean(_picked(f, i, split), name=f"{name}_loss", select=_whole))
    taken = ["loss", *[m.name for m in objs]]
    pairs = zip(per_metrics(metrics), per_metrics(weighted_metrics))
    for i, (name, (plain, weighted)) in enumerate(zip(names, pairs)):
        shape = model.outputs[i].shape[1:]
        for ms, is_weighted in ((plain, False), (weighted, True)):
            for m in [ms] if isinstance(ms, str) or callable(ms) else list(ms or []):
                metric = metrics_mod.get(m, raw[i] if isinstance(raw[i], str) else fns[i], shape)
                metric.weighted, metric.select = is_weighted, _output(i, split)
                metric.name = metrics_mod.unique_name(f"{name}_{metric.name}", taken)
                objs.append(metric)
                taken.append(objs[-1].name)
    return fn, objs, fns


def _whole(y_true: Any, y_pred: Any) -> tuple[Any, Any, None, None]:
    """A metric that reads the packed targets (weights and masks included) itself: the per-output losses."""
    return y_true, y_pred, None, None


def _output(i: int, split: Any) -> Any:
    def select(y_true: Any, y_pred: Any) -> tuple[Any, Any, Any, Any]:
        trues, preds = split(y_true, y_pred)
        y, w, mask = weighting.parts(trues[i])
        return y, preds[i], w, mask

    return select


def _picked(f: Any, i: int, split: Any) -> Any:
    def on_output(y_true: Any, y_pred: Any) -> Any:
        trues, preds = split(y_true, y_pred)
        return f(trues[i], preds[i])

    on_output.__name__ = getattr(f, "__name__", "metric")
    return on_output
