"""``RNN(cell)(x, constants=...)`` (Keras 2.3.1's "external constants"): against real Keras 2.3.1 output
(tests/fixtures/keras2/rnnfix/rnn_constants.h5, from scripts/make_keras2_rnnfix_fixture.py) and
against the cell stepped by hand."""

import os

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote.layers import RNN, Input, Layer, LSTMCell
from arignote.models import Model, load_model

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "keras2", "rnnfix")
RNG = np.random.RandomState(5)


class CondCell(Layer):
    """h = tanh(x W + h U + c V): the same code as the fixture script's Keras cell."""

    def __init__(self, units, **kwargs):
        self.units = units
        self.state_size = units
        super().__init__(**kwargs)

    def build(self, input_shape):  # [step input shape, constant shape]
        step, const = input_shape
        self.kernel = self.add_weight(shape=(step[-1], self.units), initializer="uniform", name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="uniform",
                                                name="recurrent_kernel")
        self.constant_kernel = self.add_weight(shape=(const[-1], self.units), initializer="uniform",
                                               name="constant_kernel")
        self.built = True

    def call(self, inputs, states, constants):
        h = K.dot(inputs, self.kernel) + K.dot(states[0], self.recurrent_kernel)
        h = K.tanh(h + K.dot(constants[0], self.constant_kernel))
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config["units"] = self.units
        return config


def _hand(cell, x, c, backwards=False, mask=None):
    """The cell's math stepped in numpy: masked steps keep the previous output and state."""
    w, u, v = cell.get_weights()
    h = np.zeros((x.shape[0], u.shape[0]), "float32")
    out = np.zeros_like(h)
    outs = []
    steps = range(x.shape[1])[::-1] if backwards else range(x.shape[1])
    for t in steps:
        new = np.tanh(x[:, t] @ w + h @ u + c @ v)
        keep = np.ones(len(x), bool) if mask is None else mask[:, t]
        h = np.where(keep[:, None], new, h)
        out = np.where(keep[:, None], new, out)
        outs.append(out)
    return np.stack(outs, 1), h


def test_a_keras_2_3_1_model_with_constants_loads_and_predicts_as_keras():
    ref = np.load(os.path.join(HERE, "rnnfix.npz"))
    model = load_model(os.path.join(HERE, "rnn_constants.h5"), custom_objects={"CondCell": CondCell})
    x, c = ref["constants_x"], ref["constants_c"]
    got = model.predict([x, c], verbose=0)
    for i in range(3):
        np.testing.assert_allclose(got[i], ref[f"constants_y{i}"], rtol=1e-5, atol=1e-6)
    # the mechanism, not a coincidence: the constants change the outputs
    other = model.predict([x, c + 1.0], verbose=0)
    assert np.abs(other[0] - got[0]).max() > 1e-2
    layer = model.get_layer("cond_back")
    assert layer.get_config()["num_constants"] == 1
    seq, last = _hand(layer.cell, x, c, backwards=True)
    np.testing.assert_allclose(got[1], last, rtol=1e-5, atol=1e-6)
    masked = model.get_layer("cond_masked")
    seq, _ = _hand(masked.cell, x, c, mask=np.any(x != 0, -1))
    np.testing.assert_allclose(got[2], seq, rtol=1e-5, atol=1e-6)


def test_constants_on_tensors_and_in_the_inputs_list_and_the_round_trip(tmp_path):
    x, c = RNG.uniform(-1, 1, (2, 4, 3)).astype("float32"), RNG.uniform(-1, 1, (2, 2)).astype("float32")
    layer = RNN(CondCell(5), return_sequences=True, return_state=True)
    with torch.no_grad():
        y, h = layer(torch.tensor(x), constants=torch.tensor(c))
        h0 = torch.tensor(RNG.uniform(-1, 1, (2, 5)).astype("float32"))
        y_list, _ = layer([torch.tensor(x), h0, torch.tensor(c)])  # [x, *states, *constants]
    seq, last = _hand(layer.cell, x, c)
    np.testing.assert_allclose(y.numpy(), seq, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), last, rtol=1e-5, atol=1e-6)
    assert not np.allclose(y_list.numpy(), seq)  # the initial state was taken, the constant too
    xi, ci = Input((4, 3)), Input((2,))
    model = Model([xi, ci], RNN(CondCell(5), name="cond")(xi, constants=ci))
    assert model.get_layer("cond").get_config()["num_constants"] == 1
    path = str(tmp_path / "cond.h5")
    model.save(path)
    loaded = load_model(path, custom_objects={"CondCell": CondCell})
    np.testing.assert_allclose(loaded.predict([x, c], verbose=0), model.predict([x, c], verbose=0), rtol=1e-6)


def test_a_cell_without_constants_is_refused_with_the_fix():
    x, c = torch.zeros(2, 4, 3), torch.zeros(2, 2)
    with pytest.raises(ValueError, match="does not support constants.*LSTMCell.*constants=None"):
        RNN(LSTMCell(3))(x, constants=c)
    with pytest.raises(ValueError, match="not both"):
        RNN(CondCell(3))([x, torch.zeros(2, 3)], constants=c)


def test_bidirectional_gives_both_directions_the_constants_as_keras():
    ref = np.load(os.path.join(HERE, "rnnfix.npz"))
    model = load_model(os.path.join(HERE, "bidir_constants.h5"), custom_objects={"CondCell": CondCell})
    x, c = ref["bicond_x"], ref["bicond_c"]
    got = model.predict([x, c], verbose=0)
    for i in range(2):
        np.testing.assert_allclose(got[i], ref[f"bicond_y{i}"], rtol=1e-5, atol=1e-6)
    bi = model.get_layer("bi_cond_seq")
    assert bi.get_config()["num_constants"] == 1
    fwd, _ = _hand(bi.forward_layer.cell, x, c)
    bwd, _ = _hand(bi.backward_layer.cell, x, c, backwards=True)
    np.testing.assert_allclose(got[0], np.concatenate([fwd, bwd[:, ::-1]], -1), rtol=1e-5, atol=1e-6)


def test_bidirectional_with_constants_round_trips(tmp_path):
    from arignote.layers import Bidirectional

    x, c = RNG.uniform(-1, 1, (2, 4, 3)).astype("float32"), RNG.uniform(-1, 1, (2, 2)).astype("float32")
    xi, ci = Input((4, 3)), Input((2,))
    model = Model([xi, ci], Bidirectional(RNN(CondCell(3)), merge_mode="ave", name="bi")(xi, constants=ci))
    path = str(tmp_path / "bi.h5")
    model.save(path)
    loaded = load_model(path, custom_objects={"CondCell": CondCell})
    want = model.predict([x, c], verbose=0)
    np.testing.assert_allclose(loaded.predict([x, c], verbose=0), want, rtol=1e-6)
    assert not np.allclose(model.predict([x, c + 1], verbose=0), want)
    with pytest.raises(ValueError, match="even count"):
        Bidirectional(RNN(CondCell(3)))(torch.zeros(2, 4, 3), initial_state=[torch.zeros(2, 3)])
