"""The hand-differentiated ConvLSTM recurrence (arignote.layers.recurrent.conv_lstm_sequence): its backward
against finite differences (float64 gradcheck), and ConvLSTM2D on it against ConvLSTM2D stepped
through the per-operator graph, on what the pinned cases (test_conv_lstm_pinned.py) do not reach:
gradients through the returned states only, and which configurations take it."""

import numpy as np
import pytest
import torch

from arignote import activations
from arignote.layers import ConvLSTM2D
from arignote.layers.convolutional_recurrent import ConvLSTM2DCell
from arignote.layers.recurrent import conv_lstm_sequence as recurrence


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("first, fresh, ract", [
    (False, False, "hard_sigmoid"), (True, True, "hard_sigmoid"),
    (False, True, "sigmoid"), (True, False, "sigmoid"),
])
def test_backward_equals_finite_differences(first, fresh, ract):
    torch.manual_seed(0)
    n, t, f, rows, cols = 2, 3, 2, 3, 4
    spec = recurrence.Recurrence(f, (1, 1), activations.get("tanh"), activations.get(ract), fresh, first)

    def torch_layout(shape):  # (n, C, H, W) in the memory format the layer hands over
        x = torch.randn(*shape, dtype=torch.float64)
        return x if first else x.contiguous(memory_format=torch.channels_last)

    xc = (torch_layout((n * t, 4 * f, rows, cols)) * 2).requires_grad_()
    w = (torch.randn(4 * f, f, 3, 3, dtype=torch.float64) * 0.5).requires_grad_()
    h, c = torch_layout((n, f, rows, cols)), torch_layout((n, f, rows, cols))
    if fresh:
        h, c = h.zero_(), c.zero_()
    else:
        h.requires_grad_(), c.requires_grad_()
    assert torch.autograd.gradcheck(lambda *a: recurrence.run(*a, spec), (xc, h, c, w), atol=1e-6)
    if not fresh:  # gradients through the last cell state alone (no output gradient reaches a step)
        assert torch.autograd.gradcheck(lambda *a: recurrence.run(*a, spec)[1], (xc, h, c, w), atol=1e-6)


def _both_paths(layer, x, loss, **call):
    """Outputs and gradients of ``layer`` on the hand-differentiated recurrence and on the graph."""
    results = []
    for fused in (True, False):
        layer.zero_grad()
        xg = x.clone().requires_grad_()
        run = ConvLSTM2DCell._recurrence
        if not fused:
            ConvLSTM2DCell._recurrence = lambda *a: None
        try:
            out = layer(xg, **call)
        finally:
            ConvLSTM2DCell._recurrence = run
        loss(out).backward()
        results.append([o.detach().numpy() for o in out] + [xg.grad.numpy()]
                       + [p.grad.numpy() for p in layer.parameters()])
    return results


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("which", ["all", "cell_state", "last_output"])
def test_return_state_gradients_equal_the_graph(which):
    rng = np.random.RandomState(4)
    layer = ConvLSTM2D(3, 3, padding="same", return_sequences=True, return_state=True)
    x = torch.tensor(rng.uniform(-1, 1, (2, 4, 5, 6, 2)).astype("float32"))
    layer.build(tuple(x.shape))
    layer.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in layer.get_weights()])
    weights = [torch.tensor(rng.uniform(-1, 1, s).astype("float32")) for s in
               [(2, 4, 5, 6, 3), (2, 5, 6, 3), (2, 5, 6, 3)]]
    pick = {"all": [0, 1, 2], "cell_state": [2], "last_output": [1]}[which]

    def loss(out):
        return sum((out[k] * weights[k]).sum() for k in pick)

    fused, graph = _both_paths(layer, x, loss)
    for a, b in zip(fused, graph):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
    assert np.abs(fused[3]).max() > 0  # the input's gradient is not trivially zero


def test_which_configurations_take_the_hand_differentiated_recurrence():
    def spec(mask=None, rec=None, **kwargs):
        return ConvLSTM2DCell(2, 3, padding="same", **kwargs)._recurrence(mask, rec, True)

    assert spec() == recurrence.Recurrence(2, (1, 1), activations.get("tanh"),
                                           activations.get("hard_sigmoid"), True, False)
    assert spec(recurrent_activation="sigmoid", data_format="channels_first").first
    assert spec(activation="relu") is None  # an activation it does not differentiate by hand
    assert spec(mask=torch.ones(2, 3)) is None
    assert spec(rec=[torch.ones(1)] * 4) is None  # recurrent dropout
    assert ConvLSTM2DCell(2, (3, 2), padding="same")._recurrence(None, None, True) is None  # even kernel


@pytest.mark.usefixtures("one_thread")
def test_export_traces_the_graph_path_and_predicts_the_same():
    layer = ConvLSTM2D(2, 3, padding="same", return_sequences=True)
    layer.build((1, 3, 5, 5, 1))
    x = torch.randn(1, 3, 5, 5, 1)
    assert not recurrence.tracing()
    program = torch.export.export(layer, (x,))  # its trace would fail on the function's out= buffers
    with torch.no_grad():
        np.testing.assert_allclose(program.module()(x).numpy(), layer(x).numpy(), rtol=1e-5, atol=1e-6)
