"""``trainable`` on an RNN(cell), stacked cells, LSTM, TimeDistributed and Bidirectional as Keras 2.3.1
has it: the lists ``trainable_weights`` / ``non_trainable_weights`` (names, Keras shapes, order) as
flags are set and toggled, and which weights ``fit`` changes after a toggle and a compile. Expected
values are what Keras 2.3.1 itself listed and trained (tests/fixtures/keras2/rnn_trainable.json,
written by scripts/make_keras2_trainable_fixture.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from arignote import backend as K
from arignote.layers import GRU, LSTM, RNN, Bidirectional, Dense, Input, Layer, SimpleRNNCell, TimeDistributed
from arignote.models import Model

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "rnn_trainable.json").read_text())
LISTS = FIXTURE["lists"]


class CountingCell(Layer):
    """A user's cell with a non-trainable weight created between its two kernels (as in the script)."""

    def __init__(self, units, **kwargs):
        self.units = units
        self.state_size = units
        super().__init__(**kwargs)

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="uniform",
                                      name="kernel")
        self.scale = self.add_weight(shape=(self.units,), initializer="ones", name="scale", trainable=False)
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="uniform",
                                                name="recurrent_kernel")
        self.built = True

    def call(self, inputs, states):
        output = (K.dot(inputs, self.kernel) + K.dot(states[0], self.recurrent_kernel)) * self.scale
        return output, [output]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


class ProjCell(Layer):
    """A user's cell holding a Dense (a sublayer, as Keras 2.3.1 tracks it) and a non-trainable weight."""

    def __init__(self, units, **kwargs):
        self.units = units
        self.state_size = units
        super().__init__(**kwargs)
        self.proj = Dense(units, name="proj")

    def build(self, input_shape):
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="uniform",
                                                name="recurrent_kernel")
        self.scale = self.add_weight(shape=(self.units,), initializer="ones", name="scale", trainable=False)
        self.proj.build(input_shape)
        self.built = True

    def call(self, inputs, states):
        output = (self.proj(inputs) + K.dot(states[0], self.recurrent_kernel)) * self.scale
        return output, [output]


def _names(layer):
    """id(torch parameter) -> [Keras name, Keras shape] for every weight inside ``layer``."""
    out = {}
    for module in layer.modules():
        table = {attr: (name, perm) for name, attr, perm in module.__dict__.get("_weight_table", [])}
        for attr, p in module.named_parameters(recurse=False):
            name, perm = table.get(attr, (attr, None))
            out[id(p)] = [name, list(p.permute(perm).shape if perm is not None else p.shape)]
    return out


def _split(layer):
    names = _names(layer)
    return {"trainable": bool(layer.trainable), "T": [names[id(p)] for p in layer.trainable_weights],
            "NT": [names[id(p)] for p in layer.non_trainable_weights]}


def _trains(layer):
    """What training would update: the lists must agree with requires_grad."""
    names = _names(layer)
    return [names[id(p)] for p in layer.parameters() if p.requires_grad]


def _check(layer, case, **extra):
    got = {**_split(layer), **extra}
    assert got == LISTS[case], case
    assert sorted(map(tuple, _trains(layer))) == sorted(map(tuple, LISTS[case]["T"])), case


def test_rnn_of_a_user_cell_toggled_keeps_the_cells_frozen_weight():
    x = Input((4, 5))
    rnn = RNN(CountingCell(3))
    rnn(x)
    _check(rnn, "cell_init")
    rnn.trainable = False
    _check(rnn, "cell_off")  # the cell's trainable weights first, then its non-trainable one
    rnn.trainable = True
    _check(rnn, "cell_on")  # the scale created with trainable=False stays frozen


def test_a_cell_holding_a_layer_freezes_and_unfreezes_as_keras_lists_it():
    rnn = RNN(ProjCell(3))
    rnn(Input((4, 5)))
    _check(rnn, "proj_init")  # its own trainable weights, then its Dense's
    rnn.trainable = False
    _check(rnn, "proj_off")
    rnn.cell.trainable = False
    rnn.trainable = True
    _check(rnn, "proj_cell_frozen")  # a frozen layer: its own weights, then its sublayer's
    rnn.cell.trainable = True
    _check(rnn, "proj_on")


def test_stacked_cells_frozen():
    rnn = RNN([SimpleRNNCell(3), CountingCell(2)])
    rnn(Input((4, 5)))
    rnn.trainable = False
    _check(rnn, "stacked_off")


def test_a_frozen_cell_stays_frozen_when_its_rnn_is_toggled():
    rnn = RNN(SimpleRNNCell(3))
    rnn(Input((4, 5)))
    rnn.cell.trainable = False
    _check(rnn, "cell_frozen")
    rnn.trainable = False
    rnn.trainable = True
    _check(rnn, "cell_frozen_rnn_toggled")


def test_lstm_frozen():
    lstm = LSTM(3)
    lstm(Input((4, 5)))
    lstm.trainable = False
    _check(lstm, "lstm_off")


def test_time_distributed_trainable_is_its_layers():
    td = TimeDistributed(Dense(3))
    td(Input((4, 5)))
    td.trainable = False
    _check(td, "td_off", inner=td.layer.trainable)
    assert td.get_config()["layer"]["config"]["trainable"] is False
    td.layer.trainable = True
    _check(td, "td_inner_on")
    td = TimeDistributed(Dense(3, trainable=False))  # Keras 2.3.1: the wrapper's default True wins
    td(Input((4, 5)))
    _check(td, "td_of_frozen", inner=td.layer.trainable)


def test_bidirectional_trainable_sets_both_directions():
    bi = Bidirectional(GRU(3))
    bi(Input((4, 5)))
    bi.trainable = False
    names = _names(bi)
    directions = [bi.forward_layer.trainable, bi.backward_layer.trainable]
    got = {"trainable": bi.trainable, "T": [names[id(p)] for p in bi.trainable_weights],
           "NT": [names[id(p)] for p in bi.non_trainable_weights], "directions": directions}
    assert got == LISTS["bi_off"] and _trains(bi) == []
    bi = Bidirectional(LSTM(3, trainable=False))  # the wrapper's default True wins, as in Keras 2.3.1
    bi(Input((4, 5)))
    _check(bi, "bi_of_frozen")
    bi = Bidirectional(LSTM(3), trainable=False)
    bi(Input((4, 5)))
    _check(bi, "bi_frozen_arg")


def test_fit_after_toggle_and_compile_trains_what_keras_trains():
    rng = np.random.RandomState(3)
    xs, ys = rng.uniform(-1, 1, (8, 4, 5)).astype("float32"), rng.uniform(-1, 1, (8, 1)).astype("float32")
    x = Input((4, 5))
    rnn = RNN(CountingCell(3))
    model = Model(x, Dense(1)(rnn(x)))
    cell = rnn.cell
    named = {"kernel": cell.kernel, "recurrent_kernel": cell.recurrent_kernel, "scale": cell.scale}
    for state, flag in (("frozen", False), ("unfrozen", True)):
        expected = FIXTURE["training"][state]
        rnn.trainable = flag
        model.compile("sgd", "mse")
        before = {k: v.detach().clone() for k, v in named.items()}
        model.fit(xs, ys, epochs=2, verbose=0)
        changed = [not np.allclose(before[k].numpy(), named[k].detach().numpy()) for k in expected["names"]]
        assert changed == expected["changed"], state
        assert (len(model.trainable_weights), len(model.non_trainable_weights)) == (
            expected["model_T"], expected["model_NT"]), state


@pytest.mark.parametrize("flag", [True, False])
def test_config_round_trip_keeps_the_flags(flag):
    rnn = RNN(CountingCell(3), trainable=flag)
    rnn(Input((4, 5)))
    rebuilt = RNN.from_config(rnn.get_config(), custom_objects={"CountingCell": CountingCell})
    rebuilt(Input((4, 5)))
    assert _split(rebuilt) == _split(rnn)


def test_stacked_user_cells_without_training_argument_run():
    # Keras 2.3.1's StackedRNNCells passes training= only to a cell whose call takes it
    x = Input((4, 5))
    model = Model(x, RNN([CountingCell(3), CountingCell(2)])(x))
    assert model.predict(np.ones((2, 4, 5), "float32")).shape == (2, 2)
