"""preprocessing.image with files: load_img / img_to_array / array_to_img / save_img, flow_from_directory
and flow_from_dataframe, on small PNG fixtures whose solid colour says which file a pixel came from."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
import torch

from arignote import config
from arignote.preprocessing.image import (
    ImageDataGenerator,
    array_to_img,
    img_to_array,
    list_pictures,
    load_img,
    save_img,
)

Image = pytest.importorskip("PIL.Image")


@pytest.fixture(autouse=True)
def cpu():
    with config.override(device="cpu", print_active_device=False):
        yield


def _png(path, value, size=(6, 4), mode="RGB"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    channels = {"RGB": 3, "L": 1, "RGBA": 4}[mode]
    pixels = np.full((size[1], size[0], channels), value, dtype=np.uint8)
    Image.fromarray(pixels[:, :, 0] if channels == 1 else pixels, mode).save(path)


# ------------------------------------------------------------------------------------------- single images


def test_save_load_round_trip_modes_sizes_and_scale(tmp_path):
    path = str(tmp_path / "a.png")
    x = np.zeros((4, 6, 3), "float32")
    x[:, :, 0] = np.arange(6) / 5.0  # a red ramp, scaled by save_img to 0..255
    save_img(path, x)
    img = load_img(path)
    assert img.size == (6, 4) and img.mode == "RGB"
    back = img_to_array(img)
    assert back.shape == (4, 6, 3) and back.dtype == np.float32
    np.testing.assert_allclose(back[0, :, 0], np.arange(6) * 51.0)
    gray = img_to_array(load_img(path, color_mode="grayscale"))
    assert gray.shape == (4, 6, 1)
    assert img_to_array(load_img(path, color_mode="rgba")).shape == (4, 6, 4)
    small = load_img(path, target_size=(2, 3), interpolation="bilinear")
    assert small.size == (3, 2)
    assert img_to_array(img, data_format="channels_first").shape == (3, 4, 6)
    with pytest.warns(UserWarning, match="grayscale is deprecated"):
        assert load_img(path, grayscale=True).mode == "L"
    with pytest.raises(ValueError, match="Invalid interpolation method 'cubic'"):
        load_img(path, target_size=(2, 2), interpolation="cubic")
    with pytest.raises(ValueError, match='color_mode=\'cmyk\' must be "grayscale", "rgb", or "rgba"'):
        load_img(path, color_mode="cmyk")
    with pytest.raises(FileNotFoundError, match="no image file at"):
        load_img(str(tmp_path / "missing.png"))
    (tmp_path / "bad.png").write_bytes(b"not an image")
    with pytest.raises(OSError, match="cannot be read as an image"):
        load_img(str(tmp_path / "bad.png"))


def test_array_to_img_scaling_channels_and_formats(tmp_path):
    x = np.array([[[-1.0], [1.0]]])  # shifted to 0..2, then to 0..255
    img = array_to_img(x)
    assert img.mode == "L" and np.asarray(img).tolist() == [[0, 255]]
    assert np.asarray(array_to_img(np.full((1, 1, 3), 7.0), scale=False)).tolist() == [[[7, 7, 7]]]
    assert array_to_img(np.zeros((2, 2, 4))).mode == "RGBA"
    assert array_to_img(np.zeros((3, 2, 2)), data_format="channels_first").size == (2, 2)
    with pytest.raises(ValueError, match="unsupported channel number 2"):
        array_to_img(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="rank 3"):
        array_to_img(np.zeros((2, 2)))
    with pytest.warns(UserWarning, match="JPG format does not support RGBA"):
        save_img(str(tmp_path / "x.jpg"), np.ones((2, 2, 4)))
    buffer = io.BytesIO()
    save_img(buffer, np.ones((2, 2, 3)), file_format="jpg")
    assert buffer.getvalue()[:2] == b"\xff\xd8"  # a JPEG
    with pytest.raises(ValueError, match="pass file_format="):
        save_img(io.BytesIO(), np.ones((2, 2, 3)))


# ------------------------------------------------------------------------------------------- directories


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "train"
    values = {"cats/c0.png": 10, "cats/c1.png": 20, "cats/deep/c2.png": 30, "cats/c3.png": 40,
              "dogs/d0.png": 110, "dogs/d1.jpg": 120}
    for name, v in values.items():
        _png(str(root / name), v)
    (root / "cats" / "notes.txt").write_text("not an image")
    os.makedirs(root / "empty")
    return str(root), values


def test_flow_from_directory_lists_classes_and_files_like_keras(tree, capsys):
    root, values = tree
    it = ImageDataGenerator().flow_from_directory(root, target_size=(4, 6), batch_size=4, shuffle=False)
    assert capsys.readouterr().out.strip() == "Found 6 images belonging to 3 classes."
    assert it.class_indices == {"cats": 0, "dogs": 1, "empty": 2} and it.num_classes == 3
    assert it.filenames == [os.path.join("cats", f) for f in ("c0.png", "c1.png", "c3.png")] + [
        os.path.join("cats", "deep", "c2.png"), os.path.join("dogs", "d0.png"),
        os.path.join("dogs", "d1.jpg")]
    assert it.classes.tolist() == [0, 0, 0, 0, 1, 1] and it.samples == 6 and len(it) == 2
    x, y = it[0]
    assert x.shape == (4, 4, 6, 3) and x.dtype == np.float32 and y.shape == (4, 3)
    assert x[:, 0, 0, 0].tolist() == [10.0, 20.0, 40.0, 30.0]  # each image's solid value, in order
    assert y.tolist() == [[1, 0, 0]] * 4
    x, y = it[1]
    assert x[:, 0, 0, 0].tolist() == [110.0, 120.0] and y.tolist() == [[0, 1, 0]] * 2
    assert list_pictures(root) and all(p.endswith((".png", ".jpg")) for p in list_pictures(root))


@pytest.mark.parametrize("mode", ["binary", "sparse", "input", None])
def test_flow_from_directory_class_modes(tree, mode):
    root, _ = tree
    it = ImageDataGenerator(rescale=1 / 255).flow_from_directory(root, target_size=(2, 3),
                                                                 classes=["dogs", "cats"],
                                                                 class_mode=mode, batch_size=6, shuffle=False)
    assert it.class_indices == {"dogs": 0, "cats": 1}
    batch = it[0]
    if mode is None:
        assert batch.shape == (6, 2, 3, 3)
        return
    x, y = batch
    assert np.allclose(x[0], 110 / 255) and x.max() <= 1.0  # rescaled; dogs come first now
    if mode == "input":
        np.testing.assert_array_equal(x, y)
    else:
        assert y.dtype == np.float32 and y.tolist() == [0, 0, 1, 1, 1, 1]


def test_flow_from_directory_shuffle_seed_subset_grayscale_and_errors(tree, capsys):
    root, _ = tree
    gen = ImageDataGenerator(validation_split=0.5)
    a = gen.flow_from_directory(root, target_size=(4, 6), batch_size=6, seed=3, shuffle=True)
    b = gen.flow_from_directory(root, target_size=(4, 6), batch_size=6, seed=3, shuffle=True)
    np.testing.assert_array_equal(a[0][0], b[0][0])
    first = a[0][0][:, 0, 0, 0].tolist()
    assert sorted(first) == [10.0, 20.0, 30.0, 40.0, 110.0, 120.0]
    val = gen.flow_from_directory(root, target_size=(4, 6), subset="validation", shuffle=False)
    train = gen.flow_from_directory(root, target_size=(4, 6), subset="training", shuffle=False)
    # per class directory: the first half of its sorted files is validation
    assert val.filenames == [os.path.join("cats", "c0.png"), os.path.join("cats", "c1.png"),
                             os.path.join("dogs", "d0.png")]
    assert len(train.filenames) == 3 and not set(train.filenames) & set(val.filenames)
    gray = ImageDataGenerator().flow_from_directory(root, color_mode="grayscale", target_size=(4, 6))
    assert gray[0][0].shape[-1] == 1
    with pytest.raises(ValueError, match="class_mode='binary' needs 2 classes"):
        ImageDataGenerator().flow_from_directory(root, class_mode="binary")
    with pytest.raises(ValueError, match="Invalid class_mode: 'onehot'"):
        ImageDataGenerator().flow_from_directory(root, class_mode="onehot")
    with pytest.raises(FileNotFoundError, match="classes \\['birds'\\] have no subdirectory"):
        ImageDataGenerator().flow_from_directory(root, classes=["birds"])
    with pytest.raises(ValueError, match="needs ImageDataGenerator\\(validation_split=...\\)"):
        ImageDataGenerator().flow_from_directory(root, subset="training")


def test_fit_on_flow_from_directory(tree):
    from arignote.layers import Dense, Flatten
    from arignote.models import Sequential

    root, _ = tree
    torch.manual_seed(0)
    it = ImageDataGenerator(rescale=1 / 255, horizontal_flip=True).flow_from_directory(
        root, target_size=(4, 6), classes=["cats", "dogs"], class_mode="binary", batch_size=3, seed=0)
    model = Sequential([Flatten(input_shape=(4, 6, 3)), Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    history = model.fit(it, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and it.epoch >= 2


# ------------------------------------------------------------------------------------------- dataframes


def test_flow_from_dataframe_modes_validation_and_weights(tree, tmp_path):
    pd = pytest.importorskip("pandas")
    root, _ = tree
    df = pd.DataFrame({
        "filename": ["cats/c0.png", "dogs/d0.png", "cats/missing.png", "dogs/d1.jpg", "cats/notes.txt"],
        "class": ["cat", "dog", "cat", "dog", "cat"],
        "score": [0.5, 1.5, 2.5, 3.5, 4.5],
        "w": [1.0, 2.0, 3.0, 4.0, 5.0],
    })
    gen = ImageDataGenerator()
    with pytest.warns(UserWarning, match="Found 2 invalid image filename\\(s\\) in x_col='filename'"):
        it = gen.flow_from_dataframe(df, directory=root, target_size=(4, 6), batch_size=8, shuffle=False,
                                     weight_col="w")
    assert it.filenames == ["cats/c0.png", "dogs/d0.png", "dogs/d1.jpg"]
    assert it.class_indices == {"cat": 0, "dog": 1}
    x, y, w = it[0]
    assert x[:, 0, 0, 0].tolist() == [10.0, 110.0, 120.0]
    assert y.tolist() == [[1, 0], [0, 1], [0, 1]] and w.tolist() == [1.0, 2.0, 4.0]
    good = df.iloc[[0, 1, 3]]
    raw = gen.flow_from_dataframe(good, root, y_col="score", class_mode="raw", target_size=(4, 6),
                                  shuffle=False)
    assert raw[0][1].tolist() == [0.5, 1.5, 3.5]
    multi = gen.flow_from_dataframe(good, root, y_col=["score", "w"], class_mode="multi_output",
                                    target_size=(4, 6), shuffle=False)
    assert [c.tolist() for c in multi[0][1]] == [[0.5, 1.5, 3.5], [1.0, 2.0, 4.0]]
    binary = gen.flow_from_dataframe(good, root, class_mode="binary", target_size=(4, 6), shuffle=False)
    assert binary[0][1].tolist() == [0.0, 1.0, 1.0]
    absolute = good.assign(filename=[os.path.join(root, f) for f in good["filename"]])
    labels = pd.DataFrame({"filename": absolute["filename"], "tags": [["cat"], ["dog", "pet"], ["dog"]]})
    tagged = gen.flow_from_dataframe(labels, y_col="tags", target_size=(4, 6), shuffle=False)
    assert tagged.class_indices == {"cat": 0, "dog": 1, "pet": 2}
    assert tagged[0][1].tolist() == [[1, 0, 0], [0, 1, 1], [0, 1, 0]]  # multi-label rows
    only_cats = gen.flow_from_dataframe(good, root, classes=["cat"], target_size=(4, 6))
    assert only_cats.filenames == ["cats/c0.png"]  # rows of other classes are dropped
    with pytest.raises(KeyError, match="columns \\['label'\\] are not in the dataframe"):
        gen.flow_from_dataframe(good, root, y_col="label")
    with pytest.raises(TypeError, match="has_ext not supported"):
        gen.flow_from_dataframe(good, root, has_ext=True)
    with pytest.raises(TypeError, match="needs a pandas DataFrame"):
        gen.flow_from_dataframe({"filename": []}, root)
    with pytest.raises(TypeError, match="use class_mode='raw'"):
        gen.flow_from_dataframe(good, root, y_col="score")
