"""Weighted losses, weighted metrics and weighted SGD steps against real Keras 2.3.1 (issue 13 item 5).

The numbers in tests/fixtures/keras2/sample_weights.json were computed by Keras 2.3.1 (Theano
backend) with scripts/make_keras2_weight_fixture.py; each case holds its data, its weights and the
model's starting weights, so the same model is rebuilt here and must give the same values.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from arignote import config
from arignote.layers import Dense, Input
from arignote.models import Model, Sequential
from arignote.optimizers import SGD

config.configure(print_active_device=False)

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "sample_weights.json").read_text())
TOL = {"rel": 1e-6, "abs": 1e-6}


def a(values):
    return np.asarray(values, dtype="float32")


def _assert_weights(model, expected):
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, a(want), rtol=1e-5, atol=1e-6)


def test_the_fixture_comes_from_keras_2_3_1():
    assert FIXTURE["meta"]["keras"] == "2.3.1"


def test_dense_mse_weighted_evaluate_metrics_and_one_step():
    case = FIXTURE["dense_mse"]
    x, y, w = a(case["x"]), a(case["y"]), a(case["w"])
    m = Sequential([Dense(2, input_shape=(3,))])
    m.compile(SGD(lr=0.1), "mse", metrics=["mae"], weighted_metrics=["mae", "mse"])
    m.set_weights([a(v) for v in case["start"]])
    assert m.metrics_names == case["names"]
    got = m.evaluate(x, y, sample_weight=w, batch_size=3, verbose=0)
    assert got == pytest.approx(case["evaluate"], **TOL)
    assert m.evaluate(x, y, batch_size=3, verbose=0) == pytest.approx(case["evaluate_plain"], **TOL)
    assert m.train_on_batch(x, y, sample_weight=w) == pytest.approx(case["train_on_batch"], **TOL)
    _assert_weights(m, case["after_step"])


@pytest.mark.parametrize("name", ["sparse_classes", "onehot_classes"])
def test_class_and_sample_weights_in_fit_and_weighted_accuracy(name):
    case = FIXTURE[name]
    x, w = a(case["x"]), a(case["w"])
    y = np.asarray(case["y"], dtype="int64" if name.startswith("sparse") else "float32")
    cw = {int(k): v for k, v in case["class_weight"].items()}
    m = Sequential([Dense(3, activation="softmax", input_shape=(4,))])
    m.compile(SGD(lr=0.2), case["loss"], metrics=["acc"], weighted_metrics=["acc"])
    m.set_weights([a(v) for v in case["start"]])
    got = m.evaluate(x, y, sample_weight=w, batch_size=4, verbose=0)
    assert got == pytest.approx(case["evaluate"], **TOL)
    assert m.metrics_names == case["names"]
    h = m.fit(x, y, sample_weight=w, class_weight=cw, batch_size=4, epochs=2, shuffle=False, verbose=0)
    for key, values in case["history"].items():
        assert h.history[key] == pytest.approx(values, rel=1e-5, abs=1e-6), key
    _assert_weights(m, case["after_fit"])


def test_temporal_weights():
    case = FIXTURE["temporal"]
    x, y, w = a(case["x"]), a(case["y"]), a(case["w"])
    m = Sequential([Dense(2, input_shape=(4, 3))])
    m.compile(SGD(lr=0.1), "mae", weighted_metrics=["mse"], sample_weight_mode="temporal")
    m.set_weights([a(v) for v in case["start"]])
    got = m.evaluate(x, y, sample_weight=w, batch_size=2, verbose=0)
    assert got == pytest.approx(case["evaluate"], **TOL)
    assert m.train_on_batch(x, y, sample_weight=w) == pytest.approx(case["train_on_batch"], **TOL)
    _assert_weights(m, case["after_step"])


def test_two_outputs_with_weights_per_output():
    case = FIXTURE["two_outputs"]
    x, ya, yb, wa = a(case["x"]), a(case["ya"]), a(case["yb"]), a(case["wa"])
    inp = Input(shape=(3,), name="inp")
    m = Model(inp, [Dense(2, name="a")(inp), Dense(1, activation="sigmoid", name="b")(inp)])
    m.compile(SGD(lr=0.1), ["mse", "binary_crossentropy"], loss_weights=[1.0, 0.5],
              weighted_metrics={"b": ["acc"]})
    m.set_weights([a(v) for v in case["start"]])
    assert m.metrics_names == case["names"]
    got = m.evaluate(x, [ya, yb], sample_weight={"a": wa}, batch_size=3, verbose=0)
    assert got == pytest.approx(case["evaluate"], **TOL)
    got = m.train_on_batch(x, [ya, yb], sample_weight=[wa, wa[::-1].copy()])
    assert got == pytest.approx(case["train_on_batch"], **TOL)
    _assert_weights(m, case["after_step"])


def test_custom_loss_values_are_weighted_per_sample():
    case = FIXTURE["custom_loss"]

    def scaled_abs(y_true, y_pred):
        return (y_pred - y_true).abs().sum(-1) * 0.5

    m = Sequential([Dense(2, input_shape=(3,))])
    m.compile(SGD(lr=0.1), scaled_abs)
    m.set_weights([a(v) for v in case["start"]])
    got = m.evaluate(a(case["x"]), a(case["y"]), sample_weight=a(case["w"]), batch_size=4, verbose=0)
    assert got == pytest.approx(case["evaluate"][0], **TOL)
