"""Conv3D with few filters as matrix products (layers/convolutional/few_filters.py): its outputs and
gradients against torch's convolution, the float64 gradcheck of its backward, when it runs, and that
Conv3D takes it."""

import pytest
import torch
import torch.nn.functional as F

from arignote.layers import Conv3D
from arignote.layers.convolutional import few_filters

CASES = [  # (Keras-layout input shape, filters, kernel, padding)
    ((2, 5, 6, 7, 3), 1, (3, 3, 3), (1, 1, 1)),
    ((2, 5, 6, 7, 3), 2, (3, 1, 3), (1, 0, 0)),
    ((2, 5, 6, 7, 4), 1, (3, 3, 3), (0, 0, 0)),
    ((1, 4, 4, 4, 2), 1, (1, 3, 3), (0, 1, 1)),
    ((1, 4, 5, 4, 2), 1, (3, 3, 3), (1, 0, 1)),
]


def _inputs(shape, filters, kernel, dtype, bias=True):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=g, dtype=dtype).permute(0, 4, 1, 2, 3).requires_grad_()
    w = torch.randn(filters, shape[-1], *kernel, generator=g, dtype=dtype, requires_grad=True)
    b = torch.randn(filters, generator=g, dtype=dtype, requires_grad=True) if bias else None
    return x, w, b


@pytest.mark.parametrize("shape, filters, kernel, padding", CASES)
def test_outputs_and_gradients_match_torch(shape, filters, kernel, padding):
    x, w, b = _inputs(shape, filters, kernel, torch.float32)
    assert few_filters.eligible(x, w, (1, 1, 1), padding, (1, 1, 1))
    y = few_filters.conv3d(x, w, b, padding)
    ref = F.conv3d(x, w, b, 1, padding)
    assert y.shape == ref.shape
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)
    dy = torch.randn_like(ref)
    got = torch.autograd.grad(y, (x, w, b), dy)
    want = torch.autograd.grad(ref, (x, w, b), dy)
    for g, r in zip(got, want):
        torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape, filters, kernel, padding", [
    ((1, 3, 4, 3, 2), 1, (3, 3, 3), (1, 1, 1)),
    ((1, 3, 4, 3, 2), 2, (3, 1, 3), (1, 0, 0)),
    ((1, 4, 3, 3, 2), 1, (3, 3, 3), (0, 0, 0)),
])
def test_gradcheck_float64(shape, filters, kernel, padding):
    x, w, b = _inputs(shape, filters, kernel, torch.float64)
    assert torch.autograd.gradcheck(lambda x, w, b: few_filters.conv3d(x, w, b, padding), (x, w, b))
    x, w, _ = _inputs(shape, filters, kernel, torch.float64, bias=False)
    assert torch.autograd.gradcheck(lambda x, w: few_filters.conv3d(x, w, None, padding), (x, w))


def test_eligible_refuses_what_it_does_not_compute():
    x, w, _ = _inputs((1, 4, 4, 4, 3), 1, (3, 3, 3), torch.float32)
    ok = ((1, 1, 1), (1, 1, 1), (1, 1, 1))
    assert few_filters.eligible(x, w, *ok)
    assert not few_filters.eligible(x, w, (2, 1, 1), (1, 1, 1), (1, 1, 1))  # strides
    assert not few_filters.eligible(x, w, (1, 1, 1), (1, 1, 1), (2, 1, 1))  # dilation
    assert not few_filters.eligible(x, w, (1, 1, 1), (2, 1, 1), (1, 1, 1))  # wider than half the kernel
    assert not few_filters.eligible(x.detach().contiguous(), w, *ok)  # NCDHW memory: oneDNN's own case
    many = torch.zeros(2, 3, 3, 3, 3)  # 2 filters x 27 taps > MAX_TAPS
    assert not few_filters.eligible(x, many, *ok)
    assert not few_filters.eligible(x.long(), w, *ok)


def test_conv3d_layer_takes_the_matrix_form_and_matches_torch(monkeypatch):
    calls = []
    real = few_filters.conv3d
    monkeypatch.setattr(few_filters, "conv3d", lambda *a: calls.append(1) or real(*a))
    layer = Conv3D(1, (3, 3, 3), padding="same", activation="sigmoid", data_format="channels_last")
    x = torch.randn(2, 5, 6, 7, 4, generator=torch.Generator().manual_seed(3))
    y = layer(x)
    assert calls == [1]
    ref = torch.sigmoid(F.conv3d(x.permute(0, 4, 1, 2, 3), layer.weight, layer.bias, 1, 1))
    ref = ref.permute(0, 2, 3, 4, 1)
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-6)
    Conv3D(1, (2, 2, 2), padding="same")(x)  # even kernel: asymmetric padding, torch's convolution
    Conv3D(8, (3, 3, 3), padding="same")(x)  # 8 filters: torch's convolution
    assert calls == [1]
