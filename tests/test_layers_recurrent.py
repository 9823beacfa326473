"""SimpleRNN / GRU (both reset_after) / LSTM and their cells against numpy implementations of Keras 2's
step equations: fused and general paths, any activation, dropout masks, return_state, go_backwards,
stateful, initial states, masks, stacked and user cells."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from arignote import activations, backend, layers
from arignote.layers import GRU, LSTM, Embedding, Masking
from arignote.layers.recurrent import (
    RNN,
    GRUCell,
    LSTMCell,
    SimpleRNN,
    SimpleRNNCell,
    StackedRNNCells,
    cell_base,
)
from arignote.layers.recurrent import rnn as _rnn_base

RNG = np.random.default_rng(4)


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def hard_sigmoid(x):
    return np.clip(0.2 * x + 0.5, 0, 1)


def relu(x):
    return np.maximum(x, 0)


def np_lstm(x, kernel, recurrent, bias, act=np.tanh, rec_act=sigmoid, h=None, c=None):
    n, t, _ = x.shape
    u = recurrent.shape[0]
    h = np.zeros((n, u)) if h is None else h
    c = np.zeros((n, u)) if c is None else c
    out = []
    for s in range(t):
        z = x[:, s] @ kernel + h @ recurrent + bias
        i, f, o = rec_act(z[:, :u]), rec_act(z[:, u : 2 * u]), rec_act(z[:, 3 * u :])
        c = f * c + i * act(z[:, 2 * u : 3 * u])
        h = o * act(c)
        out.append(h)
    return np.stack(out, 1), h, c


def np_gru(x, kernel, recurrent, bias, reset_after, act=np.tanh, rec_act=sigmoid):
    n, t, _ = x.shape
    u = recurrent.shape[0]
    h, out = np.zeros((n, u)), []
    for s in range(t):
        xi = x[:, s] @ kernel + (bias[0] if reset_after else bias)
        z = rec_act(xi[:, :u] + h @ recurrent[:, :u] + (bias[1][:u] if reset_after else 0))
        r = rec_act(
            xi[:, u : 2 * u] + h @ recurrent[:, u : 2 * u] + (bias[1][u : 2 * u] if reset_after else 0)
        )
        if reset_after:
            hh = act(xi[:, 2 * u :] + r * (h @ recurrent[:, 2 * u :] + bias[1][2 * u :]))
        else:
            hh = act(xi[:, 2 * u :] + (r * h) @ recurrent[:, 2 * u :])
        h = z * h + (1 - z) * hh
        out.append(h)
    return np.stack(out, 1), h


def np_simple(x, kernel, recurrent, bias, act=np.tanh):
    h, out = np.zeros((x.shape[0], recurrent.shape[0])), []
    for s in range(x.shape[1]):
        h = act(x[:, s] @ kernel + h @ recurrent + bias)
        out.append(h)
    return np.stack(out, 1), h


def setup(layer, x, scale=0.3):
    layer.build((None, *x.shape[1:]))
    ws = [w + RNG.standard_normal(w.shape).astype(np.float32) * scale for w in layer.get_weights()]
    layer.set_weights(ws)
    return [w.astype(np.float64) for w in ws]


def run(layer, x, **kwargs):
    with torch.no_grad():
        out = layer(torch.tensor(x), **kwargs)
    return [o.numpy() for o in out] if isinstance(out, list) else out.numpy()


X = RNG.standard_normal((3, 5, 4)).astype(np.float32)


@pytest.mark.parametrize(
    "kwargs,acts,fused",
    [
        ({}, (np.tanh, sigmoid), True),
        ({"activation": "relu"}, (relu, sigmoid), False),
        (
            {"recurrent_activation": "hard_sigmoid", "activation": "softsign"},
            (lambda v: v / (1 + abs(v)), hard_sigmoid),
            False,
        ),
    ],
)
def test_lstm_matches_keras_equations_with_any_activation(kwargs, acts, fused, monkeypatch):
    lstm = LSTM(6, return_sequences=True, **kwargs)
    ws = setup(lstm, X)
    calls = []
    monkeypatch.setattr(torch, "lstm", lambda *a, _f=torch.lstm: calls.append(1) or _f(*a))
    y = run(lstm, X)
    ref, _, _ = np_lstm(X.astype(np.float64), *ws, act=acts[0], rec_act=acts[1])
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    assert bool(calls) is fused  # the fused kernel exactly when torch has one for these activations


@pytest.mark.parametrize("reset_after", [False, True])
@pytest.mark.parametrize("act,np_act", [("tanh", np.tanh), ("relu", relu)])
def test_gru_both_reset_after_semantics(reset_after, act, np_act, monkeypatch):
    gru = GRU(6, return_sequences=True, reset_after=reset_after, activation=act)
    ws = setup(gru, X)
    assert ws[2].shape == ((2, 18) if reset_after else (18,))
    calls = []
    monkeypatch.setattr(torch, "gru", lambda *a, _f=torch.gru: calls.append(1) or _f(*a))
    y = run(gru, X)
    ref, _ = np_gru(X.astype(np.float64), *ws, reset_after=reset_after, act=np_act)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    assert bool(calls) is (reset_after and act == "tanh")


@pytest.mark.parametrize("act,np_act", [("tanh", np.tanh), ("relu", relu), ("sigmoid", sigmoid)])
def test_simple_rnn(act, np_act):
    rnn = SimpleRNN(5, activation=act)
    ws = setup(rnn, X)
    _, h = np_simple(X.astype(np.float64), *ws, act=np_act)
    np.testing.assert_allclose(run(rnn, X), h, rtol=1e-4, atol=1e-5)
    assert rnn.compute_output_shape((None, 5, 4)) == (None, 5)


def test_loop_path_equals_fused_path():
    # an all-true mask forces the general loop; the numbers must not change
    for layer in (
        LSTM(4, return_sequences=True),
        GRU(4, reset_after=True, return_sequences=True),
        SimpleRNN(4, return_sequences=True),
    ):
        setup(layer, X)
        mask = torch.ones(3, 5, dtype=torch.bool)
        np.testing.assert_allclose(run(layer, X, mask=mask), run(layer, X), rtol=1e-5, atol=1e-6)


def test_return_state_go_backwards_initial_state():
    lstm = LSTM(4, return_sequences=True, return_state=True, go_backwards=True)
    ws = setup(lstm, X)
    y, h, c = run(lstm, X)
    ref, rh, rc = np_lstm(X[:, ::-1].astype(np.float64), *ws)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)  # outputs in processing (reversed) order
    np.testing.assert_allclose(h, rh, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c, rc, rtol=1e-4, atol=1e-5)
    assert lstm.compute_output_shape((None, 5, 4)) == [(None, 5, 4), (None, 4), (None, 4)]
    h0 = RNG.standard_normal((3, 4)).astype(np.float32)
    c0 = RNG.standard_normal((3, 4)).astype(np.float32)
    fwd = LSTM(4)
    ws = setup(fwd, X)
    got = run(fwd, X, initial_state=[torch.tensor(h0), torch.tensor(c0)])
    _, rh, _ = np_lstm(X.astype(np.float64), *ws, h=h0.astype(np.float64), c=c0.astype(np.float64))
    np.testing.assert_allclose(got, rh, rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        listed = fwd([torch.tensor(X), torch.tensor(h0), torch.tensor(c0)]).numpy()
    np.testing.assert_allclose(listed, rh, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="expects 2 initial states"):
        fwd(torch.tensor(X), initial_state=[torch.tensor(h0)])


def test_stateful_carries_states_and_resets():
    whole = LSTM(4)
    ws = setup(whole, X)
    s = LSTM(4, stateful=True)
    s.build((None, 5, 4))
    s.set_weights([w.astype(np.float32) for w in ws])
    run(s, X[:, :3])
    np.testing.assert_allclose(run(s, X[:, 3:]), run(whole, X), rtol=1e-4, atol=1e-5)
    s.reset_states()
    np.testing.assert_allclose(run(s, X), run(whole, X), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="same batch size"):
        run(s, X[:2])
    with pytest.raises(AttributeError, match="stateful"):
        whole.reset_states()


def test_masking_keeps_previous_output_and_state():
    x = X.copy()
    x[0, 3:] = 0.0  # post-padded sample
    x[1, :2] = 0.0  # pre-padded sample
    mask = torch.tensor(np.any(x != 0, axis=-1))
    lstm = LSTM(4, return_sequences=True)
    ws = setup(lstm, x)
    y = run(lstm, x, mask=mask)
    ref0, _, _ = np_lstm(x[:1, :3].astype(np.float64), *ws)
    np.testing.assert_allclose(y[0, :3], ref0[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y[0, 3:], np.repeat(ref0[:, -1], 2, 0), rtol=1e-4, atol=1e-5)
    ref1, _, _ = np_lstm(x[1:2, 2:].astype(np.float64), *ws)
    np.testing.assert_array_equal(y[1, :2], 0.0)  # nothing seen yet: zero output
    np.testing.assert_allclose(y[1, 2:], ref1[0], rtol=1e-4, atol=1e-5)
    assert torch.equal(lstm.compute_mask(torch.tensor(x), mask), mask)
    assert LSTM(4).compute_mask(torch.tensor(x), mask) is None


def test_embedding_mask_zero_reaches_the_lstm_in_a_sequential():
    from arignote.models import Sequential

    ids = np.array([[0, 0, 3, 4], [5, 6, 7, 0]])
    model = Sequential([Embedding(10, 3, mask_zero=True, input_length=4), LSTM(2)])
    emb, lstm = model.layers
    masked = lstm(emb(torch.tensor(ids)), mask=emb.compute_mask(torch.tensor(ids))).detach().numpy()
    with torch.no_grad():
        got = model.module(torch.tensor(ids)).numpy()
    np.testing.assert_allclose(got, masked, rtol=1e-5, atol=1e-7)
    unmasked = lstm(emb(torch.tensor(ids))).detach().numpy()
    assert not np.allclose(got, unmasked)
    assert Masking().compute_mask(torch.zeros(1, 2, 3)).tolist() == [[False, False]]


def test_dropout_masks_are_per_sequence_and_fused_keeps_input_dropout(monkeypatch):
    lstm = LSTM(4, dropout=0.5, return_sequences=True)
    ws = setup(lstm, X)
    fixed = torch.tensor(RNG.integers(0, 2, (3, 4)).astype(np.float32) * 2)
    monkeypatch.setattr(_rnn_base, "dropout_mask", lambda like, rate, count: [fixed] * count)
    calls = []
    monkeypatch.setattr(torch, "lstm", lambda *a, _f=torch.lstm: calls.append(1) or _f(*a))
    lstm.train()
    y = run(lstm, X)
    ref, _, _ = np_lstm(X.astype(np.float64) * fixed.numpy()[:, None].astype(np.float64), *ws)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    assert calls  # input dropout alone stays on the fused kernel
    lstm.eval()
    np.testing.assert_allclose(run(lstm, X), np_lstm(X.astype(np.float64), *ws)[0], rtol=1e-4, atol=1e-5)


def test_recurrent_dropout_uses_the_loop_with_one_mask_per_sequence(monkeypatch):
    gru = GRU(4, recurrent_dropout=0.5, return_sequences=True)
    ws = setup(gru, X)
    rec = torch.tensor(RNG.integers(0, 2, (3, 4)).astype(np.float32) * 2)
    monkeypatch.setattr(cell_base, "dropout_mask", lambda like, rate, count: [rec] * count)
    gru.train()
    y = run(gru, X)
    # reference: the recurrent input of every gate multiplied by the same mask at every step
    u, (kernel, recurrent_k, bias) = 4, ws
    h, outs = np.zeros((3, u)), []
    m = rec.numpy().astype(np.float64)
    for s in range(5):
        xi = X[:, s].astype(np.float64) @ kernel + bias
        hm = h * m
        z = sigmoid(xi[:, :u] + hm @ recurrent_k[:, :u])
        r = sigmoid(xi[:, u : 2 * u] + hm @ recurrent_k[:, u : 2 * u])
        hh = np.tanh(xi[:, 2 * u :] + (r * hm) @ recurrent_k[:, 2 * u :])
        h = z * h + (1 - z) * hh
        outs.append(h)
    np.testing.assert_allclose(y, np.stack(outs, 1), rtol=1e-4, atol=1e-5)


def test_rnn_wrapper_with_cells_stacked_and_a_user_cell():
    cells = [LSTMCell(4), GRUCell(3)]
    stacked = RNN(cells, return_sequences=True)
    stacked.build((None, 5, 4))
    assert isinstance(stacked.cell, StackedRNNCells) and len(stacked.get_weights()) == 6
    first, second = LSTM(4, return_sequences=True), GRU(3, return_sequences=True)
    first.build((None, 5, 4))
    second.build((None, 5, 4))
    first.set_weights(stacked.get_weights()[:3])
    second.set_weights(stacked.get_weights()[3:])
    with torch.no_grad():
        ref = second(first(torch.tensor(X))).numpy()
    np.testing.assert_allclose(run(stacked, X), ref, rtol=1e-5, atol=1e-6)

    class MinimalRNNCell(layers.Layer):  # the Keras 2 documentation's example cell
        def __init__(self, units, **kwargs):
            self.units = units
            self.state_size = units
            super().__init__(**kwargs)

        def build(self, input_shape):
            self.kernel = self.add_weight("kernel", (input_shape[-1], self.units), initializer="uniform")
            self.recurrent_kernel = self.add_weight(
                "recurrent_kernel", (self.units, self.units), initializer="uniform"
            )
            self.built = True

        def call(self, inputs, states):
            output = inputs @ self.kernel + states[0] @ self.recurrent_kernel
            return output, [output]

    user = RNN(MinimalRNNCell(3), return_sequences=True)
    user.build((None, 5, 4))
    k = user.cell.kernel.detach().numpy().astype(np.float64)
    rk = user.cell.recurrent_kernel.detach().numpy().astype(np.float64)
    ref, _ = np_simple(X.astype(np.float64), k, rk, 0.0, act=lambda v: v)
    np.testing.assert_allclose(run(user, X), ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="`call` method"):
        RNN(object())
    with pytest.raises(ValueError, match="state_size"):
        RNN(type("NoState", (), {"call": lambda self, x, s: (x, s)})())


def test_cells_step_api_and_identity_recurrent_init():
    cell = SimpleRNNCell(3, recurrent_initializer="identity", activation=None)
    cell.build(
        (
            None,
            2,
        )
    )
    np.testing.assert_array_equal(cell.get_weights()[1], np.eye(3))
    x = torch.tensor([[1.0, 2.0]])
    out, states = cell.call(x, [torch.zeros(1, 3)])
    np.testing.assert_allclose(out.detach().numpy(), x.numpy() @ cell.get_weights()[0], rtol=1e-6)
    lstm_cell = LSTMCell(2, recurrent_initializer="identity")
    lstm_cell.build(
        (
            None,
            2,
        )
    )
    np.testing.assert_array_equal(lstm_cell.get_weights()[1], np.tile(np.eye(2), (1, 4)))
    assert lstm_cell.get_weights()[2].tolist() == [0, 0, 1, 1, 0, 0, 0, 0]


def test_recurrent_config_round_trip_and_attributes():
    gru = GRU(5, activation="relu", reset_after=True, dropout=0.1, return_sequences=True, name="g")
    cfg = json.loads(json.dumps(layers.serialize(gru)))["config"]
    assert cfg["activation"] == "relu" and cfg["reset_after"] is True and cfg["dropout"] == 0.1
    clone = layers.deserialize({"class_name": "GRU", "config": cfg})
    assert clone.units == 5 and clone.activation is activations.relu and clone.return_sequences
    rnn = RNN(LSTMCell(3), return_state=True)
    clone = layers.deserialize(json.loads(json.dumps(layers.serialize(rnn))))
    assert isinstance(clone.cell, LSTMCell) and clone.cell.units == 3 and clone.return_state
    with pytest.raises(ValueError, match="recurrent_dropout"):
        LSTM(2, recurrent_dropout="x")
    with pytest.raises(ValueError, match="sequences"):
        LSTM(4).build(
            (
                None,
                10,
            )
        )
    assert math.isclose(LSTM(2, dropout=1.5).dropout, 1.0)


# --------------------------------------------------------------------------- wrappers, ConvLSTM2D, CuDNN


def test_time_distributed_applies_the_layer_to_every_step():
    from arignote.layers import Conv2D, Dense, TimeDistributed

    td = TimeDistributed(Dense(3, activation="relu"))
    ws = setup(td, X)
    ref = np.maximum(X.astype(np.float64) @ ws[0] + ws[1], 0)
    np.testing.assert_allclose(run(td, X), ref, rtol=1e-5, atol=1e-6)
    assert td.compute_output_shape((None, 5, 4)) == (None, 5, 3) and td.weight_names() == ["kernel", "bias"]
    imgs = RNG.standard_normal((2, 3, 6, 6, 2)).astype(np.float32)
    tc = TimeDistributed(Conv2D(4, 3))
    tc.build((None, 3, 6, 6, 2))
    y = run(tc, imgs)
    with torch.no_grad():
        per_step = [tc.layer(torch.tensor(imgs[:, s])).numpy() for s in range(3)]
    np.testing.assert_allclose(y, np.stack(per_step, 1), rtol=1e-5, atol=1e-6)
    mask = torch.ones(3, 5, dtype=torch.bool)
    assert torch.equal(td.compute_mask(torch.tensor(X), mask), mask)  # Keras 2.3.1: the inner mask, reshaped
    clone = layers.deserialize(json.loads(json.dumps(layers.serialize(td))))
    assert type(clone.layer).__name__ == "Dense" and clone.layer.units == 3


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_merges_forward_and_reversed_backward(merge_mode):
    from arignote.layers import Bidirectional

    bi = Bidirectional(LSTM(3, return_sequences=True), merge_mode=merge_mode)
    ws = setup(bi, X)
    assert bi.forward_layer.name.startswith("forward_lstm") and bi.backward_layer.name.startswith(
        "backward_lstm"
    )
    fwd, _, _ = np_lstm(X.astype(np.float64), *ws[:3])
    bwd, _, _ = np_lstm(X[:, ::-1].astype(np.float64), *ws[3:])
    bwd = bwd[:, ::-1]  # Keras 2 reverses the backward sequence back before merging
    expected = {
        "concat": np.concatenate([fwd, bwd], -1),
        "sum": fwd + bwd,
        "mul": fwd * bwd,
        "ave": (fwd + bwd) / 2,
        None: [fwd, bwd],
    }[merge_mode]
    got = run(bi, X)
    if merge_mode is None:
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert len(bi.get_weights()) == 6 and sum(1 for _ in bi.parameters()) == 6


def test_bidirectional_last_output_states_and_config():
    from arignote.layers import Bidirectional

    bi = Bidirectional(GRU(3, return_state=True))
    ws = setup(bi, X)
    out, hf, hb = run(bi, X)
    _, rf = np_gru(X.astype(np.float64), *ws[:3], reset_after=False)
    _, rb = np_gru(X[:, ::-1].astype(np.float64), *ws[3:], reset_after=False)
    np.testing.assert_allclose(out, np.concatenate([rf, rb], -1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(hb, rb, rtol=1e-4, atol=1e-5)
    assert bi.compute_output_shape((None, 5, 4)) == [(None, 6), (None, 3), (None, 3)]
    cfg = json.loads(json.dumps(layers.serialize(bi)))
    clone = layers.deserialize(cfg)
    assert (
        clone.merge_mode == "concat" and clone.forward_layer.units == 3 and clone.backward_layer.go_backwards
    )
    with pytest.raises(ValueError, match="merge mode"):
        Bidirectional(LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="recurrent layer"):
        Bidirectional(layers.Dense(2))


def np_conv_same(x, k):
    """'same' stride-1 2-D convolution, NHWC x and (kh, kw, in, out) k, TensorFlow padding."""
    kh, kw = k.shape[:2]
    xp = np.pad(
        x, ((0, 0), ((kh - 1) // 2, kh - 1 - (kh - 1) // 2), ((kw - 1) // 2, kw - 1 - (kw - 1) // 2), (0, 0))
    )
    y = np.zeros((*x.shape[:3], k.shape[-1]))
    for i in range(kh):
        for j in range(kw):
            y += xp[:, i : i + x.shape[1], j : j + x.shape[2]] @ k[i, j]
    return y


@pytest.mark.parametrize("fmt", ["channels_last", "channels_first"])
def test_conv_lstm_2d_matches_numpy(fmt):
    from arignote.layers import ConvLSTM2D

    seq = RNG.standard_normal((2, 3, 5, 4, 2)).astype(np.float32)
    data = seq if fmt == "channels_last" else np.ascontiguousarray(seq.transpose(0, 1, 4, 2, 3))
    layer = ConvLSTM2D(3, (3, 2), padding="same", return_sequences=True, data_format=fmt)
    ws = setup(layer, data)
    kernel, rec, bias = ws
    assert kernel.shape == (3, 2, 2, 12) and rec.shape == (3, 2, 3, 12) and bias.shape == (12,)
    h = np.zeros((2, 5, 4, 3))
    c = np.zeros_like(h)
    outs = []
    for s in range(3):
        z = np_conv_same(seq[:, s].astype(np.float64), kernel) + bias + np_conv_same(h, rec)
        i, f, g, o = (z[..., n * 3 : (n + 1) * 3] for n in range(4))
        c = hard_sigmoid(f) * c + hard_sigmoid(i) * np.tanh(g)
        h = hard_sigmoid(o) * np.tanh(c)
        outs.append(h)
    y = run(layer, data)
    ref = np.stack(outs, 1)
    if fmt == "channels_first":
        y = y.transpose(0, 1, 3, 4, 2)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    assert ConvLSTM2D(3, 3).compute_output_shape((None, 3, 5, 4, 2)) == (None, 3, 2, 3)


def test_cudnn_layers_refuse_cpu_and_match_the_portable_formula_shapes():
    from arignote.layers import CuDNNGRU, CuDNNLSTM

    lstm = CuDNNLSTM(4, return_sequences=True)
    lstm.build((None, 5, 4))
    assert [w.shape for w in lstm.get_weights()] == [(4, 16), (4, 16), (32,)]
    assert lstm.get_weights()[2][20:24].tolist() == [1, 1, 1, 1]  # Keras 2: recurrent forget bias = 1
    gru = CuDNNGRU(3)
    gru.build((None, 5, 4))
    assert [w.shape for w in gru.get_weights()] == [(4, 9), (3, 9), (18,)]
    with pytest.raises(RuntimeError, match="GRU\\(units, reset_after=True"):
        gru(torch.tensor(X))
    with pytest.raises(RuntimeError, match="CUDA GPU"):
        lstm(torch.tensor(X))
    # Keras 2's CuDNN kernels are cuDNN's memory; with the HDF5 loader's (Keras 2's) conversion the plain
    # layers compute the same function (the fused kernel runs on CPU when called past the device check)
    from arignote.saving import layouts

    for cudnn, plain, gates in (
        (lstm, LSTM(4, return_sequences=True), 4),
        (gru, GRU(3, reset_after=True), 3),
    ):
        cudnn.set_weights([RNG.standard_normal(w.shape).astype(np.float32) for w in cudnn.get_weights()])
        plain.build((None, 5, 4))
        plain.set_weights(layouts.cudnn_to_plain(cudnn.get_weights(), gates))
        with torch.no_grad():
            got = layers.RNN.call(cudnn, torch.tensor(X))
            np.testing.assert_allclose(got.numpy(), plain(torch.tensor(X)).numpy(), rtol=1e-5, atol=1e-5)
        assert not np.allclose(cudnn.get_weights()[0], plain.get_weights()[0])


@pytest.mark.gpu
def test_cudnn_lstm_on_gpu_equals_lstm():
    from arignote.layers import CuDNNLSTM

    lstm = CuDNNLSTM(4, return_sequences=True)
    lstm.build((None, 5, 4))
    ref = LSTM(4, return_sequences=True)
    ref.build((None, 5, 4))
    from arignote.saving import layouts

    lstm.set_weights([RNG.standard_normal(w.shape).astype(np.float32) for w in lstm.get_weights()])
    ref.set_weights(layouts.cudnn_to_plain(lstm.get_weights(), 4))
    x = torch.tensor(X)
    with torch.no_grad():
        got = lstm.to("cuda")(x.to("cuda")).cpu()
    np.testing.assert_allclose(got.numpy(), ref(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_masks_stay_on_the_fused_kernel_and_match_the_loop(monkeypatch):
    x = X.copy()
    x[0, 3:] = 0.0  # 'post' padding
    x[1, :2] = 0.0  # 'pre' padding (pad_sequences' default)
    mask = torch.tensor(np.any(x != 0, axis=-1))
    holes = mask.clone()
    holes[2, 1] = False  # a gap in the middle: not a padded sequence (its valid steps are gathered)
    for make in (
        lambda: GRU(4, reset_after=True, return_sequences=True),
        lambda: LSTM(4, return_sequences=True, go_backwards=True),
        lambda: SimpleRNN(4, return_sequences=True),
    ):
        layer = make()
        setup(layer, x)
        fused_name = {"GRU": "gru", "LSTM": "lstm", "SimpleRNN": "rnn_tanh"}[type(layer).__name__]
        calls = []
        original = getattr(torch, fused_name)
        monkeypatch.setattr(torch, fused_name, lambda *a, _f=original, _c=calls: _c.append(1) or _f(*a))
        for mask_ in (mask, holes):
            fast = run(layer, x, mask=mask_)
            assert calls, type(layer).__name__
            calls.clear()
            with torch.no_grad():  # the loop, step by step, on the same layer
                xs = torch.tensor(x)
                m = mask_
                if layer.go_backwards:
                    xs, m = xs.flip(1), m.flip(1)
                states = layer.get_initial_state(xs)
                cell = layer.cell
                projected = cell.project(xs, None)
                prev, outs = torch.zeros(3, 4), []
                for s in range(5):
                    out, new = cell.step(projected[:, s], states, None)
                    keep = m[:, s].unsqueeze(-1)
                    out = torch.where(keep, out, prev)
                    states = [torch.where(keep, a, b) for a, b in zip(new, states)]
                    prev = out
                    outs.append(out)
            np.testing.assert_allclose(fast, torch.stack(outs, 1).numpy(), rtol=1e-5, atol=1e-6)
            assert not calls
        monkeypatch.setattr(torch, fused_name, original)


def test_model_reset_states_resets_stateful_layers():
    from arignote.models import Sequential

    model = Sequential([LSTM(3, stateful=True, batch_input_shape=(3, 5, 4)), layers.Dense(1)])
    lstm = model.layers[0]
    with torch.no_grad():
        first = model.module(torch.tensor(X)).numpy()
        second = model.module(torch.tensor(X)).numpy()  # starts from the carried states
        model.reset_states()
        again = model.module(torch.tensor(X)).numpy()
    assert not np.allclose(first, second)
    np.testing.assert_allclose(again, first, rtol=1e-6)
    assert lstm.states is not None
