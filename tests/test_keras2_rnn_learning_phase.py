"""Keras 2.3.1's ``_uses_learning_phase`` on the symbolic outputs of an RNN with dropout and of the
wrappers around one (RNN.call / Bidirectional.call / TimeDistributed.call set it), and
``model.uses_learning_phase``."""

from __future__ import annotations

import numpy as np
import pytest

from arignote.layers import GRU, LSTM, Bidirectional, Dense, Input, SimpleRNN, TimeDistributed
from arignote.models import Model, Sequential


@pytest.mark.parametrize("layer_class", [SimpleRNN, GRU, LSTM])
def test_rnn_with_dropout_depends_on_the_phase_unless_training_is_fixed(layer_class):
    x = Input((3, 4))
    assert layer_class(2, dropout=0.5, recurrent_dropout=0.5)(x)._uses_learning_phase
    assert not layer_class(2, dropout=0.5)(x, training=True)._uses_learning_phase
    assert not layer_class(2)(x)._uses_learning_phase  # no dropout: no dependence
    states = LSTM(2, recurrent_dropout=0.1, return_state=True)(x)
    assert all(t._uses_learning_phase for t in states)
    model = Sequential([layer_class(2, dropout=0.5, recurrent_dropout=0.5, input_shape=(3, 4))])
    assert model.uses_learning_phase
    data = np.random.RandomState(0).random_sample((2, 3, 4)).astype("float32")
    np.testing.assert_allclose(model.predict(data), model.predict(data))  # no dropout in predict


@pytest.mark.parametrize("merge_mode", [None, "concat", "sum"])
def test_bidirectional_outputs(merge_mode):
    x = Input((3, 5))
    wrapped = Bidirectional(LSTM(3, dropout=0.2, recurrent_dropout=0.2), merge_mode=merge_mode)
    fixed = wrapped(x, training=True)
    fixed = fixed if isinstance(fixed, list) else [fixed]
    assert not any(t._uses_learning_phase for t in fixed)
    out = Bidirectional(LSTM(3, dropout=0.2, return_state=True), merge_mode=merge_mode)(x)
    assert all(t._uses_learning_phase for t in out)
    assert Model(x, out).uses_learning_phase
    plain = Bidirectional(LSTM(3), merge_mode=merge_mode)(x)
    plain = plain if isinstance(plain, list) else [plain]
    assert not any(t._uses_learning_phase for t in plain)


def test_time_distributed_hands_on_the_wrapped_layers_dependence():
    x = Input((3, 2, 4))
    assert TimeDistributed(GRU(2, dropout=0.3))(x)._uses_learning_phase
    assert not TimeDistributed(Dense(2))(Input((3, 4)))._uses_learning_phase
