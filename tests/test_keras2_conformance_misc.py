"""Keras 2.3.1 behaviours its own tests check, each against a value real Keras 2.3.1 (Theano 1.0.5)
printed in the side venv (scripts/setup-keras2-venv.sh): strides with a dilation_rate (the
AtrousConvolution legacy interface), func_dump/func_load of the activations (plain functions),
predict on 0 samples, K.set_learning_phase pinning BatchNormalization in predict and in fit."""

import json
import marshal
import warnings

import numpy as np
import pytest

from arignote import activations
from arignote import backend as K
from arignote.layers import BatchNormalization, Conv1D, Conv2D, Dense, Input
from arignote.models import Model, Sequential
from arignote.utils.generic_utils import func_dump, func_load


def test_conv_with_strides_and_dilation_as_keras2_theano():
    inp = Input((11, 1))
    model = Model(inp, Conv1D(1, 3, strides=2, dilation_rate=2)(inp))
    model.set_weights([np.array([1.0, 2.0, 3.0], "float32").reshape(3, 1, 1), np.zeros(1, "float32")])
    out = model.predict(np.arange(11, dtype="float32").reshape(1, 11, 1))
    assert out.ravel().tolist() == [16.0, 28.0, 40.0, 52.0]  # Keras 2.3.1 (Theano), kernel flipped back
    layer = Conv2D(2, (3, 3), strides=(2, 2), dilation_rate=(2, 2))
    assert Sequential([Conv2D(2, (3, 3), strides=(2, 2), dilation_rate=(2, 2), input_shape=(9, 10, 3))]) \
        .output_shape == (None, 3, 3, 2) and layer.strides == (2, 2)


def test_atrous_convolution_legacy_config_is_keras2s():
    from arignote.layers import AtrousConvolution1D
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layer = AtrousConvolution1D(5, 3, init="normal", subsample_length=2, border_mode="valid",
                                    W_regularizer="l1", atrous_rate=2, name="conv")
    config = layer.get_config()
    # what Keras 2.3.1 printed for json.dumps(layer.get_config())
    assert (list(config["strides"]), list(config["dilation_rate"]), config["padding"]) == ([2], [2], "valid")
    assert json.loads(json.dumps(config))["kernel_regularizer"] == {
        "class_name": "L1L2", "config": {"l1": pytest.approx(0.01), "l2": 0.0}}


def test_activations_are_plain_functions_func_load_restores():
    for fn in (activations.softmax, activations.relu, activations.selu):
        assert fn.__closure__ is None
        old = marshal.dumps(fn.__code__).decode("raw_unicode_escape")  # Keras < 2.1.2's dump
        loaded = func_load(old, defaults=fn.__defaults__, globs=vars(activations))
        assert loaded.__code__ == fn.__code__ and loaded.__defaults__ == fn.__defaults__
    relu = func_load(func_dump(activations.relu), globs=vars(activations))
    import torch
    assert relu(torch.tensor([-1.0, 2.0]), max_value=1.0).tolist() == [0.0, 1.0]
    x = Input((3,))
    assert K.int_shape(activations.softmax(x)) == (None, 3)  # still records on a symbolic tensor


def test_predict_on_zero_samples():
    model = Sequential([Dense(2, input_dim=3)])
    model.compile("sgd", "mse")
    # Keras 2.3.1: predict_on_batch gives array([], shape=(0, 2)); its KerasRegressor.predict (0,)
    assert model.predict_on_batch(np.zeros((0, 3), "float32")).shape == (0, 2)
    assert model.predict(np.zeros((0, 3))).shape == (0, 2)
    inp = Input((3,))
    two = Model(inp, [Dense(1)(inp), Dense(2)(inp)])
    assert [a.shape for a in two.predict(np.zeros((0, 3)))] == [(0, 1), (0, 2)]
    with pytest.raises(ValueError, match="x is empty"):
        model.fit(np.zeros((0, 3)), np.zeros((0, 2)), verbose=0)


def test_scikit_learn_regressor_predicts_zero_samples():
    pytest.importorskip("sklearn")
    from arignote.wrappers.scikit_learn import KerasRegressor

    def build():
        model = Sequential([Dense(1, input_dim=3)])
        model.compile("sgd", "mse")
        return model

    reg = KerasRegressor(build_fn=build, epochs=1, verbose=0)
    reg.fit(np.ones((4, 3)), np.ones(4))
    assert reg.predict(np.ones((0, 3))).shape == (0,)
    assert reg.predict(np.ones((2, 3))).shape == (2,)


@pytest.fixture
def phase():
    yield K.set_learning_phase
    K.set_learning_phase(None)


def test_learning_phase_1_makes_predict_use_batch_statistics(phase):
    # Keras 2.3.1's test_batchnorm_trainable
    x = np.arange(10, dtype="float32").reshape(10, 1) / 10
    inp = Input((1,))
    model = Model(inp, BatchNormalization()(inp))
    model.set_weights([np.array([1.0]), np.array([0.0]), np.array([0.5]), np.array([100.0])])
    phase(1)
    np.testing.assert_allclose(model.predict(x), (x - x.mean()) / np.sqrt(x.var() + 1e-3), rtol=1e-4)
    assert model.get_weights()[2].tolist() == [0.5]  # predict runs no update
    phase(0)
    np.testing.assert_allclose(model.predict(x), (x - 0.5) / np.sqrt(100.001), rtol=1e-5)


def test_learning_phase_0_fit_normalizes_with_averages_and_updates_them(phase):
    phase(0)
    inp = Input((2,))
    model = Model(inp, BatchNormalization()(Dense(2, kernel_initializer="ones")(inp)))
    model.compile("sgd", "mse")
    x = np.array([[1.0, 2.0], [3.0, 5.0], [0.0, 1.0]], "float32")
    model.fit(x, np.zeros((3, 2)), epochs=2, verbose=0, batch_size=3)
    dense, bn = model.layers[1].get_weights(), model.layers[2].get_weights()
    # Keras 2.3.1 (Theano) printed these after the same two steps
    np.testing.assert_allclose(bn[2], [0.07382799, 0.07382799], rtol=1e-5)
    np.testing.assert_allclose(bn[3], [1.2077184, 1.2077184], rtol=1e-3)  # (n - 1 - eps) vs torch's n - 1
    np.testing.assert_allclose(bn[0], [0.6336638, 0.6336638], rtol=1e-4)
    np.testing.assert_allclose(dense[1], [-0.05681226, -0.05681226], rtol=1e-4)
    np.testing.assert_allclose(model.predict(x)[:, 0], [1.2583936, 3.6055477, 0.3085867], rtol=1e-3)


def test_clear_session_unpins_the_learning_phase():
    # Keras 2.3.1 (TensorFlow backend): clear_session makes a new graph, without the pinned phase
    from arignote.graph import state
    K.set_learning_phase(1)
    try:
        assert K.learning_phase() == 1
        K.clear_session()
        assert state.forced_phase() is None
    finally:
        K.set_learning_phase(None)
