"""Accuracy metrics counted as hits, from probabilities or from a classifier head's logits
(metrics/hits.py, predictions.py): the values are Keras's definitions (the mean of the 0/1 values of
Keras's accuracy functions on the probabilities), in fewer operators; metrics that need the
probabilities get them, computed once."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from arignote import activations, metrics
from arignote.bench.opcount import OpRecorder
from arignote.losses.weighting import Weighted
from arignote.metrics.confusion import Precision
from arignote.metrics.predictions import Logits

GEN = torch.Generator().manual_seed(0)
Z = torch.randn(12, 5, generator=GEN) * 2
Z[3] = torch.tensor([1.0, 1.0, 0.0, -1.0, 1.0])  # a three-way tie: the first index, both ways
LABELS = torch.randint(0, 5, (12,), generator=GEN)
ONE_HOT = torch.nn.functional.one_hot(LABELS, 5).float()
Z1 = torch.tensor([[2.0], [-0.5], [0.3], [-3.0], [0.0], [1.5]])
Y1 = torch.tensor([[1.0], [1.0], [0.0], [0.0], [1.0], [1.0]])


def _keras_mean(fn, y, probs, **kwargs):
    """Keras's definition: the mean over samples of the accuracy function's per-sample values."""
    return float(fn(y, probs, **kwargs).double().mean())


@pytest.mark.parametrize("make, fn, y, z, kind, kwargs", [
    (lambda: metrics.get("accuracy", "categorical_crossentropy"), metrics.categorical_accuracy, ONE_HOT, Z,
     "softmax", {}),
    (lambda: metrics.get("acc", "sparse_categorical_crossentropy"), metrics.sparse_categorical_accuracy,
     LABELS, Z, "softmax", {}),
    (lambda: metrics.get("accuracy", "binary_crossentropy"), metrics.binary_accuracy, Y1, Z1, "sigmoid", {}),
    (lambda: metrics.TopKCategoricalAccuracy(k=2), metrics.top_k_categorical_accuracy, ONE_HOT, Z, "softmax",
     {"k": 2}),
    (lambda: metrics.SparseTopKCategoricalAccuracy(k=3), metrics.sparse_top_k_categorical_accuracy, LABELS, Z,
     "softmax", {"k": 3}),
    (lambda: metrics.CategoricalAccuracy(), metrics.categorical_accuracy, ONE_HOT, Z, "softmax", {}),
    (lambda: metrics.BinaryAccuracy(), metrics.binary_accuracy, Y1, Z1, "sigmoid", {}),
    (lambda: metrics.BinaryAccuracy(threshold=0.7), metrics.binary_accuracy, Y1, Z1, "sigmoid",
     {"threshold": 0.7}),
])
def test_from_the_logits_and_from_probabilities_the_values_are_keras_s(make, fn, y, z, kind, kwargs):
    act = torch.softmax if kind == "softmax" else torch.sigmoid
    probs = act(z, dim=-1) if kind == "softmax" else act(z)
    expected = _keras_mean(fn, y, probs, **kwargs)
    from_logits, from_probs = make(), make()
    assert from_logits.hits is not None
    for part in (slice(0, 4), slice(4, None)):  # two batches of different sizes
        from_logits.update(y[part], Logits(z[part], getattr(activations, kind), kind))
        from_probs.update(y[part], probs[part])
    assert from_logits.result() == from_probs.result() == pytest.approx(expected, abs=1e-12)


def test_the_categorical_accuracy_is_five_operators_and_no_softmax():
    m = metrics.get("accuracy", "categorical_crossentropy")
    m.update(ONE_HOT, Logits(Z, activations.softmax, "softmax"))  # the accumulator exists
    out = Logits(Z, activations.softmax, "softmax")
    with OpRecorder() as rec:
        m.update(ONE_HOT, out)
    assert [op.name for op in rec.ops] == ["aten.argmax.default", "aten.argmax.default", "aten.eq.Tensor",
                                           "aten.sum.default", "aten.add_.Tensor"]
    assert out._probabilities is None  # never computed


def test_multilabel_binary_accuracy_averages_over_the_outputs_first():
    z = torch.tensor([[1.0, -1.0, 2.0], [-2.0, 0.5, 0.1]])
    y = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    m = metrics.get("accuracy", "binary_crossentropy")
    m.update(y, Logits(z, activations.sigmoid, "sigmoid"))
    assert m.result() == pytest.approx((2 / 3 + 2 / 3) / 2)


def test_other_metrics_get_the_probabilities_once():
    out = Logits(Z, activations.softmax, "softmax")
    probs = torch.softmax(Z, dim=-1)
    mse, cce, prec = metrics.get("mse"), metrics.get("categorical_crossentropy"), Precision()
    with OpRecorder() as rec:
        for m in (mse, cce, prec):
            m.update(ONE_HOT, out)
    assert Counter(op.name for op in rec.ops)["aten._softmax.default"] == 1
    ref_mse, ref_cce, ref_prec = metrics.get("mse"), metrics.get("categorical_crossentropy"), Precision()
    for m, ref in ((mse, ref_mse), (cce, ref_cce), (prec, ref_prec)):
        ref.update(ONE_HOT, probs)
        assert m.result() == pytest.approx(ref.result(), rel=1e-12)


def test_a_user_metric_gets_the_probabilities():
    seen = []

    class Seen(metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(name="seen", **kwargs)
            self.total = self.add_weight("total", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            seen.append(y_pred)
            self.total.assign_add(y_pred.sum())

        def result(self):
            return self.total

    Seen().update(ONE_HOT, Logits(Z, activations.softmax, "softmax"))
    assert isinstance(seen[0], torch.Tensor) and torch.allclose(seen[0], torch.softmax(Z, dim=-1))


def test_weighted_and_masked_batches_keep_keras_s_weighted_mean():
    w = torch.linspace(0.0, 1.0, 12)
    probs = torch.softmax(Z, dim=-1)
    values = metrics.categorical_accuracy(ONE_HOT, probs)
    weighted = metrics.get("accuracy", "categorical_crossentropy")
    weighted.weighted = True
    weighted.update(Weighted((ONE_HOT, w)), probs)
    assert weighted.result() == pytest.approx(float((values * w).sum() / w.sum()))
    mask = torch.tensor([True] * 6 + [False] * 6)
    masked = metrics.get("accuracy", "categorical_crossentropy")
    masked.update(Weighted((ONE_HOT, None, mask)), probs)
    assert masked.result() == pytest.approx(float(values[:6].mean()))
    unweighted = metrics.get("accuracy", "categorical_crossentropy")  # not weighted: the weights are ignored
    unweighted.update(Weighted((ONE_HOT, w)), probs)
    assert unweighted.result() == pytest.approx(float(values.mean()))


def test_counts_are_exact_where_float32_means_were_not():
    """13 hits of 30: the float32 mean times 30 is not 13; the count is."""
    y = torch.zeros(30, 2)
    y[:, 1] = 1
    p = torch.zeros(30, 2)
    p[:13, 1] = 1
    m = metrics.get("accuracy", "categorical_crossentropy")
    m.update(y, p)
    assert np.asarray(m.state()).tolist() == [13.0, 30.0]
