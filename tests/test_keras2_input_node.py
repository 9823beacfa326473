"""Keras 2.3.1's node of an ``Input``: the input tensor is its input and its output, with no inbound
layer (``test_node_construction``); the graph and its config are unchanged by it."""

from __future__ import annotations

import numpy as np

from arignote.layers import Dense, Input
from arignote.models import Model


def test_input_node_holds_its_tensor_in_and_out():
    a = Input(shape=(32,), name="input_a")
    layer, node_index, tensor_index = a._keras_history
    node = layer._inbound_nodes[node_index]
    assert node.inbound_layers == [] and node.node_indices == []
    assert node.input_tensors == [a] and node.output_tensors == [a]
    assert node.input_masks == [None] and node.output_masks == [None]
    assert node.input_shapes == [(None, 32)] and node.output_shapes == [(None, 32)]
    assert layer.input is a and layer.output is a
    model = Model(a, Dense(2, kernel_initializer="ones", bias_initializer="zeros")(a))
    assert model.get_config()["layers"][0]["inbound_nodes"] == []
    np.testing.assert_allclose(model.predict(np.ones((1, 32))), [[32.0, 32.0]])
