"""A Sequential model's configuration (``get_config``, ``to_json``; an .h5 ``model_config`` but for
its explicit InputLayer entry) as Keras 2.3.1 writes it: the layers the user added; checked against
what Keras 2.3.1 itself wrote (tests/fixtures/keras2/sequential_configs.json, written by
scripts/make_keras2_sequential_config_fixture.py). Files with an InputLayer entry first (tf.keras's,
arignote's) load."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from arignote.layers import Conv2D, Dense, Flatten, InputLayer
from arignote.models import Sequential, load_model, model_from_json
from arignote.saving.keras_config import with_batch_input_shape

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "sequential_configs.json").read_text())


def _build(case):
    if case == "input_shape":
        return Sequential([Dense(4, input_shape=(3,), name="d1"), Dense(2, name="d2")], name="s1")
    if case == "input_layer":
        model = Sequential(name="s2")
        model.add(InputLayer(input_shape=(3,), name="inp"))
        model.add(Dense(4, name="d1"))
        return model
    if case == "add_then_fit":
        model = Sequential(name="s3")
        model.add(Dense(4, name="d1"))
        model.add(Dense(2, name="d2"))
        model.compile("sgd", "mse")
        model.fit(np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32"), verbose=0)
        return model
    if case == "add_unbuilt":
        model = Sequential(name="s4")
        model.add(Dense(4, name="d1"))
        return model
    if case == "nested":
        inner = Sequential([Dense(4, input_shape=(3,), name="in_d")], name="inner")
        return Sequential([inner, Dense(2, name="top")], name="outer")
    assert case == "conv"
    return Sequential([Conv2D(2, 3, input_shape=(5, 5, 1), name="c"), Flatten(name="f"),
                       Dense(3, activation="softmax", name="d")], name="s5")


def _keyed(spec):
    """The JSON text with its keys in order (Keras's order is what a diff of two files shows)."""
    return json.dumps({k: v for k, v in spec.items() if k != "backend"})


@pytest.mark.parametrize("case", ["input_shape", "add_then_fit", "add_unbuilt", "nested", "conv"])
def test_to_json_is_what_keras2_writes(case):
    model = _build(case)
    ours = json.loads(model.to_json())
    assert _keyed(ours) == _keyed(FIXTURE[case])
    assert model.get_config() == FIXTURE[case]["config"]  # get_config is the same dict (Keras 2.3.1)


def test_input_layer_start_writes_the_shape_on_the_first_layer():
    # Keras 2.3.1 writes no shape at all for this model, and then cannot load its own .h5 ("a weight
    # file containing 1 layers into a model with 0 layers"): arignote writes the shape where Keras
    # writes a declared input_shape, and otherwise what Keras writes
    keras = FIXTURE["input_layer"]
    first = keras["config"]["layers"][0]["config"]
    assert "batch_input_shape" not in first and "build_input_shape" not in keras["config"]
    expected = dict(keras)
    rest = {k: v for k, v in first.items() if k not in ("name", "trainable")}
    config = {"name": "d1", "trainable": True, "batch_input_shape": [None, 3], **rest}
    expected["config"] = {**keras["config"], "layers": [{"class_name": "Dense", "config": config}]}
    model = _build("input_layer")
    assert _keyed(json.loads(model.to_json())) == _keyed(expected)
    rebuilt = model_from_json(model.to_json())
    assert rebuilt.input_shape == (None, 3) and [layer.name for layer in rebuilt.layers] == ["d1"]


def test_h5_model_config_is_what_keras2_writes_with_the_input_as_an_input_layer(tmp_path):
    """A file's config is Keras 2.3.1's but for the input, an explicit InputLayer entry (tf.keras's
    form): Keras 2.3.1 reads it (scripts/check_keras2_reads_ours.py), and Keras 3's legacy loader
    reads ``batch_input_shape`` right only there."""
    model = _build("input_shape")
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        ours = json.loads(f.attrs["model_config"])
    entry, first, *rest = ours["config"]["layers"]
    assert entry["class_name"] == "InputLayer" and "batch_input_shape" not in first["config"]
    shape = entry["config"]["batch_input_shape"]
    folded = {**first, "config": with_batch_input_shape(first["config"], shape)}
    assert _keyed({**ours, "config": {**ours["config"], "layers": [folded, *rest]}}) == \
        _keyed(FIXTURE["h5_model_config"])
    assert [layer.name for layer in load_model(path).layers] == [s["config"]["name"] for s in [first, *rest]]


@pytest.mark.parametrize("case", sorted(set(FIXTURE) - {"h5_model_config"}))
def test_keras2_json_loads(case):
    model = model_from_json(json.dumps(FIXTURE[case]))
    names = [layer.name for layer in model.layers]
    assert names == [s["config"]["name"] for s in FIXTURE[case]["config"]["layers"]]
    expected = {"input_shape": (None, 2), "add_then_fit": (None, 2), "nested": (None, 2), "conv": (None, 3),
                "input_layer": None, "add_unbuilt": None}[case]
    assert model.output_shape == expected


def _old_style(spec, input_name):
    """What arignote wrote before: an InputLayer entry first, the shape taken off the first layer."""
    layers = [dict(s) for s in spec["config"]["layers"]]
    first = dict(layers[0]["config"])
    shape = first.pop("batch_input_shape")
    layers[0] = {**layers[0], "config": first}
    entry = {"class_name": "InputLayer",
             "config": {"batch_input_shape": shape, "dtype": "float32", "sparse": False, "name": input_name}}
    return {**spec, "config": {**spec["config"], "layers": [entry, *layers],
                               "build_input_shape": shape}}


@pytest.mark.parametrize("input_name", ["c_input", "input_1"])  # arignote's / tf.keras's explicit one
def test_older_json_and_h5_with_an_input_layer_entry_still_load(tmp_path, input_name):
    model = _build("conv")
    x = np.random.RandomState(0).uniform(-1, 1, (2, 5, 5, 1)).astype("float32")
    old = _old_style(json.loads(model.to_json()), input_name)
    rebuilt = model_from_json(json.dumps(old))
    assert [layer.name for layer in rebuilt.layers] == ["c", "f", "d"]
    assert rebuilt.input_shape == (None, 5, 5, 1) and rebuilt.output_shape == (None, 3)
    written = json.loads(rebuilt.to_json())["config"]["layers"]
    assert written[0]["config"]["batch_input_shape"] == [None, 5, 5, 1] and len(written) == 3

    path = str(tmp_path / "old.h5")
    model.save(path)
    with h5py.File(path, "r+") as f:
        f.attrs["model_config"] = np.bytes_(json.dumps(old).encode("utf8"))
    loaded = load_model(path)
    assert [layer.name for layer in loaded.layers] == ["c", "f", "d"]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=0, atol=1e-6)
