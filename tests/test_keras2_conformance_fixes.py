"""Small Keras 2.3.1 behaviours found by its own test suite (scripts/keras2_conformance.py), written as
Keras 2 code: K.slice/K.tile/K.arange as in backend_test.py, Embedding's input_length check
(embeddings_test.py), a later layer's input_dim ignored by Sequential (callbacks_test.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from arignote import backend as K
from arignote.layers import Dense, Embedding
from arignote.models import Sequential


def test_slice_needs_one_start_and_size_per_axis():
    x = K.variable(np.arange(24, dtype="float32").reshape(2, 3, 4))
    np.testing.assert_array_equal(K.eval(K.slice(x, (0, 1, 1), (2, 1, 2))),
                                  np.arange(24).reshape(2, 3, 4)[0:2, 1:2, 1:3])
    with pytest.raises(ValueError, match="dimension and the size of indices should match"):
        K.slice(x, start=[1, 0, 0, 0], size=(1, 1, 1))


@pytest.mark.parametrize("shape, n", [((3, 4), 2), ((3, 4), (2, 1)), ((3, 4, 5), 2), ((3, 4, 5), (1, 2)),
                                      ((3, 4, 5), (3, 1, 2))])
def test_tile_is_numpys(shape, n):
    x = np.random.RandomState(0).rand(*shape).astype("float32")
    np.testing.assert_array_equal(K.eval(K.tile(K.variable(x), n)), np.tile(x, n))


@pytest.mark.parametrize("args", [(-20,), (0,), (1,), (10,), (0, 5, 1), (-5, 5, 2), (0, 1, 2)])
def test_arange_is_numpys(args):
    np.testing.assert_array_equal(K.eval(K.arange(*args)), np.arange(*args))


@pytest.mark.parametrize("input_shape", [(3, 4, 5), (3, 5)])
def test_embedding_input_length_must_fit_the_input_shape(input_shape):
    with pytest.raises(ValueError, match='"input_length" is 2'):
        Sequential([Embedding(input_dim=10, output_dim=4, input_length=2, input_shape=input_shape)])
    model = Sequential([Embedding(10, 4, input_length=(3, None), input_shape=(3, 5))])  # agrees
    assert model.output_shape == (None, 3, 5, 4)


def test_a_later_layers_input_dim_is_ignored_with_a_warning():
    # callbacks_test.py builds its MLPs as `for _ in range(5): model.add(Dense(4, input_dim=2))`
    model = Sequential()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            model.add(Dense(4, input_dim=2, activation="relu"))
        model.compile("sgd", "mse")
        model.fit(np.ones((8, 2), "float32"), np.ones((8, 4), "float32"), verbose=0)
    notes = [str(w.message) for w in caught if "declares input_shape" in str(w.message)]
    assert notes == [f"layer '{layer.name}' declares input_shape=(2,) but is called on input of shape "
                     "(None, 4): the input_shape is ignored, as in Keras 2 (remove it)"
                     for layer in model.layers[1:]], notes
    assert [w.shape for w in model.get_weights()] == [(2, 4), (4,), (4, 4), (4,), (4, 4), (4,)]
