"""Keras 2 ``keras.engine.input_layer``: ``Input``, ``InputLayer``."""

from arignote.layers.input_layer import Input, InputLayer

__all__ = ["Input", "InputLayer"]
