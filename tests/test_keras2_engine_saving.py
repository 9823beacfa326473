"""Keras 2.3.1's saving behaviour that its own tests (tests/test_model_saving.py) exercise, written as
Keras 2 code: save_model / load_model with an open h5py.File, an h5py.Group, a binary file and a
BytesIO; names past HDF5's 64 KB attribute limit (Keras 2.3.1's numbered chunks, read from a file
real Keras 2.3.1 wrote, and written here); load_weights(reshape=); save_weights(overwrite=); a Lambda
with numpy arguments; a custom activation through custom_objects; an unused input; saving right
after compile; and the module paths published Keras 2 code imports (keras.engine.saving, ...)."""

from __future__ import annotations

import hashlib
import io
import json
import os

import h5py
import numpy as np
import pytest

from arignote import backend as K
from arignote import losses, optimizers
from arignote.layers import LSTM, Conv2D, Dense, Flatten, Input, Lambda
from arignote.models import Model, Sequential, load_model, model_from_json, save_model
from arignote.utils import io_utils

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "keras2")


def _model():
    x = Input(shape=(3,), name="x")
    y = Dense(2, name="out")(Dense(4, activation="tanh", name="hidden")(x))
    model = Model(x, y)
    model.compile(loss=losses.MeanSquaredError(), optimizer=optimizers.RMSprop(lr=0.01), metrics=["mae"])
    data = np.random.RandomState(0).uniform(-1, 1, (5, 3)).astype("float32")
    model.train_on_batch(data, np.zeros((5, 2), "float32"))
    return model, data


# ------------------------------------------------------------------------- file objects, streams

def test_save_and_load_through_an_open_h5py_file_and_group(tmp_path):
    model, x = _model()
    path = tmp_path / "m.h5"
    with h5py.File(path, "w") as f:
        save_model(model, f)
        assert json.loads(f.attrs["model_config"])["class_name"] == "Model"
        np.testing.assert_allclose(load_model(f).predict(x), model.predict(x), atol=1e-6)
        group = f.create_group("inner")
        model.save(group)
        loaded = load_model(group)
        assert f.id.valid  # the caller's file stays open
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), atol=1e-6)
    assert loaded.compiled and type(loaded.optimizer).__name__ == "RMSprop"
    with h5py.File("in-memory", "w", driver="core", backing_store=False) as f:
        save_model(model, f)
        np.testing.assert_allclose(load_model(f).predict(x), model.predict(x), atol=1e-6)


def test_save_to_a_binary_file_and_load_from_one_and_from_bytesio(tmp_path):
    model, x = _model()
    path = tmp_path / "stream.h5"
    with open(path, "wb") as raw:
        save_model(model, raw)
    with h5py.File(path, "r") as f:  # what the stream got is a whole Keras HDF5 file
        np.testing.assert_allclose(load_model(f).predict(x), model.predict(x), atol=1e-6)
    with open(path, "rb") as raw:
        np.testing.assert_allclose(load_model(raw).predict(x), model.predict(x), atol=1e-6)
    stream = io.BytesIO()
    model.save(stream)
    stream.seek(0)
    np.testing.assert_allclose(load_model(stream).predict(x), model.predict(x), atol=1e-6)


def test_a_stream_that_is_not_hdf5_names_the_stream():
    with pytest.raises(ValueError, match="BytesIO stream.*cannot open"):
        load_model(io.BytesIO(b"not an hdf5 file at all"))


# ------------------------------------------------------------------ the 64 KB attribute limit

def _long_names_model():
    model = Sequential([LSTM(3, input_shape=(4, 2), name="lstm_" + "l" * 25000),
                        Dense(3, name="dense_a_" + "a" * 25000), Dense(2, name="dense_b_" + "b" * 25000),
                        Dense(1, name="out")])
    return model


def test_keras2_chunked_layer_and_weight_names_load_in_order_and_by_name():
    """Keras 2.3.1 wrote this file (scripts/make_keras2_long_names_fixture.py) with layer_names0/1 and
    weight_names0/1, the way it stores name lists past HDF5's attribute limit."""
    path = os.path.join(FIXTURES, "long_names_weights.h5")
    want = np.load(os.path.join(FIXTURES, "long_names_values.npz"))
    with h5py.File(path, "r") as f:
        assert "layer_names" not in f.attrs and "layer_names1" in f.attrs
    for by_name in (False, True):
        model = _long_names_model()
        model.load_weights(path, by_name=by_name)
        got = model.get_weights()
        assert len(got) == len(want.files)
        for i, w in enumerate(got):
            np.testing.assert_array_equal(w, want[f"w{i}"])


def test_long_names_are_written_in_chunks_and_read_back(tmp_path):
    model = _long_names_model()
    path = tmp_path / "w.h5"
    model.save_weights(path)
    with h5py.File(path, "r") as f:
        assert "layer_names" not in f.attrs
        assert all(a.nbytes <= 64512 for a in (f.attrs["layer_names0"], f.attrs["layer_names1"]))
        lstm = f["lstm_" + "l" * 25000]
        assert "weight_names0" in lstm.attrs and "weight_names" not in lstm.attrs
    other = _long_names_model()
    other.load_weights(path, by_name=True)
    for a, b in zip(other.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_a_model_config_past_the_limit_is_chunked_and_loads(tmp_path):
    x = Input(shape=(2,), name="input_" + "x" * 2 ** 15)
    y = Dense(2, name="dense_1")(Dense(2, name="dense_0")(x))
    model = Model(x, y)
    model.compile("adam", "mse")
    data = np.random.RandomState(1).rand(3, 2).astype("float32")
    path = tmp_path / "m.h5"
    save_model(model, path)
    with h5py.File(path, "r") as f:
        assert "model_config" not in f.attrs and "model_config1" in f.attrs
        text = "".join(v.decode() for i in range(len([a for a in f.attrs if a.startswith("model_config")]))
                       for v in f.attrs[f"model_config{i}"])
        assert json.loads(text)["config"]["input_layers"][0][0] == "input_" + "x" * 2 ** 15
    np.testing.assert_allclose(load_model(path).predict(data), model.predict(data), atol=1e-6)
    save_model(model, path)  # a second save into the same name replaces every chunk
    with h5py.File(path, "a") as f:
        from arignote.saving import h5file
        h5file.write_str(f, "model_config", "{}")  # a short one written over chunks drops them
        assert [a for a in f.attrs if a.startswith("model_config")] == ["model_config"]


def test_keras_attribute_helpers_round_trip_and_refuse_an_item_over_the_limit():
    from arignote.engine.saving import load_attributes_from_hdf5_group, save_attributes_to_hdf5_group
    with h5py.File("attrs", "w", driver="core", backing_store=False) as f:
        names = [f"n{i}_" + "z" * 30000 for i in range(3)]
        save_attributes_to_hdf5_group(f, "names", [n.encode() for n in names])
        assert sorted(f.attrs) == ["names0", "names1"]  # 2 + 1 names of 30 KB, each chunk under 64512
        assert load_attributes_from_hdf5_group(f, "names") == names
        save_attributes_to_hdf5_group(f, "short", ["a", "b"])
        assert load_attributes_from_hdf5_group(f, "short") == ["a", "b"]
        with pytest.raises(RuntimeError, match="larger than 64512 bytes"):
            save_attributes_to_hdf5_group(f, "huge", ["q" * 70000])


# ------------------------------------------------------------------ load_weights / save_weights

def test_load_weights_reshape_fits_a_dense_kernel_into_a_1x1_convolution(tmp_path):
    source = Sequential([Conv2D(2, (1, 1), input_shape=(1, 1, 1), name="rick"), Flatten(),
                         Dense(3, name="morty")])
    path = tmp_path / "w.h5"
    source.save_weights(path)
    target = Sequential([Conv2D(2, (1, 1), input_shape=(1, 1, 1), name="rick"),
                         Conv2D(3, (1, 1), name="morty")])
    for by_name in (False, True):
        with pytest.raises(ValueError, match="has shape .* but the saved weight has shape"):
            target.load_weights(path, by_name=by_name)
        target.load_weights(path, by_name=by_name, reshape=True)
        kernel = target.layers[1].get_weights()[0]
        assert kernel.shape == (1, 1, 2, 3)
        np.testing.assert_array_equal(kernel.reshape(2, 3), source.layers[2].get_weights()[0])
    x = np.random.RandomState(2).rand(4, 1, 1, 1).astype("float32")
    np.testing.assert_allclose(target.predict(x).reshape(4, 3), source.predict(x), atol=1e-6)
    wrong = Sequential([Conv2D(2, (1, 1), input_shape=(1, 1, 1), name="rick"),
                        Conv2D(4, (1, 1), name="morty")])
    with pytest.raises(ValueError, match="equal size to apply a reshape"):
        wrong.load_weights(path, by_name=True, reshape=True)
    no_bias = Sequential([Conv2D(2, (1, 1), input_shape=(1, 1, 1), use_bias=False, name="rick")])
    with pytest.warns(UserWarning, match=r"Skipping loading .* due to mismatch .*"):
        no_bias.load_weights(path, by_name=True, skip_mismatch=True)


def test_save_weights_overwrite_false_asks_first(tmp_path, monkeypatch):
    model = Sequential([Dense(2, input_shape=(3,))])
    path = tmp_path / "w.h5"
    model.save_weights(path)
    before = path.read_bytes()
    model.set_weights([w + 1 for w in model.get_weights()])
    answers = []
    monkeypatch.setattr(io_utils, "ask_to_proceed_with_overwrite", lambda p: answers.append(p) or False)
    model.save_weights(path, overwrite=False)
    assert answers == [os.fspath(path)] and path.read_bytes() == before
    monkeypatch.setattr(io_utils, "ask_to_proceed_with_overwrite", lambda p: True)
    model.save_weights(path, overwrite=False)
    fresh = Sequential([Dense(2, input_shape=(3,))])
    fresh.load_weights(path)
    np.testing.assert_array_equal(fresh.get_weights()[0], model.get_weights()[0])


# ------------------------------------------------------------------------ what the config holds

def test_lambda_numpy_arguments_are_saved_as_lists_and_load_as_arrays(tmp_path):
    rng = np.random.RandomState(3)
    mean, std = rng.rand(4, 2, 3), np.abs(rng.rand(4, 2, 3)) + 1e-5
    inputs = Input(shape=(4, 2, 3))
    model = Model(inputs, Lambda(lambda image, mu, std: (image - mu) / std,
                                 arguments={"mu": mean, "std": std})(inputs))
    path = tmp_path / "m.h5"
    save_model(model, path)
    with h5py.File(path, "r") as f:
        stored = json.loads(f.attrs["model_config"])["config"]["layers"][1]["config"]["arguments"]
    np.testing.assert_allclose(stored["mu"], mean)  # nested lists, as Keras 2.3.1 wrote them
    loaded = load_model(path, safe_mode=False)  # our own file, its lambda stored as bytecode (issue 30)
    np.testing.assert_allclose(loaded.layers[1].arguments["mu"], mean, rtol=1e-6)
    x = rng.rand(2, 4, 2, 3).astype("float32")
    np.testing.assert_allclose(loaded.predict(x), (x - mean) / std, rtol=1e-5)
    in_json = json.loads(model.to_json())["config"]["layers"][1]["config"]["arguments"]
    assert in_json["std"][0][0][0] == std[0, 0, 0]


def test_a_custom_activation_loads_through_custom_objects(tmp_path):
    x = Input(shape=(3,))
    model = Model(x, Dense(3, activation=K.cos)(x))
    model.compile(loss=losses.MSE, optimizer=optimizers.RMSprop(lr=0.0001))
    path = tmp_path / "m.h5"
    save_model(model, path)
    with pytest.raises(ValueError, match="cos"):
        load_model(path)
    data = np.random.RandomState(4).rand(2, 3).astype("float32")
    loaded = load_model(path, custom_objects={"cos": K.cos})
    np.testing.assert_allclose(loaded.predict(data), model.predict(data), atol=1e-6)
    assert loaded.layers[1].activation is K.cos


def test_an_unused_input_is_saved_and_loaded(tmp_path):
    a, b = Input(shape=(4, 5, 6)), Input(shape=(4, 5, 1))
    model = Model(inputs=[a, b], outputs=Lambda(lambda t: t[:, :, :, :1])(a))
    path = tmp_path / "m.h5"
    save_model(model, path)
    data = [np.random.RandomState(5).rand(2, 4, 5, 6).astype("float32"), np.zeros((2, 4, 5, 1), "float32")]
    for loaded in (load_model(path, safe_mode=False), model_from_json(model.to_json(), safe_mode=False)):
        assert [tuple(t.shape) for t in loaded.inputs] == [(None, 4, 5, 6), (None, 4, 5, 1)]
        np.testing.assert_allclose(loaded.predict(data), data[0][..., :1])


def test_saving_right_after_compile_and_the_make_function_hooks(tmp_path):
    model = Sequential([Dense(2, input_shape=(3,)), Dense(3)])
    model.compile(loss="mse", optimizer="sgd", metrics=["acc"])
    assert model._make_train_function() is None and model._make_predict_function() is None
    path = tmp_path / "m.h5"
    save_model(model, path)
    loaded = load_model(path)
    assert loaded.compiled and type(loaded.optimizer).__name__ == "SGD"


# ------------------------------------------------------------------------------ module paths

def test_engine_saving_names(tmp_path):
    from arignote.engine import saving
    assert saving.load_model is load_model and saving.tf_file_io is None
    assert saving.HDF5_OBJECT_HEADER_LIMIT == 64512
    model = Sequential([Conv2D(2, (2, 2), input_shape=(3, 3, 1), name="c")])
    kernel, bias = model.get_weights()
    flipped = saving.preprocess_weights_for_loading(model.layers[0], [kernel, bias], "2.3.1", "theano")
    np.testing.assert_array_equal(flipped[0], kernel[::-1, ::-1])  # Theano kernels are flipped
    same = saving.preprocess_weights_for_loading(model.layers[0], [kernel, bias])
    np.testing.assert_array_equal(same[0], kernel)
    reshaped = saving.preprocess_weights_for_loading(model.layers[0], [kernel.reshape(4, 2), bias],
                                                     reshape=True)
    assert reshaped[0].shape == (2, 2, 1, 2)
    with pytest.raises(ValueError, match="Keras 1"):
        saving.preprocess_weights_for_loading(model.layers[0], [kernel, bias], original_keras_version="1")
    with h5py.File(tmp_path / "w.h5", "w") as f:
        saving.save_weights_to_hdf5_group(f, model.layers)
        model.set_weights([kernel + 1, bias + 1])
        saving.load_weights_from_hdf5_group(f, model.layers)
        np.testing.assert_array_equal(model.get_weights()[0], kernel)
        model.set_weights([kernel + 1, bias + 1])
        saving.load_weights_from_hdf5_group_by_name(f, model.layers)
        np.testing.assert_array_equal(model.get_weights()[1], bias)


def test_training_utils_helpers_behave_as_keras_2():
    from arignote.engine import training_utils as tu
    assert tu.make_batches(7, 3) == [(0, 3), (3, 6), (6, 7)]
    a, b = np.zeros((4, 3)), np.zeros((3, 4))
    tu.check_array_length_consistency([a, a], [a], [a])
    tu.check_array_length_consistency(None, None, None)
    with pytest.raises(ValueError, match="same number of samples as target arrays"):
        tu.check_array_length_consistency([a], [b], None)
    with pytest.raises(ValueError, match="All input arrays"):
        tu.check_array_length_consistency([a, b], None, None)
    with pytest.raises(ValueError, match="You are passing a target array"):
        tu.check_loss_and_target_compatibility([np.zeros((2, 3, 1))], [losses.CategoricalCrossentropy()],
                                               [(2, 3, 1)])
    with pytest.raises(ValueError, match="targets to have the same shape"):
        tu.check_loss_and_target_compatibility([np.zeros((2, 3, 5))], [losses.MeanSquaredError()],
                                               [(2, 3, 6)])
    tu.check_loss_and_target_compatibility([np.zeros((2, 3))], [losses.categorical_crossentropy], [(2, None)])
    np.testing.assert_allclose(tu.standardize_weights(np.array([0, 1, 0, 0, 2]), class_weight={0: 0.5, 1: 1.0,
                                                                                                2: 1.5}),
                               [0.5, 1.0, 0.5, 0.5, 1.5])
    with pytest.raises(ImportError, match="batch_shuffle.*Model.fit"):
        from arignote.engine.training_utils import batch_shuffle  # noqa: F401


def test_weighted_masked_objective_is_keras_2s_formula():
    from arignote.engine.training_utils import weighted_masked_objective
    x = np.arange(24, dtype="float32").reshape(3, 4, 2)
    y = 2 * x
    weights = np.array([1.0, 0.0, 2.0], "float32")
    mask = np.ones((3, 4), "float32")
    mask[1, 0] = 0
    weighted = weighted_masked_objective(losses.get("mae"))
    out = K.eval(weighted(K.variable(x), K.variable(y), K.variable(weights), K.variable(mask)))
    scores = np.abs(y - x).mean(-1) * mask / (mask.mean() + K.epsilon())
    want = (scores.mean(-1) * weights / (weights != 0).mean()).mean()
    assert float(out) == pytest.approx(float(want), rel=1e-6)
    assert weighted_masked_objective(None) is None


def test_small_module_paths():
    from arignote.backend import load_backend
    from arignote.initializers import _compute_fans
    from arignote.legacy.layers import Highway, MaxoutDense  # noqa: F401
    from arignote.preprocessing.sequence import _remove_long_seq
    from arignote.utils import losses_utils, metrics_utils
    from arignote.utils.data_utils import _hash_file
    assert load_backend.backend() == K.backend()
    assert losses_utils.Reduction.SUM == "sum" and metrics_utils.Reduction.WEIGHTED_MEAN == "weighted_mean"
    assert losses.MeanSquaredError(reduction=losses_utils.Reduction.SUM).reduction == "sum"
    # Keras 2.3.1's formula: channels_last (..., in, out) and channels_first (out, in, ...)
    assert _compute_fans((5, 7)) == (5, 7)
    assert _compute_fans((3, 3, 4, 8)) == (36, 72)
    assert _compute_fans((8, 4, 3, 3), data_format="channels_first") == (36, 72)
    assert _compute_fans((2, 3, 4, 5, 6, 7)) == (np.sqrt(5040), np.sqrt(5040))
    with pytest.raises(ValueError, match="Invalid data_format"):
        _compute_fans((3, 3, 4, 8), data_format="nchw")
    assert _remove_long_seq(3, [[1], [1, 2, 3], [4, 5]], [0, 1, 2]) == ([[1], [4, 5]], [0, 2])
    with pytest.raises(ImportError, match="legacy.layers.Recurrent.*RNN"):
        from arignote.legacy.layers import Recurrent  # noqa: F401
    with pytest.raises(ImportError, match="compute_weighted_loss"):
        from arignote.utils.losses_utils import compute_weighted_loss  # noqa: F401
    data = b"Float like a butterfly"
    import tempfile
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        assert _hash_file(f.name) == hashlib.sha256(data).hexdigest()
        assert _hash_file(f.name, algorithm="md5") == hashlib.md5(data).hexdigest()


def test_io_utils_binary_h5py_helpers_and_h5dict():
    stream = io.BytesIO()
    assert io_utils.save_to_binary_h5py(lambda f: f.attrs.__setitem__("k", 7) or "done", stream) == "done"
    stream.seek(0)
    assert io_utils.load_from_binary_h5py(lambda f: int(f.attrs["k"]), stream) == 7
    with pytest.raises(ImportError, match="H5Dict.*h5py.File"):
        io_utils.H5Dict({})


def test_optimizer_configs_equal_keras_2s():
    """Every optimizer's serialize() against what real Keras 2.3.1 gave
    (scripts/make_keras2_optimizer_config_fixture.py): keys, defaults, float32 values, round trip."""
    with open(os.path.join(FIXTURES, "optimizer_configs.json")) as f:
        cases = json.load(f)
    assert len(cases) == 16
    for case in cases:
        optimizer = getattr(optimizers, case["class"])(**case["kwargs"])
        config = optimizers.serialize(optimizer)
        assert config == case["serialized"], case
        again = optimizers.serialize(optimizers.deserialize(json.loads(json.dumps(config))))
        assert again == case["round_trip"], case
    config = optimizers.serialize(optimizers.Adam())
    optimizers.deserialize(config)
    assert config["class_name"] == "adam"  # Keras 2.3.1's deserialize lowercases the dict it is given


def test_func_load_reads_keras_before_2_1_2s_raw_bytecode_text():
    import marshal

    from arignote.utils.generic_utils import func_load
    for fn in (lambda x: x ** 2, lambda x, k=3: x * k):
        text = marshal.dumps(fn.__code__).decode("raw_unicode_escape")  # what Keras < 2.1.2 stored
        back = func_load(text, defaults=fn.__defaults__)
        assert back.__code__ == fn.__code__ and back(2) == fn(2)
    with pytest.raises(ValueError, match="cannot be read"):
        func_load("garbage!!")  # marshal reads a float from it: not a function's code


def test_ordered_enqueuer_join_end_of_epoch_sees_the_sequence_after_on_epoch_end():
    from arignote.utils import OrderedEnqueuer, Sequence

    class Halving(Sequence):  # Keras 2.3.1's data_utils_test LengthChangingSequence, smaller
        def __init__(self):
            self.size, self.inner = 8, 1

        def __getitem__(self, i):
            return i * self.inner

        def __len__(self):
            return self.size

        def on_epoch_end(self):
            self.size, self.inner = self.size // 2, self.inner * 5

    seq = Halving()
    enqueuer = OrderedEnqueuer(seq)
    enqueuer.start(2, 4)
    out = enqueuer.get()
    assert [next(out) for _ in range(8)] == list(range(8))
    enqueuer.join_end_of_epoch()
    assert len(seq) == 4
    assert [next(out) for _ in range(4)] == [0, 5, 10, 15]
    enqueuer.stop()


class _MseMae:
    """A user's loss object with state and get_config (Keras 2.3.1's losses_test MSE_MAE_loss)."""

    def __init__(self, mse_fraction):
        self.mse_fraction = mse_fraction

    def __call__(self, y_true, y_pred, sample_weight=None):
        return self.mse_fraction * losses.mse(y_true, y_pred) + (1 - self.mse_fraction) * losses.mae(y_true,
                                                                                                    y_pred)

    def get_config(self):
        return {"mse_fraction": self.mse_fraction}


def test_a_loss_object_with_state_serializes_and_a_model_saves_to_an_hdf_name(tmp_path):
    from arignote.utils import custom_object_scope
    assert losses.serialize(_MseMae(0.3)) == {"class_name": "_MseMae", "config": {"mse_fraction": 0.3}}
    with custom_object_scope({"_MseMae": _MseMae}):
        back = losses.deserialize(losses.serialize(_MseMae(0.3)))
    assert isinstance(back, _MseMae) and back.mse_fraction == 0.3
    inputs = Input((2,))
    model = Model(inputs, Dense(1, name="model_output")(inputs))
    model.compile(optimizer="sgd", loss={"model_output": _MseMae(0.3)})
    path = tmp_path / "custom_loss.hdf"  # Keras 2 wrote HDF5 whatever the name; .hdf is HDF5 here too
    model.save(path)
    with h5py.File(path, "r") as f:
        stored = json.loads(f.attrs["training_config"])["loss"]
    assert {"class_name": "_MseMae", "config": {"mse_fraction": 0.3}} in (stored, stored.get("model_output"))
    with custom_object_scope({"_MseMae": _MseMae}):
        loaded = load_model(path)
    x = np.random.RandomState(6).rand(4, 2).astype("float32")
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), atol=1e-6)


def test_pickling_a_model_goes_through_its_keras_file():
    import pickle

    from arignote.utils import CustomObjectScope

    class CustomSGD(optimizers.SGD):
        pass

    def custom_mse(y_true, y_pred):
        return losses.mse(y_true, y_pred)

    model = Sequential([Dense(2, input_shape=(3,)), Dense(3)])
    model.compile(loss=custom_mse, optimizer=CustomSGD(lr=0.05), metrics=["acc"])
    x, y = np.random.RandomState(7).rand(4, 3).astype("float32"), np.zeros((4, 3), "float32")
    model.train_on_batch(x, y)
    state = pickle.dumps(model)
    with pytest.raises(ValueError, match="custom_mse|CustomSGD"):
        pickle.loads(state)  # the custom loss and optimizer are looked up by name, as in Keras 2.3.1
    with CustomObjectScope({"CustomSGD": CustomSGD, "custom_mse": custom_mse}):
        again = pickle.loads(state)
    np.testing.assert_allclose(again.predict(x), model.predict(x), atol=1e-6)
    assert type(again.optimizer) is CustomSGD
    model.train_on_batch(x, y)
    again.train_on_batch(x, y)  # the optimizer state came along: the same next step
    np.testing.assert_allclose(again.predict(x), model.predict(x), atol=1e-6)


def test_image_flow_carries_extra_inputs_along_with_the_images():
    from arignote.preprocessing.image import ImageDataGenerator
    rng = np.random.RandomState(8)
    images, misc1, misc2 = rng.rand(7, 4, 4, 3), rng.rand(7), rng.rand(7, 3, 3)
    gen = ImageDataGenerator(horizontal_flip=True)
    for i, (x, y) in enumerate(gen.flow((images, misc1), np.arange(7), shuffle=False, batch_size=2)):
        assert x[0].shape == images[:2].shape if i < 3 else x[0].shape == (1, 4, 4, 3)
        np.testing.assert_array_equal(x[1], misc1[i * 2:(i + 1) * 2])
        assert list(y) == list(range(7))[i * 2:(i + 1) * 2]
        if i == 3:
            break
    x, y, w = gen.flow((images, [misc1, misc2]), np.arange(7), sample_weight=np.arange(7) + 1.0,
                       shuffle=False, batch_size=3)[1]
    assert len(x) == 3 and x[0].shape == (3, 4, 4, 3)
    np.testing.assert_array_equal(x[2], misc2[3:6])
    assert list(w) == [4.0, 5.0, 6.0]
    validation = ImageDataGenerator(validation_split=0.3).flow((images, misc1), np.zeros(7), shuffle=False,
                                                               subset="validation", batch_size=5)
    np.testing.assert_array_equal(validation[0][0][1], misc1[:2])  # the split cuts the extra rows too
    with pytest.raises(ValueError, match=r"same length.*len\(x\[1\]\) = 6"):
        gen.flow((images, rng.rand(6)), np.arange(7))
    with pytest.raises(ValueError, match=r"`x` \(images tensor\) and `y` \(labels\) should have the same"):
        gen.flow((images, misc1), np.arange(8))


def test_conv_length_helpers_name_an_unknown_padding():
    from arignote.utils import conv_utils
    assert conv_utils.conv_output_length(32, 5, "full", 2) == 18
    assert conv_utils.conv_input_length(18, 5, "full", 2) == 31
    for fn in (conv_utils.conv_output_length, conv_utils.conv_input_length):
        with pytest.raises(ValueError, match="padding='diagonal' is not one of"):
            fn(32, 5, "diagonal", 2)
        with pytest.raises(AssertionError):  # what Keras 2.3.1's assert raised
            fn(32, 5, "diagonal", 2)
