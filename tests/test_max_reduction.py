"""The global max poolings' ``amax`` (layers/max_reduction.py): which calls take the light backward
(the pure decision function), and that its outputs and gradients are torch's ``amax``'s bit for bit,
ties split as torch splits them, in the layers too."""

from __future__ import annotations

import pytest
import torch

from arignote.layers import GlobalMaxPooling1D, GlobalMaxPooling2D
from arignote.layers.max_reduction import _Amax, amax, uses_light_backward


@pytest.mark.parametrize(
    "shape, dims, dtype, grad, expected",
    [
        ((32, 398, 250), (1,), torch.float32, True, True),
        ((4, 5, 6, 7), (1, 2), torch.float64, True, True),
        ((2, 32767, 3), (1,), torch.float32, True, True),
        ((2, 32768, 3), (1,), torch.float32, True, False),  # the int16 count would overflow
        ((2, 200, 200, 3), (1, 2), torch.float32, True, False),
        ((32, 398, 250), (1,), torch.float32, False, False),  # no gradient: torch's amax
        ((32, 398, 250), (1,), torch.int64, True, False),
        ((32, 0, 250), (1,), torch.float32, True, False),
        ((3, 4), (), torch.float32, True, False),
    ],
)
def test_which_calls_take_the_light_backward(shape, dims, dtype, grad, expected):
    assert uses_light_backward(shape, dims, dtype, grad) is expected


def _grads(x: torch.Tensor, dims: tuple, g: torch.Tensor, ours: bool) -> tuple:
    leaf = x.clone().requires_grad_()
    y = amax(leaf, dims) if ours else leaf.amax(dim=dims)
    y.backward(g)
    return y.detach(), leaf.grad


@pytest.mark.parametrize("dims", [(1,), (1, 2), (2,), (-1,)])
def test_outputs_and_gradients_are_torchs_bit_for_bit(dims):
    torch.manual_seed(0)
    x = torch.randn(6, 9, 7, 5)
    x[0, 2:5, 0, :] = 3.0  # ties: the gradient is split between them
    x[1] = torch.relu(x[1])  # zeros tie where a column is all negative
    x[2, :, :, 1] = 0.0
    g = torch.randn(x.amax(dim=dims).shape)
    y_ref, g_ref = _grads(x, dims, g, ours=False)
    y_new, g_new = _grads(x, dims, g, ours=True)
    assert torch.equal(y_new, y_ref)
    assert torch.equal(g_new, g_ref)
    assert (g_new != 0).sum() > (g != 0).sum()  # the ties did spread the gradient


def test_the_light_backward_runs_and_splits_ties():
    x = torch.tensor([[[1.0], [3.0], [3.0], [3.0]]], requires_grad=True)
    y = amax(x, (1,))
    assert y.grad_fn is not None and type(y.grad_fn).__name__ == "_AmaxBackward"
    y.backward(torch.tensor([[1.5]]))
    assert x.grad.flatten().tolist() == [0.0, 0.5, 0.5, 0.5]


def test_no_gradient_needed_runs_torchs_amax():
    x = torch.randn(2, 5, 3)
    assert amax(x, (1,)).grad_fn is None
    with torch.no_grad():
        assert amax(x.requires_grad_(), (1,)).grad_fn is None


def test_double_backward_matches_torch():
    torch.manual_seed(1)
    x = torch.randn(3, 8, 4, requires_grad=True)
    w = torch.randn(3, 4, requires_grad=True)
    outs = []
    for fn in (lambda t: t.amax(dim=(1,)), lambda t: _Amax.apply(t, (1,))):
        (gx,) = torch.autograd.grad((fn(x) * w).sum(), x, create_graph=True)
        (gw,) = torch.autograd.grad((gx * gx).sum(), w)
        outs.append(gw)
    assert torch.equal(outs[0], outs[1])


@pytest.mark.parametrize(
    "layer, shape",
    [
        (GlobalMaxPooling1D(), (4, 30, 6)),
        (GlobalMaxPooling2D(), (3, 5, 6, 4)),
        (GlobalMaxPooling2D(data_format="channels_first"), (3, 4, 5, 6)),
    ],
)
def test_global_max_pooling_layers_keep_torchs_gradients(layer, shape):
    torch.manual_seed(2)
    x = torch.relu(torch.randn(shape))  # relu: many tied zeros
    dims = (1,) if len(shape) == 3 else ((1, 2) if layer.data_format == "channels_last" else (2, 3))
    g = torch.randn(x.amax(dim=dims).shape)
    y_ref, g_ref = _grads(x, dims, g, ours=False)
    leaf = x.clone().requires_grad_()
    y = layer(leaf)
    y.backward(g)
    assert torch.equal(y.detach(), y_ref)
    assert torch.equal(leaf.grad, g_ref)
