"""Keras 2's ``keras.engine`` paths for custom-layer code: ``Layer``, ``InputSpec``, ``Input``,
``InputLayer``, ``Model``, ``Node`` and the submodules ``topology``, ``base_layer``, ``input_layer``,
``network``, ``training``, ``saving``, ``training_utils`` (the implementation lives in
:mod:`arignote.layers.base`,
:mod:`arignote.graph` and :mod:`arignote.models`).

Example::

    >>> from arignote.engine.topology import Layer, InputSpec
    >>> Layer.__module__
    'arignote.layers.base'
"""

from arignote.engine import base_layer, input_layer, network, saving, topology, training, training_utils
from arignote.engine.topology import Input, InputLayer, InputSpec, Layer, Model, Node, get_source_inputs

__all__ = ["Layer", "InputSpec", "Input", "InputLayer", "Model", "Node", "get_source_inputs", "topology",
           "base_layer", "input_layer", "network", "training", "saving", "training_utils"]
