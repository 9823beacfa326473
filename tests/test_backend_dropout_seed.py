"""``K.dropout(x, level, noise_shape, seed)``: a seed makes the mask reproducible (Keras 2.3.1 seeds a
random stream with it, Theano's ``RandomStreams(seed)`` and TensorFlow's op seed), drawn from a
``torch.Generator`` on ``x``'s device, and torch's global RNG is left as it was."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote.layers import Input, Lambda
from arignote.models import Model


def _reference(shape, level, seed, device="cpu"):
    """The mask drawn in plain torch: uniform numbers from a generator seeded with ``seed``, kept where
    they are >= level, scaled by 1 / (1 - level)."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return (torch.rand(shape, generator=g, device=device) >= level).float() / (1.0 - level)


def test_same_seed_same_mask_and_its_values():
    x = torch.ones(16, 32)
    a = K.dropout(x, 0.3, seed=42)
    b = K.dropout(x, 0.3, seed=42)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.testing.assert_close(a, _reference((16, 32), 0.3, 42), rtol=0, atol=0)
    assert not torch.equal(a, K.dropout(x, 0.3, seed=43))
    kept = (a != 0).float().mean().item()
    assert 0.55 < kept < 0.85 and a.unique().tolist() == [0.0, pytest.approx(1 / 0.7)]


def test_seed_leaves_the_global_rng_alone():
    x = torch.ones(8, 8)
    torch.manual_seed(5)
    before = torch.get_rng_state()
    K.dropout(x, 0.5, seed=1)
    K.dropout(x, 0.5, noise_shape=(8, 1), seed=1)
    assert torch.equal(torch.get_rng_state(), before)
    K.dropout(x, 0.5)  # without a seed, dropout draws from the global RNG
    assert not torch.equal(torch.get_rng_state(), before)


def test_seeded_noise_shape_broadcasts_one_decision_per_row():
    x = torch.arange(1.0, 25.0).reshape(4, 6)
    y = K.dropout(x, 0.5, noise_shape=(4, 1), seed=7)
    mask = _reference((4, 1), 0.5, 7)
    torch.testing.assert_close(y, x * mask, rtol=0, atol=0)
    torch.testing.assert_close(K.dropout(x, 0.5, noise_shape=(None, 1), seed=7), y, rtol=0, atol=0)


def test_seeded_dropout_in_a_lambda_predicts_the_same_twice():
    inp = Input((20,))
    model = Model(inp, Lambda(lambda t: K.dropout(t, 0.5, seed=3))(inp))
    x = np.ones((4, 20), "float32")
    first = model.predict(x)
    np.testing.assert_array_equal(first, model.predict(x))
    np.testing.assert_array_equal(first, _reference((4, 20), 0.5, 3).numpy())


@pytest.mark.parametrize("level", [-0.1, 1.0, 1.5])
def test_level_outside_zero_one_is_refused(level):
    with pytest.raises(ValueError, match=r"Dropout level must be in interval \[0, 1\["):
        K.dropout(torch.ones(2, 2), level, seed=1)


@pytest.mark.gpu
def test_seeded_mask_is_drawn_on_the_tensor_device():
    x = torch.ones(8, 8, device="cuda")
    y = K.dropout(x, 0.5, seed=9)
    assert y.device == x.device
    torch.testing.assert_close(y, _reference((8, 8), 0.5, 9, "cuda"), rtol=0, atol=0)
