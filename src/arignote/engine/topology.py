"""Keras 2 ``keras.engine.topology``: ``Layer``, ``InputSpec``, ``Node``, ``Input``, ``InputLayer``,
``Model`` (also as ``Network``) and ``get_source_inputs``.

Example::

    >>> from arignote.engine.topology import Input, get_source_inputs
    >>> x = Input(shape=(2,)); get_source_inputs(x) == [x]
    True
"""

from __future__ import annotations

from arignote.graph.node import Node
from arignote.graph.tensor import get_source_inputs
from arignote.layers.base import InputSpec, Layer
from arignote.layers.input_layer import Input, InputLayer
from arignote.models.model import Model

Network = Model

__all__ = ["Layer", "InputSpec", "Node", "Input", "InputLayer", "Model", "Network", "get_source_inputs"]
