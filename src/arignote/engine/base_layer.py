"""Keras 2 ``keras.engine.base_layer``: ``Layer``, ``InputSpec``, ``Node``."""

from arignote.graph.node import Node
from arignote.layers.base import InputSpec, Layer

__all__ = ["Layer", "InputSpec", "Node"]
