"""A functional model's Keras 2 ``model_config`` (``engine/network.py``'s ``get_config`` and
``from_config``): ``name``, ``layers`` (each with its ``inbound_nodes``, one list per call of the
layer inside the model), ``input_layers`` and ``output_layers``; and the graph rebuilt from one,
calling each layer once its inputs exist, nested models and ``Sequential`` included.

Example::

    >>> from arignote.layers import Input, Dense
    >>> from arignote.models import Model
    >>> x = Input(shape=(3,), name="x"); model = Model(x, Dense(2, name="d")(x), name="m")
    >>> config = graph_config(model)
    >>> [layer["name"] for layer in config["layers"]], config["output_layers"]
    (['x', 'd'], [['d', 0, 0]])
    >>> graph_from_config(Model, config).get_layer("d").units
    2
"""

from __future__ import annotations

from typing import Any

from arignote.graph.tensor import KerasTensor
from arignote.layers.base import Layer, deserialize, serialize

__all__ = ["graph_config", "graph_from_config"]


def _skips_first_node(layer: Any) -> bool:
    nodes = getattr(layer, "_inbound_nodes", [])
    return bool(nodes) and getattr(nodes[0], "internal", False)


def graph_config(model: Any) -> dict:
    """``model.get_config()`` of a functional model, in the Keras 2 layout: ``name``, ``layers`` (each
    with ``inbound_nodes`` as ``[[layer_name, node_index, tensor_index, kwargs], ...]`` per call),
    ``input_layers``, ``output_layers`` (``[layer_name, node_index, tensor_index]``)."""
    if not model._is_graph:
        raise NotImplementedError("a subclassed Model has no config (Keras 2 neither): save its weights")
    node_ids: dict[int, int] = {}  # node -> its index among the nodes kept in this model
    kept = {id(n) for n in model._order}
    for layer in model._layers:
        k = 1 if _skips_first_node(layer) else 0  # Keras 2 does not save a model's own node
        for node in layer._inbound_nodes:
            if id(node) in kept or not node.inbound_layers:
                node_ids[id(node)] = k
                k += 1
    # an input no output depends on is still an input of the model (Keras 2.3.1 lists its layer too)
    unused = [t._keras_history[0] for t in model.inputs if t._keras_history[0] not in model._layers]
    layers = []
    for layer in [*unused, *model._layers]:
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

    return {"name": model.name, "layers": layers, "input_layers": [ref(t) for t in model.inputs],
            "output_layers": [ref(t) for t in model.outputs]}


def graph_from_config(cls: Any, config: dict, custom_objects: dict | None = None) -> Any:
    """A new functional model of class ``cls`` (``Model`` or a subclass) from :func:`graph_config`'s
    layout; nested models are rebuilt with ``cls`` too."""
    created: dict[str, Any] = {}
    pending: list = []
    for spec in config["layers"]:
        if spec["class_name"] in ("Model", "Functional"):
            layer = graph_from_config(cls, spec["config"], custom_objects)
        elif spec["class_name"] == "Sequential":
            # Sequential subclasses Model: found among cls's subclasses (no import back up)
            sequential = next(c for c in cls.__subclasses__() if c.__name__ == "Sequential")
            layer = sequential.from_config(spec["config"], custom_objects)
        else:
            layer = deserialize({"class_name": spec["class_name"], "config": spec["config"]},
                                custom_objects)
        created[spec["name"]] = layer
        pending += [(layer, node) for node in spec.get("inbound_nodes", [])]
    # call the layers in an order where their inputs exist (Keras 2 re-runs until all are done); a
    # layer's calls keep their order, so its node k is the config's node k (a layer shared at
    # different depths: keras-team/keras#11159)
    while pending:
        progress = False
        rest: list = []
        blocked: set = set()
        for layer, node in pending:
            if id(layer) in blocked:
                rest.append((layer, node))
                continue
            try:
                args = [created[n[0]].get_output_at(n[1]) for n in node]
                args = [a[item[2]] if isinstance(a, list) else a for a, item in zip(args, node)]
            except (IndexError, ValueError, AttributeError):
                rest.append((layer, node))
                blocked.add(id(layer))
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
