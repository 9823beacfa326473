"""Sample weights, class weights and weighted metrics (issue 13 item 5), against hand computations
with Keras 2.3.1's arithmetic: a weighted loss is ``sum(w * l) / n`` (SUM_OVER_BATCH_SIZE), a
weighted metric ``sum(w * v) / sum(w)``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import config
from arignote.layers import Dense, Input
from arignote.models import Model, Sequential
from arignote.optimizers import SGD
from arignote.utils import Sequence

config.configure(print_active_device=False)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(10, 3)).astype("float32")
Y = RNG.normal(size=(10, 2)).astype("float32")
W = RNG.uniform(0.0, 2.0, size=10).astype("float32")


def _dense(loss="mse", metrics=(), weighted_metrics=(), lr=0.0, mode=None, units=2, activation=None):
    torch.manual_seed(0)
    m = Sequential([Dense(units, input_shape=(3,), activation=activation)])
    m.compile(SGD(lr=lr), loss, metrics=list(metrics), weighted_metrics=list(weighted_metrics),
              sample_weight_mode=mode)
    return m


def _mse_values(m, x=X, y=Y):
    return ((m.predict(x) - y) ** 2).mean(-1)


@pytest.mark.parametrize("batch_size", [3, 10, 32])
def test_weighted_evaluate_is_the_weighted_sum_over_the_number_of_samples(batch_size):
    m = _dense()
    loss = m.evaluate(X, Y, sample_weight=W, batch_size=batch_size, verbose=0)
    # SUM_OVER_BATCH_SIZE: divided by the number of samples, not by the sum of the weights
    assert loss == pytest.approx(float((W * _mse_values(m)).sum() / 10), rel=1e-6)
    assert loss != pytest.approx(float((W * _mse_values(m)).sum() / W.sum()), rel=1e-3)
    assert m.evaluate(X, Y, verbose=0) == pytest.approx(float(_mse_values(m).mean()), rel=1e-6)


def test_weighted_metrics_are_weighted_means_and_plain_metrics_ignore_the_weights():
    m = _dense(metrics=["mae"], weighted_metrics=["mae", "mse"])
    loss, mae, wmae, wmse = m.evaluate(X, Y, sample_weight=W, batch_size=4, verbose=0)
    assert m.metrics_names == ["loss", "mae", "mae_1", "mse"]  # Keras 2.3: a taken name gets _1
    ae = np.abs(m.predict(X) - Y).mean(-1)
    assert mae == pytest.approx(float(ae.mean()), rel=1e-6)
    assert wmae == pytest.approx(float((W * ae).sum() / W.sum()), rel=1e-6)
    assert wmse == pytest.approx(float((W * _mse_values(m)).sum() / W.sum()), rel=1e-6)
    # without weights a weighted metric is the plain mean
    _, mae, wmae, _ = m.evaluate(X, Y, verbose=0)
    assert wmae == pytest.approx(mae, rel=1e-6)


def test_a_zero_weight_gives_the_gradient_of_dropping_the_sample_scaled_by_keras_normalisation():
    # weights [1, 1, 1, 0] on 4 samples: loss = sum of 3 losses / 4, so the gradient is 3/4 of the
    # gradient without the 4th sample: one SGD step at lr 0.4 equals a step at lr 0.3 without it
    w = np.array([1, 1, 1, 0], "float32")
    a, b = _dense(lr=0.4), _dense(lr=0.3)
    a.train_on_batch(X[:4], Y[:4], sample_weight=w)
    b.train_on_batch(X[:3], Y[:3])
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-5, atol=1e-7)
    before = _dense().get_weights()
    assert not np.allclose(a.get_weights()[0], before[0])


def test_fit_with_sample_weights_follows_the_weighted_gradient():
    # one step of plain SGD on the weighted loss, by hand: dL/dW = X^T (2 w (p - y) / (n * units))
    m = _dense(lr=0.1)
    kernel, bias = m.get_weights()
    m.fit(X, Y, sample_weight=W, batch_size=10, epochs=1, shuffle=False, verbose=0)
    p = X @ kernel + bias
    g = 2.0 * W[:, None] * (p - Y) / (10 * 2)
    np.testing.assert_allclose(m.get_weights()[0], kernel - 0.1 * X.T @ g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.get_weights()[1], bias - 0.1 * g.sum(0), rtol=1e-5, atol=1e-6)


def test_fit_logs_the_weighted_loss_and_validation_uses_its_own_weights():
    m = _dense(weighted_metrics=["mse"])
    vw = W[::-1].copy()
    h = m.fit(X, Y, sample_weight=W, validation_data=(X, Y, vw), batch_size=4, epochs=1, verbose=0)
    values = _mse_values(m)
    assert h.history["loss"][0] == pytest.approx(float((W * values).sum() / 10), rel=1e-6)
    assert h.history["val_loss"][0] == pytest.approx(float((vw * values).sum() / 10), rel=1e-6)
    assert h.history["val_mse"][0] == pytest.approx(float((vw * values).sum() / vw.sum()), rel=1e-6)


def test_validation_split_slices_the_weights_too():
    m = _dense()
    h = m.fit(X, Y, sample_weight=W, validation_split=0.3, epochs=1, verbose=0)
    values = _mse_values(m)
    assert h.history["val_loss"][0] == pytest.approx(float((W[7:] * values[7:]).sum() / 3), rel=1e-6)


XC = np.random.default_rng(1).normal(size=(12, 3)).astype("float32")


def _classes(n=12):
    labels = np.arange(n) % 3
    return XC[:n], labels, np.eye(3, dtype="float32")[labels]


@pytest.mark.parametrize("loss", ["sparse_categorical_crossentropy", "categorical_crossentropy"])
def test_class_weight_weighs_each_sample_by_its_class(loss):
    x, labels, onehot = _classes()
    y = labels if loss.startswith("sparse") else onehot
    m = _dense(loss, units=3, activation="softmax")
    cw = {0: 1.0, 1: 2.5, 2: 0.0}
    p = np.clip(m.predict(x), 1e-7, 1 - 1e-7)
    ce = -np.log(p[np.arange(12), labels])
    w = np.array([cw[c] for c in labels])
    assert m.evaluate(x, y, verbose=0) == pytest.approx(float(ce.mean()), rel=1e-5)
    m.fit(x, y, class_weight=cw, epochs=1, batch_size=12, verbose=0)  # lr 0: the weights stay
    assert m.history.history["loss"][0] == pytest.approx(float((w * ce).sum() / 12), rel=1e-5)
    # with sample weights too, the product
    sw = RNG.uniform(size=12).astype("float32")
    loss_value = m.train_on_batch(x, y, sample_weight=sw, class_weight=cw)
    assert loss_value == pytest.approx(float((sw * w * ce).sum() / 12), rel=1e-5)


def test_class_weight_must_cover_every_class_in_the_data():
    x, labels, _ = _classes()
    m = _dense("sparse_categorical_crossentropy", units=3, activation="softmax")
    with pytest.raises(ValueError, match=r"`class_weight` must contain all classes in the data. The classes "
                                         r"\{2\} exist in the data but not in `class_weight`"):
        m.fit(x, labels, class_weight={0: 1.0, 1: 2.0}, verbose=0)


def _sequences():
    m = Sequential([Dense(2, input_shape=(4, 3))])  # Dense on each time step: output (n, 4, 2)
    return m


def test_temporal_weights_weigh_each_time_step():
    torch.manual_seed(0)
    m = _sequences()
    m.compile(SGD(lr=0.0), "mse", weighted_metrics=["mae"], sample_weight_mode="temporal")
    x = RNG.normal(size=(5, 4, 3)).astype("float32")
    y = RNG.normal(size=(5, 4, 2)).astype("float32")
    w = RNG.uniform(size=(5, 4)).astype("float32")
    loss, wmae = m.evaluate(x, y, sample_weight=w, batch_size=2, verbose=0)
    p = m.predict(x)
    se, ae = ((p - y) ** 2).mean(-1), np.abs(p - y).mean(-1)  # (5, 4): one value per step
    assert loss == pytest.approx(float((w * se).sum() / 20), rel=1e-6)
    assert wmae == pytest.approx(float((w * ae).sum() / w.sum()), rel=1e-6)


def test_sample_weight_shape_errors_name_the_argument_and_the_shape():
    m = _dense()
    with pytest.raises(ValueError, match=r"Found a sample_weight array with shape \(4,\) for an input with "
                                         r"shape \(10, 2\). sample_weight cannot be broadcast"):
        m.evaluate(X, Y, sample_weight=W[:4], verbose=0)
    with pytest.raises(ValueError, match=r"shape \(10, 2\). In order to use timestep-wise sample weights, "
                                         r"you should specify sample_weight_mode=\"temporal\""):
        m.fit(X, Y, sample_weight=np.ones((10, 2)), verbose=0)
    with pytest.raises(ValueError, match="sample_weight contains NaN"):
        m.fit(X, Y, sample_weight=np.full(10, np.nan), verbose=0)
    t = _dense(mode="temporal")
    with pytest.raises(ValueError, match=r"Timestep-wise sample weighting \(use of sample_weight_mode="
                                         r"\"temporal\"\) is restricted to outputs that are at least 3D"):
        t.fit(X, Y, verbose=0)
    s = _sequences()
    s.compile("sgd", "mse", sample_weight_mode="temporal")
    with pytest.raises(ValueError, match=r"you should pass a 2D sample_weight array"):
        s.fit(np.zeros((5, 4, 3)), np.zeros((5, 4, 2)), sample_weight=np.ones(5), verbose=0)
    with pytest.raises(ValueError, match=r'should be None or "temporal". Found: \'steps\''):
        _dense().compile("sgd", "mse", sample_weight_mode="steps")


class _Weighted(Sequence):
    def __init__(self, class_weighted=False):
        self.class_weighted = class_weighted

    def __len__(self):
        return 3

    def __getitem__(self, i):
        rows = slice(4 * i, 4 * i + 4)
        if self.class_weighted:
            x, labels, _ = _classes()
            return x[rows], labels[rows]
        return X[rows], Y[rows], W[rows]


def test_generators_yielding_sample_weights_train_and_evaluate_weighted():
    m = _dense()
    expected = float((W * _mse_values(m)).sum() / 10)
    assert m.evaluate_generator(_Weighted()) == pytest.approx(expected, rel=1e-6)
    h = m.fit_generator(_Weighted(), epochs=1, verbose=0, shuffle=False, validation_data=_Weighted())
    assert h.history["loss"][0] == pytest.approx(expected, rel=1e-6)
    assert h.history["val_loss"][0] == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="`sample_weight` argument is not supported when data is a gen"):
        m.fit(_Weighted(), sample_weight=W, verbose=0)


def test_class_weight_with_a_generator_weighs_each_training_batch():
    x, labels, _ = _classes()
    cw = {0: 0.5, 1: 2.0, 2: 1.0}
    a = _dense("sparse_categorical_crossentropy", units=3, activation="softmax", lr=0.05)
    b = _dense("sparse_categorical_crossentropy", units=3, activation="softmax", lr=0.05)
    a.fit_generator(_Weighted(class_weighted=True), epochs=2, verbose=0, shuffle=False, class_weight=cw)
    b.fit(x, labels, batch_size=4, epochs=2, verbose=0, shuffle=False, class_weight=cw)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-5, atol=1e-7)
    assert a.history.history["loss"] == pytest.approx(b.history.history["loss"], rel=1e-5)


def _two_outputs():
    torch.manual_seed(0)
    inp = Input(shape=(3,), name="inp")
    a = Dense(2, name="a")(inp)
    b = Dense(3, activation="softmax", name="b")(inp)
    return Model(inp, [a, b])


def test_several_outputs_take_weights_per_output_by_dict_or_list():
    m = _two_outputs()
    m.compile(SGD(lr=0.0), loss=["mse", "sparse_categorical_crossentropy"], loss_weights=[1.0, 0.5],
              metrics={"b": "acc"}, weighted_metrics={"b": "acc"})
    _, labels, _ = _classes(10)
    pa, pb = m.predict(X)
    se = ((pa - Y) ** 2).mean(-1)
    ce = -np.log(np.clip(pb, 1e-7, 1 - 1e-7)[np.arange(10), labels])
    hit = (pb.argmax(-1) == labels).astype("float64")
    cw = {0: 2.0, 1: 1.0, 2: 0.0}
    cwb = np.array([cw[c] for c in labels])
    out = m.evaluate(X, [Y, labels], sample_weight={"a": W}, verbose=0, batch_size=4)
    assert m.metrics_names == ["loss", "a_loss", "b_loss", "b_acc", "b_acc_1"]
    a_loss, b_loss = float((W * se).sum() / 10), float(ce.mean())  # b: no weights given -> ones
    assert out[1:3] == pytest.approx([a_loss, b_loss], rel=1e-5)
    assert out[0] == pytest.approx(a_loss + 0.5 * b_loss, rel=1e-5)
    assert out[3] == pytest.approx(out[4]) == pytest.approx(hit.mean())
    h = m.fit(X, {"a": Y, "b": labels}, sample_weight=[W, W], class_weight={"b": cw}, verbose=0,
              batch_size=10)
    logs = {k: v[0] for k, v in h.history.items()}
    b_weights = W * cwb
    assert logs["b_loss"] == pytest.approx(float((b_weights * ce).sum() / 10), rel=1e-5)
    assert logs["b_acc"] == pytest.approx(hit.mean())
    assert logs["b_acc_1"] == pytest.approx(float((b_weights * hit).sum() / b_weights.sum()), rel=1e-5)
    with pytest.raises(TypeError, match="The model has multiple outputs, so `sample_weight` should be either "
                                        "a list or a dict"):
        m.evaluate(X, [Y, labels], sample_weight=W, verbose=0)
    with pytest.raises(ValueError, match="Provided `sample_weight` was a list of 1 elements, but the "
                                         "model has 2 outputs"):
        m.evaluate(X, [Y, labels], sample_weight=[W], verbose=0)


def test_a_custom_loss_returning_per_sample_values_is_weighted_per_sample():
    def per_sample_mse(y_true, y_pred):
        return ((y_pred - y_true) ** 2).mean(-1)

    torch.manual_seed(0)
    m = Sequential([Dense(2, input_shape=(3,))])
    m.compile(SGD(lr=0.0), per_sample_mse)
    assert m.evaluate(X, Y, sample_weight=W, verbose=0) == pytest.approx(
        float((W * _mse_values(m)).sum() / 10), rel=1e-6)


def test_test_on_batch_takes_sample_weights():
    m = _dense()
    assert m.test_on_batch(X, Y, sample_weight=W) == pytest.approx(float((W * _mse_values(m)).sum() / 10),
                                                                    rel=1e-6)


def test_hdf5_training_config_keeps_sample_weight_mode_and_weighted_metrics(tmp_path):
    import json

    import h5py

    from arignote.models import load_model

    m = _sequences()
    m.compile("sgd", "mse", weighted_metrics=["mae"], sample_weight_mode="temporal")
    m.fit(np.zeros((4, 4, 3), "float32"), np.zeros((4, 4, 2), "float32"), verbose=0)
    m.save(tmp_path / "m.h5")
    with h5py.File(tmp_path / "m.h5", "r") as f:
        raw = f.attrs["training_config"]
        training = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    assert training["sample_weight_mode"] == "temporal" and training["weighted_metrics"] == ["mae"]
    back = load_model(tmp_path / "m.h5")
    assert back.sample_weight_mode == "temporal" and back.metrics_names == ["loss", "mae"]
    assert back.metrics_list[0].weighted


class _TwoOutputBatches(Sequence):
    def __init__(self, weighted):
        self.weighted = weighted

    def __len__(self):
        return 3

    def __getitem__(self, i):
        rows = slice(4 * i, min(4 * i + 4, 10))
        _, labels, _ = _classes(10)
        if self.weighted:
            return X[rows], [Y[rows], labels[rows]], [W[rows], W[rows][::-1].copy()]
        return X[rows], {"a": Y[rows], "b": labels[rows]}


def test_a_generator_for_several_outputs_gives_the_arrays_values_with_and_without_weights():
    _, labels, _ = _classes(10)
    m = _two_outputs()
    m.compile(SGD(lr=0.0), loss=["mse", "sparse_categorical_crossentropy"], weighted_metrics={"b": "acc"})
    plain = m.evaluate(X, [Y, labels], batch_size=4, verbose=0)
    assert m.evaluate_generator(_TwoOutputBatches(False)) == pytest.approx(plain, rel=1e-6)
    wb = np.concatenate([W[r][::-1] for r in (slice(0, 4), slice(4, 8), slice(8, 10))])
    weighted = m.evaluate(X, [Y, labels], sample_weight=[W, wb], batch_size=4, verbose=0)
    assert weighted != pytest.approx(plain, rel=1e-3)
    assert m.evaluate_generator(_TwoOutputBatches(True)) == pytest.approx(weighted, rel=1e-6)
    h = m.fit_generator(_TwoOutputBatches(True), epochs=1, verbose=0, shuffle=False)
    assert [h.history[k][0] for k in m.metrics_names] == pytest.approx(weighted, rel=1e-6)


def test_micro_batches_of_a_weighted_batch_give_the_weights_of_the_whole_batch():
    # accumulate=k splits each batch, weights included: each micro-batch's sum(w * l) / rows is
    # weighted rows / batch, so the update equals the unsplit batch's
    a, b = _dense(lr=0.1), _dense(lr=0.1)
    a.fit(X, Y, sample_weight=W, batch_size=10, epochs=2, shuffle=False, verbose=0)
    b.fit(X, Y, sample_weight=W, batch_size=10, epochs=2, shuffle=False, verbose=0, accumulate=3)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-5, atol=1e-7)
    assert a.history.history["loss"] == pytest.approx(b.history.history["loss"], rel=1e-6)


def test_an_automatic_batch_size_trains_with_the_weights():
    m = _dense(lr=0.0)
    h = m.fit(X, Y, sample_weight=W, batch_size="auto", epochs=1, verbose=0)
    assert h.history["loss"][0] == pytest.approx(float((W * _mse_values(m)).sum() / 10), rel=1e-6)


def test_a_compiled_step_takes_the_weighted_targets_too():
    results = []
    for jit in (False, True):
        m = _dense(lr=0.1, weighted_metrics=["mae"])
        m.compile(SGD(lr=0.1), "mse", weighted_metrics=["mae"], jit_compile=jit)
        h = m.fit(X, Y, sample_weight=W, batch_size=4, epochs=2, verbose=0, shuffle=False)
        results.append((h.history, m.get_weights(), m.evaluate(X, Y, sample_weight=W, verbose=0)))
    (h0, w0, e0), (h1, w1, e1) = results
    for key in h0:
        assert h1[key] == pytest.approx(h0[key], rel=1e-5)
    assert e1 == pytest.approx(e0, rel=1e-5)
    for a, b in zip(w0, w1):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
