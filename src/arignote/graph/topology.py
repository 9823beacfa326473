"""The node order of ``Model(inputs, outputs)`` (Keras 2 ``engine/network.py``'s depth-first map) and
the checks Keras makes on the way: inputs come from ``Input``, no disconnected tensor, no cycle,
unique layer names. Also which inputs data is fed to (all but ``Input(tensor=...)`` ones).

Example::

    >>> from arignote.layers import Input, Dense
    >>> x = Input(shape=(4,)); y = Dense(2)(x)
    >>> order, layers = topology([x], [y])
    >>> [type(l).__name__ for l in layers], feed_inputs([x]) == [x]
    (['InputLayer', 'Dense'], True)
"""

from __future__ import annotations

from typing import Any

from arignote.graph.tensor import KerasTensor

__all__ = ["topology", "is_fixed", "feed_inputs"]


def topology(inputs: list[KerasTensor], outputs: list[KerasTensor],
             depths: dict | None = None) -> tuple[list, list]:
    """``(nodes in execution order, layers in Keras order)``; raises Keras 2's graph errors.
    ``depths``: filled with each layer's Keras depth by ``id`` (0: the output layers)."""
    if len({id(x) for x in inputs}) != len(inputs):
        raise ValueError("The list of inputs passed to the model is redundant. All inputs should only appear "
                         f"once. Found: {inputs}")
    for x in inputs:
        layer = x._keras_history[0] if x._keras_history else None
        if layer is None or type(layer).__name__ != "InputLayer" or x._keras_history[1] != 0:
            raise ValueError("Input tensors to a Model must come from `arignote.layers.Input`. "
                             f"Received: {x} "
                             "(missing previous layer metadata)")
    order: list = []
    finished: set = set()
    in_progress: set = set()
    layer_index: dict = {}

    def visit(t: KerasTensor) -> None:
        if not isinstance(t, KerasTensor) or t._keras_history is None:
            raise ValueError(f"Output tensors to a Model must be the output of an arignote layer, got {t!r}")
        layer, node_index, _ = t._keras_history
        node = layer._inbound_nodes[node_index]
        if not node.inbound_layers and is_fixed(layer):  # Input(tensor=...): a source of its own
            if id(node) not in finished:
                layer_index.setdefault(id(layer), (len(layer_index), layer))
                finished.add(id(node))
                order.append(node)
            return
        if not node.inbound_layers:  # an Input that is not among the model's inputs
            raise ValueError(f"Graph disconnected: cannot obtain value for tensor {t} at layer "
                             f"\"{layer.name}\". The following previous layers were accessed without issue: "
                             f"{[lay.name for _, lay in sorted(layer_index.values(), key=lambda p: p[0])]}")
        if id(node) in in_progress:
            raise ValueError(f"The tensor {t} at layer \"{layer.name}\" is part of a cycle.")
        if id(node) in finished:
            return
        layer_index.setdefault(id(layer), (len(layer_index), layer))
        in_progress.add(id(node))
        for x in node.input_tensors:
            if x not in inputs:  # an input of the model stops the walk (it may be an inner node)
                visit(x)
            else:
                layer_index.setdefault(id(x._keras_history[0]), (len(layer_index), x._keras_history[0]))
        in_progress.discard(id(node))
        finished.add(id(node))
        order.append(node)

    for t in outputs:
        if t in inputs:
            layer_index.setdefault(id(t._keras_history[0]), (len(layer_index), t._keras_history[0]))
        else:
            visit(t)
    # depths as Keras 2: an output node has depth 0, a node feeding one at depth d is at d + 1
    depth: dict = {}
    layer_depth: dict = {}
    for node in reversed(order):
        d = max(depth.get(id(node), 0), layer_depth.get(id(node.outbound_layer), 0))
        layer_depth[id(node.outbound_layer)] = d
        depth[id(node)] = d
        for t in node.input_tensors:
            if t in inputs:
                continue
            inbound = t._keras_history[0]._inbound_nodes[t._keras_history[1]]
            depth[id(inbound)] = max(d + 1, depth.get(id(inbound), 0))
    top = max(layer_depth.values(), default=0)
    for x in inputs:
        layer_depth[id(x._keras_history[0])] = max(layer_depth.get(id(x._keras_history[0]), 0), top + 1)
    # check every tensor a node needs is computable from the inputs
    available = {id(x) for x in inputs}
    done_layers: list[str] = []
    for node in order:
        for t in node.input_tensors:
            if id(t) not in available:
                raise ValueError(f"Graph disconnected: cannot obtain value for tensor {t} at layer "
                                 f"\"{node.outbound_layer.name}\". The following previous layers were "
                                 f"accessed without issue: {done_layers}")
        available.update(id(t) for t in node.output_tensors)
        done_layers.append(node.outbound_layer.name)
    for t in outputs:
        if id(t) not in available:
            raise ValueError(f"Graph disconnected: cannot obtain value for output {t}")
    layers = [layer for _, layer in sorted(layer_index.values(), key=lambda p: (-layer_depth.get(id(p[1]), 0),
                                                                               p[0]))]
    if depths is not None:
        depths.update({id(layer): layer_depth.get(id(layer), 0) for layer in layers})
    names = [layer.name for layer in layers]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f'The name "{name}" is used {names.count(name)} times in the model. All layer '
                             "names should be unique.")
    return order, layers


def is_fixed(layer: Any) -> bool:
    """Whether ``layer`` is the ``InputLayer`` of an ``Input(tensor=...)``: an input with a tensor of its
    own, which the model feeds itself (Keras 2: not among ``_feed_inputs``)."""
    return getattr(layer, "fixed", False) is True


def feed_inputs(inputs: list[KerasTensor]) -> list[KerasTensor]:
    """The inputs data is given for (Keras 2 ``model._feed_inputs``): all but ``Input(tensor=...)`` ones."""
    return [x for x in inputs if not is_fixed(x._keras_history[0])]

