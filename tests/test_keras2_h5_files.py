"""Real Keras 2.3.1 files (tests/fixtures/keras2, written by scripts/make_keras2_fixtures.py with the
Theano backend) load here and predict what Keras 2.3.1 predicted."""

from __future__ import annotations

import json
import os
import warnings

import h5py
import numpy as np
import pytest

from arignote.layers import Dense
from arignote.models import Sequential, load_model

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "keras2")

# files whose every layer arignote has today; the others must fail with an error naming what is missing
LOADABLE = [
    "seq_bidirectional",
    "seq_gru",
    "seq_simple_rnn",
    "seq_time_distributed",
    "seq_conv3d",
    "seq_conv2d_transpose",
    "seq_conv3d_transpose",
    "seq_separable",
    "seq_separable1d",
    "seq_prelu",
    "seq_dense",
    "seq_dense_sgd",
    "seq_conv2d",
    "seq_conv1d",
    "seq_embedding_lstm",
    "seq_gru_reset_after",
    "th_cf_conv",
    "th_cf_flatten_chw",
]
# a model fixture is a pair name.h5 + name.npz (other .npz files hold other fixtures' values)
ALL = sorted(f[:-4] for f in os.listdir(FIXTURES)
             if f.endswith(".npz") and os.path.exists(os.path.join(FIXTURES, f[:-4] + ".h5")))


def _inputs(name: str, model) -> list | np.ndarray:
    data = np.load(os.path.join(FIXTURES, name + ".npz"))
    x = data["x"] if "x" in data else [data["x0"], data["x1"]]
    return x, data["y"]  # a channels_first file takes Keras's channels-first arrays, as saved


@pytest.mark.parametrize("name", LOADABLE)
def test_keras2_file_predicts_what_keras2_predicted(name, capsys):
    model = load_model(os.path.join(FIXTURES, name + ".h5"))
    x, expected = _inputs(name, model)
    got = model.predict(x, verbose=0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(set(ALL) - set(LOADABLE)))
def test_keras2_file_with_layers_arignote_lacks_names_them(name):
    """Either the file loads and predicts as Keras did, or the error names the missing layer/argument."""
    path = os.path.join(FIXTURES, name + ".h5")
    try:
        model = load_model(path)
    except ValueError as err:
        with h5py.File(path, "r") as f:
            config = json.loads(f.attrs["model_config"])
        names = {spec["class_name"] for spec in config["config"].get("layers", [])} | {config["class_name"]}
        text = str(err)
        assert any(n in text for n in names) or "reset_after" in text, text
        return
    x, expected = _inputs(name, model)
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-5)


def test_theano_conv_file_says_so_in_one_line(capsys):
    load_model(os.path.join(FIXTURES, "seq_conv2d.h5"))
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("arignote: ")]
    assert len(lines) == 1
    assert "theano backend" in lines[0] and "kernels flipped" in lines[0] and "seq_conv2d.h5" in lines[0]


def test_channels_first_file_says_so_and_reorders_dense_when_rebuilt(capsys):
    path = os.path.join(FIXTURES, "th_cf_flatten_chw.h5")
    assert load_model(path).expected_input_shape() == (2, 5, 4)  # (C, H, W), as saved
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("arignote: ")]
    assert len(line) == 1 and "kept as saved" in line[0] and "reordered" not in line[0]
    model = load_model(path, data_format="channels_last")
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("arignote: ")]
    assert (
        len(line) == 1 and "channels_last" in line[0] and "Dense weights after Flatten reordered" in line[0]
    )
    assert model.expected_input_shape() == (5, 4, 2)  # (C, H, W) = (2, 5, 4) in the file
    data = np.load(os.path.join(FIXTURES, "th_cf_flatten_chw.npz"))
    np.testing.assert_allclose(model.predict(data["x"].transpose(0, 2, 3, 1), verbose=0), data["y"],
                               rtol=1e-5, atol=1e-5)


def test_theano_flip_is_needed_for_the_prediction(monkeypatch):
    """Without the flip the Theano file predicts something else: the test above checks the mechanism."""
    from arignote.saving import layouts

    monkeypatch.setattr(layouts, "CONV_FLIP", {})
    model = load_model(os.path.join(FIXTURES, "seq_conv1d.h5"))
    x, expected = _inputs("seq_conv1d", model)
    assert np.abs(model.predict(x, verbose=0) - expected).max() > 1e-3


def test_keras2_file_compiles_with_its_training_config():
    model = load_model(os.path.join(FIXTURES, "seq_dense.h5"))
    assert model.compiled and type(model.optimizer).__name__ == "Adam"
    assert model.optimizer.lr == pytest.approx(0.01)
    assert model.loss == "mse"
    assert load_model(os.path.join(FIXTURES, "seq_dense.h5"), compile=False).compiled is False


def _kernel_grad(model, x, y):
    import torch

    module = model.module
    module.zero_grad()
    out = module(torch.as_tensor(x))
    loss = ((out - torch.as_tensor(y)) ** 2).mean()
    loss.backward()
    return module.layers[0].weight.grad.t().numpy().copy()  # Keras layout (in, units)


def test_keras2_adam_state_continues_training_as_keras_would():
    """The file's Adam moments and iteration count are restored: one more step from the loaded
    state equals Keras 2's Adam update computed by hand from m, v and t in the file."""
    path = os.path.join(FIXTURES, "seq_dense.h5")
    with h5py.File(path, "r") as f:
        group = f["optimizer_weights"]
        opt = {n.decode(): np.asarray(group[n.decode()]) for n in group.attrs["weight_names"]}
    rng = np.random.RandomState(0)
    x, y = rng.rand(4, 4).astype("float32"), rng.rand(4, 3).astype("float32")
    g = _kernel_grad(load_model(path, compile=False), x, y)
    model = load_model(path)
    w0 = model.get_weights()[0]
    model.train_on_batch(x, y)
    w1 = model.get_weights()[0]
    t = int(opt["Adam/iterations"]) + 1
    m = 0.9 * opt["training/Adam/m_0"] + 0.1 * g
    v = 0.999 * opt["training/Adam/v_0"] + 0.001 * g * g
    lr_t = 0.01 * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
    np.testing.assert_allclose(w1, w0 - lr_t * m / (np.sqrt(v) + 1e-7), rtol=1e-4, atol=1e-6)
    fresh_m, fresh_v = 0.1 * g, 0.001 * g * g  # what a freshly initialised optimizer would do at t=1
    fresh = w0 - 0.01 * np.sqrt(1 - 0.999) / (1 - 0.9) * fresh_m / (np.sqrt(fresh_v) + 1e-7)
    assert np.abs(w1 - fresh).max() > 1e-4


def test_keras2_sgd_momentum_state_continues_training_as_keras_would():
    path = os.path.join(FIXTURES, "seq_dense_sgd.h5")
    with h5py.File(path, "r") as f:
        group = f["optimizer_weights"]
        opt = {n.decode(): np.asarray(group[n.decode()]) for n in group.attrs["weight_names"]}
    rng = np.random.RandomState(0)
    x, y = rng.rand(4, 4).astype("float32"), rng.rand(4, 2).astype("float32")
    g = _kernel_grad(load_model(path, compile=False), x, y)
    model = load_model(path)
    w0 = model.get_weights()[0]
    model.train_on_batch(x, y)
    v = 0.9 * opt["training/SGD/moment_0"] - 0.1 * g  # Keras: v = momentum * v - lr * g; p += v
    np.testing.assert_allclose(model.get_weights()[0], w0 + v, rtol=1e-5, atol=1e-6)


def test_load_weights_from_keras2_weights_file_in_order():
    model = Sequential([Dense(5, activation="relu", input_shape=(4,)), Dense(3, activation="softmax")])
    model.load_weights(os.path.join(FIXTURES, "seq_dense_weights.h5"))
    x, expected = _inputs("seq_dense", model)
    # the weights file was saved after the same training step as seq_dense.h5
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)


def test_load_weights_by_name_and_skip_mismatch():
    path = os.path.join(FIXTURES, "seq_dense_weights.h5")
    ref = load_model(os.path.join(FIXTURES, "seq_dense.h5"))
    model = Sequential(
        [
            Dense(5, activation="relu", input_shape=(4,), name="dense_1"),
            Dense(7, name="dense_2"),
            Dense(3, name="other"),
        ]
    )
    before = model.get_weights()
    with pytest.raises(ValueError, match="dense_2"):
        model.load_weights(path, by_name=True)
    with pytest.warns(UserWarning, match="Skipping loading of weights for layer dense_2"):
        model.load_weights(path, by_name=True, skip_mismatch=True)
    after = model.get_weights()
    np.testing.assert_array_equal(after[0], ref.get_weights()[0])  # dense_1 loaded by name
    np.testing.assert_array_equal(after[2], before[2])  # dense_2 skipped
    np.testing.assert_array_equal(after[4], before[4])  # 'other' is not in the file
    with pytest.raises(ValueError, match="by_name"):
        model.load_weights(path, skip_mismatch=True)


def test_load_weights_in_order_counts_layers():
    model = Sequential([Dense(5, input_shape=(4,)), Dense(3), Dense(2)])
    with pytest.raises(ValueError, match="containing 2 layers into a model with 3 layers"):
        model.load_weights(os.path.join(FIXTURES, "seq_dense_weights.h5"))


def test_fixture_files_are_h5py2_style_keras_files():
    """The generator writes attributes as Keras 2 under h5py 2 did (fixed-length byte strings)."""
    with h5py.File(os.path.join(FIXTURES, "seq_dense.h5"), "r") as f:
        assert isinstance(f.attrs["model_config"], bytes)
        assert f["model_weights"].attrs["layer_names"].dtype.kind == "S"
        assert f.attrs["backend"] == b"theano"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_model(os.path.join(FIXTURES, "seq_dense.h5"))


@pytest.mark.parametrize("name", ["th_cf_conv", "th_cf_flatten_chw"])
def test_keras2_channels_first_json_and_weights_predict_what_keras2_predicted(name):
    """Keras 2.3.1's own model JSON (the file's model_config, what its to_json wrote) + load_weights of
    its Theano file, in a script working channels-last: the model stays channels-first as in Keras."""
    from arignote import backend as K
    from arignote.models import model_from_json

    assert K.image_data_format() == "channels_last"
    path = os.path.join(FIXTURES, name + ".h5")
    with h5py.File(path, "r") as f:
        text = f.attrs["model_config"]
    model = model_from_json(text.decode() if isinstance(text, bytes) else text)
    model.load_weights(path)
    x, expected = _inputs(name, model)
    assert model.input_shape[1:] == x.shape[1:]  # (C, H, W), as saved
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-5)
