"""Keras 2.3.1's ``model.losses`` (its regularizers_test.py, wrappers_test.py::test_regularizers and
test_topology.py::test_recursion_with_bn_and_loss): one activity penalty per call of a layer inside
the model (a symbolic tensor that ``K.function`` evaluates), each regularized weight once, a nested
model's call penalties once per call of it, model-level ``add_loss`` terms, plain numbers last. The
counts are what Keras 2.3.1 gives for the same models (its tests assert them)."""

import numpy as np
import pytest

from arignote import backend as K
from arignote import regularizers
from arignote.graph.tensor import KerasTensor
from arignote.layers import Average, BatchNormalization, Dense, Input, TimeDistributed
from arignote.models import Model, Sequential


def _two_inputs(layer1, layer2):
    a, b = Input((5,)), Input((5,))
    out2 = layer2(b)
    model = Model([a, b], Average()([layer1(a), out2]))
    model.add_loss(K.mean(out2))
    model.add_loss(1)
    model.add_loss(1)
    return model


def test_activity_regularizer_counts_in_a_sequential_and_evaluates():
    model = Sequential([Dense(2, activity_regularizer=regularizers.l1(0.5), input_shape=(5,),
                              kernel_initializer="ones")])
    model.compile(loss="mse", optimizer="sgd")
    (loss,) = model.losses
    assert isinstance(loss, KerasTensor)
    x = np.arange(10, dtype="float32").reshape(2, 5)
    value = K.function([model.inputs[0]], [loss])([x])[0]
    assert float(value) == pytest.approx(0.5 * np.abs(x.sum(axis=1, keepdims=True) * np.ones((1, 2))).sum())
    model.train_on_batch(x, np.zeros((2, 2)))


def test_shared_layer_counts_each_call():
    dense = Dense(2, kernel_regularizer=regularizers.l1(), activity_regularizer=regularizers.l1())
    losses = _two_inputs(dense, dense).losses
    assert len(losses) == 6  # Keras 2.3.1: 2 activity + 1 kernel + 3 add_loss
    assert losses[-2:] == [1, 1]
    assert sum(isinstance(x, KerasTensor) for x in losses) == 3


def test_shared_model_counts_its_calls():
    dense = Dense(2, kernel_regularizer=regularizers.l1(), activity_regularizer=regularizers.l1())
    t = Input((5,))
    inner = Model(t, dense(t))
    assert len(inner.losses) == 2
    assert len(_two_inputs(inner, inner).losses) == 6


def test_shared_layer_in_two_models_counts_its_kernel_once():
    shared = Dense(2, kernel_regularizer=regularizers.l1(), activity_regularizer=regularizers.l1())
    models = []
    for _ in range(2):
        t = Input((5,))
        models.append(Model(t, Dense(2, kernel_regularizer=regularizers.l1())(shared(t))))
    assert len(_two_inputs(*models).losses) == 8


def test_nested_sequential_with_batchnorm_and_time_distributed():
    inner = Sequential([Dense(5, input_dim=5, activity_regularizer="l1"), BatchNormalization(), Dense(5)])
    x = Input((5,))
    outer = Model(x, inner(x))
    assert (len(inner.losses), len(outer.losses), len(inner.updates), len(outer.updates)) == (1, 1, 2, 2)
    outer.compile(optimizer="sgd", loss="categorical_crossentropy")
    outer.fit(np.ones((3, 5)), np.ones((3, 5)), verbose=0)
    td = Sequential([TimeDistributed(Dense(2, activity_regularizer="l1"), input_shape=(3, 4))])
    assert len(td.losses) == 1
    td = Sequential([TimeDistributed(Dense(2, kernel_regularizer="l1"), input_shape=(3, 4))])
    assert len(td.losses) == len(td.layers[0].losses) == len(td.layers[0].get_losses_for(None)) == 1


def test_activity_penalty_nodes_leave_layer_names_as_keras2():
    from arignote.layers import ActivityRegularization
    K.clear_session()
    x = Input((3,))
    y = Dense(2, activity_regularizer="l1")(x)
    layer = ActivityRegularization(l1=0.1)
    layer(y)
    assert layer.name == "activity_regularization_1"  # Keras 2.3.1's first auto name
