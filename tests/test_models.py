"""Sequential/Model: building, summary, weights, save/load, training state."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from arignote import checkpoint, config
from arignote.layers import Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D, reset_name_counters
from arignote.models import Model, Sequential, load_model
from arignote.models.summary import format_shape
from arignote.optimizers import RMSprop


@pytest.fixture(autouse=True)
def _cpu():
    reset_name_counters()
    with config.override(device="cpu", print_active_device=False):
        yield


def seeds_cnn():
    m = Sequential()
    m.add(Conv2D(32, (3, 3), padding="same", input_shape=(32, 32, 3)))
    m.add(Activation("relu"))
    m.add(Conv2D(32, (3, 3)))
    m.add(Activation("relu"))
    m.add(MaxPooling2D(pool_size=(2, 2)))
    m.add(Dropout(0.25))
    m.add(Conv2D(64, (3, 3), padding="same"))
    m.add(Activation("relu"))
    m.add(Conv2D(64, (3, 3)))
    m.add(Activation("relu"))
    m.add(MaxPooling2D(pool_size=(2, 2)))
    m.add(Dropout(0.25))
    m.add(Flatten())
    m.add(Dense(512))
    m.add(Activation("relu"))
    m.add(Dropout(0.5))
    m.add(Dense(10))
    m.add(Activation("softmax"))
    return m


def _mlp():
    m = Sequential([Dense(8, activation="relu", input_dim=4), Dense(3, activation="softmax")])
    m.compile(RMSprop(lr=0.01), "sparse_categorical_crossentropy", metrics=["acc"])
    return m


def _data(n=32):
    rng = np.random.default_rng(0)
    return rng.random((n, 4), dtype=np.float32), rng.integers(0, 3, n)


# ----------------------------------------------------------------------------- building and summary


def test_sequential_add_pop_layers_and_shapes():
    m = Sequential(name="net")
    assert m.expected_input_shape() is None
    d1 = Dense(5, input_shape=(3,))
    m.add(d1)
    assert d1.built and m.output_shape == (None, 5)
    m.add(Dense(2))
    assert [type(l).__name__ for l in m.layers] == ["Dense", "Dense"]
    assert m.pop().units == 2 and len(m.layers) == 1
    with pytest.raises(TypeError, match="arignote layer"):
        m.add(torch.nn.Linear(2, 2))
    with pytest.warns(UserWarning, match=r"input_shape=\(7,\) .* ignored, as in Keras 2"):
        m.add(Dense(4, input_shape=(7,)))  # Keras 2 feeds it the previous output (callbacks_test's MLPs)


def test_sequential_builds_from_data_when_no_input_shape():
    m = Sequential([Dense(4), Dense(2)])
    with pytest.raises(ValueError, match="input shape"):
        m.summary()
    m.compile("sgd", "mse")
    m.fit(np.zeros((8, 6), "float32"), np.zeros((8, 2), "float32"), verbose=0)
    assert m.expected_input_shape() == (6,)
    assert m.get_weights()[0].shape == (6, 4)


def test_summary_matches_keras2_layout_for_the_seeds_cnn(capsys):
    m = seeds_cnn()
    m.summary()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "_" * 65
    assert out[1].rstrip() == "Layer (type)                 Output Shape              Param #"
    assert out[2] == "=" * 65
    assert out[3].rstrip() == "conv2d_1 (Conv2D)            (None, 32, 32, 32)        896"
    assert out[7].rstrip() == "conv2d_2 (Conv2D)            (None, 30, 30, 32)        9248"
    rows = [l for l in out if re.match(r"^\w+_\d+ \(", l)]
    assert len(rows) == 18
    assert rows[-1].startswith("activation_6 (Activation)") and "(None, 10)" in rows[-1]
    flat = next(l for l in out if l.startswith("flatten_1"))
    assert "(None, 2304)" in flat
    text = "\n".join(out)
    assert "Total params: 1,250,858" in text
    assert "Trainable params: 1,250,858" in text
    assert "Non-trainable params: 0" in text
    assert "Device" not in out[1]
    assert m.count_params() == 1_250_858


def test_summary_print_fn_and_wrapped_module():
    lines = []
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    Model(net).summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "0 (Linear)" in text and "Total params: 15" in text
    assert format_shape((None, 32, 32, 3)) == "(None, 32, 32, 3)"
    assert format_shape((None, 10)) == "(None, 10)"
    assert format_shape([(None, 2), (None, None)]) == "[(None, 2), (None, None)]"


def test_model_rejects_non_modules():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        Model("not a module")


# ----------------------------------------------------------------------------- weights


def test_get_set_weights_keras_layout_and_roundtrip():
    m = _mlp()
    w = m.get_weights()
    assert [a.shape for a in w] == [(4, 8), (8,), (8, 3), (3,)]
    new = [np.full_like(a, i + 1) for i, a in enumerate(w)]
    m.set_weights(new)
    assert all(np.array_equal(a, b) for a, b in zip(m.get_weights(), new))
    np.testing.assert_array_equal(m.layers[0].weight.detach().numpy(), np.full((8, 4), 1.0))
    with pytest.raises(ValueError, match="4 weight arrays"):
        m.set_weights(new[:2])


def test_wrapped_module_weights_in_state_dict_order():
    net = torch.nn.Linear(3, 2)
    m = Model(net)
    w = m.get_weights()
    assert [a.shape for a in w] == [(2, 3), (2,)]
    m.set_weights([np.ones((2, 3)), np.zeros(2)])
    assert net.weight.detach().sum().item() == 6.0
    with pytest.raises(ValueError, match="shape"):
        m.set_weights([np.ones((3, 2)), np.zeros(2)])


# ----------------------------------------------------------------------------- save / load


def test_save_and_load_model_checkpoint_extension(tmp_path):
    # any name but .h5/.hdf5/.keras (Keras 2 HDF5, tests/test_keras2_h5_*.py) gets arignote's checkpoint
    x, y = _data()
    m = _mlp()
    m.fit(x, y, epochs=2, verbose=0)
    path = tmp_path / "model.ckpt"
    m.save(str(path))
    assert checkpoint.is_checkpoint(str(path))
    torch.load(str(path), weights_only=True)  # plain data only
    m2 = load_model(str(path))
    np.testing.assert_allclose(m2.predict(x), m.predict(x), rtol=1e-6)
    assert [l.name for l in m2.layers] == [l.name for l in m.layers]
    assert m2.compiled and m2.metrics_names == ["loss", "acc"]
    # the optimizer state came along: one more identical step keeps the models identical
    m.fit(x, y, epochs=1, shuffle=False, verbose=0)
    m2.fit(x, y, epochs=1, shuffle=False, verbose=0)
    assert m2.optimizer.iterations == m.optimizer.iterations == 3
    for a, b in zip(m.get_weights(), m2.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_save_weights_load_weights(tmp_path):
    x, _ = _data()
    m = _mlp()
    path = str(tmp_path / "w.weights.h5")
    m.save_weights(path)
    m2 = _mlp()
    m2.load_weights(path)
    np.testing.assert_array_equal(m.predict(x), m2.predict(x))
    with pytest.raises(ValueError, match="weights only"):
        load_model(path)
    other = Sequential([Dense(5, input_dim=4)])
    with pytest.raises(ValueError, match="does not match"):
        other.load_weights(path)


def test_wrapped_module_save_says_what_to_do(tmp_path):
    net = torch.nn.Linear(3, 2)
    m = Model(net)
    path = str(tmp_path / "m.pt")
    m.save(path)
    with pytest.raises(ValueError, match=r"load_weights"):
        load_model(path)
    m2 = Model(torch.nn.Linear(3, 2))
    m2.load_weights(path)
    assert torch.equal(m2.module.weight, net.weight)


def test_corrupt_model_file_names_the_file(tmp_path):
    path = tmp_path / "bad.h5"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(checkpoint.CheckpointError, match="bad.h5"):
        load_model(str(path))


# ----------------------------------------------------------------------------- training state


def test_training_state_roundtrip_resumes_epoch():
    x, y = _data()
    m = _mlp()
    m.fit(x, y, epochs=2, verbose=0)
    state = m.training_state()
    assert state["epoch"] == 2 and set(state) >= {"module", "optimizer", "epoch"}
    torch.save(state, "/dev/null")
    m2 = _mlp()
    m2.fit(x, y, epochs=1, verbose=0)  # builds the optimizer
    m2.load_training_state(state)
    assert m2.resume_epoch == 2
    for a, b in zip(m.get_weights(), m2.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert m2.optimizer.iterations == m.optimizer.iterations
    h = m2.fit(x, y, epochs=3, verbose=0)
    assert h.epoch == [2]


def test_model_device_and_module():
    m = _mlp()
    assert isinstance(m.module, torch.nn.Module)
    m.fit(*_data(), verbose=0)
    assert m.device == torch.device("cpu")
