"""Keras 2.3.1's activations on symbolic tensors: ``activations.X(K.placeholder(...))`` then
``K.function`` computes what Keras's own tests (tests/keras/activations_test.py) compare with numpy
references, and ``activations.get(layer)`` warns as Keras does."""

import warnings

import numpy as np
import pytest

from arignote import activations
from arignote import backend as K
from arignote.layers import Dense, Input
from arignote.models import Model

VALUES = np.array([[0, 0.1, 0.5, 0.9, 1.0], [-1.0, -0.5, 0.0, 2.0, 3.0]], dtype="float32")

REFERENCES = {
    "softmax": lambda v: np.exp(v - v.max(-1, keepdims=True)) / np.exp(v - v.max(-1, keepdims=True)).sum(
        -1, keepdims=True),
    "relu": lambda v: np.maximum(v, 0),
    "elu": lambda v: np.where(v > 0, v, np.exp(v) - 1),
    "softplus": lambda v: np.log1p(np.exp(v)),
    "softsign": lambda v: v / (np.abs(v) + 1),
    "tanh": np.tanh,
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "hard_sigmoid": lambda v: np.clip(0.2 * v + 0.5, 0, 1),
    "exponential": np.exp,
    "linear": lambda v: v,
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_an_activation_of_a_placeholder_runs_in_k_function(name):
    x = K.placeholder(ndim=2)
    f = K.function([x], [activations.get(name)(x)])
    np.testing.assert_allclose(f([VALUES])[0], REFERENCES[name](VALUES), rtol=1e-5, atol=1e-6)


def test_keras_arguments_and_a_functional_model_on_an_input():
    x = K.placeholder(ndim=2)
    f = K.function([x], [activations.relu(x, alpha=0.1, max_value=2.0, threshold=0.5)])
    # Keras 2.3.1 (theano_backend.relu): max_value clips; at or below the threshold alpha * (x - threshold)
    want = np.where(VALUES > 0.5, np.minimum(VALUES, 2.0), 0.1 * (VALUES - 0.5))
    np.testing.assert_allclose(f([VALUES])[0], want, rtol=1e-6, atol=1e-6)
    inp = Input((5,))
    model = Model(inp, activations.softmax(inp, axis=-1))
    np.testing.assert_allclose(model.predict(VALUES), REFERENCES["softmax"](VALUES), rtol=1e-5)


def test_softmax_of_a_1d_placeholder_is_refused_as_in_keras():
    with pytest.raises(ValueError, match="Cannot apply softmax to a tensor that is 1D"):
        activations.softmax(K.placeholder(ndim=1))


def test_get_of_a_layer_warns_and_returns_it():
    layer = Dense(3)
    with pytest.warns(UserWarning, match="Do not pass a layer instance"):
        assert activations.get(layer) is layer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert activations.get("relu") is activations.relu
        assert activations.get(lambda v: 5)(None) == 5
    with pytest.raises(ValueError):
        activations.get(6)
