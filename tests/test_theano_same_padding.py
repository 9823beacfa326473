"""Keras 2's Theano ``padding='same'`` (even kernels, strides, pooling) from a file, through the model,
and back into files.

tests/fixtures/keras2/theano_same/ holds small models made by Keras 2.3.1 on Theano
(scripts/make_keras2_theano_same_fixture.py) with Keras's predictions. They must load with those
predictions, and a model saved again by arignote must be the Theano file Keras would have written
(``backend='theano'``, the same kernel arrays: real Keras 2.3.1 then predicts the same, checked with
the script's ``check`` step) and reload here with the same predictions.
"""

from __future__ import annotations

import os
import warnings

import h5py
import numpy as np
import pytest

from arignote import layers as L
from arignote.layers.convolutional.conv import theano_same_pads
from arignote.layers.pooling import theano_pool_pads
from arignote.models import Sequential, load_model, model_from_json
from arignote.saving import theano_padding

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2", "theano_same")
CASES = ["conv1d", "conv2d", "conv3d", "conv2d_cf", "separable", "separable1d", "pooling1d", "pooling2d",
         "pooling3d", "conv_transpose", "conv3d_transpose"]
ARRAYS = np.load(os.path.join(HERE, "theano_same.npz"))


def _case(name):
    return ARRAYS[name + "_x"], ARRAYS[name + "_y"]  # a channels_first file loads as saved, as in Keras


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _weights(path):
    """The weights group's backend, and its arrays per layer in the file's order (Keras on Theano
    names them ``sep/bias``, arignote ``sep/bias:0``: Keras reads them by position)."""
    with h5py.File(path, "r") as f:
        group = f["model_weights"] if "model_weights" in f else f
        out = {}
        for layer in group.attrs["layer_names"]:
            sub = group[_text(layer)]
            out[_text(layer)] = [np.asarray(sub[_text(n)]) for n in sub.attrs["weight_names"]]
        return _text(group.attrs["backend"]), out


@pytest.mark.parametrize("name", CASES)
def test_loads_with_keras_predictions(name):
    x, y = _case(name)
    model = load_model(os.path.join(HERE, name + ".h5"))
    np.testing.assert_allclose(model.predict(x), y, atol=1e-5)


@pytest.mark.parametrize("name", CASES)
def test_resaved_is_the_theano_file_and_reloads_the_same(name, tmp_path):
    x, y = _case(name)
    model = load_model(os.path.join(HERE, name + ".h5"))
    path = str(tmp_path / "again.h5")
    model.save(path)
    backend, arrays = _weights(path)
    assert backend == "theano"
    with h5py.File(path, "r") as f:
        assert f.attrs["backend"] in ("theano", b"theano")
    _, original = _weights(os.path.join(HERE, name + ".h5"))
    assert list(arrays) == list(original)
    for key, values in arrays.items():  # kernels flipped back as Theano's: what Keras on Theano reads
        assert len(values) == len(original[key]), key
        for value, was in zip(values, original[key]):
            np.testing.assert_array_equal(value, was, err_msg=key)
    np.testing.assert_allclose(load_model(path).predict(x), y, atol=1e-5)
    # weights only, into the same architecture built afresh (TensorFlow padding until loaded)
    weights = str(tmp_path / "weights.h5")
    model.save_weights(weights)
    fresh = model_from_json(model.to_json())
    fresh.load_weights(weights)
    np.testing.assert_allclose(fresh.predict(x), y, atol=1e-5)


def test_tensorflow_padded_model_is_written_as_before(tmp_path):
    model = Sequential([L.Conv1D(2, 2, padding="same", input_shape=(5, 1), name="c"),
                        L.MaxPooling1D(2, padding="same", name="p")])
    path = str(tmp_path / "tf.h5")
    model.save(path)
    backend, _ = _weights(path)
    assert backend == "tensorflow"
    assert not load_model(path).layers[0].theano_same_padding


def test_mixed_model_names_its_tensorflow_padded_layers(tmp_path):
    rng = np.random.default_rng(0)
    model = Sequential([L.Conv1D(2, 2, padding="same", input_shape=(7, 1), name="theano_c"),
                        L.Conv1D(2, 4, strides=2, padding="same", name="tf_c"),
                        L.AveragePooling1D(2, padding="same", name="tf_p")])
    model.set_weights([rng.uniform(-1, 1, w.shape).astype("float32") for w in model.get_weights()])
    model.layers[0].pad_as_theano()
    x = rng.uniform(-1, 1, (2, 7, 1)).astype("float32")
    want = model.predict(x)
    path = str(tmp_path / "mixed.h5")
    with pytest.warns(UserWarning, match=r"\['tf_c', 'tf_p'\] pad 'same' as TensorFlow"):
        model.save(path)
    with h5py.File(path, "r") as f:
        group = f["model_weights"]
        assert [n.decode() for n in group.attrs[theano_padding.TENSORFLOW_PADDED]] == ["tf_c", "tf_p"]
    again = load_model(path)
    assert [layer.theano_same_padding for layer in again.layers] == [True, False, False]
    np.testing.assert_allclose(again.predict(x), want, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for a file of one padding
        Sequential([L.Conv1D(2, 2, padding="same", input_shape=(7, 1))]).save(str(tmp_path / "one.h5"))


def test_theano_pads_by_hand():
    # even kernel: the odd zero before; stride 2, odd kernel: windows start one step before TensorFlow's
    assert theano_same_pads(5, 2, 1) == (1, 0)
    assert theano_same_pads(4, 3, 2) == (1, 0)
    assert theano_same_pads(4, 1, 2) == (0, 0)
    assert theano_same_pads(6, 2, 1, d=2) == (1, 1)
    assert theano_same_pads(None, 4, 1) == (2, 1)
    # pooling: k - 1 before (k - 2 for odd k > 2), as many windows as ceil(n / s)
    assert theano_pool_pads(4, 2, 2, 2) == (1, 0)
    assert theano_pool_pads(5, 5, 1, 2) == (3, 1)
    assert theano_pool_pads(6, 3, 2, 2) == (1, 0)
    assert theano_pool_pads(5, 1, 1, 3) == (0, 0)


def _optimizer_arrays(path):
    with h5py.File(path, "r") as f:
        group = f["optimizer_weights"]
        return [np.asarray(group[_text(n)]) for n in group.attrs["weight_names"]]


def test_theano_optimizer_slots_flip_with_their_kernels(tmp_path):
    """A Theano file's Adam slots of conv kernels are stored flipped like the kernels: the next step
    here lands where Keras 2.3.1's did (scripts/make_keras2_theano_optimizer_fixture.py), and saved
    again the slots are the file's own."""
    fixture = os.path.join(HERE, "adam.h5")
    data = np.load(os.path.join(HERE, "adam.npz"))
    model = load_model(fixture)
    path = str(tmp_path / "again.h5")
    model.save(path)
    assert _weights(path)[0] == "theano"
    for got, want in zip(_optimizer_arrays(path), _optimizer_arrays(fixture), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-7)
    for loaded in (model, load_model(path)):
        loaded.train_on_batch(data["x"], data["y"])
        for i, got in enumerate(loaded.get_weights()):
            want = data[f"after_{i}"]
            if want.ndim > 2:  # Keras holds the conv kernels for convolution
                want = np.flip(want, axis=tuple(range(want.ndim - 2)))
            np.testing.assert_allclose(got, want, atol=1e-6, err_msg=f"weight {i}")
