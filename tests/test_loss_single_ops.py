"""Built-in losses whose unweighted batch mean is one torch operator (losses.py: mse -> mse_loss,
huber_loss -> huber_loss): the values and gradients of Keras's formulas, in 1 + 1 operators; sample
weights, masks and Loss objects with options keep Keras's per-sample route."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from arignote import losses
from arignote.bench import opcount
from arignote.bench.opcount import OpRecorder
from arignote.layers import Dense
from arignote.losses.weighting import Weighted
from arignote.models import Sequential

GEN = torch.Generator().manual_seed(0)
Y = torch.randn(6, 4, generator=GEN)
P = torch.randn(6, 4, generator=GEN) * 2  # errors on both sides of huber's delta


def _keras_mse(y, p):
    return ((p - y) ** 2).mean(dim=-1).mean()


def _keras_huber(y, p):
    e = (p - y).abs()
    q = e.clamp_max(1.0)
    return (0.5 * q**2 + (e - q)).mean()


@pytest.mark.parametrize("name, ref, op", [
    ("mse", _keras_mse, "mse_loss"),
    ("mean_squared_error", _keras_mse, "mse_loss"),
    ("huber_loss", _keras_huber, "huber_loss"),
])
@pytest.mark.parametrize("shape", [(6, 4), (3, 2, 4)])
def test_one_operator_each_way_with_keras_s_values_and_gradients(name, ref, op, shape):
    y, p = Y.reshape(shape), P.reshape(shape)
    p_ours, p_ref = p.clone().requires_grad_(True), p.clone().requires_grad_(True)
    fn = losses.compiled(name)
    with OpRecorder() as rec:
        ours = fn(y, p_ours)
        ours.backward()
    expected = ref(y, p_ref)
    expected.backward()
    assert ours.item() == pytest.approx(expected.item(), rel=1e-6)
    torch.testing.assert_close(p_ours.grad, p_ref.grad, rtol=1e-6, atol=1e-7)
    assert [o.name for o in rec.ops] == [f"aten.{op}.default", "aten.ones_like.default",
                                         f"aten.{op}_backward.default"]


def test_integer_targets_and_column_targets():
    p = torch.tensor([[0.5], [2.0], [-1.0]])
    assert losses.compiled("mse")(torch.tensor([1, 2, 0]), p).item() == pytest.approx((0.25 + 0 + 1) / 3)


def test_weights_masks_and_loss_objects_with_options_keep_the_per_sample_route():
    w = torch.tensor([1.0, 0.0, 2.0, 1.0, 0.0, 1.0])
    fn = losses.compiled("mse")
    with OpRecorder() as rec:
        weighted = fn(Weighted((Y, w)), P)
    per_sample = ((P - Y) ** 2).mean(dim=-1)
    assert weighted.item() == pytest.approx(float((per_sample * w).sum() / 6), rel=1e-6)
    assert "aten.mse_loss.default" not in [o.name for o in rec.ops]
    huber = losses.compiled(losses.Huber(delta=0.5))
    e = (P - Y).abs()
    q = e.clamp_max(0.5)
    assert huber(Y, P).item() == pytest.approx(float((0.5 * q**2 + 0.5 * (e - q)).mean()), rel=1e-6)


def test_a_plain_head_fit_step_runs_mse_loss():
    torch.manual_seed(0)
    m = Sequential([Dense(8, activation="relu", input_dim=5), Dense(3)])
    m.compile("sgd", "mse")
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 5), dtype=np.float32), rng.random((64, 3), dtype=np.float32)
    ops = Counter(op.name for op in opcount.count_fit_step(m, x, y, batch_size=16).ops)
    assert ops["aten.mse_loss.default"] == 1 and ops["aten.mse_loss_backward.default"] == 1
    assert ops["aten.pow.Tensor_Scalar"] == 0 and ops["aten.sub.Tensor"] == 0
