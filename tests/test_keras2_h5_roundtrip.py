"""Keras 2 HDF5 written by arignote: exact layout (no Keras needed), round trips per layer type, the
extension dispatch, hand-built files (TensorFlow/Theano conv kernels, CuDNN RNNs), clear errors."""

from __future__ import annotations

import json
import os
import zipfile

import h5py
import numpy as np
import pytest
import torch

from arignote import checkpoint
from arignote.layers import (
    GRU,
    LSTM,
    AveragePooling2D,
    BatchNormalization,
    Conv1D,
    Conv2D,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    GlobalAveragePooling1D,
    MaxPooling2D,
)
from arignote.models import Model, Sequential, load_model, model_from_json
from arignote.saving import h5file, layouts

RNG = np.random.RandomState(7)


def _randomize(model):
    for layer in model.layers:
        ws = layer.get_weights()
        if ws:
            layer.set_weights(
                [
                    RNG.uniform(0.5, 1.5, w.shape).astype(w.dtype)
                    if "var" in str(i)
                    else RNG.uniform(-0.5, 0.5, w.shape).astype(w.dtype)
                    for i, w in enumerate(ws)
                ]
            )
    return model


# one model per layer family; each must survive save -> load with identical predictions
MODELS = {
    "dense": lambda: (
        Sequential([Dense(4, activation="relu", input_shape=(3,)), Dropout(0.5), Dense(2)]),
        (3,),
    ),
    "conv2d_bn": lambda: (
        Sequential(
            [
                Conv2D(3, (3, 2), padding="same", input_shape=(6, 5, 2)),
                BatchNormalization(),
                MaxPooling2D(),
                AveragePooling2D(1),
                Flatten(),
                Dense(2),
            ]
        ),
        (6, 5, 2),
    ),
    "conv1d": lambda: (
        Sequential([Conv1D(3, 2, input_shape=(6, 2)), GlobalAveragePooling1D(), Dense(2)]),
        (6, 2),
    ),
    "embedding_lstm": lambda: (Sequential([Embedding(9, 3, input_length=4), LSTM(3), Dense(2)]), "int"),
    "gru": lambda: (Sequential([GRU(3, return_sequences=True, input_shape=(4, 2)), GRU(2)]), (4, 2)),
}


def _x(spec, n=3):
    if spec == "int":
        return RNG.randint(0, 9, size=(n, 4)).astype("int64")
    return RNG.uniform(-1, 1, size=(n, *spec)).astype("float32")


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("ext", [".h5", ".hdf5", ".keras"])
def test_round_trip_every_layer_type(kind, ext, tmp_path):
    model, spec = MODELS[kind]()
    _randomize(model)
    x = _x(spec)
    path = str(tmp_path / f"m{ext}")
    model.save(path)
    assert h5file.is_hdf5(path)
    loaded = load_model(path)
    assert [type(a) for a in loaded.layers] == [type(b) for b in model.layers]
    assert [a.name for a in loaded.layers] == [b.name for b in model.layers]
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(
        loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6, atol=1e-6
    )
    # weights only, into a fresh model of the same architecture
    wpath = str(tmp_path / f"w{ext}")
    model.save_weights(wpath)
    fresh, _ = MODELS[kind]()
    fresh.load_weights(wpath)
    np.testing.assert_allclose(fresh.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6, atol=1e-6)


def test_written_file_has_keras2_layout(tmp_path):
    model = Sequential(
        [
            Dense(4, input_shape=(3,), name="dense_1"),
            BatchNormalization(name="bn"),
            Flatten(name="flat"),
            Dense(2, name="dense_2"),
        ]
    )
    model.compile("adam", "mse", metrics=["mae"])
    model.fit(np.ones((4, 3), "float32"), np.ones((4, 2), "float32"), epochs=1, verbose=0)
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        for key in ("keras_version", "backend", "model_config", "training_config"):
            assert isinstance(f.attrs[key], bytes), key  # fixed-length strings, as h5py 2 wrote them
        assert f.attrs["backend"] == b"tensorflow" and f.attrs["keras_version"] == b"2.3.1"
        config = json.loads(f.attrs["model_config"])
        assert config["class_name"] == "Sequential"
        # an explicit InputLayer first, as tf.keras writes it: Keras 2.3.1 reads it and Keras 3's legacy
        # loader reads it right (model.to_json() and get_config() list only the layers added)
        first, second = config["config"]["layers"][:2]
        assert first["class_name"] == "InputLayer" and first["config"]["batch_input_shape"] == [None, 3]
        assert second["class_name"] == "Dense" and "batch_input_shape" not in second["config"]
        assert "build_input_shape" not in config["config"]  # the shape was declared, not built from data
        assert [s["class_name"] for s in json.loads(model.to_json())["config"]["layers"]][0] == "Dense"
        training = json.loads(f.attrs["training_config"])
        assert training["optimizer_config"]["class_name"] == "Adam"
        assert training["loss"] == "mean_squared_error"
        assert training["optimizer_config"]["config"]["learning_rate"] == pytest.approx(0.001)
        assert "lr" not in training["optimizer_config"]["config"]
        assert training["metrics"] == ["mae"]
        g = f["model_weights"]
        assert list(g.attrs["layer_names"]) == [b"dense_1", b"bn", b"flat", b"dense_2"]
        assert g.attrs["layer_names"].dtype.kind == "S"
        assert list(g["dense_1"].attrs["weight_names"]) == [b"dense_1/kernel:0", b"dense_1/bias:0"]
        assert list(g["bn"].attrs["weight_names"]) == [
            b"bn/gamma:0",
            b"bn/beta:0",
            b"bn/moving_mean:0",
            b"bn/moving_variance:0",
        ]
        assert len(g["flat"].attrs["weight_names"]) == 0
        kernel = g["dense_1"]["dense_1"]["kernel:0"]
        assert kernel.shape == (3, 4) and kernel.dtype == np.float32
        np.testing.assert_array_equal(kernel[()], model.layers[0].get_weights()[0])
        opt_names = [n.decode() for n in f["optimizer_weights"].attrs["weight_names"]]
        assert opt_names[0] == "Adam/iterations:0" and len(opt_names) == 1 + 3 * 6
        assert int(f["optimizer_weights"]["Adam/iterations:0"][()]) == 1


def test_optimizer_state_round_trip_continues_identically(tmp_path):
    def build():
        torch.manual_seed(0)
        m = Sequential([Conv2D(2, 3, input_shape=(5, 5, 1)), Flatten(), Dense(2)])
        return m

    x = RNG.rand(8, 5, 5, 1).astype("float32")
    y = RNG.rand(8, 2).astype("float32")
    for opt in ("adam", "rmsprop", "adagrad", "adadelta"):
        model = build()
        model.compile(opt, "mse")
        model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
        path = str(tmp_path / f"{opt}.h5")
        model.save(path)
        loaded = load_model(path)
        model.train_on_batch(x, y)
        loaded.train_on_batch(x, y)
        for a, b in zip(loaded.get_weights(), model.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=opt)


def test_sgd_momentum_state_round_trip(tmp_path):
    from arignote.optimizers import SGD

    model = Sequential([Dense(3, input_shape=(4,)), Dense(1)])
    model.compile(SGD(lr=0.1, momentum=0.9), "mse")
    x, y = RNG.rand(8, 4).astype("float32"), RNG.rand(8, 1).astype("float32")
    model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
    path = str(tmp_path / "sgd.h5")
    model.save(path)
    with h5py.File(path, "r") as f:  # Keras's velocity v = -lr * torch's buffer
        v = f["optimizer_weights"]["training/SGD/moment_0:0"][()]
    buf = model.optimizer.torch.state[model.layers[0].weight]["momentum_buffer"].t().numpy()
    np.testing.assert_allclose(v, -0.1 * buf, rtol=1e-6)
    loaded = load_model(path)
    model.train_on_batch(x, y)
    loaded.train_on_batch(x, y)
    np.testing.assert_allclose(loaded.get_weights()[0], model.get_weights()[0], rtol=1e-5, atol=1e-7)


def test_lstm_optimizer_state_is_saved_in_keras_layout(tmp_path):
    # LSTM's Keras weights are views of its parameters, so its Adam moments have a Keras layout too
    model = Sequential([LSTM(2, input_shape=(3, 2))])
    model.compile("adam", "mse")
    model.fit(RNG.rand(4, 3, 2).astype("float32"), RNG.rand(4, 2).astype("float32"), epochs=1, verbose=0)
    path = str(tmp_path / "lstm.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        assert "optimizer_weights" in f and "training_config" in f.attrs
    assert load_model(path).compiled


# ------------------------------------------------------------------------------------ hand-built files


def _write_keras_file(
    path, layers_config, weights, backend="tensorflow", keras_version="2.2.4", str_attrs=False
):
    """A file in Keras 2's exact layout, written with h5py only. ``weights``: [(layer, [(name, array)])]."""
    enc = (lambda s: s) if str_attrs else (lambda s: np.bytes_(s.encode()))
    names = (
        (lambda xs: np.array(xs, dtype=object))
        if str_attrs
        else (lambda xs: np.array([n.encode() for n in xs], dtype="S"))
    )
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = enc(keras_version)
        f.attrs["backend"] = enc(backend)
        f.attrs["model_config"] = enc(
            json.dumps(
                {"class_name": "Sequential", "config": {"name": "sequential_1", "layers": layers_config}}
            )
        )
        g = f.create_group("model_weights")
        g.attrs["layer_names"] = names([n for n, _ in weights])
        g.attrs["backend"] = enc(backend)
        g.attrs["keras_version"] = enc(keras_version)
        for lname, ws in weights:
            lg = g.create_group(lname)
            lg.attrs["weight_names"] = names([w for w, _ in ws]) if ws else np.array([], dtype=np.float64)
            for wname, arr in ws:
                lg.create_dataset(wname, data=arr)


def _conv_config(**extra):
    cfg = {
        "name": "conv2d_1",
        "trainable": True,
        "batch_input_shape": [None, 4, 4, 1],
        "dtype": "float32",
        "filters": 1,
        "kernel_size": [2, 2],
        "strides": [1, 1],
        "padding": "valid",
        "data_format": "channels_last",
        "dilation_rate": [1, 1],
        "activation": "linear",
        "use_bias": True,
        "kernel_initializer": {
            "class_name": "VarianceScaling",
            "config": {"scale": 1.0, "mode": "fan_avg", "distribution": "uniform", "seed": None},
        },
        "bias_initializer": {"class_name": "Zeros", "config": {}},
        "kernel_regularizer": None,
        "bias_regularizer": None,
        "activity_regularizer": None,
        "kernel_constraint": None,
        "bias_constraint": None,
    }
    cfg.update(extra)
    return {"class_name": "Conv2D", "config": cfg}


def _correlate(x, k, b):
    """Hand-computed 'valid' 2-D cross-correlation of one-channel images with a (kh, kw, 1, 1) kernel."""
    kh, kw = k.shape[:2]
    n, h, w, _ = x.shape
    out = np.zeros((n, h - kh + 1, w - kw + 1, 1), np.float32)
    for i in range(h - kh + 1):
        for j in range(w - kw + 1):
            out[:, i, j, 0] = (x[:, i : i + kh, j : j + kw, 0] * k[:, :, 0, 0]).sum(axis=(1, 2)) + b[0]
    return out


@pytest.mark.parametrize("backend", ["tensorflow", "theano"])
@pytest.mark.parametrize("str_attrs", [False, True])
def test_hand_built_conv_file_matches_hand_computed_forward(backend, str_attrs, tmp_path, capsys):
    kernel = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32).reshape(2, 2, 1, 1)
    bias = np.array([0.5], np.float32)
    stored = kernel[::-1, ::-1] if backend == "theano" else kernel  # Theano convolves: it stores the flip
    path = str(tmp_path / "c.h5")
    _write_keras_file(
        path,
        [_conv_config()],
        [("conv2d_1", [("conv2d_1/kernel:0", stored), ("conv2d_1/bias:0", bias)])],
        backend=backend,
        str_attrs=str_attrs,
    )
    x = RNG.rand(2, 4, 4, 1).astype(np.float32)
    model = load_model(path)
    np.testing.assert_allclose(model.predict(x, verbose=0), _correlate(x, kernel, bias), rtol=1e-5)
    out = capsys.readouterr().out
    assert ("kernels flipped" in out) == (backend == "theano")


def test_theano_file_with_a_1x1_kernel_loads(tmp_path):
    """Flipping a (1, 1, in, out) kernel gives numpy a view with negative strides that still counts
    as contiguous; torch refuses those, so a Theano file of a ResNet's 1x1 convolutions must load too."""
    kernel = np.array([1.0, -2.0, 3.0], np.float32).reshape(1, 1, 1, 3)
    bias = np.array([0.5, 0.0, -0.5], np.float32)
    path = str(tmp_path / "c1.h5")
    _write_keras_file(
        path,
        [_conv_config(kernel_size=[1, 1], filters=3)],
        [("conv2d_1", [("conv2d_1/kernel:0", kernel), ("conv2d_1/bias:0", bias)])],
        backend="theano",
    )
    x = RNG.rand(2, 4, 4, 1).astype(np.float32)
    np.testing.assert_allclose(load_model(path).predict(x, verbose=0), x * kernel[0, 0] + bias, rtol=1e-5)


def test_chunked_layer_names_are_read(tmp_path):
    path = str(tmp_path / "w.h5")
    with h5py.File(path, "w") as f:
        f.attrs["layer_names0"] = np.array([b"a"], dtype="S")
        f.attrs["layer_names1"] = np.array([b"b"], dtype="S")
        assert h5file.read_names(f, "layer_names") == ["a", "b"]
        h5file.write_names(f.create_group("g"), "weight_names", [f"n{i:05d}" * 1000 for i in range(20)])
        assert "weight_names0" in f["g"].attrs and len(h5file.read_names(f["g"], "weight_names")) == 20


def test_cudnn_lstm_and_gru_weights_load_into_plain_layers(tmp_path):
    for cls, gates in ((LSTM, 4), (GRU, 3)):
        kwargs = {"reset_after": True} if cls is GRU else {}  # CuDNNGRU's formula (Keras 2 converts to it)
        ref = Sequential([cls(3, input_shape=(4, 2), name="rnn", **kwargs)])
        _randomize(ref)
        cudnn = layouts.plain_to_cudnn(ref.layers[0].get_weights(), gates)
        assert cudnn[2].shape == (2 * gates * 3,)
        path = str(tmp_path / f"{cls.__name__}.h5")
        with h5py.File(path, "w") as f:
            f.attrs["layer_names"] = np.array([b"rnn"], dtype="S")
            f.attrs["backend"] = np.bytes_(b"tensorflow")
            f.attrs["keras_version"] = np.bytes_(b"2.2.4")
            g = f.create_group("rnn")
            g.attrs["weight_names"] = np.array([b"rnn/kernel:0", b"rnn/recurrent_kernel:0", b"rnn/bias:0"])
            for n, w in zip(("rnn/kernel:0", "rnn/recurrent_kernel:0", "rnn/bias:0"), cudnn):
                g.create_dataset(n, data=w)
        model = Sequential([cls(3, input_shape=(4, 2), name="rnn", **kwargs)])
        model.load_weights(path)
        x = _x((4, 2))
        np.testing.assert_allclose(
            model.predict(x, verbose=0), ref.predict(x, verbose=0), rtol=1e-5, atol=1e-6
        )
        # the conversion is a real permutation, not the identity
        assert not np.allclose(cudnn[0], ref.layers[0].get_weights()[0])


def test_reorder_dense_after_flatten_matches_channels_first_flatten():
    chw = RNG.rand(2, 3, 4).astype(np.float32)  # (C, H, W)
    kernel = RNG.rand(24, 5).astype(np.float32)  # rows in channels-first flatten order
    new = layouts.reorder_dense_after_flatten(kernel, (3, 4, 2))
    hwc = chw.transpose(1, 2, 0)
    np.testing.assert_allclose(hwc.reshape(-1) @ new, chw.reshape(-1) @ kernel, rtol=1e-5)


# ------------------------------------------------------------------------------------ dispatch and errors


def test_other_extensions_keep_arignote_checkpoints(tmp_path):
    model = Sequential([Dense(2, input_shape=(3,))])
    path = str(tmp_path / "m.ckpt")
    model.save(path)
    assert not h5file.is_hdf5(path) and checkpoint.load(path)["format"] == "arignote-model/1"
    np.testing.assert_array_equal(load_model(path).get_weights()[0], model.get_weights()[0])


def test_old_arignote_checkpoint_named_h5_still_loads(tmp_path):
    from arignote.models import saving

    model = Sequential([Dense(2, input_shape=(3,))])
    path = str(tmp_path / "legacy.h5")
    checkpoint.save(
        path,
        {
            "format": saving.MODEL_FORMAT,
            "class_name": "Sequential",
            "config": json.dumps(model.get_config()),
            "weights": model.module.state_dict(),
        },
    )
    np.testing.assert_array_equal(load_model(path).get_weights()[0], model.get_weights()[0])


def test_files_that_are_neither_say_what_they_are(tmp_path):
    keras3 = tmp_path / "m.keras"
    with zipfile.ZipFile(keras3, "w") as z:
        z.writestr("config.json", "{}")
        z.writestr("model.weights.h5", b"")
    with pytest.raises(ValueError, match="Keras 3 '.keras' archive"):
        load_model(str(keras3))
    js = tmp_path / "arch.h5"
    js.write_text(Sequential([Dense(2, input_shape=(3,))]).to_json())
    with pytest.raises(ValueError, match="model_from_json"):
        load_model(str(js))
    junk = tmp_path / "junk.hdf5"
    junk.write_bytes(b"GIF89a not a model")
    with pytest.raises(ValueError, match="neither a Keras 2 HDF5 file nor an arignote checkpoint"):
        Sequential([Dense(2, input_shape=(3,))]).load_weights(str(junk))


def test_weights_file_given_to_load_model_says_load_weights(tmp_path):
    path = str(tmp_path / "w.h5")
    Sequential([Dense(2, input_shape=(3,))]).save_weights(path)
    with pytest.raises(ValueError, match="weights only.*load_weights"):
        load_model(path)


def test_wrapped_torch_module_cannot_write_hdf5(tmp_path):
    model = Model(torch.nn.Linear(3, 2))
    with pytest.raises(ValueError, match=r"plain torch module \(Linear\).*\.pt or \.ckpt"):
        model.save(str(tmp_path / "m.h5"))


def test_unsupported_argument_in_file_is_named(tmp_path):
    path = str(tmp_path / "c.h5")
    _write_keras_file(path, [_conv_config(frobnicate=3)], [("conv2d_1", [])])
    with pytest.raises(
        ValueError, match=r"layer 'conv2d_1' \(Conv2D\): argument frobnicate=3 is not supported"
    ):
        load_model(path)


def test_unknown_layer_class_in_file_is_named(tmp_path):
    path = str(tmp_path / "c.h5")
    _write_keras_file(path, [{"class_name": "MyLayer", "config": {"name": "my"}}], [("my", [])])
    with pytest.raises(ValueError, match="unknown layer class 'MyLayer'.*custom_objects"):
        load_model(path)


def test_keras1_file_is_refused_with_its_version(tmp_path):
    path = str(tmp_path / "k1.h5")
    _write_keras_file(path, [_conv_config()], [("conv2d_1", [])], keras_version="1.2.2")
    with pytest.raises(ValueError, match="Keras 1.2.2"):
        load_model(path)


def test_to_json_and_model_from_json_round_trip():
    model = Sequential(
        [Conv2D(2, 3, input_shape=(5, 5, 1), name="c"), Flatten(), Dense(3, activation="softmax")]
    )
    text = model.to_json()
    spec = json.loads(text)
    assert spec["class_name"] == "Sequential" and spec["keras_version"] == "2.3.1"
    assert spec["config"]["layers"][0]["config"]["batch_input_shape"] == [None, 5, 5, 1]
    assert spec["config"]["layers"][0]["class_name"] == "Conv2D"
    rebuilt = model_from_json(text)
    assert [type(a) for a in rebuilt.layers] == [type(b) for b in model.layers]
    assert rebuilt.layers[2].get_config()["activation"] == "softmax"
    assert rebuilt.output_shape == model.output_shape
    with pytest.raises(ValueError, match="not JSON"):
        model_from_json("nope")


def test_model_from_json_reads_keras2_json():
    layer = _conv_config()
    text = json.dumps(
        {
            "class_name": "Sequential",
            "config": {"name": "s", "layers": [layer]},
            "keras_version": "2.3.1",
            "backend": "tensorflow",
        }
    )
    model = model_from_json(text)
    assert model.layers[0].name == "conv2d_1" and model.expected_input_shape() == (4, 4, 1)


def test_custom_objects_rebuild_a_users_layer(tmp_path):
    from arignote.layers import Layer

    class Scale(Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

        def build(self, input_shape):
            self.gamma = self.add_weight("gamma", (input_shape[-1],), initializer="ones")
            super().build(input_shape)

        def call(self, x):
            return x * self.gamma * self.factor

    model = Sequential([Dense(2, input_shape=(3,)), Scale(3.0, name="scale")])
    model.layers[1].set_weights([np.array([1.0, -1.0], np.float32)])
    path = str(tmp_path / "custom.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        assert list(f["model_weights"]["scale"].attrs["weight_names"]) == [b"scale/gamma:0"]
    with pytest.raises(ValueError, match="unknown layer class 'Scale'"):
        load_model(path)
    loaded = load_model(path, custom_objects={"Scale": Scale})
    x = _x((3,))
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    assert os.path.getsize(path) < 20000


def test_hdf5_save_is_atomic_and_truncated_files_are_named(tmp_path, monkeypatch):
    model = Sequential([Dense(2, input_shape=(3,))])
    path = tmp_path / "m.h5"
    model.save(str(path))
    good = path.read_bytes()
    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(checkpoint.CheckpointSaveError, match="the previous m.h5 is intact"):
        Sequential([Dense(2, input_shape=(3,))]).save(str(path))
    monkeypatch.undo()
    assert path.read_bytes() == good and os.listdir(tmp_path) == ["m.h5"]
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(ValueError, match="m.h5: an HDF5 file that h5py cannot open"):
        load_model(str(path))


def test_custom_object_scope_serves_load_model(tmp_path):
    from arignote.utils import CustomObjectScope

    def my_loss(y_true, y_pred):
        return ((y_true - y_pred) ** 2).mean(dim=-1)

    model = Sequential([Dense(2, input_shape=(3,))])
    model.compile("sgd", my_loss)
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        assert json.loads(f.attrs["training_config"])["loss"] == "my_loss"
    with CustomObjectScope({"my_loss": my_loss}):
        loaded = load_model(path)
    assert loaded.compiled and loaded.loss is my_loss
    assert load_model(path, custom_objects={"my_loss": my_loss}).loss is my_loss


def test_multi_output_compile_settings_are_written_as_keras2_and_restored(tmp_path):
    from arignote.layers import Input

    inp = Input(shape=(4,))
    out_a = Dense(2, activation="softmax", name="a")(inp)
    out_b = Dense(1, name="b")(inp)
    model = Model(inp, [out_a, out_b])
    model.compile("adam", loss=["categorical_crossentropy", "mse"], loss_weights=[1.0, 0.5],
                  metrics={"a": ["accuracy"], "b": ["mae"]})
    x = RNG.uniform(-1, 1, (8, 4)).astype("float32")
    ys = [np.eye(2, dtype="float32")[RNG.randint(0, 2, 8)], RNG.uniform(-1, 1, (8, 1)).astype("float32")]
    model.train_on_batch(x, ys)
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        training = json.loads(f.attrs["training_config"])
    # Keras 2.3.1's training_config: the loss per output by name, loss_weights and metrics as compiled
    assert training["loss"] == ["categorical_crossentropy", "mean_squared_error"]
    assert training["loss_weights"] == [1.0, 0.5]
    assert training["metrics"] == {"a": ["accuracy"], "b": ["mae"]}
    loaded = load_model(path)
    assert loaded.metrics_names == model.metrics_names
    np.testing.assert_allclose(loaded.evaluate(x, ys, verbose=0), model.evaluate(x, ys, verbose=0), rtol=1e-6)
    model.train_on_batch(x, ys)
    loaded.train_on_batch(x, ys)  # the same step from the file's Adam state
    for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_nested_models_and_wrappers_are_written_as_keras_3_also_reads_them(tmp_path):
    from arignote.layers import Bidirectional, Input

    inner = Sequential([Dense(4, input_shape=(3,), name="in_dense"), BatchNormalization(name="in_bn")],
                       name="inner")
    outer = Sequential([inner, Dense(2, name="top")], name="outer")
    _randomize(outer)
    path = str(tmp_path / "seq.h5")
    outer.save(path)
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["model_config"])["config"]
    nested = config["layers"][0]
    assert nested["class_name"] == "Sequential"
    # the nested input is an InputLayer, as tf.keras writes it (Keras 3 misreads batch_input_shape elsewhere)
    assert [s["class_name"] for s in nested["config"]["layers"]] == ["InputLayer", "Dense",
                                                                     "BatchNormalization"]
    assert nested["config"]["layers"][0]["config"]["batch_input_shape"] == [None, 3]
    assert "batch_input_shape" not in nested["config"]["layers"][1]["config"]
    x = RNG.uniform(-1, 1, (3, 3)).astype("float32")
    loaded = load_model(path)  # a Sequential inside a Sequential is rebuilt by its class
    assert [type(layer).__name__ for layer in loaded.layers] == ["Sequential", "Dense"]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), outer.predict(x, verbose=0), rtol=0, atol=1e-6)

    inp = Input(shape=(5, 3))
    model = Model(inp, Bidirectional(LSTM(2), name="bi")(inp))
    model.save(str(tmp_path / "bi.h5"))
    with h5py.File(str(tmp_path / "bi.h5"), "r") as f:
        layers = json.loads(f.attrs["model_config"])["config"]["layers"]
    inner_spec = layers[1]["config"]["layer"]
    assert (inner_spec["class_name"], inner_spec["module"]) == ("LSTM", "keras.layers")  # Keras 3 finds it so
    assert type(load_model(str(tmp_path / "bi.h5")).get_layer("bi").layer).__name__ == "LSTM"


@pytest.mark.parametrize("impl", ["fused", "foreach", "loop"])
def test_restored_momentum_of_a_channels_last_kernel_steps_as_before_saving(impl, tmp_path):
    """The file's slots are restored contiguous; the conv kernel is channels-last once placed. torch's
    fused SGD read the two layouts as the same memory (the kernel drifted by 3e-3 in one step)."""
    from arignote import config
    from arignote.optimizers import SGD

    with config.override(optimizer_impl=impl, memory_format="channels_last"):
        model = Sequential([Conv2D(3, 3, padding="same", input_shape=(6, 5, 2)), Flatten(), Dense(2)])
        _randomize(model)
        model.compile(SGD(lr=0.05, momentum=0.9), "mse")
        x = RNG.uniform(-1, 1, (4, 6, 5, 2)).astype("float32")
        y = RNG.uniform(-1, 1, (4, 2)).astype("float32")
        model.train_on_batch(x, y)
        path = str(tmp_path / "m.h5")
        model.save(path)
        loaded = load_model(path)
        model.train_on_batch(x, y)
        loaded.train_on_batch(x, y)
        kernel = loaded.layers[0].weight if hasattr(loaded.layers[0], "weight") else None
        if kernel is not None:
            assert kernel.is_contiguous(memory_format=torch.channels_last)
        for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
