"""How output masks reach the loss and the metrics (issue 13 item 2): the mechanism, beside the values
against Keras 2.3.1 in tests/test_masks_keras2.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import config, metrics
from arignote.layers import LSTM, Dense, Embedding, Input, Masking, TimeDistributed
from arignote.losses.weighting import Weighted, combine, with_masks
from arignote.models import Model, Sequential

config.configure(print_active_device=False)

RNG = np.random.default_rng(5)


def _tokens(n=10, steps=4):
    x = RNG.integers(1, 6, (n, steps))
    for i in range(n):
        x[i, RNG.integers(1, steps + 1):] = 0
    return x


def _seq_model(return_sequences=True):
    torch.manual_seed(0)
    layers = [Embedding(6, 3, mask_zero=True, input_length=4), LSTM(3, return_sequences=return_sequences)]
    layers.append(TimeDistributed(Dense(2)) if return_sequences else Dense(2))
    m = Sequential(layers)
    m.compile("sgd", "mse", metrics=["mae"])
    return m


def test_the_output_mask_of_each_forward_travels_with_the_targets():
    m = _seq_model()
    assert m.module.out_masked == [True]
    x, y = _tokens(), RNG.normal(size=(10, 4, 2)).astype("float32")
    m.evaluate(x, y, verbose=0)
    mask = m.module.output_masks[0]
    assert mask.shape == (10, 4) and torch.equal(mask.cpu(), torch.as_tensor(x != 0))
    attach = m._mask_targets()
    targets = attach(torch.as_tensor(y))
    assert type(targets) is Weighted and targets.w is None and targets.mask is mask


def test_no_mask_at_the_output_means_targets_as_they_are():
    m = _seq_model(return_sequences=False)  # the LSTM consumes the mask
    assert m.module.out_masked == [False] and m._mask_targets() is None
    plain = Sequential([Dense(2, input_shape=(3,))])
    plain.compile("sgd", "mse")
    plain._ensure_built(None)
    assert plain._mask_targets() is None
    inp = Input(shape=(4,))
    graph = Model(inp, Dense(1)(inp))
    assert graph.module.out_masked == [False] and graph._mask_targets() is None


def test_masked_loss_and_metric_values_by_hand():
    m = _seq_model()
    x, y = _tokens(), RNG.normal(size=(10, 4, 2)).astype("float32")
    loss, mae = m.evaluate(x, y, batch_size=10, verbose=0)
    p = m.predict(x)
    mask = x != 0
    se, ae = ((p - y) ** 2).mean(-1), np.abs(p - y).mean(-1)
    assert loss == pytest.approx((se * mask).sum() / se.size, rel=1e-5)  # masked steps count below
    assert mae == pytest.approx((ae * mask).sum() / mask.sum(), rel=1e-5)  # a mean over unmasked steps


def test_micro_batches_keep_the_masked_loss_exact():
    x, y = _tokens(12), RNG.normal(size=(12, 4, 2)).astype("float32")
    w = RNG.uniform(0, 2, 12).astype("float32")
    got = []
    for accumulate in (1, 3):
        m = _seq_model()
        h = m.fit(x, y, sample_weight=w, batch_size=6, epochs=2, shuffle=False, verbose=0,
                  accumulate=accumulate)
        got.append((h.history["loss"], m.get_weights()))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-5)
    for a, b in zip(got[0][1], got[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_combine_and_metric_update_follow_keras_call_metric_function():
    mask = torch.tensor([[True, True, False], [True, False, False]])
    assert combine(None, None) is None
    assert combine(None, mask).dtype == torch.float32
    assert combine(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), mask).tolist() == [[1, 2, 0], [4, 0, 0]]
    y = torch.zeros(2, 3, 2)
    p = torch.tensor([[[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]])
    labels = torch.nn.functional.one_hot(torch.tensor([[1, 1, 1], [0, 0, 0]]), 2).float()
    plain = metrics.FunctionMean(metrics.categorical_accuracy, name="acc")
    plain.update(with_masks(labels, mask), p)
    assert plain.result() == pytest.approx(1 / 3)  # 3 unmasked steps, one right
    weighted = metrics.FunctionMean(metrics.categorical_accuracy, name="acc", weighted=True)
    weighted.update(Weighted((labels, torch.tensor([3.0, 1.0]), mask)), p)
    assert weighted.result() == pytest.approx(3 / 7)  # weights 3, 3, 1 on the unmasked steps
    assert with_masks(None, mask) is None and with_masks(y, None) is y


def test_masking_on_flat_input_masks_whole_samples():
    torch.manual_seed(0)
    m = Sequential([Masking(0.0, input_shape=(3,)), Dense(2)])
    m.compile("sgd", "mse")
    x = RNG.normal(size=(6, 3)).astype("float32")
    x[[1, 4]] = 0.0
    y = RNG.normal(size=(6, 2)).astype("float32")
    p = m.predict(x)
    keep = np.any(x != 0, axis=-1)
    assert m.evaluate(x, y, verbose=0) == pytest.approx((((p - y) ** 2).mean(-1) * keep).sum() / 6, rel=1e-5)


def test_masks_into_and_out_of_models_used_as_layers():
    enc = Sequential([Embedding(6, 3, mask_zero=True, input_length=4), LSTM(3, return_sequences=True)])
    inp = Input(shape=(4,))
    h = enc(inp)
    assert h._keras_mask is not None and h._keras_mask.shape == (None, 4)  # Keras 2 Network.compute_mask
    inner_in = Input(shape=(4, 3))
    inner = Model(inner_in, LSTM(2, return_sequences=True)(inner_in))
    out = TimeDistributed(Dense(1))(inner(h))
    assert out._keras_mask is not None
    m = Model(inp, out)
    x = _tokens()
    p = m.predict(x)
    assert torch.equal(m.module.output_masks[0].cpu(), torch.as_tensor(x != 0))
    # the mask reached the inner LSTM: a masked step repeats the last unmasked output (Keras 2 RNNs)
    states = Model(inp, inner(h)).predict(x)
    row = int(np.argmax((x != 0).sum(1) < 4))
    last = int((x[row] != 0).sum()) - 1
    tail = states[row, last + 1:]
    np.testing.assert_allclose(tail, np.broadcast_to(states[row, last], tail.shape), rtol=1e-6)
    assert p.shape == (10, 4, 1)
