"""Keras 2.3.1's layer and model bookkeeping (``updates``, ``get_updates_for``, ``get_losses_for``,
``uses_learning_phase``, ``_input_layers``), written as Keras 2.3.1's own tests check it."""

import numpy as np
import pytest

from arignote import config
from arignote.layers import BatchNormalization, Dense, Dropout, Input, concatenate
from arignote.models import Model, Sequential


@pytest.fixture(autouse=True)
def _quiet():
    with config.override(print_active_device=False):
        yield


def test_updates_and_losses_conditional_on_inputs():
    a = Input(shape=(2,))
    dense = Dense(1)
    dense.add_update(0, inputs=a)
    dense.add_update(1, inputs=None)
    dense.add_loss(2, inputs=a)
    dense.add_loss(3)
    assert dense.get_updates_for(a) == [0] and dense.get_updates_for(None) == [1]
    assert dense.get_losses_for(a) == [2] and dense.get_losses_for(None) == [3]
    dense.trainable = False
    assert dense.updates == [] and dense.get_updates_for(None) == []


def test_batchnorm_updates_per_call_and_frozen_model():
    bn = BatchNormalization(input_shape=(10,))
    bn(Input(shape=(10,)))
    x2 = Input(shape=(10,))
    model = Model(x2, bn(x2))
    assert len(bn.updates) == 4 and len(model.updates) == 2  # only the call inside the model
    x3 = Input(shape=(10,))
    outer = Model(x3, model(x3))
    assert len(outer.updates) == 2
    model.trainable = False
    assert model.updates == []
    x4 = Input(shape=(10,))
    assert Model(x4, BatchNormalization()(x4, training=False)).updates == []
    seq = Sequential([Dense(3, input_shape=(2,)), BatchNormalization()])
    assert len(seq.updates) == 2
    seq.layers[1].trainable = False
    assert seq.updates == []


def test_uses_learning_phase():
    a, b = Input(shape=(32,)), Input(shape=(32,))
    a_2, b_2 = Dense(16)(a), Dropout(0.5)(b)
    assert not a_2._uses_learning_phase and b_2._uses_learning_phase
    assert concatenate([a_2, b_2])._uses_learning_phase
    model = Model([a, b], [a_2, b_2])
    assert model.uses_learning_phase
    c_2, d_2 = model([Input(shape=(32,)), Input(shape=(32,))])
    assert c_2._uses_learning_phase and d_2._uses_learning_phase
    x = Input(shape=(2,))
    fixed = Model(x, Dropout(0.5)(Dense(3)(x), training=True))
    assert not fixed.uses_learning_phase
    assert not Model.from_config(fixed.get_config()).uses_learning_phase
    assert not Dropout(0.0)(Input(shape=(2,)))._uses_learning_phase


def test_input_layers():
    a, b = Input(shape=(2,), name="a"), Input(shape=(3,), name="b")
    model = Model([a, b], concatenate([a, b]))
    assert [layer.name for layer in model._input_layers] == ["a", "b"]


def test_model_without_weights_trains():
    """Keras 2 trains a model of a Dropout alone (its update list is empty)."""
    x = Input(shape=(4,))
    model = Model(x, Dropout(0.5)(x))
    model.compile("rmsprop", "mse")
    ones = np.ones((8, 4), "float32")
    assert model.train_on_batch(ones, ones) == pytest.approx(1.0)  # kept units are 2, dropped 0


def test_batchnorm_one_value_per_channel_trains():
    """Keras 2.3.1's layer_test runs BatchNormalization(axis=1) on a (1, 4, 1) batch in training."""
    x = Input(shape=(4, 1))
    bn = BatchNormalization(axis=1, momentum=0.9, epsilon=0.1)
    model = Model(x, bn(x))
    model.compile("rmsprop", "mse")
    data = np.arange(4, dtype="float32").reshape(1, 4, 1)
    assert model.train_on_batch(data, data) == pytest.approx(3.5)  # the output is beta (0)
    np.testing.assert_allclose(bn.get_weights()[2], [0.0, 0.1, 0.2, 0.3], rtol=1e-6)


def test_shared_layer_activity_penalty_counts_every_call():
    """Keras 2.3.1 (measured in /work/k2venv): a layer called twice adds its activity penalty twice,
    and a model whose only loss is an activity penalty compiles with loss=None."""
    from arignote import backend as K
    from arignote.layers import add

    a, b = Input(shape=(2,)), Input(shape=(2,))
    dense = Dense(2, kernel_initializer="ones", use_bias=False, activity_regularizer=lambda x: K.sum(x))
    model = Model([a, b], add([dense(a), dense(b)]))
    model.compile("sgd", loss=None)
    assert model.evaluate([np.ones((1, 2)), 2 * np.ones((1, 2))], verbose=0) == pytest.approx(12.0)


def test_model_rejects_redundant_inputs_and_non_tensors():
    a, b = Input(shape=(3,)), Input(shape=(3,))
    model = Model([a, b], [Dense(2)(a), Dense(2)(b)])
    j, k = Input(shape=(3,)), Input(shape=(3,))
    m, n = model([j, k])
    with pytest.raises(ValueError, match="redundant"):
        Model([j, k, j], [m, n])
    with pytest.raises(ValueError):
        Model([j, k], [m, n, 0])
    Model([j, k], [m, n, n])  # a repeated output is fine


def test_from_config_with_a_layer_shared_at_different_depths():
    """keras-team/keras#11159: a layer's calls are rebuilt in their own order."""
    from arignote.layers import Reshape

    x = Input(shape=(1, 12))
    shared = Dense(12, name="layer_a")
    out1 = shared(Reshape((12,))(x))
    out2 = shared(Reshape((12,))(shared(x)))
    model = Model(x, Dense(2)(concatenate([out2, out1])))
    data = np.random.RandomState(0).rand(4, 1, 12).astype("float32")
    copy = Model.from_config(model.get_config())
    copy.set_weights(model.get_weights())
    np.testing.assert_allclose(copy.predict(data), model.predict(data), atol=1e-6)


def test_integer_weight_of_an_integer_layer():
    from arignote import backend as K
    from arignote.layers import Layer

    class Counter(Layer):
        def __init__(self):
            super().__init__(dtype="int64")
            self.w = self.add_weight("w", [], initializer="ones")

    assert K.dtype(Counter().w) == "int64"


def test_merge_masks_and_a_list_that_grows_after_the_call():
    from arignote import backend as K
    from arignote.layers import Add

    i1, i2 = Input(shape=(4, 5)), Input(shape=(4, 5))
    add = Add()
    add([i1, i2])
    ones = np.ones((2, 4, 5), "float32")
    assert bool(K.eval(add.compute_mask([i1, i2], [K.variable(ones), K.variable(ones)])).all())
    with pytest.raises(ValueError):
        add.compute_mask([i1, i2], ones)
    with pytest.raises(ValueError):
        add.compute_mask([i1, i2], [None])
    x_i = Input(shape=(None, None))
    x_list, x = [x_i], x_i
    for _ in range(3):
        x_list.append(x)
        x = concatenate(x_list, axis=1)  # x_list grows after each call
    model = Model(x_i, x)
    assert model.predict(np.ones((1, 1, 1), "float32")).shape == (1, 8, 1)


def test_clone_on_a_tensor_input_trains_without_x():
    """Keras 2.3.1's test_clone_sequential_model: a clone on K.variable data trains with x=None."""
    from arignote import backend as K
    from arignote.models import clone_model

    model = Sequential([Dense(4, input_shape=(4,)), BatchNormalization(), Dropout(0.5), Dense(4)])
    data = np.random.RandomState(0).rand(10, 4).astype("float32")
    clone = clone_model(model, input_tensors=K.variable(data))
    clone.compile("rmsprop", "mse")
    target = np.zeros((10, 4), "float32")
    clone.module.eval()
    expected = float(np.mean(clone.module(None).detach().numpy() ** 2))
    assert clone.evaluate(None, target, verbose=0) == pytest.approx(expected, rel=1e-5)
    assert np.isfinite(clone.train_on_batch(None, target))
