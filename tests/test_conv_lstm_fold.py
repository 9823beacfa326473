"""hard_sigmoid's affine ``0.2 * z + 0.5`` folded into ConvLSTM2D's convolutions
(arignote.layers.recurrent.conv_lstm_sequence.fold): the steps then clamp; results equal the unfolded
steps up to float32 rounding (``conv(x, 0.2 w)`` for ``0.2 conv(x, w)``), gradients included."""

import numpy as np
import pytest
import torch

from arignote import activations
from arignote.layers import ConvLSTM2D
from arignote.layers.recurrent import conv_lstm_joint as joined
from arignote.layers.recurrent import conv_lstm_sequence as recurrence


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize("fresh", [True, False])
def test_folded_steps_equal_the_unfolded_ones(first, fresh):
    n, t, f, rows, cols = 3, 4, 3, 5, 6
    spec = recurrence.Recurrence(f, (1, 1), activations.get("tanh"), activations.get("hard_sigmoid"),
                                 fresh, first)
    g = torch.Generator().manual_seed(1)

    def torch_layout(shape):
        x = torch.randn(*shape, generator=g, dtype=torch.float64)
        return x if first else x.contiguous(memory_format=torch.channels_last)

    x = torch_layout((n * t, 2, rows, cols))
    kernel = torch.randn(4 * f, 2, 3, 3, generator=g, dtype=torch.float64).requires_grad_()
    bias = torch.randn(4 * f, generator=g, dtype=torch.float64).requires_grad_()
    rec = (torch.randn(4 * f, f, 3, 3, generator=g, dtype=torch.float64) * 0.5).requires_grad_()
    h, c = torch_layout((n, f, rows, cols)), torch_layout((n, f, rows, cols))
    if fresh:
        h, c = h.zero_(), c.zero_()
    frame = (f, rows, cols) if first else (rows, cols, f)
    proj = torch.randn(n, t, *frame, generator=g, dtype=torch.float64)
    results = []
    for folded in (False, True):
        run_spec, k, b, r = recurrence.fold(spec, kernel, bias, rec) if folded else (spec, kernel, bias, rec)
        assert (run_spec.recurrent_activation is recurrence.clamp01) == folded
        xc = torch.nn.functional.conv2d(x, k, b, 1, 1)
        out, last = recurrence.run(xc, h, c, r, run_spec)
        grads = torch.autograd.grad((out * proj).sum() + last.sum(), (kernel, bias, rec))
        results.append([out.detach(), last.detach(), *grads])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    assert results[0][1].abs().max() > 0.1


def test_fold_leaves_other_activations():
    spec = recurrence.Recurrence(2, (1, 1), activations.get("tanh"), activations.get("sigmoid"), True, False)
    kernel, rec = torch.ones(8, 1, 3, 3), torch.ones(8, 2, 3, 3)
    assert recurrence.fold(spec, kernel, None, rec) == (spec, kernel, None, rec)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("padding, module", [("same", joined), ("valid", recurrence)])
def test_conv_lstm2d_runs_the_folded_steps(monkeypatch, padding, module):
    """'same': the joined convolutions (conv_lstm_joint); 'valid': the input convolution apart."""
    ran = []
    run = module.run
    monkeypatch.setattr(module, "run", lambda *a: ran.append(a[-1].recurrent_activation) or run(*a))
    layer = ConvLSTM2D(2, 3, padding=padding, return_sequences=True)
    x = torch.tensor(np.random.RandomState(0).uniform(-1, 1, (2, 3, 5, 5, 1)).astype("float32"))
    out = layer(x)
    assert ran == [recurrence.clamp01]
    rows = 5 if padding == "same" else 3
    assert out.shape == (2, 3, rows, rows, 2) and out.abs().max() > 0
