"""Keras 2 ``keras.engine.topology``: ``Layer``, ``InputSpec``, ``Node``, ``Input``, ``InputLayer``,
``Model`` (also as ``Network``) and ``get_source_inputs``.

Example::

    >>> from arignote.engine.topology import Input, get_source_inputs
    >>> x = Input(shape=(2,)); get_source_inputs(x) == [x]
    True
"""

from __future__ import annotations

from typing import Any

from arignote.graph.node import Node
from arignote.graph.tensor import KerasTensor
from arignote.layers.base import InputSpec, Layer
from arignote.layers.input_layer import Input, InputLayer
from arignote.models.model import Model

Network = Model

__all__ = ["Layer", "InputSpec", "Node", "Input", "InputLayer", "Model", "Network", "get_source_inputs"]


def get_source_inputs(tensor: Any, layer: Any = None, node_index: Any = None) -> list:
    """The ``Input`` tensors ``tensor`` was computed from (Keras 2 ``get_source_inputs``)."""
    if not isinstance(tensor, KerasTensor) or tensor._keras_history is None:
        raise ValueError(f"get_source_inputs takes a symbolic tensor of a model, got {tensor!r}")
    layer, node_index, _ = tensor._keras_history
    node = layer._inbound_nodes[node_index]
    if not node.inbound_layers:
        return node.output_tensors
    out: list = []
    for t in node.input_tensors:
        for source in get_source_inputs(t):
            if all(source is not o for o in out):
                out.append(source)
    return out
