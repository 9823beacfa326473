"""Keras 2.3.1's Loss and metric classes against what real Keras 2.3.1 (Theano backend) computed
(tests/fixtures/keras2/metric_classes.json, made by scripts/make_keras2_metric_fixture.py): each Loss
with each reduction and sample weights; each metric through ``compile(metrics=[...])`` +
``evaluate`` in batches of 16, unweighted and as a weighted metric. The three cases Keras 2.3.1
cannot run on Theano (Precision with several thresholds, top_k, class_id with sample weights) are
covered by tests/test_metric_classes.py against a numpy reference of Keras's formulas."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from arignote import losses, metrics
from arignote.layers import Dense
from arignote.models import Sequential

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "metric_classes.json").read_text())


def data(group):
    d = FIXTURE[group]
    return (np.asarray(d["y"], dtype=np.float32), np.asarray(d["p"], dtype=np.float32),
            np.asarray(d["w"], dtype=np.float32))


@pytest.mark.parametrize("name", sorted(FIXTURE["losses"]))
def test_loss_class_equals_keras_2_3_1(name):
    case = FIXTURE["losses"][name]
    y, p, w = data("categorical" if case["categorical"] else "binary")
    cls = getattr(losses, name)
    for reduction in ("sum_over_batch_size", "sum", "none"):
        got = cls(reduction=reduction, **case["kwargs"])(y, p, sample_weight=w)
        np.testing.assert_allclose(got.numpy(), np.asarray(case[reduction]).reshape(got.shape), rtol=2e-5,
                                   atol=1e-6, err_msg=reduction)
    assert float(cls(**case["kwargs"])(y, p)) == pytest.approx(case["unweighted"], rel=2e-5, abs=1e-6)


@pytest.mark.parametrize("key", sorted(FIXTURE["metrics"]))
def test_metric_class_in_compile_equals_keras_2_3_1(key):
    case = FIXTURE["metrics"][key]
    y, p, w = data(key.split(":")[0])
    cls = getattr(metrics, case["class"])
    width = p.shape[1]
    model = Sequential([Dense(width, use_bias=False, input_shape=(width,))])
    model.set_weights([np.eye(width, dtype=np.float32)])  # the identity: predictions are the inputs
    model.compile("sgd", "mse", metrics=[cls(**case["kwargs"])])
    plain = model.evaluate(p, y, batch_size=16, verbose=0)[1]
    model.compile("sgd", "mse", weighted_metrics=[cls(**case["kwargs"])])
    weighted = model.evaluate(p, y, sample_weight=w, batch_size=16, verbose=0)[1]
    np.testing.assert_allclose(plain, case["plain"], rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(weighted, case["weighted"], rtol=2e-5, atol=2e-6)


def test_the_fixture_covers_the_families():
    assert len(FIXTURE["losses"]) == 13
    assert {"binary:AUC", "binary:AUC_pr", "binary:Precision", "binary:Recall", "binary:TruePositives",
            "binary:SensitivityAtSpecificity", "binary:RootMeanSquaredError",
            "categorical:TopKCategoricalAccuracy"} <= set(FIXTURE["metrics"])
