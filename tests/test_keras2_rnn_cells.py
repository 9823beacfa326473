"""Keras 2.3.1 RNN cells beyond the built-in ones: a cell that is not a layer (any object with
``call`` and ``state_size``), alone or stacked; a stacked cell taking the RNN's constants;
``StackedRNNCells(reverse_state_order=True)``; an RNN whose initial states are variables of a fixed
batch, fitted with the progress line (the memory plan's probes at other batch sizes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote.layers import GRUCell, Input, Layer, LSTMCell, SimpleRNN
from arignote.layers.recurrent import RNN, StackedRNNCells
from arignote.models import Model


class PlainCell:
    """Keras's MinimalRNNCell that is not a Layer: y_t = x_t . W + y_{t-1}."""

    def __init__(self, units, input_dim, scale=1.0):
        self.units = units
        self.state_size = units
        self.kernel = K.variable(np.full((input_dim, units), scale, dtype="float32"))

    def call(self, inputs, states):
        out = K.dot(inputs, self.kernel) + states[0]
        return out, [out]


def test_a_cell_that_is_not_a_layer_alone_and_stacked():
    x = np.ones((2, 3, 4), dtype="float32")
    inp = Input((None, 4))
    model = Model(inp, RNN(PlainCell(2, 4))(inp))
    np.testing.assert_allclose(model.predict(x), np.full((2, 2), 12.0))  # 3 steps of 4 * 1
    model.compile("sgd", "mse")
    assert model.trainable_weights == []  # Keras 2.3.1 trains no weight of a cell that is no layer
    model.train_on_batch(x, np.zeros((2, 2)))
    stacked = RNN([PlainCell(2, 4), PlainCell(3, 2, scale=0.5)])
    assert stacked.cell.state_size == (2, 3)
    # first cell: 4, 8, 12 per unit; second: 0.5 * 2 units * those, summed over time: 4 + 8 + 12
    np.testing.assert_allclose(Model(inp, stacked(inp)).predict(x), np.full((2, 3), 24.0))


class ConstantCell(Layer):
    def __init__(self, units, **kwargs):
        self.units = units
        self.state_size = units
        super().__init__(**kwargs)

    def build(self, input_shape):
        step, constant = input_shape  # built from [step input shape, constant shape]
        self.kernel = self.add_weight(shape=(step[-1], self.units), initializer="ones", name="kernel")
        self.constant_kernel = self.add_weight(shape=(constant[-1], self.units), initializer="ones",
                                               name="constant_kernel")
        self.built = True

    def call(self, inputs, states, constants):
        out = K.dot(inputs, self.kernel) + states[0] + K.dot(constants[0], self.constant_kernel)
        return out, [out]


def test_stacked_cells_hand_the_constants_to_the_cells_that_take_them():
    x, c = Input((None, 5)), Input((3,))
    layer = RNN([GRUCell(4), ConstantCell(6)])
    model = Model([x, c], layer(x, constants=c))
    xs, cs = np.zeros((2, 3, 5), dtype="float32"), np.ones((2, 3), dtype="float32")
    # the GRU stays at 0 on zero inputs (zero bias); the constant cell adds 3 per step
    np.testing.assert_allclose(model.predict([xs, cs]), np.full((2, 6), 9.0), rtol=1e-6)
    assert [w.shape for w in layer.cell.cells[1].weights] == [(4, 6), (3, 6)]


def test_reverse_state_order():
    cells = [LSTMCell(3), LSTMCell(6)]
    with pytest.warns(UserWarning, match="reverse_state_order"):
        stacked = StackedRNNCells(cells, reverse_state_order=True)
    assert stacked.state_size == (6, 6, 3, 3)
    assert RNN(stacked, return_state=True).compute_output_shape((None, 5, 2))[1:] == [
        (None, 6), (None, 6), (None, 3), (None, 3)]
    x = torch.rand(2, 5, 2)
    ordered = RNN(StackedRNNCells(cells), return_state=True)(x)
    reverse = RNN(stacked, return_state=True)(x)
    torch.testing.assert_close(reverse[0], ordered[0])
    for got, want in zip(reverse[1:], [*ordered[3:], *ordered[1:3]]):
        torch.testing.assert_close(got, want)


def test_initial_state_variables_of_a_fixed_batch_fit_with_the_progress_line(capsys):
    inputs = Input((5, 4))
    out = SimpleRNN(3)(inputs, initial_state=[K.random_normal_variable((2, 3), 0, 1)])
    model = Model(inputs, out)
    model.compile(loss="mse", optimizer="adam")
    hist = model.fit(np.random.random((2, 5, 4)), np.random.random((2, 3)), verbose=1)
    assert np.isfinite(hist.history["loss"][0])
    assert "Memory plan" in capsys.readouterr().out
