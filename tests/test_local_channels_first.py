"""Channels-first ``LocallyConnected2D`` (and ``LocallyConnected1D``) from real Keras 2.3.1 files.

tests/fixtures/keras2/local_cf/ (scripts/make_keras2_local_cf_fixture.py, Keras 2.3.1 on Theano) holds
models with ``LocallyConnected2D(data_format='channels_first')``: they load channels_first as saved
(the channels-last rebuild would have to re-lay their weights), with the file's weight arrays as they
are and Keras's predictions; saved again, the file holds the same architecture and arrays (so Keras
predicts the same: the script's ``check`` step). ``LocallyConnected1D`` reads ``(steps, channels)``
whatever its ``data_format``, as Keras 2.3.1's.
"""

from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pytest

from arignote import layers as L
from arignote.models import Sequential, load_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2", "local_cf")
ARRAYS = np.load(os.path.join(HERE, "local_cf.npz"))
CASES = ["lc2d_cf", "lc2d_cf_conv", "lc1d_cf"]


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _file(path):
    """``(layer configs by name, arrays per layer)`` of a Keras HDF5 model file."""
    with h5py.File(path, "r") as f:
        spec = json.loads(_text(f.attrs["model_config"]))
        group = f["model_weights"]
        arrays = {}
        for layer in group.attrs["layer_names"]:
            sub = group[_text(layer)]
            arrays[_text(layer)] = [np.asarray(sub[_text(n)]) for n in sub.attrs["weight_names"]]
    configs = {s["config"]["name"]: s for s in spec["config"]["layers"]}
    return configs, arrays


@pytest.mark.parametrize("name", CASES)
def test_loads_as_saved_with_keras_predictions(name, tmp_path):
    path = os.path.join(HERE, name + ".h5")
    model = load_model(path)
    configs, arrays = _file(path)
    for layer in model.layers:
        if type(layer).__name__ == "LocallyConnected2D":
            assert layer.data_format == "channels_first"
            for got, want in zip(layer.get_weights(), arrays[layer.name]):  # Keras's layout, as stored
                np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(model.predict(ARRAYS[name + "_x"]), ARRAYS[name + "_y"], atol=1e-5)

    again = str(tmp_path / "again.h5")
    model.save(again)
    configs2, arrays2 = _file(again)
    for layer_name, spec in configs.items():
        if spec["class_name"] == "LocallyConnected2D":
            assert configs2[layer_name]["config"]["data_format"] == "channels_first"
        for got, want in zip(arrays2.get(layer_name, []), arrays.get(layer_name, [])):
            if spec["class_name"].startswith("Locally"):
                np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(load_model(again).predict(ARRAYS[name + "_x"]), ARRAYS[name + "_y"],
                               atol=1e-5)


def _lc2d_reference(x, kernel, bias, k, s):
    """Keras 2.3.1's channels_first local_conv2d + bias_add, in plain NumPy."""
    n, c, h, w = x.shape
    rows, cols = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    out = np.zeros((n, rows, cols, kernel.shape[-1]), np.float64)
    for i in range(rows):
        for j in range(cols):
            patch = x[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].reshape(n, -1)
            out[:, i, j] = patch @ kernel[i * cols + j]
    return out.transpose(0, 3, 1, 2) + bias.reshape(kernel.shape[-1], rows, cols)


def test_channels_first_lc2d_by_hand():
    rng = np.random.default_rng(3)
    layer = L.LocallyConnected2D(3, (2, 2), strides=(2, 1), data_format="channels_first",
                                 input_shape=(2, 5, 4))
    model = Sequential([layer])
    kernel = rng.uniform(-1, 1, (2 * 3, 2 * 2 * 2, 3)).astype("float32")
    bias = rng.uniform(-1, 1, (2, 3, 3)).astype("float32")
    model.set_weights([kernel, bias])
    x = rng.uniform(-1, 1, (2, 2, 5, 4)).astype("float32")
    np.testing.assert_allclose(model.predict(x), _lc2d_reference(x, kernel, bias, (2, 2), (2, 1)), atol=1e-5)


def test_lc1d_ignores_data_format_as_keras():
    rng = np.random.default_rng(4)
    first = Sequential([L.LocallyConnected1D(2, 2, data_format="channels_first", input_shape=(5, 3))])
    last = Sequential([L.LocallyConnected1D(2, 2, input_shape=(5, 3))])
    weights = [rng.uniform(-1, 1, w.shape).astype("float32") for w in last.get_weights()]
    first.set_weights(weights)
    last.set_weights(weights)
    x = rng.uniform(-1, 1, (2, 5, 3)).astype("float32")
    np.testing.assert_array_equal(first.predict(x), last.predict(x))
    assert "data_format" not in first.layers[0].get_config()  # Keras 2.3.1 neither saves nor uses it
    with pytest.raises(ValueError, match="data_format must be"):
        L.LocallyConnected1D(2, 2, data_format="channels_middle")
