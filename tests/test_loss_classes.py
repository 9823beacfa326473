"""Keras 2.3.1's Loss classes (losses.MeanSquaredError(), CategoricalCrossentropy(label_smoothing=...))
against Keras 2.3.1's formulas, their reductions and configs, compile with a Loss object training
exactly like compile with the name, and the keras.metrics function names."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import losses, metrics
from arignote.layers import Dense
from arignote.models import Sequential

EPS = 1e-7
RNG = np.random.default_rng(7)


def t(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def probs(n, c):
    e = np.exp(RNG.standard_normal((n, c)))
    return e / e.sum(-1, keepdims=True)


Y = np.eye(4)[[1, 0, 3, 2, 2]]
P = probs(5, 4)
W = np.array([1.0, 0.0, 2.0, 0.5, 1.0])


def np_cce(y, p):
    return -(y * np.log(np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS))).sum(-1)


@pytest.mark.parametrize("cls, fn", [
    (losses.MeanSquaredError, lambda y, p: ((p - y) ** 2).mean(-1)),
    (losses.MeanAbsoluteError, lambda y, p: np.abs(p - y).mean(-1)),
    (losses.MeanAbsolutePercentageError,
     lambda y, p: 100 * (np.abs(y - p) / np.clip(np.abs(y), EPS, None)).mean(-1)),
    (losses.MeanSquaredLogarithmicError,
     lambda y, p: ((np.log(np.clip(p, EPS, None) + 1) - np.log(np.clip(y, EPS, None) + 1)) ** 2).mean(-1)),
    (losses.CategoricalCrossentropy, np_cce),
    (losses.BinaryCrossentropy, lambda y, p: -(y * np.log(np.clip(p, EPS, 1 - EPS))
                                               + (1 - y) * np.log(1 - np.clip(p, EPS, 1 - EPS))).mean(-1)),
    (losses.Hinge, lambda y, p: np.maximum(1 - (2 * y - 1) * p, 0).mean(-1)),
    (losses.SquaredHinge, lambda y, p: (np.maximum(1 - (2 * y - 1) * p, 0) ** 2).mean(-1)),
    (losses.CategoricalHinge,
     lambda y, p: np.maximum(((1 - y) * p).max(-1) - (y * p).sum(-1) + 1, 0)),
    (losses.Poisson, lambda y, p: (p - y * np.log(p + EPS)).mean(-1)),
    (losses.LogCosh, lambda y, p: np.log(np.cosh(p - y)).mean(-1)),
    (losses.KLDivergence,
     lambda y, p: (np.clip(y, EPS, 1) * np.log(np.clip(y, EPS, 1) / np.clip(p, EPS, 1))).sum(-1)),
])
def test_loss_class_values_and_reductions_follow_keras_2_3_1(cls, fn):
    per_sample = fn(Y, P)
    weighted = per_sample * W
    assert float(cls()(t(Y), t(P))) == pytest.approx(per_sample.mean(), rel=1e-6)
    # SUM_OVER_BATCH_SIZE: sum(w * l) / number of values (zero weights counted)
    assert float(cls()(t(Y), t(P), sample_weight=t(W))) == pytest.approx(weighted.sum() / 5, rel=1e-6)
    summed = cls(reduction="sum")(t(Y), t(P), sample_weight=t(W))
    assert float(summed) == pytest.approx(weighted.sum(), rel=1e-6)
    none = cls(reduction=losses.Reduction.NONE)(t(Y), t(P), sample_weight=t(W))
    np.testing.assert_allclose(none.numpy(), weighted, rtol=1e-6)
    # a scalar weight scales the loss
    assert float(cls()(t(Y), t(P), sample_weight=2.0)) == pytest.approx(2 * per_sample.mean(), rel=1e-6)


def test_loss_class_options_names_and_configs():
    smooth = losses.CategoricalCrossentropy(label_smoothing=0.2)
    y_s = Y * 0.8 + 0.2 / 4
    assert float(smooth(t(Y), t(P))) == pytest.approx(np_cce(y_s, P).mean(), rel=1e-6)
    logits = RNG.standard_normal((5, 4))
    sm = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    assert float(losses.CategoricalCrossentropy(from_logits=True)(t(Y), t(logits))) == pytest.approx(
        np_cce(Y, sm).mean(), rel=1e-6)
    labels = np.array([1, 0, 3, 2, 2])
    assert float(losses.SparseCategoricalCrossentropy()(t(labels), t(P))) == pytest.approx(
        np_cce(Y, P).mean(), rel=1e-5)
    bce = losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1)
    q = np.clip(1 / (1 + np.exp(-logits)), EPS, 1 - EPS)
    yb = Y * 0.9 + 0.05
    assert float(bce(t(Y), t(logits))) == pytest.approx(
        (-(yb * np.log(q) + (1 - yb) * np.log(1 - q))).mean(), rel=1e-5)
    e = np.abs(P - Y)
    huber = np.where(e <= 0.3, 0.5 * e ** 2, 0.3 * e - 0.5 * 0.3 ** 2)
    assert float(losses.Huber(delta=0.3)(t(Y), t(P))) == pytest.approx(huber.mean(), rel=1e-6)
    # Keras 2.3.1 default names and configs; from_config round trip
    assert losses.KLDivergence().name == "kullback_leibler_divergence"
    assert losses.Huber().name == "huber_loss"
    assert losses.CategoricalCrossentropy().get_config() == {
        "reduction": "sum_over_batch_size", "name": "categorical_crossentropy", "from_logits": False,
        "label_smoothing": 0}
    again = losses.Huber.from_config(losses.Huber(2.0, name="h").get_config())
    assert (again.name, again._fn_kwargs, type(again)) == ("h", {"delta": 2.0}, losses.Huber)
    stored = losses.serialize(losses.BinaryCrossentropy(label_smoothing=0.1))
    assert stored["class_name"] == "BinaryCrossentropy"
    assert losses.deserialize(stored).get_config()["label_smoothing"] == 0.1
    with pytest.raises(TypeError, match="delta"):
        losses.MeanSquaredError(delta=1.0)
    with pytest.raises(ValueError, match="Invalid Reduction"):
        losses.MeanSquaredError(reduction="mean")
    w = losses.LossFunctionWrapper(losses.huber_loss, delta=0.3, name="hub")
    assert float(w(t(Y), t(P))) == pytest.approx(huber.mean(), rel=1e-6)
    assert w.get_config()["delta"] == 0.3


def test_is_categorical_crossentropy():
    assert losses.is_categorical_crossentropy(losses.CategoricalCrossentropy())
    assert losses.is_categorical_crossentropy(losses.LossFunctionWrapper(losses.categorical_crossentropy))
    assert losses.is_categorical_crossentropy(losses.categorical_crossentropy)
    assert losses.is_categorical_crossentropy("categorical_crossentropy")
    assert not losses.is_categorical_crossentropy(losses.BinaryCrossentropy())
    assert not losses.is_categorical_crossentropy("mse")


def _fit(loss, metrics_=("acc",), epochs=2):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6)).astype("float32")
    y = np.eye(3)[rng.integers(0, 3, 64)].astype("float32")
    sw = rng.uniform(0.0, 2.0, 64).astype("float32")
    model = Sequential([Dense(8, activation="relu", input_shape=(6,)), Dense(3, activation="softmax")])
    model.compile("sgd", loss=loss, metrics=list(metrics_))
    hist = model.fit(x, y, batch_size=16, epochs=epochs, sample_weight=sw, verbose=0, shuffle=False)
    return [p.detach().clone() for p in model.module.parameters()], hist.history


@pytest.mark.parametrize("obj, name", [
    (losses.CategoricalCrossentropy(), "categorical_crossentropy"),
    (losses.MeanSquaredError(), "mse"),
])
def test_compile_with_loss_object_trains_like_the_name(obj, name):
    w_obj, h_obj = _fit(obj)
    w_str, h_str = _fit(name)
    for a, b in zip(w_obj, w_str):
        torch.testing.assert_close(a, b)
    # logged as Keras 2.3.1: 'loss' and the accuracy resolved from the wrapped function
    assert list(h_obj) == list(h_str) == ["loss", "acc"]
    np.testing.assert_allclose(h_obj["loss"], h_str["loss"], rtol=1e-6)
    np.testing.assert_allclose(h_obj["acc"], h_str["acc"])


def test_compile_with_label_smoothing_trains_on_the_smoothed_loss():
    w_obj, h_obj = _fit(losses.CategoricalCrossentropy(label_smoothing=0.1), epochs=1)
    w_str, h_str = _fit("categorical_crossentropy", epochs=1)
    assert h_obj["loss"][0] != pytest.approx(h_str["loss"][0], rel=1e-4)
    assert any(not torch.equal(a, b) for a, b in zip(w_obj, w_str))
    # what compile trains with: weights (times the mask) as sample_weight, SUM_OVER_BATCH_SIZE
    from arignote.losses.weighting import Weighted
    fn = losses.compiled(losses.CategoricalCrossentropy(label_smoothing=0.1))
    got = fn(Weighted((t(Y), t(W))), t(P))
    assert float(got) == pytest.approx((np_cce(Y * 0.9 + 0.1 / 4, P) * W).sum() / 5, rel=1e-6)
    total = losses.compiled(losses.MeanAbsoluteError(reduction="sum"))(t(Y), t(P))
    assert float(total) == pytest.approx(np.abs(P - Y).mean(-1).sum(), rel=1e-6)


def test_metric_function_names_of_keras_2_3_1():
    y, p = t([[1.0, 0.0], [0.0, 1.0]]), t([[0.6, 0.8], [0.0, 2.0]])
    assert metrics.MSE is metrics.mse is losses.mean_squared_error
    assert metrics.MAE is metrics.mae
    assert metrics.MAPE is metrics.mape is metrics.mean_absolute_percentage_error
    assert metrics.MSLE is metrics.msle is metrics.mean_squared_logarithmic_error
    for name in ("hinge", "squared_hinge", "poisson", "kullback_leibler_divergence", "categorical_hinge",
                 "logcosh"):
        assert getattr(metrics, name) is getattr(losses, name)
    # keras.metrics.cosine_proximity is the similarity (the loss is its negative)
    cos = np.array([0.6, 1.0]) / np.linalg.norm([0.6, 0.8])
    np.testing.assert_allclose(metrics.cosine_proximity(y, p).numpy(), [cos[0], 1.0], rtol=1e-6)
    assert metrics.cosine is metrics.cosine_similarity is metrics.cosine_proximity
    assert metrics.accuracy(torch.tensor([1, 2]), t([1.0, 3.0])).tolist() == [1.0, 0.0]
    assert metrics.binary_accuracy(t([[1.0], [0.0]]), t([[0.6], [0.6]]), threshold=0.7).tolist() == [0.0, 1.0]
    m = metrics.get("mae")
    c = metrics.clone_metric(m)
    assert c is not m and (c.name, c.fn, c.values) == (m.name, m.fn, m.values)
    assert metrics.clone_metrics({"out": "acc"}) == {"out": "acc"}


def test_names_keras_never_had_stay_attribute_errors():
    assert metrics.Reduce.__name__ == "Reduce"  # provided now (arignote.metrics.base)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        metrics.Nope  # noqa: B018
