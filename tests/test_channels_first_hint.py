"""A channels_first Keras 2 model is rebuilt channels_last; the loader's one line and the input-shape
check tell the user the transpose that fits each input: images ``(0, 2, 3, 1)``, sequences of images
``(0, 1, 3, 4, 2)``, volumes ``(0, 2, 3, 4, 1)``."""

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
    out, conversion = keras_config.functional_from_keras(config)
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
    load_model(path)
    line = [s for s in capsys.readouterr().out.splitlines() if "rebuilt channels_last" in s][0]
    assert want in line and wrong not in line


def test_the_input_check_suggests_the_transpose_for_sequences_of_images():
    with pytest.raises(ValueError, match=r"x\.transpose\(0, 1, 3, 4, 2\)$"):
        check_input_shape(np.zeros((2, 5, 3, 8, 8)), (5, 8, 8, 3))
    with pytest.raises(ValueError, match=r"clips\.transpose\(0, 2, 3, 4, 1\)$"):
        check_input_shape(np.zeros((2, 3, 5, 8, 8)), (5, 8, 8, 3), "clips")


def test_a_script_working_channels_first_gets_the_file_as_saved(capsys):
    """While the configured image_data_format is channels_first (K.set_image_dim_ordering('th'), the
    flag or keras.json), a channels_first file loads as saved, as in Keras 2: no rebuild, no
    transpose, no notice about it; load_model and model_from_json alike. Otherwise it is rebuilt."""
    from arignote import backend as K
    from arignote.models import model_from_json

    path = os.path.join(FIX, "th_cf_conv.h5")
    x = np.random.default_rng(0).random((2, *load_model(path).input_shape[1:]), dtype=np.float32)
    rebuilt = load_model(path).predict(x)
    assert "rebuilt channels_last" in capsys.readouterr().out
    K.set_image_dim_ordering("th")
    try:
        kept = load_model(path)
        assert "channels_last" not in capsys.readouterr().out
        assert kept.input_shape[1:] == (x.shape[3], *x.shape[1:3])  # (C, H, W)
        np.testing.assert_allclose(kept.predict(x.transpose(0, 3, 1, 2)), rebuilt, rtol=1e-5, atol=1e-6)
        again = model_from_json(kept.to_json())  # refused while rebuilt: its weights need converting
        again.set_weights(kept.get_weights())
        np.testing.assert_allclose(again.predict(x.transpose(0, 3, 1, 2)), rebuilt, rtol=1e-5, atol=1e-6)
    finally:
        K.set_image_data_format("channels_last")
