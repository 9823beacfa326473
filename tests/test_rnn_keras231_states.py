"""Recurrent layers' states as Keras 2.3.1's recurrent_test.py uses them: ``layer.states`` lists
``None`` per state before any, ``reset_states()`` of a layer built with its batch size makes zeros,
``reset_states(values)`` checks each shape, a stateful model refuses a number of samples its batch
size does not divide, and initial states that are not graph tensors are constants of the call."""

import numpy as np
import pytest

from arignote import backend as K
from arignote.layers import GRU, LSTM, Bidirectional, Input, SimpleRNN
from arignote.models import Model, Sequential

CELLS = [(SimpleRNN, 1), (GRU, 1), (LSTM, 2)]


@pytest.mark.parametrize("cls, n", CELLS)
def test_states_and_reset_states_with_values(cls, n):
    assert cls(3).states == [None] * n
    layer = cls(2, stateful=True)
    layer.build((4, 5, 3))
    layer.reset_states()
    assert len(layer.states) == n
    np.testing.assert_array_equal(K.eval(layer.states[0]), np.zeros((4, 2)))
    values = [np.ones((4, 2))] * n
    layer.reset_states(values if n > 1 else values[0])
    np.testing.assert_array_equal(K.eval(layer.states[-1]), np.ones((4, 2)))
    with pytest.raises(ValueError, match="expects"):
        layer.reset_states([1] * (n + 1))
    with pytest.raises(ValueError, match=r"State 0 is incompatible .* expected shape=\(4, 2\)"):
        layer.reset_states([np.ones((3, 2))] * n)


@pytest.mark.parametrize("cls, n", CELLS)
def test_a_stateful_model_refuses_samples_its_batch_size_does_not_divide(cls, n):
    model = Sequential([cls(2, stateful=True, batch_input_shape=(3, 4, 5))])
    model.compile("sgd", "mse")
    x, y = np.random.random((6, 4, 5)), np.random.random((6, 2))
    with pytest.raises(ValueError, match="In a stateful network.*Found: 6 samples"):
        model.fit(x, y, verbose=0)  # batch_size 32
    with pytest.raises(ValueError, match="In a stateful network"):
        model.predict(x, batch_size=4)
    model.fit(x, y, batch_size=3, verbose=0)
    assert model.predict(x[:3], batch_size=32).shape == (3, 2)  # fewer than a batch: as Keras


def test_bidirectional_return_state_lists_each_states_twice():
    inputs = Input((3, 5))
    layer = Bidirectional(LSTM(3, return_state=True), merge_mode="sum")
    outputs = layer(inputs)
    assert len(outputs) == 1 + 2 * len(layer.layer.states)  # Keras's wrappers_test


@pytest.mark.parametrize("cls, n", CELLS)
def test_initial_states_that_are_variables_are_constants_of_the_call(cls, n):
    states = [K.variable(np.full((2, 3), 0.5)) for _ in range(n)]
    inputs = Input((4, 5))
    layer = cls(3)
    model = Model(inputs, layer(inputs, initial_state=states))
    x = np.random.default_rng(0).random((2, 4, 5)).astype("float32")
    with_states = model.predict(x)
    plain = Model(inputs, layer(inputs))
    assert not np.allclose(with_states, plain.predict(x))
    # the same layer called on torch tensors with those states gives the same
    got = layer(K.constant(x), initial_state=states)
    np.testing.assert_allclose(K.eval(got), with_states, rtol=1e-6, atol=1e-6)
    model.compile("adam", "mse")
    model.fit(x, np.zeros((2, 3)), verbose=0)


@pytest.mark.parametrize("data_format", ["channels_first", "channels_last"])
def test_get_initial_state_of_an_input_feeds_the_layer_as_in_keras(data_format):
    """Keras's convolutional_recurrent_test: zero states of a symbolic input, given back as
    initial_state, predict what the layer alone predicts."""
    from arignote.layers import ConvLSTM2D

    shape = (2, 3, 2, 5, 5) if data_format == "channels_first" else (2, 3, 5, 5, 2)
    x = np.random.default_rng(1).random(shape).astype("float32")
    layer = ConvLSTM2D(filters=2, kernel_size=(2, 3), data_format=data_format, return_sequences=True)
    layer.build(shape)
    inp = Input(batch_shape=shape)
    initial = layer.get_initial_state(inp)
    assert len(initial) == 2
    model = Model(inp, layer(inp, initial_state=initial))
    want = layer.compute_output_shape(shape)
    got = model.predict(x)
    assert got.shape == want
    np.testing.assert_allclose(got, Model(inp, layer(inp)).predict(x), rtol=1e-6, atol=1e-6)
    lstm = LSTM(3)
    states = lstm.get_initial_state(Input((4, 5)))
    assert [s.shape for s in states] == [(None, 3), (None, 3)]
