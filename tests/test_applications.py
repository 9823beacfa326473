"""``arignote.applications`` against Keras 2.3.1's own networks and the book-style scripts that use them.

``tests/fixtures/keras2/applications.json`` was written by Keras 2.3.1 itself
(``scripts/make_applications_fixture.py``): for each network, its parameter count and, in
``model.layers`` order, the class and weight shapes of every layer with weights. A Keras 2
weight file loaded without ``by_name`` is paired layer by layer in that order, so matching it
is what makes the official ImageNet files load.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from arignote import applications, backend
from arignote.applications import _weights, imagenet_utils

FIXTURE = Path(__file__).parent / "fixtures" / "keras2" / "applications.json"
KERAS = json.loads(FIXTURE.read_text())["networks"]

# the parameter counts the Keras 2 documentation lists (keras.io/applications, "Documentation
# for individual models"), with the classifier top
DOCUMENTED = {
    "Xception": 22_910_480,
    "VGG16": 138_357_544,
    "VGG19": 143_667_240,
    "ResNet50": 25_636_712,
    "InceptionV3": 23_851_784,
    "InceptionResNetV2": 55_873_736,
    "MobileNet": 4_253_864,
    "MobileNetV2": 3_538_984,
    "DenseNet121": 8_062_504,
    "DenseNet169": 14_307_880,
    "DenseNet201": 20_242_984,
    "NASNetMobile": 5_326_716,
}


def _keras_shapes(model) -> list:
    """(class, weight shapes in Keras's layout) of each layer with weights, in ``model.layers`` order
    (``layer.get_weights()`` speaks Keras's layout, as the HDF5 files do)."""
    return [
        [layer.__class__.__name__, [list(w.shape) for w in layer.get_weights()]]
        for layer in model.layers
        if layer.get_weights()
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_architecture_matches_keras_2(name):
    model = getattr(applications, name)(weights=None)
    assert model.count_params() == DOCUMENTED[name] == KERAS[name]["params"]
    assert model.name == KERAS[name]["name"]
    assert (
        list(model.output_shape)
        == [None, 1000]
        == [None if d is None else d for d in KERAS[name]["output_shape"]]
    )
    assert _keras_shapes(model) == KERAS[name]["layers"]


@pytest.mark.parametrize(
    "name, layer_names",
    [
        ("VGG16", ["block1_conv1", "block5_conv3", "block5_pool", "fc1", "fc2", "predictions"]),
        (
            "ResNet50",
            [
                "conv1_pad",
                "bn_conv1",
                "res2a_branch2a",
                "res5c_branch2c",
                "bn5c_branch2c",
                "avg_pool",
                "fc1000",
            ],
        ),
        ("InceptionV3", ["mixed0", "mixed9_1", "mixed10", "predictions"]),
        ("Xception", ["block1_conv1", "block13_pool", "block14_sepconv2_act", "predictions"]),
        ("MobileNet", ["conv1", "conv_dw_13", "conv_pw_13_relu", "reshape_1", "conv_preds", "act_softmax"]),
        ("MobileNetV2", ["Conv1", "expanded_conv_project", "block_16_project_BN", "out_relu", "Logits"]),
        (
            "DenseNet121",
            ["conv1/conv", "conv2_block6_concat", "pool4_pool", "conv5_block16_concat", "fc1000"],
        ),
        ("InceptionResNetV2", ["mixed_5b", "block35_10", "block8_10", "conv_7b", "predictions"]),
        ("NASNetMobile", ["stem_conv1", "reduction_concat_stem_1", "normal_concat_12", "predictions"]),
    ],
)
def test_keras_2_layer_names(name, layer_names):
    shape = {"NASNetMobile": (224, 224, 3)}.get(name)
    model = getattr(applications, name)(weights=None, input_shape=shape)
    names = {layer.name for layer in model.layers}
    assert set(layer_names) <= names, sorted(set(layer_names) - names)


@pytest.mark.parametrize(
    "name, side, features",
    [
        ("VGG16", 150, (4, 4, 512)),
        ("VGG19", 48, (1, 1, 512)),
        ("ResNet50", 64, (2, 2, 2048)),
        ("InceptionV3", 75, (1, 1, 2048)),
        ("Xception", 71, (3, 3, 2048)),
        ("MobileNet", 32, (1, 1, 1024)),
        ("MobileNetV2", 32, (1, 1, 1280)),
        ("DenseNet121", 32, (1, 1, 1024)),
        ("InceptionResNetV2", 75, (1, 1, 1536)),
    ],
)
def test_feature_extractor_shapes_and_pooling(name, side, features):
    build = getattr(applications, name)
    base = build(weights=None, include_top=False, input_shape=(side, side, 3))
    assert base.output_shape == (None, *features)
    pooled = build(weights=None, include_top=False, input_shape=(side, side, 3), pooling="avg")
    assert pooled.output_shape == (None, features[-1])
    x = np.random.default_rng(0).random((2, side, side, 3), dtype=np.float32)
    assert pooled.predict(x).shape == (2, features[-1])


def test_channels_first_vgg16_matches_channels_last_on_transposed_input():
    """The same weights in a channels_first VGG16, classifier top included: Flatten orders features as
    Keras 2.3 does (channels-last order whatever the data format), so channels_last files fit as is."""
    x = np.random.default_rng(1).random((2, 64, 64, 3), dtype=np.float32)
    last = applications.VGG16(weights=None, include_top=True, input_shape=(64, 64, 3), classes=10)
    backend.set_image_data_format("channels_first")
    try:
        first = applications.VGG16(weights=None, include_top=True, input_shape=(3, 64, 64), classes=10)
        features = applications.VGG16(weights=None, include_top=False, input_shape=(3, 64, 64))
        assert features.output_shape == (None, 512, 2, 2)
        first.set_weights(last.get_weights())
        out_first = first.predict(x.transpose(0, 3, 1, 2))
    finally:
        backend.set_image_data_format("channels_last")
    np.testing.assert_allclose(out_first, last.predict(x), rtol=1e-4, atol=1e-6)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    """A Keras cache directory of the test's own (``~/.keras`` is never touched)."""
    home = tmp_path / "keras-home"
    (home / "models").mkdir(parents=True)
    monkeypatch.setenv("KERAS_HOME", str(home))
    return home


def test_imagenet_weights_load_from_the_keras_cache(keras_home, monkeypatch):
    """weights='imagenet' finds the official file name in ~/.keras/models, checks its hash and loads it
    through the Keras 2 HDF5 loader: the predictions are those of the model that wrote the file."""
    source = applications.MobileNet(weights=None, input_shape=(128, 128, 3), alpha=0.25)
    fname = "mobilenet_2_5_128_tf.h5"
    path = keras_home / "models" / fname
    source.save_weights(str(path))
    x = np.random.default_rng(2).random((2, 128, 128, 3), dtype=np.float32)
    loaded = applications.MobileNet(weights="imagenet", input_shape=(128, 128, 3), alpha=0.25)
    np.testing.assert_allclose(loaded.predict(x), source.predict(x), rtol=1e-5, atol=1e-6)
    assert _md5(path)  # a file with a recorded hash is checked too:
    vgg_file = applications.vgg16._FILES[("vgg16", False)]
    monkeypatch.setitem(
        applications.vgg16._FILES,
        ("vgg16", False),
        _weights.WeightFile(vgg_file.fname, vgg_file.url, "0" * 32),
    )
    small = applications.VGG16(weights=None, include_top=False, input_shape=(32, 32, 3))
    small.save_weights(str(keras_home / "models" / vgg_file.fname))
    with pytest.raises(Exception) as err:  # the hash does not match: re-fetching fails offline
        applications.VGG16(weights="imagenet", include_top=False, input_shape=(32, 32, 3))
    assert vgg_file.fname in str(err.value)


def test_missing_imagenet_file_names_it_and_where_to_put_it(keras_home, monkeypatch):
    import urllib.request

    def offline(*args, **kwargs):
        raise OSError("Network is unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    monkeypatch.setattr(urllib.request, "urlretrieve", offline, raising=False)
    with pytest.raises(Exception) as err:
        applications.ResNet50(weights="imagenet", include_top=False, input_shape=(64, 64, 3))
    text = str(err.value)
    assert "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5" in text
    assert str(keras_home / "models") in text


def test_weights_from_a_path(tmp_path):
    a = applications.DenseNet121(weights=None, include_top=False, input_shape=(32, 32, 3), pooling="max")
    f = tmp_path / "mine.h5"
    a.save_weights(str(f))
    b = applications.DenseNet121(weights=str(f), include_top=False, input_shape=(32, 32, 3), pooling="max")
    x = np.random.default_rng(3).random((2, 32, 32, 3), dtype=np.float32)
    np.testing.assert_allclose(b.predict(x), a.predict(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: applications.VGG16(weights="no/such/file.h5"), "weights"),
        (lambda: applications.VGG16(weights="imagenet", classes=10), "classes"),
        (
            lambda: applications.ResNet50(weights=None, input_shape=(16, 16, 3), include_top=False),
            "at least 32",
        ),
        (lambda: applications.InceptionV3(weights="imagenet", input_shape=(200, 200, 3)), "(299, 299, 3)"),
        (
            lambda: applications.Xception(weights=None, include_top=True, input_shape=(None, None, 3)),
            "static",
        ),
        (lambda: applications.MobileNet(weights="imagenet", alpha=0.3), "alpha"),
        (lambda: applications.VGG16(weights=None, pooling="sum", include_top=False), "pooling"),
        (lambda: applications.VGG16(weights=None, colour=True), "colour"),
    ],
)
def test_bad_arguments_are_named(call, message):
    with pytest.raises((ValueError, TypeError)) as err:
        call()
    assert message in str(err.value)


def test_preprocess_input_modes_by_hand():
    rgb = np.array([[[[10.0, 20.0, 30.0]]]], dtype="float32")
    caffe = imagenet_utils.preprocess_input(rgb.copy(), mode="caffe")
    np.testing.assert_allclose(caffe[0, 0, 0], [30 - 103.939, 20 - 116.779, 10 - 123.68], rtol=1e-6)
    tf = imagenet_utils.preprocess_input(rgb.copy(), mode="tf")
    np.testing.assert_allclose(tf[0, 0, 0], [10 / 127.5 - 1, 20 / 127.5 - 1, 30 / 127.5 - 1], rtol=1e-6)
    torch_mode = imagenet_utils.preprocess_input(rgb.copy(), mode="torch")
    expect = [(10 / 255 - 0.485) / 0.229, (20 / 255 - 0.456) / 0.224, (30 / 255 - 0.406) / 0.225]
    np.testing.assert_allclose(torch_mode[0, 0, 0], expect, rtol=1e-6)
    first = imagenet_utils.preprocess_input(rgb.transpose(0, 3, 1, 2).copy(), data_format="channels_first")
    np.testing.assert_allclose(first[0, :, 0, 0], caffe[0, 0, 0], rtol=1e-6)
    ints = imagenet_utils.preprocess_input(np.full((2, 2, 3), 255, "uint8"), mode="tf")
    assert ints.dtype == np.float32 and np.all(ints == 1.0)
    assert applications.vgg16.preprocess_input(rgb.copy())[0, 0, 0, 0] == pytest.approx(30 - 103.939)
    assert applications.densenet.preprocess_input(rgb.copy())[0, 0, 0, 0] == pytest.approx(expect[0])


def test_preprocess_input_on_torch_tensors():
    import torch

    x = torch.full((1, 2, 2, 3), 255.0)
    assert torch.allclose(imagenet_utils.preprocess_input(x.clone(), mode="tf"), torch.ones(1, 2, 2, 3))
    out = imagenet_utils.preprocess_input(x.clone(), mode="caffe")
    assert torch.allclose(out[0, 0, 0], torch.tensor([255 - 103.939, 255 - 116.779, 255 - 123.68]))


def test_decode_predictions_from_the_cached_class_index(keras_home, monkeypatch):
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    path = keras_home / "models" / "imagenet_class_index.json"
    path.write_text(json.dumps(index))
    monkeypatch.setattr(
        imagenet_utils,
        "CLASS_INDEX_FILE",
        _weights.WeightFile("imagenet_class_index.json", "https://example/x.json", _md5(path)),
    )
    monkeypatch.setattr(imagenet_utils, "_class_index", None)
    preds = np.zeros((2, 1000), dtype="float32")
    preds[0, [3, 7, 999]] = [0.2, 0.7, 0.1]
    preds[1, 42] = 1.0
    top = imagenet_utils.decode_predictions(preds, top=3)
    assert [t[:2] for t in top[0]] == [
        ("n00000007", "class_7"),
        ("n00000003", "class_3"),
        ("n00000999", "class_999"),
    ]
    assert top[0][0][2] == pytest.approx(0.7) and top[1][0][1] == "class_42"
    with pytest.raises(ValueError, match="1000"):
        imagenet_utils.decode_predictions(np.zeros((2, 10)))


BOOK_SCRIPT = """
# Feature extraction with a pretrained convnet, as chapter 5 of a well-known Keras 2 book writes it
# (Keras 2.0.x era: history.history['acc']); the only change is keras -> arignote, and random weights.
import numpy as np
from arignote.applications import VGG16
from arignote import models, layers, optimizers

conv_base = VGG16(weights=None, include_top=False, input_shape=(48, 48, 3))
rng = np.random.RandomState(0)
images = rng.rand(40, 48, 48, 3).astype('float32')
labels = (images.mean(axis=(1, 2, 3)) > 0.5).astype('float32')

features = conv_base.predict(images, batch_size=20)
features = np.reshape(features, (40, 1 * 1 * 512))

model = models.Sequential()
model.add(layers.Dense(16, activation='relu', input_dim=1 * 1 * 512))
model.add(layers.Dropout(0.5))
model.add(layers.Dense(1, activation='sigmoid'))
model.compile(optimizer=optimizers.RMSprop(lr=2e-5), loss='binary_crossentropy', metrics=['acc'])
history = model.fit(features, labels, epochs=2, batch_size=20, validation_data=(features, labels), verbose=0)
acc = history.history['acc']
val_acc = history.history['val_acc']
print('features', features.shape, 'epochs', len(acc), len(val_acc))

# fine-tuning style: the convolutional base inside a Sequential, frozen
conv_base.trainable = False
model = models.Sequential()
model.add(conv_base)
model.add(layers.Flatten())
model.add(layers.Dense(8, activation='relu'))
model.add(layers.Dense(1, activation='sigmoid'))
model.compile(loss='binary_crossentropy', optimizer=optimizers.RMSprop(lr=2e-5), metrics=['acc'])
before = conv_base.get_weights()[0].copy()
history = model.fit(images, labels, epochs=1, batch_size=20, verbose=0)
assert np.array_equal(conv_base.get_weights()[0], before), 'the frozen base must not train'
print('trainable weights', len(model.trainable_weights), 'acc', len(history.history['acc']))
"""


@pytest.mark.slow
def test_book_style_feature_extraction_script(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "feature_extraction.py"
    script.write_text(BOOK_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "ARIGNOTE_FLAGS": "device=cpu,print_active_device=false"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "features (40, 512) epochs 2 2" in proc.stdout
    assert "trainable weights 4 acc 1" in proc.stdout


def test_a_model_inside_a_sequential_and_model_trainable():
    """Keras 2's fine-tuning idiom: a functional model added to a Sequential like a layer, frozen with
    ``model.trainable = False``; unfreezing it again makes its layers train."""
    import torch

    from arignote import layers, models

    inp = layers.Input(shape=(4,))
    base = models.Model(inp, layers.Dense(3, activation="relu", name="base_dense")(inp), name="base")
    top = models.Sequential([base, layers.Dense(1, name="head")])
    assert [layer.name for layer in top.layers] == ["base", "head"]
    assert top.output_shape == (None, 1)
    x = np.random.default_rng(4).random((8, 4), dtype=np.float32)
    expected = top.layers[1](base(torch.from_numpy(x))).detach().numpy()
    np.testing.assert_allclose(top.predict(x), expected, rtol=1e-6)
    base.trainable = False
    assert base.get_layer("base_dense").trainable and base.trainable_weights == []  # its own flag kept
    top.compile("sgd", "mse")
    frozen, head = base.get_weights()[0].copy(), top.layers[1].get_weights()[0].copy()
    top.fit(x, np.ones((8, 1), "float32"), epochs=2, batch_size=4, verbose=0)
    assert np.array_equal(base.get_weights()[0], frozen)
    assert not np.array_equal(top.layers[1].get_weights()[0], head)
    base.trainable = True
    top.compile("sgd", "mse")
    top.fit(x, np.ones((8, 1), "float32"), epochs=1, batch_size=4, verbose=0)
    assert not np.array_equal(base.get_weights()[0], frozen)
