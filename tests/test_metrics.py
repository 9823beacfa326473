"""Metric semantics (Keras 2 accuracy choice, names), device accumulation and the state protocol."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import metrics


def test_acc_picks_categorical_sparse_binary_like_keras():
    assert metrics.get("acc", loss="categorical_crossentropy").fn is metrics.categorical_accuracy
    assert (
        metrics.get("acc", loss="sparse_categorical_crossentropy").fn is metrics.sparse_categorical_accuracy
    )
    assert metrics.get("accuracy", loss="binary_crossentropy").fn is metrics.binary_accuracy
    # width-1 output means binary whatever the loss (Keras 2 rule)
    assert metrics.get("acc", loss="mse", output_shape=(1,)).fn is metrics.binary_accuracy
    assert metrics.get("acc", loss="mse", output_shape=(3,)).fn is metrics.categorical_accuracy
    assert metrics.get("acc").fn is metrics.categorical_accuracy


def test_names_as_the_user_wrote_them():
    assert metrics.get("acc", loss="mse").name == "acc"
    assert metrics.get("accuracy", loss="mse").name == "accuracy"
    assert metrics.get("mae").name == "mae"
    assert metrics.get("binary_accuracy").name == "binary_accuracy"

    def my_metric(y_true, y_pred):
        return (y_true - y_pred).abs()

    assert metrics.get(my_metric).name == "my_metric"


def test_categorical_accuracy_values():
    y_true = torch.eye(3)[[0, 1, 2, 2]]
    y_pred = torch.tensor([[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.3, 0.4, 0.3]])
    m = metrics.get("acc", loss="categorical_crossentropy")
    m.update(y_true, y_pred)
    assert m.result() == pytest.approx(0.5)


def test_sparse_accuracy_with_flat_column_and_float_labels():
    y_pred = torch.tensor([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    for y_true in (torch.tensor([0, 1, 1]), torch.tensor([[0], [1], [1]]), torch.tensor([0.0, 1.0, 1.0])):
        m = metrics.get("accuracy", loss="sparse_categorical_crossentropy")
        m.update(y_true, y_pred)
        assert m.result() == pytest.approx(2 / 3)


def test_binary_accuracy_threshold_half_and_multilabel():
    y_true = torch.tensor([[1.0], [0.0], [1.0], [0.0]])
    y_pred = torch.tensor([[0.51], [0.5], [0.5], [0.49]])  # 0.5 rounds to 0 as in Keras
    m = metrics.get("acc", loss="binary_crossentropy")
    m.update(y_true, y_pred)
    assert m.result() == pytest.approx(0.75)
    ml = metrics.FunctionMean(metrics.binary_accuracy)
    ml.update(torch.tensor([[1.0, 0.0], [1.0, 1.0]]), torch.tensor([[0.9, 0.9], [0.9, 0.9]]))
    assert ml.result() == pytest.approx(0.75)  # per-sample means 0.5 and 1.0


def test_top_k():
    y_pred = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])
    vals = metrics.top_k_categorical_accuracy(torch.eye(3)[[1, 0]], y_pred, k=2)
    assert vals.tolist() == [1.0, 0.0]
    assert metrics.sparse_top_k_categorical_accuracy(torch.tensor([1, 0]), y_pred, k=2).tolist() == [1.0, 0.0]


def test_accumulates_over_batches_weighted_by_samples_and_resets():
    m = metrics.get("acc", loss="sparse_categorical_crossentropy")
    m.update(torch.tensor([0, 0, 0, 0]), torch.tensor([[1.0, 0.0]] * 4))  # 4/4
    m.update(torch.tensor([1, 1]), torch.tensor([[1.0, 0.0]] * 2))  # 0/2
    assert m.result() == pytest.approx(4 / 6)
    state = m.state()
    assert state.dim() == 1 and state.tolist() == [4.0, 6.0]
    m.reset()
    assert m.result() == 0.0
    m.update(torch.tensor([1]), torch.tensor([[0.0, 1.0]]))
    assert m.result() == 1.0


def test_state_can_be_summed_across_ranks():
    a, b = metrics.get("mae"), metrics.get("mae")
    a.update(torch.zeros(2, 1), torch.ones(2, 1))  # mae 1 over 2 samples
    b.update(torch.zeros(6, 1), torch.full((6, 1), 3.0))  # mae 3 over 6 samples
    reduced = a.state() + b.state()  # what an all-reduce(sum) gives
    assert metrics.FunctionMean.result_from(reduced) == pytest.approx((2 * 1 + 6 * 3) / 8)


def test_update_keeps_total_on_device_without_sync():
    m = metrics.get("acc", loss="categorical_crossentropy")
    y = torch.eye(2)[[0, 1]]
    m.update(y, y)
    assert isinstance(m._total, torch.Tensor) and m._total.dtype == torch.float64
    assert isinstance(m._count, float)


def test_mean_metric_weighs_values_without_keeping_their_graph():
    loss = metrics.Mean("loss")
    loss.update_state(torch.tensor(2.0, requires_grad=True) * 1, sample_weight=32)
    loss.update_state(torch.tensor(1.0), sample_weight=16)
    assert loss.name == "loss"
    assert float(loss.result()) == pytest.approx((2 * 32 + 16) / 48)
    assert not loss.total.requires_grad and loss.total.grad_fn is None
    assert [w.name for w in loss.weights] == ["total", "count"]


def test_loss_names_as_metrics_match_numpy():
    y = np.array([[1.0, 2.0], [3.0, 5.0]])
    p = np.array([[1.5, 2.0], [2.0, 5.0]])
    m = metrics.get("mse")
    m.update(torch.tensor(y), torch.tensor(p))
    assert m.result() == pytest.approx(np.mean((y - p) ** 2))


def test_unknown_metric_did_you_mean():
    with pytest.raises(ValueError, match="Did you mean 'accuracy'"):
        metrics.get("acuracy")
    with pytest.raises(ValueError, match="unknown metric 'f1score'"):
        metrics.get("f1score")
    with pytest.raises(ValueError, match="a metric is a name"):
        metrics.get(42)
    m = metrics.get("acc")
    assert metrics.get(m) is m


def test_custom_function_returning_bools():
    def exact(y_true, y_pred):
        return y_true == y_pred.round()

    m = metrics.get(exact)
    m.update(torch.tensor([[1.0], [2.0]]), torch.tensor([[1.2], [2.6]]))
    assert m.name == "exact" and m.result() == pytest.approx(0.5)
