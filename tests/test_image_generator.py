"""preprocessing.image.ImageDataGenerator (Keras 2): transforms against Keras's own formulas,
standardization against numpy, the flow iterator (lengths, seeds, epochs, subsets), bad
arguments, and one CNN trained on ``datagen.flow``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from arignote import backend, config
from arignote.callbacks.base import Callback
from arignote.layers import Conv2D, Dense, Flatten, MaxPooling2D
from arignote.models import Sequential
from arignote.preprocessing import image as image_module
from arignote.preprocessing import transforms
from arignote.preprocessing.image import ImageDataGenerator, NumpyArrayIterator


def _x(n=6, h=7, w=9, c=3, seed=0):
    return np.random.default_rng(seed).random((n, h, w, c), dtype=np.float32)


def _keras_affine(x, theta=0.0, tx=0.0, ty=0.0, shear=0.0, zx=1.0, zy=1.0, fill_mode="nearest", cval=0.0):
    """Keras 2's ``apply_affine_transform`` (keras_preprocessing, scipy order 1), the reference."""
    ndi = pytest.importorskip("scipy.ndimage")
    t, s = np.deg2rad(theta), np.deg2rad(shear)
    m = np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])
    m = m @ np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]])
    m = m @ np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]])
    m = m @ np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]])
    o_x, o_y = x.shape[0] / 2 + 0.5, x.shape[1] / 2 + 0.5
    offset = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]])
    reset = np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
    m = offset @ m @ reset
    mode = "grid-wrap" if fill_mode == "wrap" else fill_mode  # arignote's wrap tiles (see transforms)
    return np.stack([ndi.affine_transform(x[..., c].astype(np.float64), m[:2, :2], m[:2, 2], order=1,
                                          mode=mode, cval=cval) for c in range(x.shape[-1])], axis=-1)


# --- transforms -------------------------------------------------------------------------------

def test_flips_equal_reversed_axes():
    x = _x()
    p = transforms.identity(len(x))
    p["flip_horizontal"] = np.ones(len(x), bool)
    np.testing.assert_array_equal(transforms.apply(x, p), x[:, :, ::-1])
    p = transforms.identity(len(x))
    p["flip_vertical"] = np.array([True, False] * 3)
    out = transforms.apply(x, p)
    np.testing.assert_array_equal(out[0::2], x[0::2, ::-1])
    np.testing.assert_array_equal(out[1::2], x[1::2])
    gen = ImageDataGenerator()
    np.testing.assert_array_equal(gen.apply_transform(x[0], {"flip_horizontal": True}), x[0][:, ::-1])


def test_horizontal_flip_in_flow_flips_about_half_the_images():
    x = _x(n=40)
    out = ImageDataGenerator(horizontal_flip=True).flow(x, batch_size=40, shuffle=False, seed=3)[0]
    flipped = [np.array_equal(o, xi[:, ::-1]) for o, xi in zip(out, x)]
    kept = [np.array_equal(o, xi) for o, xi in zip(out, x)]
    assert all(f != k for f, k in zip(flipped, kept))  # each image is one or the other
    assert 10 <= sum(flipped) <= 30


def test_integer_shift_with_nearest_fill_replicates_the_edges():
    img = _x(n=1, h=6, w=5, c=2)[0]
    out = ImageDataGenerator(fill_mode="nearest").apply_transform(img, {"tx": 2, "ty": -1})
    # output (r, c) reads input (r + 2, c - 1), clamped to the image
    padded = np.pad(img, ((0, 2), (1, 0), (0, 0)), mode="edge")
    np.testing.assert_allclose(out, padded[2:, :5], rtol=0, atol=1e-6)


def test_integer_shifts_constant_and_wrap():
    img = _x(n=1, h=5, w=6, c=1)[0]
    out = ImageDataGenerator(fill_mode="constant", cval=-3.0).apply_transform(img, {"ty": 2})
    np.testing.assert_allclose(out[:, :4], img[:, 2:], atol=1e-6)
    assert (out[:, 4:] == -3.0).all()
    wrapped = ImageDataGenerator(fill_mode="wrap").apply_transform(img, {"tx": -1, "ty": 2})
    np.testing.assert_allclose(wrapped, np.roll(img, (1, -2), axis=(0, 1)), atol=1e-6)


@pytest.mark.parametrize("fill_mode", transforms.FILL_MODES)
def test_affine_warp_matches_keras_scipy_formula(fill_mode):
    x = _x(n=4, h=13, w=17)
    rng = np.random.default_rng(1)
    p = transforms.identity(4)
    p.update(theta=rng.uniform(-40, 40, 4), tx=rng.uniform(-5, 5, 4), ty=rng.uniform(-5, 5, 4),
             shear=rng.uniform(-20, 20, 4), zx=rng.uniform(0.7, 1.3, 4), zy=rng.uniform(0.7, 1.3, 4))
    out = transforms.apply(x, p, fill_mode=fill_mode, cval=0.5)
    for i in range(4):
        ref = _keras_affine(x[i], *(p[k][i] for k in ("theta", "tx", "ty", "shear", "zx", "zy")),
                            fill_mode=fill_mode, cval=0.5)
        np.testing.assert_allclose(out[i], ref, rtol=0, atol=1e-5)


def test_zero_transform_returns_the_input_unchanged():
    x = _x()
    gen = ImageDataGenerator()
    np.testing.assert_array_equal(gen.flow(x, batch_size=6, shuffle=False)[0], x)
    np.testing.assert_array_equal(gen.random_transform(x[0], seed=1), x[0])
    np.testing.assert_array_equal(gen.standardize(x), x)


def test_channel_shift_clips_to_the_image_range():
    img = np.array([[[0.2, 0.5], [0.9, 0.1]]], np.float32)  # (1, 2, 2)
    out = ImageDataGenerator().apply_transform(img, {"channel_shift_intensity": 0.3})
    np.testing.assert_allclose(out, np.clip(img + 0.3, 0.1, 0.9), atol=1e-7)


def test_brightness_matches_keras_through_pil():
    pil_enhance = pytest.importorskip("PIL.ImageEnhance")
    from PIL import Image

    img = _x(n=1, h=5, w=4)[0] * 2 - 0.5
    out = ImageDataGenerator().apply_transform(img, {"brightness": 1.3})
    # Keras: array_to_img(scale=True) -> ImageEnhance.Brightness(...).enhance(b) -> img_to_array
    scaled = img - min(img.min(), 0)
    scaled = (scaled / scaled.max() * 255).astype("uint8")
    ref = np.asarray(pil_enhance.Brightness(Image.fromarray(scaled)).enhance(1.3), np.float32)
    np.testing.assert_allclose(out, ref, atol=1.0)  # PIL's float rounding may differ by one level
    assert np.mean(out == ref) > 0.9


def test_random_draws_follow_keras_ranges():
    rng = np.random.default_rng(0)
    gen = ImageDataGenerator(rotation_range=30, width_shift_range=0.25, height_shift_range=3, shear_range=10,
                             zoom_range=0.2, channel_shift_range=5.0, brightness_range=[0.5, 1.5])
    p = transforms.draw(rng, 2000, 10, 20, gen)
    assert np.abs(p["theta"]).max() <= 30 and np.abs(p["theta"]).max() > 29
    assert np.abs(p["ty"]).max() <= 0.25 * 20 and np.abs(p["ty"]).max() > 4.9  # fraction of the width
    assert set(np.unique(p["tx"])) == {-2.0, -1.0, 0.0, 1.0, 2.0}  # int 3: integers in (-3, 3)
    assert gen.zoom_range == [0.8, 1.2] and 0.8 <= p["zx"].min() and p["zy"].max() <= 1.2
    assert np.abs(p["channel_shift_intensity"]).max() <= 5 and 0.5 <= p["brightness"].min()
    listed = transforms.draw(rng, 500, 10, 20, ImageDataGenerator(width_shift_range=[2, 4]))["ty"]
    assert set(np.unique(listed)) == {-4.0, -2.0, 2.0, 4.0}
    keys = set(gen.get_random_transform((10, 20, 3), seed=1))
    assert keys == {"theta", "tx", "ty", "shear", "zx", "zy", "flip_horizontal", "flip_vertical",
                    "channel_shift_intensity", "brightness"}
    assert gen.get_random_transform((10, 20, 3), seed=1) == gen.get_random_transform((10, 20, 3), seed=1)


# --- standardize and fit ------------------------------------------------------------------------

def test_featurewise_center_and_std_match_numpy_per_channel(monkeypatch):
    monkeypatch.setattr(image_module, "_FIT_CHUNK", 7)  # sums over 3 chunks
    x = _x(n=20) * [1.0, 10.0, 100.0]
    gen = ImageDataGenerator(featurewise_center=True, featurewise_std_normalization=True)
    gen.fit(x)
    assert gen.mean.shape == (1, 1, 3) and gen.std.shape == (1, 1, 3)
    np.testing.assert_allclose(gen.mean.ravel(), x.mean(axis=(0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(gen.std.ravel(), x.std(axis=(0, 1, 2)), rtol=1e-5)
    out = gen.flow(x, batch_size=20, shuffle=False)[0]
    ref = (x - x.mean(axis=(0, 1, 2))) / (x.std(axis=(0, 1, 2)) + backend.epsilon())
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_rescale_samplewise_and_preprocessing_function():
    x = _x(n=4) * 255
    np.testing.assert_allclose(ImageDataGenerator(rescale=1 / 255).standardize(x), x / 255, rtol=1e-6)
    out = ImageDataGenerator(samplewise_center=True, samplewise_std_normalization=True).standardize(x)
    ref = (x - x.mean(axis=(1, 2, 3), keepdims=True)) / (x.std(axis=(1, 2, 3), keepdims=True) + 1e-7)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    seen = []
    gen = ImageDataGenerator(preprocessing_function=lambda im: seen.append(im.shape) or im + 1, rescale=0.5)
    np.testing.assert_allclose(gen.flow(x, batch_size=4, shuffle=False)[0], (x + 1) * 0.5, rtol=1e-6)
    assert seen == [x.shape[1:]] * 4  # called once per image, before rescale (as Keras)
    with pytest.raises(ValueError, match="same shape"):
        ImageDataGenerator(preprocessing_function=lambda im: im[:2]).standardize(x)


def test_zca_whitening_decorrelates_the_fitted_data(monkeypatch):
    monkeypatch.setattr(image_module, "_FIT_CHUNK", 64)
    rng = np.random.default_rng(0)
    mixed = rng.normal(size=(400, 32)) @ rng.normal(size=(32, 32))
    x = mixed.reshape(400, 4, 2, 4).astype(np.float32)
    with pytest.warns(UserWarning, match="featurewise_center"):
        gen = ImageDataGenerator(zca_whitening=True, zca_epsilon=1e-6)
    gen.fit(x)
    assert gen.principal_components.shape == (32, 32)
    white = gen.standardize(x).reshape(400, 32)
    np.testing.assert_allclose(white.T @ white / 400, np.eye(32), atol=2e-3)


def test_fit_with_augment_uses_transformed_copies_and_a_seed():
    x = _x(n=10)
    gen = ImageDataGenerator(featurewise_center=True, channel_shift_range=0.5)
    gen.fit(x, augment=True, rounds=3, seed=4)
    first = gen.mean.copy()
    gen.fit(x, augment=True, rounds=3, seed=4)
    np.testing.assert_array_equal(gen.mean, first)
    assert not np.allclose(first.ravel(), x.mean(axis=(0, 1, 2)), atol=1e-4)
    with pytest.warns(UserWarning, match="implies featurewise_center"):
        flips = ImageDataGenerator(featurewise_std_normalization=True, horizontal_flip=True,
                                   vertical_flip=True)
    flips.fit(x, augment=True, rounds=2)  # flipped copies have the same per-channel statistics
    np.testing.assert_allclose(flips.mean.ravel(), x.mean(axis=(0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(flips.std.ravel(), x.std(axis=(0, 1, 2)), rtol=1e-5)


def test_featurewise_before_fit_is_a_clear_error():
    with pytest.raises(ValueError, match=r"datagen.fit\(x_train\)"):
        ImageDataGenerator(featurewise_center=True).standardize(_x())


# --- flow ---------------------------------------------------------------------------------------

def test_flow_shapes_length_and_short_last_batch():
    x, y = _x(n=10), np.arange(10)
    it = ImageDataGenerator().flow(x, y, batch_size=4, shuffle=False)
    assert isinstance(it, NumpyArrayIterator) and len(it) == 3
    batches = list(it)
    assert [b[0].shape for b in batches] == [(4, 7, 9, 3), (4, 7, 9, 3), (2, 7, 9, 3)]
    assert all(b[0].dtype == np.float32 for b in batches)
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    x_only = ImageDataGenerator().flow(x.astype("uint8"), batch_size=4, shuffle=False)[2]
    assert isinstance(x_only, np.ndarray) and x_only.shape == (2, 7, 9, 3) and x_only.dtype == np.float32
    x_y_w = ImageDataGenerator().flow(x, y, sample_weight=y * 2.0, batch_size=4, shuffle=False)[1]
    assert x_y_w[2].tolist() == [8.0, 10.0, 12.0, 14.0]
    with pytest.raises(IndexError, match="3 batches"):
        it[3]


def _epoch_labels(it):
    return np.concatenate([it[i][1] for i in range(len(it))])


def test_shuffle_with_a_seed_is_reproducible_and_covers_every_sample_once():
    x, y = _x(n=23), np.arange(23)
    gen = ImageDataGenerator(width_shift_range=0.2, horizontal_flip=True)
    a, b = gen.flow(x, y, batch_size=5, seed=7), gen.flow(x, y, batch_size=5, seed=7)
    for _ in range(2):
        labels = _epoch_labels(a)
        assert sorted(labels.tolist()) == list(range(23)) and labels.tolist() != list(range(23))
        for i in reversed(range(len(a))):  # any access order gives the same batches
            np.testing.assert_array_equal(a[i][0], b[i][0])
        a.on_epoch_end()
        b.on_epoch_end()
    assert _epoch_labels(gen.flow(x, y, batch_size=5, seed=8)).tolist() != _epoch_labels(
        gen.flow(x, y, batch_size=5, seed=7)).tolist()


def test_on_epoch_end_reshuffles_and_redraws_the_transforms():
    x, y = _x(n=16), np.arange(16)
    it = ImageDataGenerator(rotation_range=20).flow(x, y, batch_size=16, seed=0)
    first_x, first_y = it[0]
    it.on_epoch_end()
    second_x, second_y = it[0]
    assert sorted(second_y.tolist()) == list(range(16)) and second_y.tolist() != first_y.tolist()
    fixed = ImageDataGenerator(rotation_range=20).flow(x, y, batch_size=16, shuffle=False, seed=0)
    before = fixed[0][0]
    fixed.on_epoch_end()
    assert fixed[0][1].tolist() == list(range(16)) and not np.allclose(fixed[0][0], before)


def test_iteration_is_one_epoch_and_next_is_keras_endless_stream():
    x, y = _x(n=5), np.arange(5)
    it = ImageDataGenerator().flow(x, y, batch_size=2, shuffle=True, seed=1)
    order = _epoch_labels(it).tolist()
    assert [yb.tolist() for _, yb in it] and it.epoch == 1  # a full pass ends the epoch
    stream = [next(it)[1].tolist() for _ in range(4)]
    assert sum(stream[:3], []) == _epoch_labels_at(it, 1) and it.epoch == 2
    assert order == _epoch_labels_at(it, 0)


def _epoch_labels_at(it, epoch):
    return np.random.default_rng([it.seed, 0, epoch]).permutation(it.n).tolist()


def test_seed_none_follows_numpy_global_seed():
    x, y = _x(n=12), np.arange(12)
    np.random.seed(5)
    a = _epoch_labels(ImageDataGenerator().flow(x, y, batch_size=4))
    np.random.seed(5)
    assert _epoch_labels(ImageDataGenerator().flow(x, y, batch_size=4)).tolist() == a.tolist()


def test_validation_split_subsets_as_keras():
    x, y = _x(n=10), np.array([0, 1] * 5)
    gen = ImageDataGenerator(validation_split=0.3)
    val = gen.flow(x, y, batch_size=4, subset="validation", shuffle=False)
    train = gen.flow(x, y, batch_size=4, subset="training", shuffle=False)
    assert (val.n, len(val), train.n, len(train)) == (3, 1, 7, 2)
    np.testing.assert_array_equal(val[0][0], x[:3])  # Keras: validation is the first part
    np.testing.assert_array_equal(train[0][0], x[3:7])
    with pytest.raises(ValueError, match="different classes"):
        gen.flow(x, np.arange(10) // 5, subset="training")
    with pytest.raises(ValueError, match="validation_split"):
        ImageDataGenerator().flow(x, y, subset="validation")
    with pytest.raises(ValueError, match="'training' or 'validation'"):
        gen.flow(x, y, subset="test")


def test_save_to_dir_writes_one_png_per_image(tmp_path):
    pil = pytest.importorskip("PIL.Image")
    it = ImageDataGenerator().flow(_x(n=3), batch_size=3, shuffle=False, save_to_dir=str(tmp_path),
                                   save_prefix="aug")
    it[0]
    files = sorted(tmp_path.glob("aug_*.png"))
    assert [f.name.split("_")[1] for f in files] == ["0", "1", "2"]
    assert pil.open(files[0]).size == (9, 7)


# --- bad arguments ------------------------------------------------------------------------------

def test_bad_arguments_name_the_argument_and_the_fix():
    with pytest.raises(ValueError, match=r"data_format='channels_first'.*x.transpose\(0, 2, 3, 1\)"):
        ImageDataGenerator(data_format="channels_first")
    with pytest.raises(ValueError, match=r"flow\(x\).*rank-4.*shape \(7, 9, 3\).*x\[\.\.\., None\]"):
        ImageDataGenerator().flow(_x()[0])
    with pytest.raises(ValueError,
                       match=r"`x` \(images tensor\) and `y` \(labels\).*same length.*\(6, 7, 9, 3\).*\(5,"):
        ImageDataGenerator().flow(_x(), np.arange(5))
    with pytest.raises(ValueError, match="fill_mode='mirror'.*nearest, constant, reflect, wrap"):
        ImageDataGenerator(fill_mode="mirror")
    with pytest.raises(ValueError, match="zoom_range"):
        ImageDataGenerator(zoom_range=[0.5, 1, 2])
    with pytest.raises(ValueError, match="validation_split"):
        ImageDataGenerator(validation_split=1.0)
    with pytest.raises(ValueError, match="width_shift_range"):
        ImageDataGenerator(width_shift_range="0.1")
    with pytest.raises(ValueError, match="batch_size"):
        ImageDataGenerator().flow(_x(), batch_size=0)
    with pytest.raises(ValueError, match=r"fit\(x\).*rank-4"):
        ImageDataGenerator(featurewise_center=True).fit(np.zeros((4, 4)))
    with pytest.raises(FileNotFoundError, match="'data/train' is not a directory"):
        ImageDataGenerator().flow_from_directory("data/train")
    with pytest.warns(UserWarning, match="transpose"):
        ImageDataGenerator().flow(np.zeros((2, 3, 8, 8)))


def test_dtype_defaults_to_floatx_and_import_stays_light():
    with config.override(floatX="float64"):
        assert ImageDataGenerator().dtype == "float64"
        assert ImageDataGenerator().flow(_x(), batch_size=2)[0].dtype == np.float64
    assert ImageDataGenerator(dtype="float32").dtype == "float32"
    code = ("import sys, arignote; from arignote.preprocessing.image import ImageDataGenerator; "
            "ImageDataGenerator(rotation_range=5); assert arignote.preprocessing.image; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- end to end ---------------------------------------------------------------------------------

class _Batches(Callback):
    def __init__(self):
        super().__init__()
        self.count = 0

    def on_train_batch_end(self, batch, logs=None):
        self.count += 1


def test_cnn_trains_one_epoch_on_datagen_flow():
    rng = np.random.default_rng(0)
    x, y = rng.random((32, 8, 8, 3), dtype=np.float32), rng.integers(0, 2, 32)
    with config.override(device="cpu", print_active_device=False):
        model = Sequential([Conv2D(4, (3, 3), padding="same", activation="relu", input_shape=(8, 8, 3)),
                            MaxPooling2D(), Flatten(), Dense(2, activation="softmax")])
        model.compile("sgd", "sparse_categorical_crossentropy")
        before = [w.copy() for w in model.get_weights()]
        datagen = ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1, horizontal_flip=True)
        flow = datagen.flow(x, y, batch_size=8, seed=0)
        seen = _Batches()
        history = model.fit(flow, epochs=1, verbose=0, callbacks=[seen])
    assert seen.count == 4 and flow.epoch == 1
    assert len(history.history["loss"]) == 1 and np.isfinite(history.history["loss"][0])
    assert any(not np.allclose(a, b) for a, b in zip(before, model.get_weights()))


@pytest.mark.slow
def test_cifar10_example_runs_with_augment(tmp_path):
    import os
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "cifar10_cnn.py"
    env = dict(os.environ, ARIGNOTE_FLAGS="device=cpu", ARIGNOTERC=str(tmp_path / "none"))
    out = subprocess.run([sys.executable, str(example), "--synthetic", "--samples", "256", "--epochs", "1",
                          "--augment"], capture_output=True, text=True, env=env, timeout=240, check=False)
    assert out.returncode == 0, out.stderr
    assert "Using real-time data augmentation." in out.stdout
    assert "Epoch 1/1" in out.stdout and "val_loss: " in out.stdout and "Test accuracy: " in out.stdout
