"""Keras 2.3.1 ``Network`` leftovers: weight lists that compare by weight, ``Model(dtype=...,
trainable=...)`` and a model's own ``add_weight``, ``Model._set_inputs``, and the activity penalty of a
call on torch tensors as a loss conditional on those tensors (``get_losses_for``). Each mirrors a
Keras 2.3.1 test (test_topology.py, test_training.py, recurrent_test.py) with values asserted."""

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote import config
from arignote.initializers import Constant
from arignote.layers import GRU, LSTM, Activation, Concatenate, Dense, Input, Layer, SimpleRNN
from arignote.layers._trainable import WeightList, same_weight
from arignote.models import Model, Sequential


@pytest.fixture(autouse=True)
def _quiet():
    with config.override(print_active_device=False):
        yield


# ---------------------------------------------------------------- weight lists compare by weight


def test_weight_lists_compare_by_weight_across_freezing():
    a = Input(shape=(2,))
    model = Model(a, Dense(1)(a))
    weights = model.weights
    kernel, bias = model.layers[1].weight, model.layers[1].bias  # the torch parameters
    assert tuple(weights[0].shape) == (2, 1) and tuple(kernel.shape) == (1, 2)  # Keras view vs torch
    assert model.trainable_weights == weights and model.non_trainable_weights == []
    model.trainable = False
    assert model.trainable_weights == [] and model.non_trainable_weights == weights
    assert not kernel.requires_grad
    model.trainable = True
    model.layers[1].trainable = False
    assert model.trainable_weights == [] and model.non_trainable_weights == weights
    model.layers[1].trainable = True
    assert model.trainable_weights == weights and model.trainable_weights != weights[::-1]
    assert kernel in weights and bias in model.weights and weights.index(bias) == 1
    assert weights[0] in model.trainable_weights and model.weights == model.layers[1].weights


def test_weight_lists_tell_parts_and_other_weights_apart():
    p = torch.nn.Parameter(torch.zeros(3, 2))
    q = torch.nn.Parameter(torch.zeros(3, 2))
    copied = p.t().contiguous()  # another tensor: its views are it, not p
    assert same_weight(p, p.T) and same_weight(copied.T, copied) and not same_weight(copied, p)
    assert not same_weight(p, q) and not same_weight(p, p[0]) and not same_weight(p[0], p[1])
    assert WeightList([p]) != [q] and WeightList([p]) != [p, q] and q not in WeightList([p])
    assert (WeightList([p]) + [q]) == [p.T, q] and isinstance(WeightList([p]) + [q], WeightList)
    with pytest.raises(ValueError, match="not in the list"):
        WeightList([p]).index(q)
    assert WeightList([p, q]).index(q, 1) == 1


def test_sequential_weight_lists_and_gradients_still_on_parameters():
    model = Sequential([Dense(1, input_dim=2)])
    weights = model.weights
    assert model.trainable_weights == weights
    model.layers[0].trainable = False
    assert model.trainable_weights == [] and model.non_trainable_weights == weights
    model.layers[0].trainable = True
    # trainable_weights stay the torch parameters: autograd takes gradients with respect to them
    x = torch.ones(4, 2)
    loss = model.module(x).sum()
    grads = torch.autograd.grad(loss, list(model.trainable_weights))
    assert [tuple(g.shape) for g in grads] == [(1, 2), (1,)] and float(grads[1]) == 4.0


# ---------------------------------------------------------------- Model(dtype=..., trainable=...)


def test_subclassed_model_dtype_and_own_weight():
    class IntModel(Model):
        def __init__(self):
            super().__init__(dtype="int64")
            self.w = self.add_weight("w", [], initializer=Constant(1))

    model = IntModel()
    assert K.dtype(model.w) == "int64" and model.dtype == "int64" and int(model.w) == 1
    assert model.layers == [] and len(model.weights) == 1 and model.weights[0] is model.w

    class Scaled(Model):
        def __init__(self):
            super().__init__(name="scaled")
            self.scale = self.add_weight("scale", (1,), initializer=Constant(3.0))
            self.dense = Dense(1, kernel_initializer="ones", bias_initializer="zeros")

        def call(self, x):
            return self.dense(x) * self.scale

    model = Scaled()
    assert model.dtype == "float32" and model.scale.dtype == torch.float32
    np.testing.assert_allclose(model.predict(np.ones((2, 2), "float32")), [[6.0], [6.0]])
    assert [layer.name for layer in model.layers] == [model.dense.name]  # the holder is no layer
    assert model.trainable_weights[0] is model.scale and len(model.trainable_weights) == 3
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"), epochs=1, batch_size=4, verbose=0)
    assert float(model.scale) < 3.0  # the own weight trains with the model
    model.trainable = False
    assert model.trainable_weights == [] and model.non_trainable_weights[0] is model.scale


def test_model_constructor_trainable_and_dtype_arguments():
    x = Input(shape=(3,))
    frozen = Model(x, Dense(2)(x), trainable=False, dtype="float64")
    assert frozen.trainable is False and frozen.trainable_weights == [] and frozen.dtype == "float64"
    assert len(frozen.non_trainable_weights) == 2
    with pytest.raises(TypeError, match=r"dtype name such as 'float32'"):
        Model(x, Dense(2)(x), dtype=torch.float32)
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['colour'\].*dtype=\.\.\."):
        Model(x, Dense(2)(x), colour="red")
    with pytest.raises(ValueError, match="add_weight is for a subclassed model"):
        frozen.add_weight("w", (1,))

    class Frozen(Model):
        def __init__(self):
            super().__init__(trainable=False)
            self.dense = Dense(2)

        def call(self, x):
            return self.dense(x)

    sub = Frozen()
    sub.compile("sgd", "mse")
    sub.predict(np.ones((1, 3)))  # builds it
    before = [w.copy() for w in sub.get_weights()]
    sub.fit(np.ones((4, 3)), np.ones((4, 2)), epochs=2, verbose=0)
    assert sub.trainable is False and sub.trainable_weights == [] and len(sub.non_trainable_weights) == 2
    assert all(np.array_equal(a, b) for a, b in zip(before, sub.get_weights()))  # fit trained nothing


# ---------------------------------------------------------------- Model._set_inputs


def test_set_inputs_on_functional_sequential_and_subclassed_models():
    base = Sequential([Dense(16, input_dim=32), Activation("relu")])
    model = Model(inputs=base.inputs, outputs=base.outputs)
    with pytest.raises(ValueError, match="Model inputs are already set."):
        model._set_inputs(base.inputs)
    model.inputs = None
    model._set_inputs(base.input)
    assert model.inputs == base.inputs and model.predict(np.ones((1, 32))).shape == (1, 16)
    model.inputs = None
    with pytest.raises(ValueError, match=r"its inputs are those of its graph .*Model\(new_inputs, outputs\)"):
        model._set_inputs([Input(shape=(32,))])

    aux = Input(shape=(5,), name="aux")
    two = Model(base.inputs + [aux], Concatenate()(base.outputs + [Dense(3)(aux)]))
    two.inputs = None
    two._set_inputs(base.inputs + [aux])
    assert two.predict([np.ones((1, 32)), np.ones((1, 5))]).shape == (1, 19)

    stack = Sequential([Dense(4)])
    stack._set_inputs(np.zeros((2, 7)))
    assert stack.built and stack.input_shape == (None, 7) and stack.layers[0].kernel.shape == (7, 4)

    class Sub(Model):
        def __init__(self):
            super().__init__()
            self.dense = Dense(4)

        def call(self, x, training=None):
            return self.dense(x)

    sub = Sub()
    sub._set_inputs([np.zeros((2, 3))])
    assert [tuple(t.shape) for t in sub.inputs] == [(None, 3)] and sub.input_names == ["input_1"]
    assert [tuple(t.shape) for t in sub.outputs] == [(None, 4)] and sub.output_names == ["output_1"]
    assert sub.predict(np.ones((2, 3))).shape == (2, 4)


# ---------------------------------------------------------------- activity penalties per input


@pytest.mark.parametrize("layer_class", [SimpleRNN, GRU, LSTM])
def test_activity_penalty_of_a_call_on_tensors_is_conditional_on_them(layer_class):
    layer = layer_class(2, input_shape=(3, 4), activity_regularizer="l2",
                        kernel_regularizer="l1", recurrent_regularizer="l1", bias_regularizer="l2")
    x = K.variable(np.ones((5, 3, 4)))
    out = layer(x)
    [penalty] = layer.get_losses_for(x)
    np.testing.assert_allclose(float(penalty), 0.01 * float((out ** 2).sum()), rtol=1e-5)
    assert layer.cell.get_losses_for(x) == []
    assert len(layer.get_losses_for(None)) == 3  # the three weight penalties, not the activity one
    assert layer.get_losses_for(torch.ones(5, 3, 4)) == []  # equal values, another tensor
    y = torch.zeros(5, 3, 4)
    layer(y)
    assert layer.get_losses_for(x) == [] and len(layer.get_losses_for(y)) == 1  # only the last call
    assert float(layer.get_losses_for(y)[0]) == pytest.approx(0.0, abs=1e-6)


def test_activity_penalty_of_dense_and_a_custom_layer():
    dense = Dense(1, kernel_initializer="ones", activity_regularizer="l1")
    x = torch.ones(2, 3)
    dense(x)
    assert [float(v) for v in dense.get_losses_for(x)] == pytest.approx([0.01 * 6.0])

    class Plain(Layer):
        def call(self, inputs):
            self.add_loss(inputs.sum())
            return inputs

    plain = Plain()
    plain(x)
    assert plain.get_losses_for(x) == [] and [float(v) for v in plain.losses] == [6.0]
