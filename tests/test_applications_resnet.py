"""``arignote.applications.resnet`` and ``.resnet_v2`` against Keras 2.3.1 (keras_applications 1.0.8).

* Architecture: ``tests/fixtures/keras2/applications.json`` (``scripts/make_applications_fixture.py``,
  Keras 2.3.1 itself): parameter count, model name, output shape and, in ``model.layers`` order,
  the class and weight shapes of every layer with weights (what loading a Keras file pairs).
* Values: ``tests/fixtures/keras2/resnet_values.json`` (``scripts/make_resnet_values_fixture.py``):
  two small networks from keras_applications' own builder, every kind of ResNet/ResNetV2 block,
  with weights and input set by a formula repeated here; our builder must compute the same.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from arignote import applications, backend
from arignote.applications import _resnet_common, resnet, resnet_v2
from arignote.saving.layouts import flip_kernel

FIXTURES = Path(__file__).parent / "fixtures" / "keras2"
KERAS = json.loads((FIXTURES / "applications.json").read_text())["networks"]
VALUES = json.loads((FIXTURES / "resnet_values.json").read_text())

NETWORKS = {  # fixture key -> (builder, parameters keras.io lists for Keras 2.3 with the top)
    "resnet.ResNet50": (resnet.ResNet50, 25_636_712),
    "ResNet101": (resnet.ResNet101, 44_707_176),
    "ResNet152": (resnet.ResNet152, 60_419_944),
    "ResNet50V2": (resnet_v2.ResNet50V2, 25_613_800),
    "ResNet101V2": (resnet_v2.ResNet101V2, 44_675_560),
    "ResNet152V2": (resnet_v2.ResNet152V2, 60_380_648),
}


def _keras_shapes(model) -> list:
    return [
        [layer.__class__.__name__, [list(w.shape) for w in layer.get_weights()]]
        for layer in model.layers
        if layer.get_weights()
    ]


def _weighted_names(model) -> list:
    return [layer.name for layer in model.layers if layer.get_weights()]


def _names_md5(model) -> str:
    """What the fixture keeps of the deeper networks' names: their MD5, joined by newlines."""
    return hashlib.md5("\n".join(_weighted_names(model)).encode()).hexdigest()


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(NETWORKS))
def test_architecture_matches_keras_2(key):
    build, documented = NETWORKS[key]
    model = build(weights=None)
    assert model.count_params() == documented == KERAS[key]["params"]
    assert model.name == KERAS[key]["name"]
    assert list(model.output_shape) == [None, 1000] == KERAS[key]["output_shape"]
    assert _keras_shapes(model) == KERAS[key]["layers"]
    assert _names_md5(model) == KERAS[key]["names_md5"]


def test_the_modules_export_what_keras_2_3_1s_do():
    assert applications.ResNet101 is resnet.ResNet101 and applications.ResNet152V2 is resnet_v2.ResNet152V2
    # keras.applications.ResNet50 is the old resnet50 module's network, resnet.ResNet50 resnet_common's
    assert applications.ResNet50 is applications.resnet50.ResNet50 is not resnet.ResNet50
    decode = applications.imagenet_utils.decode_predictions
    assert resnet.decode_predictions is resnet_v2.decode_predictions is decode
    from arignote.applications.resnet_v2 import ResNet50V2, preprocess_input  # noqa: F401


def test_layer_names_and_order_of_resnet50_and_resnet50v2():
    """The names Keras 2's weight files are keyed by, in Keras 2.3.1's ``model.layers`` order (deepest
    branch first: a block's ``_1``..``_3`` convolutions come before its ``_0`` shortcut)."""
    model = resnet.ResNet50(weights=None)
    assert _weighted_names(model) == KERAS["resnet.ResNet50"]["names"]
    names = [layer.name for layer in model.layers]
    assert names[1:8] == ["conv1_pad", "conv1_conv", "conv1_bn", "conv1_relu", "pool1_pad", "pool1_pool",
                          "conv2_block1_1_conv"]
    assert names[13:19] == ["conv2_block1_0_conv", "conv2_block1_3_conv", "conv2_block1_0_bn",
                            "conv2_block1_3_bn", "conv2_block1_add", "conv2_block1_out"]
    assert "conv2_block2_0_conv" not in names and names[-4:] == ["conv5_block3_add", "conv5_block3_out",
                                                                  "avg_pool", "probs"]
    v2_model = resnet_v2.ResNet50V2(weights=None)
    assert _weighted_names(v2_model) == KERAS["ResNet50V2"]["names"]
    v2 = [layer.name for layer in v2_model.layers]
    assert v2[1:8] == ["conv1_pad", "conv1_conv", "pool1_pad", "pool1_pool", "conv2_block1_preact_bn",
                       "conv2_block1_preact_relu", "conv2_block1_1_conv"]
    assert "conv1_bn" not in v2 and "conv2_block3_2_pad" in v2 and "conv5_block3_0_conv" not in v2
    assert v2[-5:] == ["conv5_block3_out", "post_bn", "post_relu", "avg_pool", "probs"]
    # the strided last block of conv2..conv4 subsamples its identity shortcut with a 1x1 max pooling
    pools = [layer for layer in v2_model.layers if type(layer).__name__ == "MaxPooling2D"]
    assert [p.pool_size for p in pools] == [(3, 3), (1, 1), (1, 1), (1, 1)]
    assert [p.strides for p in pools] == [(2, 2)] * 4


def fill(model):
    """Weights by formula, as scripts/make_resnet_values_fixture.py sets them in Keras 2.3.1."""
    for k, layer in enumerate(layer for layer in model.layers if layer.get_weights()):
        values = []
        for j, w in enumerate(layer.get_weights()):
            wave = np.sin(0.37 * np.arange(w.size) + k + 0.5 * j).reshape(w.shape)
            if layer.__class__.__name__ == "BatchNormalization":
                wave = [1 + 0.2 * wave, 0.1 * wave, 0.1 * wave, 0.05 + 0.05 * np.abs(wave)][j]
            elif w.ndim > 1:
                wave = wave / np.sqrt(np.prod(w.shape[:-1]))
            else:
                wave = 0.1 * wave
            values.append(wave.astype("float32"))
        layer.set_weights(values)


def _image():
    return (np.arange(32 * 32 * 3).reshape(1, 32, 32, 3) * 0.731 % 255 / 127.5 - 1).astype("float32")


def _stacks(v2: bool):
    """The fixture's two stacks of 4 and 8 filters, from our ``stack1``/``stack2``."""
    c = _resnet_common
    if v2:  # conv2: its last block strides (1x1 max-pooled shortcut); conv3 keeps the size
        return lambda x: c.stack2(c.stack2(x, 4, 2, name="conv2"), 8, 2, stride1=1, name="conv3")
    return lambda x: c.stack1(c.stack1(x, 4, 2, stride1=1, name="conv2"), 8, 2, name="conv3")


def _tiny(v2: bool, input_shape=(32, 32, 3), name="tiny", weights=None):
    """The fixture's small network, built by our ``ResNet``, weights by formula (unless loaded)."""
    model = _resnet_common.ResNet(
        _stacks(v2), v2, True, name, include_top=False, weights=weights, input_shape=input_shape
    )
    if weights is None:
        fill(model)
    return model


@pytest.mark.parametrize("name", ["resnet", "resnet_v2"])
def test_blocks_compute_what_keras_2_computes(name):
    """Stem, projected and identity shortcuts, strides on the 1x1 (v1) or 3x3 convolution with a
    1x1 max-pooled shortcut (v2), pre-activation, ``post_bn``, epsilon 1.001e-5: Keras 2.3.1's numbers."""
    assert (VALUES["keras"], VALUES["backend"]) == ("2.3.1", "theano")
    expected = VALUES["outputs"][name]
    model = _tiny(name == "resnet_v2")
    for layer in model.layers:  # Theano convolves: its kernels are ours flipped (as its HDF5 files are)
        if type(layer).__name__ == "Conv2D":
            layer.set_weights([flip_kernel(w) if i == 0 else w for i, w in enumerate(layer.get_weights())])
    out = model.predict(_image())
    assert list(out.shape) == expected["shape"]
    np.testing.assert_allclose(out.ravel(), expected["values"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("v2", [False, True])
def test_channels_first_computes_the_same(v2):
    """The same weights (Keras layout) in a channels_first network on the transposed image."""
    last = _tiny(v2).predict(_image())
    backend.set_image_data_format("channels_first")
    try:
        first_model = _tiny(v2, input_shape=(3, 32, 32))
        assert first_model.output_shape == (None, 32, 4, 4)
        first = first_model.predict(_image().transpose(0, 3, 1, 2))
        full = resnet_v2.ResNet50V2 if v2 else resnet.ResNet50
        features = full(weights=None, include_top=False, input_shape=(3, 64, 64))
        assert features.output_shape == (None, 2048, 2, 2)
    finally:
        backend.set_image_data_format("channels_last")
    np.testing.assert_allclose(first, last.transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("key", sorted(NETWORKS))
def test_feature_extractor_shapes_and_forward_pass(key):
    model = NETWORKS[key][0](weights=None, include_top=False, input_shape=(64, 64, 3), pooling="avg")
    assert model.layers[-2].output_shape == (None, 2, 2, 2048)
    assert model.output_shape == (None, 2048) and model.layers[-1].name == "avg_pool"
    x = np.random.default_rng(0).random((2, 64, 64, 3), dtype=np.float32)
    out = model.predict(x)
    assert out.shape == (2, 2048) and np.isfinite(out).all() and out.std() > 0


def test_max_pooling_classes_and_input_tensor():
    from arignote.layers import Input

    maxed = resnet_v2.ResNet50V2(weights=None, include_top=False, input_shape=(32, 32, 3), pooling="max")
    assert maxed.output_shape == (None, 2048) and maxed.layers[-1].name == "max_pool"
    ten = resnet.ResNet50(weights=None, input_shape=(64, 64, 3), classes=10)
    assert ten.output_shape == (None, 10) and ten.layers[-1].name == "probs"
    assert ten.get_layer("probs").get_weights()[0].shape == (2048, 10)
    image = Input(shape=(48, 48, 3))
    model = resnet.ResNet50(weights=None, include_top=False, input_tensor=image)
    assert model.inputs[0] is image and model.output_shape == (None, 2, 2, 2048)


def test_weight_files_are_keras_2s():
    """Names, addresses and hashes keras_applications 1.0.8's resnet_common uses."""
    base = "https://github.com/keras-team/keras-applications/releases/download/resnet/"
    top = _resnet_common._imagenet_file("resnet152v2", True)
    assert top.fname == "resnet152v2_weights_tf_dim_ordering_tf_kernels.h5"
    assert top.url == base + top.fname and top.md5 == "a49b44d1979771252814e80f8ec446f9"
    notop = _resnet_common._imagenet_file("resnet50", False)
    assert notop.fname == "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5"
    assert notop.url == base + notop.fname and notop.md5 == "4d473c1dd8becc155b73f8504c6f6626"
    assert _resnet_common._imagenet_file("tiny", False) is None


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    """A Keras cache directory of the test's own (``~/.keras`` is never touched)."""
    home = tmp_path / "keras-home"
    (home / "models").mkdir(parents=True)
    monkeypatch.setenv("KERAS_HOME", str(home))
    return home


@pytest.fixture
def offline(monkeypatch):
    """No download can start (a file missing or with the wrong hash is an error, not 100 MB fetched)."""
    import urllib.request

    def unreachable(*args, **kwargs):
        raise OSError("Network is unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    monkeypatch.setattr(urllib.request, "urlretrieve", unreachable, raising=False)


def test_imagenet_weights_load_from_the_keras_cache(keras_home, offline, monkeypatch):
    """weights='imagenet' takes Keras 2's file name for the model name from ~/.keras/models, checks
    its hash and loads it (a small network under the name resnet50v2: the mechanism, not 100 MB)."""
    source = _tiny(True)
    path = keras_home / "models" / "resnet50v2_weights_tf_dim_ordering_tf_kernels_notop.h5"
    source.save_weights(str(path))
    md5 = hashlib.md5(path.read_bytes()).hexdigest()
    monkeypatch.setitem(_resnet_common._HASHES, "resnet50v2", ("0" * 32, md5))
    loaded = _tiny(True, name="resnet50v2", weights="imagenet")
    np.testing.assert_allclose(loaded.predict(_image()), source.predict(_image()), rtol=1e-6, atol=1e-6)
    monkeypatch.setitem(_resnet_common._HASHES, "resnet50v2", ("0" * 32, "0" * 32))
    with pytest.raises(Exception) as err:  # the hash does not match: re-fetching fails offline
        _tiny(True, name="resnet50v2", weights="imagenet")
    assert path.name in str(err.value)


def test_missing_imagenet_file_names_it(keras_home, offline):
    with pytest.raises(Exception) as err:
        resnet.ResNet101(weights="imagenet", include_top=False, input_shape=(32, 32, 3))
    assert "resnet101_weights_tf_dim_ordering_tf_kernels_notop.h5" in str(err.value)
    assert str(keras_home / "models") in str(err.value)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: resnet.ResNet101(weights="imagenet", classes=10), "classes"),
        (
            lambda: resnet_v2.ResNet50V2(weights=None, include_top=False, input_shape=(16, 16, 3)),
            "at least 32",
        ),
        (lambda: resnet_v2.ResNet152V2(weights="imagenet", input_shape=(64, 64, 3)), "(224, 224, 3)"),
        (lambda: resnet.ResNet152(weights=None, include_top=False, pooling="sum"), "pooling"),
        (lambda: resnet.ResNet50(weights=None, colour=True), "colour"),
        (lambda: resnet_v2.ResNet101V2(weights="no/such/file.h5"), "weights"),
    ],
)
def test_bad_arguments_are_named(call, message):
    with pytest.raises((ValueError, TypeError)) as err:
        call()
    assert message in str(err.value)


def test_preprocess_input_modes():
    """resnet: ``caffe`` (BGR, means subtracted); resnet_v2: ``tf`` (-1..1), as keras_applications."""
    rgb = np.array([[[[10.0, 20.0, 30.0]]]], dtype="float32")
    np.testing.assert_allclose(resnet.preprocess_input(rgb.copy())[0, 0, 0],
                               [30 - 103.939, 20 - 116.779, 10 - 123.68], rtol=1e-6)
    np.testing.assert_allclose(resnet_v2.preprocess_input(rgb.copy())[0, 0, 0],
                               [10 / 127.5 - 1, 20 / 127.5 - 1, 30 / 127.5 - 1], rtol=1e-6)
    first = resnet_v2.preprocess_input(rgb.transpose(0, 3, 1, 2).copy(), data_format="channels_first")
    np.testing.assert_allclose(first[0, :, 0, 0], [10 / 127.5 - 1, 20 / 127.5 - 1, 30 / 127.5 - 1], rtol=1e-6)

