"""Regenerate tests/fixtures/keras2/rnn_trainable.json: what Keras 2.3.1 (Theano backend) lists as
``trainable_weights`` / ``non_trainable_weights`` of an ``RNN(cell)``, stacked cells, ``LSTM``,
``TimeDistributed`` and ``Bidirectional`` (and a user's cell holding a Dense) as their ``trainable`` flags
(and their cells' / inner
layers') are set and toggled, and which weights a ``fit`` changes after such a toggle and a compile.
Weights are named ``(name, Keras shape)``, the name without the layer scope. Read by
tests/test_rnn_trainable_keras2.py.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    /work/k2venv/bin/python scripts/make_keras2_trainable_fixture.py
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,I001  (before keras)
import numpy as np  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import GRU, LSTM, RNN, Bidirectional, Dense, Input, Layer, SimpleRNNCell  # noqa: E402
from keras.layers import TimeDistributed  # noqa: E402
from keras.models import Model  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "keras2", "rnn_trainable.json")


class CountingCell(Layer):
    """A user's cell with a non-trainable weight created between its two kernels."""

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


class ProjCell(Layer):
    """A user's cell holding a layer (Keras 2.3.1 tracks it as a sublayer) and a non-trainable weight."""

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


def names(weights):
    return [[v.name.split("/")[-1], list(K.int_shape(v))] for v in weights]


def split(layer):
    return {"trainable": bool(layer.trainable), "T": names(layer.trainable_weights),
            "NT": names(layer.non_trainable_weights)}


def lists():
    out = {}
    x = Input((4, 5))
    rnn = RNN(CountingCell(3))
    rnn(x)
    out["cell_init"] = split(rnn)
    rnn.trainable = False
    out["cell_off"] = split(rnn)
    rnn.trainable = True
    out["cell_on"] = split(rnn)
    rnn = RNN([SimpleRNNCell(3), CountingCell(2)])
    rnn(x)
    rnn.trainable = False
    out["stacked_off"] = split(rnn)
    rnn = RNN(SimpleRNNCell(3))
    rnn(x)
    rnn.cell.trainable = False
    out["cell_frozen"] = split(rnn)
    rnn.trainable = False
    rnn.trainable = True
    out["cell_frozen_rnn_toggled"] = split(rnn)
    rnn = RNN(ProjCell(3))
    rnn(x)
    out["proj_init"] = split(rnn)
    rnn.trainable = False
    out["proj_off"] = split(rnn)
    rnn.cell.trainable = False
    rnn.trainable = True
    out["proj_cell_frozen"] = split(rnn)
    rnn.cell.trainable = True
    out["proj_on"] = split(rnn)
    lstm = LSTM(3)
    lstm(x)
    lstm.trainable = False
    out["lstm_off"] = split(lstm)
    td = TimeDistributed(Dense(3))
    td(x)
    td.trainable = False
    out["td_off"] = {**split(td), "inner": bool(td.layer.trainable)}
    td.layer.trainable = True
    out["td_inner_on"] = split(td)
    td = TimeDistributed(Dense(3, trainable=False))
    td(x)
    out["td_of_frozen"] = {**split(td), "inner": bool(td.layer.trainable)}
    bi = Bidirectional(GRU(3))
    bi(x)
    bi.trainable = False
    out["bi_off"] = {**split(bi), "directions": [bool(bi.forward_layer.trainable),
                                                 bool(bi.backward_layer.trainable)]}
    bi = Bidirectional(LSTM(3, trainable=False))
    bi(x)
    out["bi_of_frozen"] = split(bi)
    bi = Bidirectional(LSTM(3), trainable=False)
    bi(x)
    out["bi_frozen_arg"] = split(bi)
    return out


def training():
    """Which of the RNN's weights ``fit`` changes: frozen then compiled; unfrozen then compiled again."""
    rng = np.random.RandomState(3)
    xs, ys = rng.uniform(-1, 1, (8, 4, 5)).astype("float32"), rng.uniform(-1, 1, (8, 1)).astype("float32")
    x = Input((4, 5))
    rnn = RNN(CountingCell(3))
    model = Model(x, Dense(1)(rnn(x)))
    out = {}
    for state, flag in (("frozen", False), ("unfrozen", True)):
        rnn.trainable = flag
        model.compile("sgd", "mse")
        before = rnn.get_weights()
        model.fit(xs, ys, epochs=2, verbose=0)
        out[state] = {"model_T": len(model.trainable_weights), "model_NT": len(model.non_trainable_weights),
                      "changed": [bool(not np.allclose(a, b)) for a, b in zip(before, rnn.get_weights())],
                      "names": [v.name.split("/")[-1] for v in rnn.weights]}
    return out


def main():
    keras2_shim.force_unroll()  # Theano's scan C extension does not build on Python 3.11
    out = {"lists": lists(), "training": training()}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
