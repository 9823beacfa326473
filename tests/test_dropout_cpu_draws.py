"""Dropout on the CPU draws its mask as 64-bit words (layers/core/dropout.py: cpu_dropout): the same
distribution and scale as ``F.dropout``, reproducible under ``torch.manual_seed``, and one ``random_``
call instead of torch's slow per-element ``bernoulli_`` (issue 32: mlp's step)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from arignote.bench.opcount import OpRecorder
from arignote.layers import Dropout
from arignote.layers.core.dropout import cpu_dropout


@pytest.mark.parametrize("rate", [0.2, 0.5, 0.9])
def test_keep_rate_and_scale_are_f_dropout_s(rate):
    x = torch.full((400, 1000), 3.0)
    y = cpu_dropout(x, rate)
    kept = y != 0
    # 400k Bernoulli draws: the kept fraction within 5 standard deviations of 1 - rate
    sd = (rate * (1 - rate) / x.numel()) ** 0.5
    assert abs(float(kept.float().mean()) - (1 - rate)) < 5 * sd
    reference = F.dropout(x, rate, True)
    assert torch.equal(y[kept].unique(), reference[reference != 0].unique())  # the same float scale
    # no pattern in the words' two halves: even and odd elements kept alike
    flat = kept.reshape(-1).float()
    assert abs(float(flat[0::2].mean()) - float(flat[1::2].mean())) < 10 * sd


def test_odd_sizes_shapes_and_the_gradient():
    x = torch.randn(3, 5, 7, requires_grad=True)  # 105 elements: half a 64-bit word left over
    y = cpu_dropout(x, 0.3)
    assert y.shape == x.shape
    y.sum().backward()
    assert torch.equal(x.grad, (y.detach() != 0).float() / 0.7)


def test_a_seeded_run_repeats_itself_and_seeds_differ():
    layer = Dropout(0.4).train()
    x = torch.ones(64, 33)
    torch.manual_seed(5)
    a = layer(x, training=True)
    torch.manual_seed(5)
    b = layer(x, training=True)
    torch.manual_seed(6)
    c = layer(x, training=True)
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_the_layer_draws_with_one_random_call_not_bernoulli():
    layer = Dropout(0.2).train()
    with OpRecorder() as rec:
        layer(torch.ones(8, 16), training=True)
    names = [op.name for op in rec.ops]
    assert names.count("aten.random_.from") == 1, names
    assert not any("bernoulli" in n or "native_dropout" in n for n in names), names
    # a seeded layer and a rate of 1 keep their own paths (bernoulli_ on the layer's generator; zeros)
    with OpRecorder() as rec:
        Dropout(0.2, seed=1).train()(torch.ones(8, 16), training=True)
    assert any("bernoulli" in op.name for op in rec.ops)
    assert torch.equal(Dropout(1.0).train()(torch.ones(2, 3), training=True), torch.zeros(2, 3))


def test_other_dtypes_keep_their_dtype_and_scale():
    for dtype in (torch.float64, torch.bfloat16):
        x = torch.ones(64, 64, dtype=dtype)
        y = cpu_dropout(x, 0.3)
        assert y.dtype == dtype
        assert torch.equal(y[y != 0].unique(), F.dropout(x, 0.3, True).unique()[-1:])
