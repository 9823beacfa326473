"""A channels_first Keras 2 model loads as saved, as in Keras 2.3.1 (the layers' config wins over
``image_data_format``). Rebuilt channels_last on request (``data_format='channels_last'``), the
loader's one line and the input-shape check tell the user the transpose that fits each input: images
``(0, 2, 3, 1)``, sequences of images ``(0, 1, 3, 4, 2)``, volumes ``(0, 2, 3, 4, 1)``."""

import os

import numpy as np
import pytest

from arignote.models import load_model
from arignote.saving import hdf5, keras_config
from arignote.training.checks import check_input_shape

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "keras2")


def _input(name, shape):
    return {"name": name, "class_name": "InputLayer", "inbound_nodes": [],
            "config": {"name": name, "batch_input_shape": [None, *shape], "dtype": "float32"}}


def _layer(name, cls, source, **config):
    return {"name": name, "class_name": cls, "inbound_nodes": [[[source, 0, 0, {}]]],
            "config": {"name": name, **config}}


def test_each_input_gets_the_transpose_of_its_rank():
    cf = {"data_format": "channels_first"}
    lstm = {"class_name": "ConvLSTM2D",
            "config": {"name": "inner", "filters": 2, "kernel_size": [3, 3], **cf}}
    config = {"name": "m", "layers": [
        _input("images", (3, 8, 8)),
        _input("clips", (4, 3, 8, 8)),
        _input("volumes", (3, 4, 8, 8)),
        _input("both_ways", (4, 3, 8, 8)),
        _layer("conv", "Conv2D", "images", filters=2, kernel_size=[3, 3], **cf),
        _layer("clstm", "ConvLSTM2D", "clips", filters=2, kernel_size=[3, 3], **cf),
        _layer("conv3d", "Conv3D", "volumes", filters=2, kernel_size=[3, 3, 3], **cf),
        _layer("bi", "Bidirectional", "both_ways", layer=lstm, merge_mode="sum"),
    ], "input_layers": [], "output_layers": []}
    as_saved, kept = keras_config.functional_from_keras(config)
    assert kept.transposes == {} and kept.as_saved and not kept.channels_first
    assert as_saved["layers"][0]["config"]["batch_input_shape"] == [None, 3, 8, 8]
    out, conversion = keras_config.functional_from_keras(config, data_format="channels_last")
    assert conversion.transposes == {"images": (0, 2, 3, 1), "clips": (0, 1, 3, 4, 2),
                                     "volumes": (0, 2, 3, 4, 1), "both_ways": (0, 1, 3, 4, 2)}
    shapes = {s["name"]: s["config"]["batch_input_shape"]
              for s in out["layers"] if s["class_name"] == "InputLayer"}
    assert shapes == {"images": [None, 8, 8, 3], "clips": [None, 4, 8, 8, 3], "volumes": [None, 4, 8, 8, 3],
                      "both_ways": [None, 4, 8, 8, 3]}  # Bidirectional's input is a sequence too
    hint = hdf5._feed_hint(conversion)
    assert "images: x.transpose(0, 2, 3, 1)" in hint and "clips: x.transpose(0, 1, 3, 4, 2)" in hint


@pytest.mark.parametrize("path, want, wrong", [
    (os.path.join(FIX, "convrnn", "convlstm2d_first.h5"), "x.transpose(0, 1, 3, 4, 2)", "(0, 2, 3, 1)"),
    (os.path.join(FIX, "th_cf_conv.h5"), "x.transpose(0, 2, 3, 1)", "(0, 1, 3, 4, 2)"),
])
def test_the_loader_line_names_the_transpose_of_the_files_input(capsys, path, want, wrong):
    load_model(path, data_format="channels_last")
    line = [s for s in capsys.readouterr().out.splitlines() if "rebuilt channels_last" in s][0]
    assert want in line and wrong not in line


def test_the_input_check_suggests_the_transpose_for_sequences_of_images():
    with pytest.raises(ValueError, match=r"x\.transpose\(0, 1, 3, 4, 2\)$"):
        check_input_shape(np.zeros((2, 5, 3, 8, 8)), (5, 8, 8, 3))
    with pytest.raises(ValueError, match=r"clips\.transpose\(0, 2, 3, 4, 1\)$"):
        check_input_shape(np.zeros((2, 3, 5, 8, 8)), (5, 8, 8, 3), "clips")


@pytest.mark.parametrize("ordering", ["tf", "th"])
def test_a_channels_first_file_loads_as_saved_whatever_the_image_data_format(capsys, ordering):
    """Keras 2.3.1 reads each layer's data_format from the file: load_model and model_from_json +
    load_weights give a channels-first model that predicts what Keras predicted on the same
    channels-first arrays, whether the script works channels-last or channels-first."""
    from arignote import backend as K
    from arignote.models import model_from_json

    path = os.path.join(FIX, "th_cf_conv.h5")
    data = np.load(os.path.join(FIX, "th_cf_conv.npz"))
    K.set_image_dim_ordering(ordering)
    try:
        kept = load_model(path)
        line = capsys.readouterr().out
        assert "kept as saved" in line and "data_format='channels_last'" in line
        assert kept.input_shape[1:] == data["x"].shape[1:]  # (C, H, W)
        np.testing.assert_allclose(kept.predict(data["x"]), data["y"], rtol=1e-5, atol=1e-5)
        again = model_from_json(kept.to_json())
        again.load_weights(path)
        np.testing.assert_allclose(again.predict(data["x"]), data["y"], rtol=1e-5, atol=1e-5)
        rebuilt = load_model(path, data_format="channels_last")
        assert "rebuilt channels_last as asked by data_format='channels_last'" in capsys.readouterr().out
        np.testing.assert_allclose(rebuilt.predict(data["x"].transpose(0, 2, 3, 1)), data["y"],
                                   rtol=1e-5, atol=1e-5)
    finally:
        K.set_image_data_format("channels_last")


def test_a_bad_data_format_and_an_impossible_rebuild_are_refused():
    from arignote.checkpoint import CheckpointError

    path = os.path.join(FIX, "th_cf_conv.h5")
    with pytest.raises(CheckpointError, match=r"data_format='channels_lsat'; use None \(as saved\)"):
        load_model(path, data_format="channels_lsat")
    cf_axes = os.path.join(FIX, "wrapped", "cf_axes.h5")
    with pytest.raises(CheckpointError, match=r"cannot rebuild this channels_first model: cat, reshape"):
        load_model(cf_axes, data_format="channels_last")
