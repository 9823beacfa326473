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


def test_layers_by_depth_as_keras():
    from arignote.layers import Concatenate, Embedding

    input1, input2 = Input(shape=(10,), name="input1"), Input(shape=(10,), name="input2")
    emb = Embedding(name="embedding", input_dim=5, output_dim=10)
    e1, e2 = emb(input1), emb(input2)
    d1, d2, d3 = Dense(3, name="d1"), Dense(5, name="d2"), Dense(6, name="d3")
    out = Dense(2, name="out")(Concatenate(name="cat")([e1, d3(d2(d1(e2)))]))
    model = Model([input1, input2], out)
    # Keras 2.3.1 on the same graph: the inputs share the deepest level, the shared embedding one above
    got = {d: [layer.name for layer in layers] for d, layers in model._layers_by_depth.items()}
    assert got == {0: ["out"], 1: ["cat"], 2: ["d3"], 3: ["d2"], 4: ["d1"], 5: ["embedding"],
                   6: ["input1", "input2"]}
