"""Keras 2 HDF5 files with wrapped and nested layers, both ways, against real Keras 2.3.1 files
(tests/fixtures/keras2/wrapped/, from scripts/make_keras2_wrapped_fixture.py, whose ``resave`` and
``check`` modes also had Keras 2.3.1 load arignote's saves of them: every prediction equal).

* ``Bidirectional(ConvLSTM2D(data_format='channels_first'), merge_mode='concat')`` joins the columns
  of the maps (Keras's ``axis=-1``): such a model loads channels-first as saved, not rebuilt
  channels-last, whether Keras or arignote wrote it; so does a model whose ``Concatenate``,
  ``Reshape``, ``Permute`` or ``TimeDistributed(Dense)`` behind ``TimeDistributed(Flatten())`` read
  the axes of channels-first maps.
* Keras 2.3.1 writes ``layer.weights``: trainable weights first at every level, so
  ``TimeDistributed(model with BatchNormalization)``, a nested model and a ``Bidirectional`` around
  a cell with a non-trainable weight list the moving statistics (or the cell's frozen weight) last;
  a frozen wrapper or model moves its weights, not their order.
"""

import importlib.util
import os

import h5py
import numpy as np
import pytest

from arignote.checkpoint import CheckpointError
from arignote.layers import BatchNormalization, Bidirectional, ConvLSTM2D, Dense, Input, TimeDistributed
from arignote.models import Model, Sequential, load_model
from arignote.saving import keras_config, layouts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2", "wrapped")
NAMES = ["bidir_cf", "td_bn", "nested_bn", "bidir_frozen_cell", "cf_axes", "td_flatten_cf"]


def _script():
    path = os.path.join(ROOT, "scripts", "make_keras2_wrapped_fixture.py")
    spec = importlib.util.spec_from_file_location("make_keras2_wrapped_fixture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OBJECTS = {"ScaledCell": _script().arignote_cell_class()}  # the user's cell, the same code as for Keras


def _fixture(name):
    data = np.load(os.path.join(HERE, name + ".npz"))
    xs = [data[f"x_{i}"] for i in range(sum(k.startswith("x_") for k in data.files))]
    ys = [data[f"y_{i}"] for i in range(sum(k.startswith("y_") for k in data.files))]
    return xs, ys


def _predict(model, xs):
    got = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
    return got if isinstance(got, list) else [got]


def _groups(path):
    """layer name -> its arrays in the file's order."""
    with h5py.File(path, "r") as f:
        g = f["model_weights"]
        out = {}
        for lname in g.attrs["layer_names"]:
            lname = lname.decode() if isinstance(lname, bytes) else str(lname)
            names = [n.decode() if isinstance(n, bytes) else str(n) for n in g[lname].attrs["weight_names"]]
            out[lname] = [np.asarray(g[lname][n]) for n in names]
        return out


@pytest.mark.parametrize("name", NAMES)
def test_a_keras_2_3_1_file_predicts_as_keras_and_round_trips(name, tmp_path):
    xs, ys = _fixture(name)
    model = load_model(os.path.join(HERE, name + ".h5"), custom_objects=OBJECTS)
    got = _predict(model, xs)
    assert len(got) == len(ys)
    for g, y in zip(got, ys):
        np.testing.assert_allclose(g, y, rtol=1e-5, atol=1e-5)
    path = str(tmp_path / "ours.h5")
    model.save(path)
    again = load_model(path, custom_objects=OBJECTS)
    for g, y in zip(_predict(again, xs), ys):
        np.testing.assert_allclose(g, y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_what_we_write_lists_every_group_in_keras_s_order(name, tmp_path):
    # the same model, saved by Keras and by arignote: the same arrays in the same order in every group
    # (a Theano file's kernels are stored for true convolution: flipped, here every rank-4 array)
    keras_path = os.path.join(HERE, name + ".h5")
    model = load_model(keras_path, custom_objects=OBJECTS)
    path = str(tmp_path / "ours.h5")
    model.save(path)
    theirs, ours = _groups(keras_path), _groups(path)
    assert list(ours) == list(theirs)
    for lname in theirs:
        assert len(ours[lname]) == len(theirs[lname]), lname
        for i, (a, b) in enumerate(zip(ours[lname], theirs[lname])):
            want = layouts.flip_kernel(b) if b.ndim == 4 else b
            np.testing.assert_array_equal(a, want, err_msg=f"{name}: {lname} weight {i}")


def test_timedistributed_model_lists_the_moving_statistics_last():
    # what Keras 2.3.1 wrote (tests/fixtures/keras2/wrapped: td_bn.npz, its model.weights)
    names = [str(n) for n in np.load(os.path.join(HERE, "td_bn.npz"))["weight_names"]]
    assert names[:8] == ["live_d1/kernel", "live_d1/bias", "live_bn/gamma", "live_bn/beta", "live_d2/kernel",
                         "live_d2/bias", "live_bn/moving_mean", "live_bn/moving_variance"]
    inner = Sequential([Dense(4, input_shape=(3,), name="d1"), BatchNormalization(name="bn"),
                        Dense(2, name="d2")])
    written = layouts.to_file(TimeDistributed(inner, name="td"))[0]
    assert [n.split("/", 1)[1] for n in written] == ["d1/kernel:0", "d1/bias:0", "bn/gamma:0", "bn/beta:0",
                                                     "d2/kernel:0", "d2/bias:0", "bn/moving_mean:0",
                                                     "bn/moving_variance:0"]


def test_a_frozen_bidirectional_keeps_each_direction_s_order():
    names = [str(n) for n in np.load(os.path.join(HERE, "bidir_frozen_cell.npz"))["weight_names"]]
    live = [n.split("/", 2)[1:] for n in names if n.startswith("bi_live/")]
    frozen = [n.split("/", 2)[1:] for n in names if n.startswith("bi_frozen/")]
    assert [w for _, w in live] == ["kernel", "recurrent_kernel"] * 2 + ["scale"] * 2  # trainable first
    assert [w for _, w in frozen] == ["kernel", "recurrent_kernel", "scale"] * 2  # each direction whole
    model = load_model(os.path.join(HERE, "bidir_frozen_cell.h5"), custom_objects=OBJECTS)
    orders = {layer.name: [i for i, _ in layouts.keras_order(layer)] for layer in model.layers}
    # its get_weights(): kernel, recurrent_kernel, scale per direction (Keras's layer.weights of the
    # cell, trainable first, though it adds scale first); the file: both directions' trainable first
    assert orders["bi_live"] == [0, 1, 3, 4, 2, 5]
    assert orders["bi_frozen"] == [0, 1, 2, 3, 4, 5]


def test_a_bidirectional_concatenating_channels_first_maps_stays_channels_first(capsys):
    xs, ys = _fixture("bidir_cf")
    model = load_model(os.path.join(HERE, "bidir_cf.h5"))
    line = capsys.readouterr().out
    assert "channels_first layers kept as saved" in line
    assert "rebuilt channels_last" not in line and "Dense weights after Flatten" not in line
    by_name = {layer.name: layer for layer in model.layers}
    assert by_name["bi_last"].forward_layer.data_format == "channels_first"
    assert model.input_shape == (None, 3, 2, 5, 5)  # Keras's input, as saved
    assert [y.shape for y in ys] == [(2, 3, 2, 5, 10), (2, 2, 3, 10), (2, 3)]  # Keras joined the columns


def test_our_own_channels_first_concat_bidirectional_loads_back(tmp_path):
    rng = np.random.RandomState(3)
    inp = Input((3, 2, 5, 5))
    out = Bidirectional(ConvLSTM2D(2, 3, padding="same", data_format="channels_first"), name="bi")(inp)
    model = Model(inp, out)
    x = rng.uniform(-1, 1, (2, 3, 2, 5, 5)).astype("float32")
    want = model.predict(x, verbose=0)
    assert want.shape == (2, 2, 5, 10)
    path = str(tmp_path / "bi.h5")
    model.save(path)
    np.testing.assert_allclose(load_model(path).predict(x, verbose=0), want, rtol=1e-6, atol=1e-6)


def test_a_lone_concatenating_bidirectional_cannot_be_rebuilt_channels_last():
    # layer by layer there is no model to keep channels-first: an error, never a silent channel join
    spec = {"class_name": "Bidirectional", "config": {"name": "bi", "merge_mode": "concat", "layer": {
        "class_name": "ConvLSTM2D",
        "config": {"name": "c", "filters": 2, "kernel_size": [3, 3], "data_format": "channels_first"}}}}
    with pytest.raises(ValueError, match=r"layer 'bi' \(Bidirectional\): 'concat' joins the last axis"):
        keras_config.layer_from_keras(spec, keras_config.Conversion())
    model = {"class_name": "Sequential", "config": {"layers": [spec]}}
    assert keras_config.channels_first_blockers(model) == ["bi"]
    spec["config"]["merge_mode"] = "sum"
    assert keras_config.channels_first_blockers(spec) == []
    out = keras_config.layer_from_keras(spec, keras_config.Conversion())
    assert out["config"]["layer"]["config"]["data_format"] == "channels_last"


@pytest.mark.parametrize("name, why", [
    ("cf_axes", "cat, reshape, perm"),
    ("td_flatten_cf", "td_dense"),
])
def test_layers_reading_channels_first_axes_keep_the_model_channels_first(name, why, capsys):
    xs, ys = _fixture(name)
    model = load_model(os.path.join(HERE, name + ".h5"))
    line = capsys.readouterr().out
    assert "kept as saved" in line and "rebuilt channels_last" not in line
    with pytest.raises(CheckpointError, match=f"cannot rebuild this channels_first model: {why} read"):
        load_model(os.path.join(HERE, name + ".h5"), data_format="channels_last")
    assert model.input_shape[1:] == xs[0].shape[1:]  # Keras's channels-first input, as saved
    for g, y in zip(_predict(model, xs), ys):
        np.testing.assert_allclose(g, y, rtol=1e-5, atol=1e-5)


def _cf(cls, name, **config):
    return {"class_name": cls, "config": {"name": name, "data_format": "channels_first", **config}}


def _plain(cls, name, **config):
    return {"class_name": cls, "config": {"name": name, **config}}


def test_what_the_channels_last_rebuild_reproduces_is_still_rebuilt():
    seq = {"class_name": "Sequential", "config": {"layers": [
        _cf("Conv2D", "c"), _plain("BatchNormalization", "bn", axis=1), _plain("Activation", "a"),
        _cf("MaxPooling2D", "p"), _plain("Flatten", "f"), _plain("Dropout", "drop"),
        _plain("Dense", "d")]}}
    assert keras_config.channels_first_blockers(seq) == []

    def blockers(*layers):
        model = {"class_name": "Sequential", "config": {"layers": list(layers)}}
        return keras_config.channels_first_blockers(model)

    assert blockers(_cf("Conv2D", "c"), _plain("BatchNormalization", "bn3", axis=3)) == ["bn3"]
    assert blockers(_cf("Conv2D", "c"), _plain("Dense", "dense")) == ["dense"]  # on the columns
    assert blockers(_cf("Conv2D", "c"), _plain("Concatenate", "cat", axis=1)) == ["cat"]
    assert blockers(_cf("Conv2D", "c"), _plain("GlobalAveragePooling2D", "g")) == ["g"]  # channels_last
    # a Flatten of channels-first maps is reordered for a Dense right behind it, nothing else
    assert blockers(_cf("Conv2D", "c"), _plain("Flatten", "f"), _plain("Reshape", "r")) == ["r"]
    # a channels_first layer reading a tensor no channels_first layer (or input) made
    assert blockers(_plain("Dense", "d"), _plain("Reshape", "r"), _cf("Conv2D", "c")) == ["c"]
    spec, conversion = keras_config.model_from_keras(seq)  # as saved, unless asked
    assert conversion.as_saved and not conversion.channels_first
    assert spec["config"]["layers"][0]["config"]["data_format"] == "channels_first"
    spec, conversion = keras_config.model_from_keras(seq, data_format="channels_last")
    assert conversion.channels_first and not conversion.kept_channels_first
    assert spec["config"]["layers"][0]["config"]["data_format"] == "channels_last"


@pytest.mark.parametrize("name", ["cf_axes", "td_flatten_cf", "bidir_cf"])
def test_channels_first_json_and_weights_predict_what_keras_predicted(name):
    """Keras 2.3.1's own JSON of a channels_first functional model (the file's model_config) and
    load_weights of its Theano file, in a script working channels-last: as Keras, the layers'
    data_format wins and the model predicts Keras's numbers on the same channels-first arrays."""
    from arignote import backend as K
    from arignote.models import model_from_json

    assert K.image_data_format() == "channels_last"
    xs, ys = _fixture(name)
    path = os.path.join(HERE, name + ".h5")
    with h5py.File(path, "r") as f:
        text = f.attrs["model_config"]
    model = model_from_json(text.decode() if isinstance(text, bytes) else text)
    model.load_weights(path)
    for g, y in zip(_predict(model, xs), ys):
        np.testing.assert_allclose(g, y, rtol=1e-5, atol=1e-5)
