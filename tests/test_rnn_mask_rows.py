"""A Keras mask on a whole-sequence recurrence (``whole_sequence.gathered``): each row's valid steps moved to
the front as whole rows (``index_select`` on ``(batch * time, features)``), torch's fused kernel or the LSTM
function (``lstm_sequence``, fed ``x`` gathered BEFORE its input projection) run over them, the outputs
spread back; against the per-step loop that keeps the states at masked steps (Keras 2's ``K.rnn``):
outputs, carried states and every gradient (inputs and weights), masks with zeros inside and padded."""

import numpy as np
import pytest
import torch

from arignote.layers import GRU, LSTM
from arignote.layers.recurrent import lstm_sequence as seq
from arignote.layers.recurrent import whole_sequence

MASKS = {
    "zeros_inside": [[1, 0, 1, 1, 0, 1, 1], [0, 1, 1, 0, 1, 1, 0], [1, 1, 1, 1, 1, 0, 1]],
    "padded": [[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0, 0]],
}

LAYERS = {  # name -> (factory, whether the gathered path runs the LSTM function rather than the fused kernel)
    "lstm_fused": (lambda **kw: LSTM(4, **kw), False),
    "gru_fused": (lambda **kw: GRU(4, reset_after=True, **kw), False),
    "lstm_hard_sigmoid": (lambda **kw: LSTM(4, recurrent_activation="hard_sigmoid", **kw), True),
    "lstm_hard_sigmoid_dropout": (
        lambda **kw: LSTM(4, recurrent_activation="hard_sigmoid", dropout=0.3, **kw), True),
    "lstm_recurrent_dropout_impl1": (  # four input and four recurrent masks (Keras <= 2.2)
        lambda **kw: LSTM(4, dropout=0.2, recurrent_dropout=0.3, implementation=1, **kw), True),
}

CALLS = [{}, {"return_sequences": True}, {"go_backwards": True},
         {"go_backwards": True, "return_sequences": True}]


def _weighted(outs):
    rng = np.random.RandomState(7)
    return sum((o * torch.tensor(rng.uniform(-1, 1, tuple(o.shape)).astype("float32"))).sum() for o in outs)


def _run(monkeypatch, make, x, mask, gathered, calls=1, **kw):
    """Outputs, input gradient, weight gradients (and carried states) over ``calls`` batches in a row,
    on the gathered path or on the per-step loop (``gathered=False``: no fused kernel, no LSTM
    function); returns them with the number of row gathers made."""
    moved = []
    with monkeypatch.context() as m:
        steps_at = whole_sequence._steps_at
        m.setattr(whole_sequence, "_steps_at", lambda *a: moved.append(1) or steps_at(*a))
        torch.manual_seed(3)
        layer = make(**kw)
        layer.train()
        if not gathered:
            m.setattr(layer.cell, "fusable", lambda training: False)
            m.setattr(seq, "takes", lambda **_: False)
        got = []
        for _ in range(calls):
            xg = x.clone().requires_grad_()
            torch.manual_seed(5)  # the same dropout masks on both paths
            out = layer(xg, mask=mask, training=True)
            layer.zero_grad()
            _weighted([out]).backward()
            got += [out.detach().numpy(), xg.grad.numpy()] + [p.grad.numpy() for p in layer.parameters()]
            if layer.stateful:
                got += [s.numpy() for s in layer.states]
    return got, len(moved)


def _close(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=2e-5, atol=2e-6)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("call", CALLS, ids=lambda c: ",".join(c) or "last_output")
@pytest.mark.parametrize("name", LAYERS)
def test_gathered_rows_equal_the_step_loop(monkeypatch, name, call, mask):
    make, lstm_function = LAYERS[name]
    rng = np.random.RandomState(8)
    x = torch.tensor(rng.uniform(-1, 1, (3, 7, 5)).astype("float32"))
    m = torch.tensor(MASKS[mask], dtype=torch.bool)
    ran = []
    run = seq.run
    monkeypatch.setattr(seq, "run", lambda *a: ran.append(a[0].shape[-1]) or run(*a))
    whole, moved = _run(monkeypatch, make, x, m, True, **call)
    step_loop, moved_in_loop = _run(monkeypatch, make, x, m, False, **call)
    # one gather of the inputs, one of the last outputs, one spread of all outputs for return_sequences
    assert (moved, moved_in_loop) == (2 + bool(call.get("return_sequences")), 0)
    # the LSTM function saw the projection of the gathered x (4 gates of 4 units), the fused kernel none
    assert ran == ([16] if lstm_function else [])
    _close(whole, step_loop)
    assert np.abs(whole[1]).max() > 0  # the input gradient is not trivially zero


@pytest.mark.usefixtures("one_thread")
def test_a_masked_step_gets_no_input_gradient(monkeypatch):
    """The rows moved back in the backward land on the steps they came from: a masked step's input
    changes nothing, so its gradient is exactly zero (a row spread to the wrong step would not be)."""
    make, _ = LAYERS["lstm_hard_sigmoid"]
    x = torch.tensor(np.random.RandomState(9).uniform(-1, 1, (3, 7, 5)).astype("float32"))
    m = torch.tensor(MASKS["zeros_inside"], dtype=torch.bool)
    (out, grad, *_), moved = _run(monkeypatch, make, x, m, True, return_sequences=True)
    assert moved == 3
    assert np.all(grad[~m.numpy()] == 0) and np.all(np.abs(grad[m.numpy()]).sum(-1) > 0)
    # Keras 2's masked outputs: zeros before a row's first valid step, the previous output after
    assert np.all(out[1, 0] == 0)
    assert np.array_equal(out[0, 1], out[0, 0]) and np.array_equal(out[0, 4], out[0, 3])


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name, gathers", [("gru_fused", 2), ("lstm_hard_sigmoid", 0), ("lstm_fused", 0)])
def test_stateful_batches_under_a_mask_equal_the_step_loop(monkeypatch, name, gathers):
    """Three batches in a row carry the states: a GRU's state is its last output (gathered path); an
    LSTM's cell state at each row's last valid step is not returned by the whole-sequence paths, so a
    stateful LSTM under a mask runs the step loop (no rows moved)."""
    make, _ = LAYERS[name]
    x = torch.tensor(np.random.RandomState(4).uniform(-1, 1, (3, 7, 5)).astype("float32"))
    m = torch.tensor(MASKS["zeros_inside"], dtype=torch.bool)
    whole, moved = _run(monkeypatch, make, x, m, True, calls=3, stateful=True)
    step_loop, _ = _run(monkeypatch, make, x, m, False, calls=3, stateful=True)
    assert moved == 3 * gathers
    _close(whole, step_loop)
    assert np.abs(whole[-1]).max() > 0  # a state was carried
