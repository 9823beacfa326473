"""The functional API (issue 13 item 1, 3): symbolic tensors, Model(inputs, outputs) compiled into one
torch module, multi-input/multi-output training with per-output losses, shared layers, nested models,
masks, config round trip, subclassed models, add_loss and regularization."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote import regularizers
from arignote.graph.network import GraphModule
from arignote.layers import (
    Dense,
    Embedding,
    Flatten,
    GlobalAveragePooling1D,
    Input,
    Lambda,
    concatenate,
)
from arignote.models import Model, Sequential

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _fresh_names():
    K.clear_session()
    yield


def two_in_two_out():
    a, b = Input(shape=(3,), name="a"), Input(shape=(2,), name="b")
    h = concatenate([a, b])
    o1, o2 = Dense(1, name="o1")(h), Dense(4, activation="softmax", name="o2")(h)
    return Model(inputs=[a, b], outputs=[o1, o2])


def test_symbolic_tensors_and_layer_bookkeeping():
    x = Input(shape=(None, 4), name="seq")
    assert x.shape == (None, None, 4) and x._keras_shape == x.shape and K.int_shape(x) == (None, None, 4)
    d = Dense(3)
    y = d(x)
    assert y.shape == (None, None, 3) and d.input is x and d.output is y
    assert d.input_shape == (None, None, 4)
    assert y._keras_history[0] is d and d._inbound_nodes[0].inbound_layers[0].name == "seq"
    y2 = d(Input(shape=(7, 4)))  # a second call: a second node
    assert d.get_output_at(1) is y2 and len(d._inbound_nodes) == 2
    with pytest.raises(AttributeError, match="multiple inbound nodes"):
        d.output  # noqa: B018
    from arignote.layers import InputSpec, Layer

    class Needs3D(Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.input_spec = InputSpec(ndim=3)

    with pytest.raises(ValueError, match="incompatible with layer needs3d_1: expected ndim=3, found ndim=2"):
        Needs3D()(Input(shape=(5,)))


def test_model_construction_positional_keyword_and_errors():
    x = Input(shape=(4,))
    y = Dense(2)(x)
    assert Model(x, y).output_shape == (None, 2)
    assert Model(inputs=x, outputs=y, name="m").name == "m"
    assert Model(input=x, output=y).input_shape == (None, 4)  # Keras 1 spellings Keras 2 accepted
    wrapped = Model(torch.nn.Linear(4, 2))  # a torch module still works
    assert isinstance(wrapped.module, torch.nn.Linear)
    with pytest.raises(TypeError, match="symbolic tensors"):
        Model(np.zeros(3), y)
    with pytest.raises(TypeError, match="symbolic tensors"):
        Model(x)  # no outputs
    with pytest.raises(ValueError, match="Graph disconnected"):
        Model(Input(shape=(4,)), y)
    with pytest.raises(ValueError, match="must come from"):
        Model(y, Dense(1)(y))


def test_graph_compiles_to_one_plain_module_run_in_order():
    model = two_in_two_out()
    module = model.module
    assert isinstance(module, GraphModule) and type(module).forward is GraphModule.forward
    # every layer with weights is a child module once; the step list is fixed at construction
    assert [type(m).__name__ for m in module.layers] == ["Concatenate", "Dense", "Dense"]
    assert len(module._plan) == 3 and set(dict(module.named_parameters())) == {
        "layers.1.weight", "layers.1.bias", "layers.2.weight", "layers.2.bias"}
    xa, xb = torch.randn(5, 3), torch.randn(5, 2)
    o1, o2 = module([xa, xb])
    d1 = model.get_layer("o1")
    torch.testing.assert_close(o1, torch.cat([xa, xb], 1) @ d1.weight.t() + d1.bias)
    packed = module(torch.cat([xa, xb], 1))  # what fit feeds: inputs side by side
    torch.testing.assert_close(packed, torch.cat([o1, o2], 1))


def test_multi_input_multi_output_fit_with_per_output_losses_and_metrics():
    model = two_in_two_out()
    model.compile("sgd", loss={"o1": "mse", "o2": "sparse_categorical_crossentropy"},
                  loss_weights=[2.0, 0.5], metrics={"o2": ["acc"]})
    assert model.metrics_names == ["loss", "o1_loss", "o2_loss", "o2_acc"]
    xa, xb = RNG.random((40, 3), dtype=np.float32), RNG.random((40, 2), dtype=np.float32)
    y1, y2 = RNG.random((40, 1), dtype=np.float32), RNG.integers(0, 4, 40)
    loss, l1, l2, acc = model.evaluate([xa, xb], [y1, y2], verbose=0, batch_size=40)
    o1, o2 = model.predict({"a": xa, "b": xb})
    assert o1.shape == (40, 1) and o2.shape == (40, 4)
    want1 = float(np.mean((o1 - y1) ** 2))
    want2 = float(np.mean(-np.log(o2[np.arange(40), y2])))
    assert l1 == pytest.approx(want1, rel=1e-4) and l2 == pytest.approx(want2, rel=1e-4)
    assert loss == pytest.approx(2.0 * want1 + 0.5 * want2, rel=1e-4)
    assert acc == pytest.approx(float(np.mean(o2.argmax(1) == y2)))
    hist = model.fit([xa, xb], {"o1": y1, "o2": y2}, epochs=3, batch_size=8, verbose=0,
                     validation_data=([xa, xb], [y1, y2]))
    assert set(hist.history) >= {"loss", "o1_loss", "o2_loss", "o2_acc", "val_loss", "val_o2_acc"}
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    with pytest.raises(ValueError, match="2 inputs"):
        model.predict([xa])


def test_shared_layers_nested_models_and_intermediate_outputs():
    base = Sequential([Dense(6, activation="relu", input_shape=(4,), name="h"), Dense(3, name="e")])
    a, b = Input(shape=(4,)), Input(shape=(4,))
    shared = Dense(2, name="shared")
    out = Lambda(lambda t: t[0] - t[1])([shared(base(a)), shared(base(b))])
    model = Model([a, b], out)
    assert [layer.name for layer in model.layers][2:] == [base.name, "shared", "lambda_1"]
    assert re.fullmatch(r"sequential_\d+", base.name)  # Keras 2 numbers unnamed models: sequential_1, ...
    assert model.count_params() == (4 * 6 + 6) + (6 * 3 + 3) + (3 * 2 + 2)  # shared weights counted once
    assert len(model.get_weights()) == 6
    xa = torch.randn(3, 4)
    y = model.predict([xa.numpy(), xa.numpy()])
    np.testing.assert_allclose(y, 0, atol=1e-6)  # same input on both branches, same weights
    inner = Model(base.input, base.get_layer("h").output)  # intermediate-output model
    assert inner.predict(xa.numpy()).shape == (3, 6)
    feat = Model(model.inputs, model.get_layer("shared").get_output_at(0))
    np.testing.assert_allclose(feat.predict([xa.numpy(), xa.numpy()]),
                               shared(base.module(xa)).detach().numpy(), rtol=1e-5)


def test_summary_has_connected_to_column(capsys):
    model = two_in_two_out()
    model.summary()
    out = capsys.readouterr().out
    assert "Connected to" in out and "a[0][0]" in out and "b[0][0]" in out
    assert "concatenate_1[0][0]" in out and "o2 (Dense)" in out and "Total params: 30" in out


def test_config_round_trip_in_keras2_layout():
    model = two_in_two_out()
    cfg = json.loads(json.dumps(model.get_config()))
    assert cfg["input_layers"] == [["a", 0, 0], ["b", 0, 0]] and cfg["output_layers"] == [["o1", 0, 0],
                                                                                         ["o2", 0, 0]]
    concat = next(spec for spec in cfg["layers"] if spec["class_name"] == "Concatenate")
    assert concat["inbound_nodes"] == [[["a", 0, 0, {}], ["b", 0, 0, {}]]]
    assert cfg["layers"][0]["class_name"] == "InputLayer" and cfg["layers"][0]["inbound_nodes"] == []
    clone = Model.from_config(cfg)
    clone.set_weights(model.get_weights())
    xs = [RNG.random((4, 3), dtype=np.float32), RNG.random((4, 2), dtype=np.float32)]
    for got, want in zip(clone.predict(xs), model.predict(xs)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_masks_travel_beside_tensors():
    tokens = Input(shape=(None,), dtype="int64")
    emb = Embedding(10, 3, mask_zero=True)(tokens)
    assert emb._keras_mask is not None and emb._keras_mask.shape == (None, None)
    pooled = GlobalAveragePooling1D()(emb)
    model = Model(tokens, pooled)
    assert model.module.masked
    x = np.array([[4, 5, 0, 0]])
    table = model.layers[1].get_weights()[0]
    np.testing.assert_allclose(model.predict(x)[0], table[[4, 5]].mean(0), rtol=1e-5)  # padding ignored
    fixed = Embedding(10, 3, mask_zero=True)(Input(shape=(4,)))
    with pytest.raises(TypeError, match="does not support masking"):
        Flatten()(fixed)  # Keras 2 refuses a mask reaching a layer that cannot use it


def test_subclassed_model_with_call():
    class MLP(Model):
        def __init__(self):
            super().__init__(name="mlp")
            self.hidden = Dense(8, activation="relu")
            self.out = Dense(2)

        def call(self, inputs):
            return self.out(self.hidden(inputs))

    model = MLP()
    model.compile("adam", "mse")
    x = RNG.random((16, 5), dtype=np.float32)
    model.fit(x, np.zeros((16, 2), np.float32), epochs=1, verbose=0)
    assert [layer.name for layer in model.layers] == ["dense_1", "dense_2"]
    assert [w.shape for w in model.get_weights()] == [(5, 8), (8,), (8, 2), (2,)]
    h = model.hidden
    np.testing.assert_allclose(model.predict(x), model.out(h(torch.tensor(x))).detach().numpy(), rtol=1e-5)


def test_regularization_and_add_loss_join_the_training_loss():
    x = RNG.random((16, 5), dtype=np.float32)
    inp = Input(shape=(5,))
    dense = Dense(2, kernel_regularizer=regularizers.l2(0.5))
    model = Model(inp, dense(inp))
    model.compile("sgd", "mse")
    y = np.zeros((16, 2), np.float32)
    pred = model.predict(x)
    penalty = 0.5 * float((dense.get_weights()[0] ** 2).sum())
    assert model.evaluate(x, y, verbose=0) == pytest.approx(float(np.mean(pred ** 2)) + penalty, rel=1e-4)
    # a symbolic add_loss (Keras 2.2's VAE) and compile(loss=None)
    inp = Input(shape=(5,))
    code = Dense(3)(inp)
    auto = Model(inp, Dense(5)(code))
    auto.add_loss(K.mean(K.square(code)))
    auto.compile("sgd", loss=None)
    codes = Model(inp, code).predict(x)
    assert auto.evaluate(x, verbose=0) == pytest.approx(float(np.mean(codes ** 2)), rel=1e-4)
    hist = auto.fit(x, epochs=3, verbose=0, batch_size=16)
    assert hist.history["loss"][-1] < hist.history["loss"][0]


def test_custom_loss_reads_graph_tensors_of_the_current_batch():
    inp = Input(shape=(4,))
    hidden = Dense(3)(inp)
    out = Dense(1)(hidden)
    seen = []

    def loss(y_true, y_pred):
        value = K.mean(K.square(hidden))  # a symbolic tensor of the model, as the Keras 2.0 VAE does
        seen.append(value)
        return K.mean(K.square(y_pred - y_true)) + value

    model = Model(inp, out)
    model.compile("sgd", loss)
    x = RNG.random((8, 4), dtype=np.float32)
    y = np.zeros((8, 1), np.float32)
    total = model.evaluate(x, y, verbose=0, batch_size=8)
    h = Model(inp, hidden).predict(x)
    assert isinstance(seen[-1], torch.Tensor)
    assert total == pytest.approx(float(np.mean(model.predict(x) ** 2)) + float(np.mean(h ** 2)), rel=1e-4)


def test_summary_of_a_chain_is_printed_as_keras2_prints_a_sequential(capsys):
    # Keras 2.3.1's print_summary treats a functional model whose layers form one chain (one node each,
    # one inbound layer each) as "sequential-like": no Connected to column. The text below is real
    # Keras 2.3.1's output for this model (trailing spaces stripped).
    from arignote.layers import Conv2D, MaxPooling2D

    inp = Input(shape=(24, 24, 3), name="input")
    x = Conv2D(8, (3, 3), activation="relu", padding="same", name="block1_conv1")(inp)
    x = Conv2D(8, (3, 3), activation="relu", padding="same", name="block1_conv2")(x)
    x = MaxPooling2D((2, 2), name="block1_pool")(x)
    x = Conv2D(16, (3, 3), activation="relu", padding="same", name="block2_conv1")(x)
    Model(inp, x, name="model_1").summary()
    out = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    rule, thin = "=" * 65, "_" * 65
    assert out[:17] == [
        'Model: "model_1"', thin,
        "Layer (type)                 Output Shape              Param #", rule,
        "input (InputLayer)           (None, 24, 24, 3)         0", thin,
        "block1_conv1 (Conv2D)        (None, 24, 24, 8)         224", thin,
        "block1_conv2 (Conv2D)        (None, 24, 24, 8)         584", thin,
        "block1_pool (MaxPooling2D)   (None, 12, 12, 8)         0", thin,
        "block2_conv1 (Conv2D)        (None, 12, 12, 16)        1168", rule,
        "Total params: 1,976", "Trainable params: 1,976", "Non-trainable params: 0"]
    # a layer used twice, or a layer with two inbound layers, is not a chain
    shared = Dense(4, name="twice")
    y = shared(shared(Input(shape=(4,))))
    lines = []
    Model(shared.get_input_at(0), y).summary(print_fn=lines.append)
    assert any("Connected to" in line for line in lines)
