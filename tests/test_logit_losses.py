"""losses/logits.py: Keras's clipped cross-entropies from the logits in few operators, against the
same formulas written with autograd (the previous implementation), Keras's losses on the
probabilities, and hand-computed values; the operators of forward + backward are counted."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from arignote import backend, losses
from arignote.bench.opcount import OpRecorder
from arignote.losses import logits as logit_losses

LO, HI = math.log(1e-7), math.log1p(-1e-7)


def _autograd_categorical(y, logits):
    """The categorical loss as it was written before (autograd's clamp and reductions)."""
    log_p = torch.log_softmax(logits, dim=-1).clamp(LO, HI)
    return -(y.reshape(logits.shape) * log_p).sum(dim=-1).mean()


def _logits(shape, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(shape, generator=gen, dtype=dtype) * 3
    z[0, ...] = 0  # a row far from the clip
    flat = z.reshape(-1, shape[-1])
    flat[1, :3] = torch.tensor([40.0, -40.0, 0.0], dtype=dtype)  # p = 1 and p = 0: both bounds clip
    return z.requires_grad_(True)


def _targets(shape, seed=1, soft=False):
    gen = torch.Generator().manual_seed(seed)
    if soft:
        return torch.softmax(torch.randn(shape, generator=gen), dim=-1)
    labels = torch.randint(0, shape[-1], shape[:-1], generator=gen)
    return F.one_hot(labels, shape[-1]).float()


@pytest.mark.parametrize("shape", [(6, 4), (3, 5, 4)])  # samples x classes; samples x steps x classes
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("soft", [False, True])
def test_categorical_is_the_autograd_formula_in_values_and_gradients(shape, dtype, soft):
    z_ours, z_ref = _logits(shape, dtype), _logits(shape, dtype)
    y = _targets(shape, soft=soft).to(dtype)
    ours, ref = logit_losses.categorical(y, z_ours), _autograd_categorical(y, z_ref)
    (ours * 3.5).backward()  # an incoming gradient other than 1 (a loss weight, a loss scale)
    (ref * 3.5).backward()
    tol = 1e-6 if dtype == torch.float32 else 1e-13
    assert ours.dtype == ref.dtype and ours.shape == ()
    assert ours.item() == pytest.approx(ref.item(), rel=tol)
    torch.testing.assert_close(z_ours.grad, z_ref.grad, rtol=tol, atol=tol)
    flat = z_ours.grad.reshape(-1, shape[-1])
    if not soft:
        y_flat = y.reshape(-1, shape[-1])
        hit = y_flat[1].argmax()
        # where the clip bites (p of the true class is 1 or under 1e-7) the true class gets nothing
        assert flat[1, hit] == 0 or hit == 2


def test_categorical_agrees_with_keras_s_loss_on_the_probabilities_and_by_hand():
    logits = torch.tensor([[30.0, 0.0, -30.0], [0.5, 0.2, -0.1], [-40.0, 40.0, 0.0]], requires_grad=True)
    y = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    ours = logit_losses.categorical(y, logits)
    (g_ours,) = torch.autograd.grad(ours, logits)
    keras = losses.categorical_crossentropy(y, torch.softmax(logits, dim=-1)).mean()
    (g_keras,) = torch.autograd.grad(keras, logits)
    assert ours.item() == pytest.approx(keras.item(), rel=1e-6)
    by_hand = (2 * -math.log(1e-7) - math.log(torch.softmax(torch.tensor([0.5, 0.2, -0.1]), 0)[0].item())) / 3
    assert ours.item() == pytest.approx(by_hand, rel=1e-5)
    np.testing.assert_allclose(g_ours.numpy(), g_keras.numpy(), atol=1e-6)
    assert torch.all(g_ours[0] == 0) and torch.all(g_ours[2] == 0)  # clipped rows: no gradient


def test_categorical_follows_backend_epsilon():
    logits = torch.tensor([[3.0, 0.0, -3.0]], requires_grad=True)
    y = torch.tensor([[0.0, 0.0, 1.0]])
    old = backend.epsilon()
    try:
        backend.set_epsilon(0.01)  # p(class 2) = 0.0024 < 0.01: clipped
        loss = logit_losses.categorical(y, logits)
        loss.backward()
    finally:
        backend.set_epsilon(old)
    assert loss.item() == pytest.approx(-math.log(0.01), rel=1e-6)
    assert torch.all(logits.grad == 0)


def test_clip_zeroes_the_gradient_exactly_where_the_clamp_changes_the_value():
    """On a bound (a float tie) the gradient passes, as for Keras's clip and torch's clamp; one float
    step outside, it is zero."""
    for dtype in (torch.float32, torch.float64):
        bounds = torch.tensor([LO, HI], dtype=dtype)
        out = torch.nextafter(bounds, torch.tensor([-math.inf, math.inf], dtype=dtype))
        inside = torch.nextafter(bounds, torch.tensor([math.inf, -math.inf], dtype=dtype))
        values = torch.stack([bounds[0], bounds[1], out[0], out[1], inside[0], inside[1],
                              torch.tensor(-1.0, dtype=dtype)])
        x_ours, x_ref = values.clone().requires_grad_(True), values.clone().requires_grad_(True)
        w = torch.arange(1.0, 8.0, dtype=dtype)
        (logit_losses.clip(x_ours) * w).sum().backward()
        (x_ref.clamp(LO, HI) * w).sum().backward()
        assert torch.equal(logit_losses.clip(values), values.clamp(LO, HI))
        assert x_ours.grad.tolist() == x_ref.grad.tolist() == [1.0, 2.0, 0.0, 0.0, 5.0, 6.0, 7.0]


@pytest.mark.parametrize("loss, activation, make_y", [
    ("sparse_categorical_crossentropy", "softmax", lambda n: torch.tensor([0, 2, 1, 1, 0, 2])[:n]),
    ("binary_crossentropy", "sigmoid",
     lambda n: torch.tensor([[1.0], [0.0], [1.0], [0.0], [1.0], [1.0]], dtype=torch.float64)[:n]),
])
def test_sparse_and_binary_from_logits_are_keras_s_losses_on_the_probabilities(loss, activation, make_y):
    width = 3 if activation == "softmax" else 1
    # float64: in float32 1 - 1e-7 rounds to 1 - 1.19e-7, which moves Keras's clip on probabilities
    z = torch.tensor([[0.3, -1.0, 2.0], [20.0, -20.0, 0.0], [-0.5, 0.5, 0.1],
                      [1.0, 1.0, 1.0], [-30.0, 30.0, 0.0], [0.0, 0.2, 17.0]], dtype=torch.float64)[:, :width]
    z_ours, z_keras = z.clone().requires_grad_(True), z.clone().requires_grad_(True)
    y = make_y(6)
    ours = losses.from_logits(loss, activation)(y, z_ours)
    probs = torch.softmax(z_keras, -1) if activation == "softmax" else torch.sigmoid(z_keras)
    keras = losses.get(loss)(y, probs).mean()
    ours.backward()
    keras.backward()
    assert ours.item() == pytest.approx(keras.item(), rel=1e-8)
    torch.testing.assert_close(z_ours.grad, z_keras.grad, rtol=1e-7, atol=1e-9)
    assert torch.all(z_ours.grad[4] == 0)  # logits -30 / +30: clipped, no gradient (the sample's
    # true class is improbable beyond eps, or certain beyond 1 - eps)


def _ops(fn) -> list[str]:
    z = _logits((8, 10), torch.float32).detach().requires_grad_(True)
    y = _targets((8, 10))
    with OpRecorder() as rec:
        fn(y, z).backward()
    return [op.name for op in rec.ops]


def test_the_categorical_loss_and_its_backward_are_eight_operators():
    assert _ops(logit_losses.categorical) == [
        "aten._log_softmax.default", "aten.mul.Tensor", "aten.clamp.default", "aten.dot.default",
        "aten.ones_like.default",  # the backward's seed
        "aten.mul.Tensor", "aten.hardtanh_backward.default", "aten._log_softmax_backward_data.default"]
    assert len(_ops(_autograd_categorical)) == 16


def test_the_clip_s_backward_is_one_operator():
    ours = _ops(lambda y, z: logit_losses.clip(torch.log_softmax(z, -1)).sum())
    ref = _ops(lambda y, z: torch.log_softmax(z, -1).clamp(LO, HI).sum())
    assert len(ref) - len(ours) == 4
    assert "aten.hardtanh_backward.default" in ours and "aten.logical_and_.default" not in ours


def _autograd_binary(y, logits):
    """The binary loss as it was written before (autograd's clamps and reductions)."""
    y = y.reshape(logits.shape)
    log_p = F.logsigmoid(logits).clamp(LO, HI)
    log_q = F.logsigmoid(-logits).clamp(LO, HI)
    return -(y * log_p + (1.0 - y) * log_q).mean()


@pytest.mark.parametrize("shape", [(8, 1), (6, 3)])  # one output; several (multi-label)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_binary_is_the_autograd_formula_in_values_and_gradients(shape, dtype):
    gen = torch.Generator().manual_seed(3)
    z = torch.randn(shape, generator=gen, dtype=dtype) * 4
    z[0, 0], z[1, 0] = 25.0, -25.0  # sigmoid beyond 1 - eps and under eps: clipped
    y = (torch.rand(shape, generator=gen) > 0.5).to(dtype)
    y[0, 0], y[1, 0] = 1.0, 1.0
    z_ours, z_ref = z.clone().requires_grad_(True), z.clone().requires_grad_(True)
    ours, ref = logit_losses.binary(y, z_ours), _autograd_binary(y, z_ref)
    (ours * 0.5).backward()
    (ref * 0.5).backward()
    tol = 1e-6 if dtype == torch.float32 else 1e-13
    assert ours.item() == pytest.approx(ref.item(), rel=tol)
    torch.testing.assert_close(z_ours.grad, z_ref.grad, rtol=tol, atol=tol)
    assert z_ours.grad[0, 0] == 0 and z_ours.grad[1, 0] == 0


def test_the_binary_loss_and_its_backward_are_eighteen_operators():
    z = torch.randn(8, 1, requires_grad=True)
    y = (torch.rand(8, 1) > 0.5).float()
    logit_losses.binary(y, z).backward()  # the bounds of the clip's backward are cached
    z.grad = None  # (a second backward into z.grad would add an add_)
    with OpRecorder() as rec:
        logit_losses.binary(y, z).backward()
    assert len(rec.ops) == 18, [op.name for op in rec.ops]
    z.grad = None
    with OpRecorder() as rec:
        _autograd_binary(y, z).backward()
    assert len(rec.ops) == 30
