"""The hand-differentiated LSTM recurrence (arignote.layers.recurrent.lstm_sequence): its backward against
finite differences (float64 gradcheck), LSTM layers on it against the same layers stepped through the
per-operator graph (outputs and every gradient, float32 summation-order tolerance), and which
configurations take it."""

import numpy as np
import pytest
import torch

from arignote import activations
from arignote.layers import LSTM
from arignote.layers.recurrent import lstm_sequence as seq
from arignote.layers.recurrent.cells import LSTMCell

A = activations.get


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("act, ract, dropout", [
    ("tanh", "hard_sigmoid", 0), ("tanh", "hard_sigmoid", 1), ("tanh", "sigmoid", 1),
    ("relu", "hard_sigmoid", 0), ("hard_sigmoid", "linear", 0), ("linear", "relu", 1),
    ("tanh", "hard_sigmoid", 4), ("relu", "sigmoid", 4),
])
def test_backward_equals_finite_differences(act, ract, dropout):
    torch.manual_seed(0)
    n, t, u = 2, 4, 3
    spec = seq.Spec(A(act), A(ract))
    xp = (torch.randn(n, t, 4 * u, dtype=torch.float64) * 2).requires_grad_()
    w = (torch.randn(4 * u, u, dtype=torch.float64) * 0.5).requires_grad_()
    h = torch.randn(n, u, dtype=torch.float64).requires_grad_()
    c = torch.randn(n, u, dtype=torch.float64).requires_grad_()
    shape = {1: (n, u), 4: (4, n, u)}.get(dropout)  # one mask, or one per gate (implementation=1)
    rec = (torch.rand(*shape, dtype=torch.float64) > 0.3).to(torch.float64) / 0.7 if shape else None
    assert torch.autograd.gradcheck(lambda *a: seq.run(*a, rec, spec), (xp, h, c, w), atol=1e-6)
    # through the last cell state alone (no output gradient reaches a step), and the outputs alone
    assert torch.autograd.gradcheck(lambda *a: seq.run(*a, rec, spec)[1], (xp, h, c, w), atol=1e-6)
    assert torch.autograd.gradcheck(lambda *a: seq.run(*a, rec, spec)[0][:, 1], (xp, h, c, w), atol=1e-6)


def _both_paths(make, x, loss, calls=1, states=None, **call):
    """Outputs and gradients of a layer (built by ``make``, same weights both times) on the
    hand-differentiated recurrence and on the graph's loop; ``calls`` batches in a row (stateful)."""
    results, taken = [], []
    for whole in (True, False):
        torch.manual_seed(3)
        layer = make()
        layer.train()
        takes, run = seq.takes, seq.run
        seq.takes = takes if whole else (lambda **_: False)
        seq.run = lambda *a, whole=whole, run=run: taken.append(whole) or run(*a)
        try:
            got = []
            for _ in range(calls):
                xg = x.clone().requires_grad_()
                extra = [s.clone().requires_grad_() for s in states] if states is not None else []
                if extra:
                    call["initial_state"] = extra
                torch.manual_seed(5)  # the same dropout masks both times
                out = layer(xg, training=True, **call)
                out = out if isinstance(out, list) else [out]
                layer.zero_grad()
                loss(out).backward()
                got += [o.detach().numpy() for o in out] + [xg.grad.numpy()] + [s.grad.numpy() for s in extra]
                got += [p.grad.numpy() for p in layer.parameters()]
        finally:
            seq.takes, seq.run = takes, run
        results.append(got)
    assert taken == [True] * calls  # the first run took the function, the second the graph
    return results


def _weighted(out):
    rng = np.random.RandomState(7)
    return sum((o * torch.tensor(rng.uniform(-1, 1, tuple(o.shape)).astype("float32"))).sum() for o in out)


def _close(results):
    whole, graph = results
    assert len(whole) == len(graph)
    for a, b in zip(whole, graph):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


CONFIGS = [
    {"recurrent_activation": "hard_sigmoid"},
    {"recurrent_activation": "hard_sigmoid", "return_sequences": True},
    {"recurrent_activation": "hard_sigmoid", "go_backwards": True, "return_sequences": True},
    {"recurrent_activation": "hard_sigmoid", "return_state": True},
    {"recurrent_dropout": 0.3, "return_sequences": True},
    {"recurrent_dropout": 0.3, "dropout": 0.2, "recurrent_activation": "hard_sigmoid"},
    {"dropout": 0.2, "implementation": 1, "return_sequences": True},  # 4 input masks
    {"recurrent_dropout": 0.3, "implementation": 1, "recurrent_activation": "hard_sigmoid"},  # 4 recurrent
    {"recurrent_dropout": 0.3, "dropout": 0.1, "implementation": 1, "return_sequences": True},
    {"activation": "relu", "recurrent_activation": "hard_sigmoid", "return_sequences": True},
    {"activation": "hard_sigmoid", "recurrent_activation": "linear", "use_bias": False},
]


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_layer_equals_the_graph_loop(config):
    rng = np.random.RandomState(0)
    x = torch.tensor(rng.uniform(-1, 1, (3, 6, 5)).astype("float32"))
    _close(_both_paths(lambda: LSTM(4, **config), x, _weighted))


MASKS = {
    "zeros_inside": [[1, 0, 1, 1, 0, 1], [0, 1, 1, 0, 1, 1], [1, 1, 1, 1, 1, 0]],
    "padded": [[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]],
}


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("config", [
    {"recurrent_activation": "hard_sigmoid", "return_sequences": True},
    {"recurrent_activation": "hard_sigmoid", "go_backwards": True},
    {"recurrent_dropout": 0.3, "return_sequences": True, "go_backwards": True},
    {"recurrent_dropout": 0.3, "implementation": 1, "return_sequences": True},
], ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_masked_layer_equals_the_graph_loop(config, mask):
    """Under a mask the function runs over each row's valid steps gathered to the front; the graph's
    loop keeps the states at the masked steps: the same outputs and gradients."""
    rng = np.random.RandomState(8)
    x = torch.tensor(rng.uniform(-1, 1, (3, 6, 5)).astype("float32"))
    m = torch.tensor(MASKS[mask], dtype=torch.bool)
    _close(_both_paths(lambda: LSTM(4, **config), x, _weighted, mask=m))


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("pick", [[0], [2], [1, 2]], ids=["output", "cell_state", "states"])
def test_initial_states_and_returned_states_equal_the_graph_loop(pick):
    rng = np.random.RandomState(1)
    x = torch.tensor(rng.uniform(-1, 1, (3, 5, 2)).astype("float32"))
    states = [torch.tensor(rng.uniform(-1, 1, (3, 4)).astype("float32")) for _ in range(2)]
    results = _both_paths(lambda: LSTM(4, recurrent_activation="hard_sigmoid", return_state=True), x,
                          lambda out: _weighted([out[k] for k in pick]), states=states)
    _close(results)
    assert np.abs(results[0][4]).max() > 0  # the initial h's gradient is not trivially zero


@pytest.mark.usefixtures("one_thread")
def test_stateful_batches_equal_the_graph_loop():
    rng = np.random.RandomState(2)
    x = torch.tensor(rng.uniform(-1, 1, (2, 4, 3)).astype("float32"))
    make = lambda: LSTM(3, recurrent_activation="hard_sigmoid", stateful=True, recurrent_dropout=0.25)  # noqa: E731
    _close(_both_paths(make, x, _weighted, calls=3))


def test_inference_equals_the_graph_loop_without_keeping_steps():
    rng = np.random.RandomState(3)
    x = torch.tensor(rng.uniform(-1, 1, (2, 6, 3)).astype("float32"))
    layer = LSTM(5, recurrent_activation="hard_sigmoid", return_sequences=True, return_state=True)
    layer(x)
    with torch.no_grad():
        whole = [o.numpy() for o in layer(x)]
        takes = seq.takes
        seq.takes = lambda **_: False
        try:
            graph = [o.numpy() for o in layer(x)]
        finally:
            seq.takes = takes
    _close([whole, graph])


def _takes(**kw):
    base = dict(lstm_step=True, activation=A("tanh"), recurrent_activation=A("hard_sigmoid"),
                recurrent_masks=0, steps=5, tracing=False)
    return seq.takes(**{**base, **kw})


def test_which_configurations_take_it():
    assert _takes()
    assert _takes(recurrent_masks=1, activation=A("relu"), recurrent_activation=A("sigmoid"))
    assert not _takes(lstm_step=False)  # a subclass's own step
    assert not _takes(activation=A("softsign"))  # an activation it does not differentiate by hand
    assert not _takes(recurrent_activation=A("elu"))
    assert _takes(recurrent_masks=4)  # implementation=1's recurrent dropout: one mask per gate
    assert not _takes(recurrent_masks=2)
    assert not _takes(steps=0)
    assert not _takes(tracing=True)
    assert not _takes(autocast=True)


def test_autocast_keeps_the_graph_loop():
    """Mixed precision (bf16 autocast on a CPU) casts each operator of the graph's loop; the function
    would mix a bf16 projection with float32 states."""
    x = torch.randn(2, 5, 3, requires_grad=True)
    layer = LSTM(4, recurrent_activation="hard_sigmoid", return_sequences=True)
    layer(x)
    calls = []
    run = seq.run
    seq.run = lambda *a: calls.append(1) or run(*a)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = layer(x)
        y.float().sum().backward()
    finally:
        seq.run = run
    assert calls == [] and y.dtype == torch.float32 and x.grad.abs().sum() > 0


class _OwnStep(LSTMCell):
    def step(self, xp, states, rec):
        return super().step(xp, states, rec)


@pytest.mark.parametrize("make, mask, expected", [
    (lambda: LSTM(3, recurrent_activation="hard_sigmoid"), None, True),
    (lambda: LSTM(3, recurrent_activation="hard_sigmoid"), [[1, 1, 0, 1]] * 2, True),  # valid steps gathered
    (lambda: LSTM(3, recurrent_activation="hard_sigmoid", return_state=True), [[1, 1, 0, 1]] * 2, False),
    (lambda: LSTM(3, recurrent_activation="hard_sigmoid"), [[1, 1, 0, 1], [0, 0, 0, 0]], False),  # empty row
    (lambda: LSTM(3, recurrent_dropout=0.2, implementation=1), None, True),
    (lambda: LSTM(3, activation="softsign"), None, False),
    (lambda: LSTM(3), None, False),  # the fused kernel
])
def test_layers_take_it_when_the_decision_says(make, mask, expected):
    calls = []
    run = seq.run
    seq.run = lambda *a: calls.append(1) or run(*a)
    try:
        layer = make()
        layer(torch.ones(2, 4, 2), mask=None if mask is None else torch.tensor(mask, dtype=torch.bool),
              training=True)
    finally:
        seq.run = run
    assert bool(calls) is expected


def test_a_cell_with_its_own_step_keeps_the_graph():
    from arignote.layers import RNN

    calls = []
    run = seq.run
    seq.run = lambda *a: calls.append(1) or run(*a)
    try:
        RNN(_OwnStep(3, recurrent_activation="hard_sigmoid"))(torch.ones(2, 4, 2))
        RNN(LSTMCell(3, recurrent_activation="hard_sigmoid"))(torch.ones(2, 4, 2))
    finally:
        seq.run = run
    assert calls == [1]


@pytest.mark.usefixtures("one_thread")
def test_a_second_derivative_equals_the_graph_loop():
    """A gradient penalty (create_graph=True) differentiates the backward: the function recomputes the
    steps through the graph for it."""
    x = torch.tensor(np.random.RandomState(6).uniform(-1, 1, (2, 4, 2)).astype("float32"))

    def penalty(out):
        (g,) = torch.autograd.grad(_weighted(out), xg_holder[0], create_graph=True)
        return (g ** 2).sum()

    xg_holder = []
    results = []
    for whole in (True, False):
        torch.manual_seed(3)
        layer = LSTM(3, recurrent_activation="hard_sigmoid", return_sequences=True)
        takes = seq.takes
        seq.takes = takes if whole else (lambda **_: False)
        try:
            xg = x.clone().requires_grad_()
            xg_holder[:] = [xg]
            penalty([layer(xg)]).backward()
        finally:
            seq.takes = takes
        results.append([xg.grad.numpy()] + [p.grad.numpy() for p in layer.parameters()])
    _close(results)
    assert np.abs(results[0][1]).max() > 0


def test_graph_equals_run_in_float64():
    torch.manual_seed(1)
    spec = seq.Spec(A("relu"), A("hard_sigmoid"))
    args = (torch.randn(2, 5, 12, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64),
            torch.randn(2, 3, dtype=torch.float64), torch.randn(12, 3, dtype=torch.float64),
            torch.ones(2, 3, dtype=torch.float64) * 1.25)
    for a, b in zip(seq.run(*args, spec), seq.graph(*args, spec)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)
    per_gate = (*args[:4], torch.rand(4, 2, 3, dtype=torch.float64))  # implementation=1's four masks
    for a, b in zip(seq.run(*per_gate, spec), seq.graph(*per_gate, spec)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.usefixtures("one_thread")
def test_export_traces_the_graph_path_and_predicts_the_same():
    layer = LSTM(3, recurrent_activation="hard_sigmoid", return_sequences=True)
    x = torch.randn(2, 4, 2)
    layer(x)
    assert not seq.tracing()
    program = torch.export.export(layer, (x,))  # its trace would fail on the function's out= buffers
    with torch.no_grad():
        np.testing.assert_allclose(program.module()(x).numpy(), layer(x).numpy(), rtol=1e-5, atol=1e-6)
