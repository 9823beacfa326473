"""Keras 2.3.1's stateful metric classes (AUC, Precision, Recall, TruePositives..., Sensitivity/
Specificity at a value, MeanIoU): values against a numpy reference written from Keras 2.3.1's
formulas (confusion counts at thresholds, Riemann sums, Davis & Goadrich PR interpolation), the
standalone API, and in compile: logged names, epoch values over the whole epoch's predictions (not a
mean of batch values), val_ names for callbacks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote import metrics
from arignote.callbacks import EarlyStopping
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.optimizers import SGD

EPS = 1e-7
RNG = np.random.default_rng(3)
Y = (RNG.uniform(size=300) < 0.4).astype(float)
P = np.clip(0.3 * Y + 0.7 * RNG.uniform(size=300), 0, 1)
W = RNG.uniform(0, 2, 300)


def confusion(y, p, thresholds, w=None):
    w = np.ones_like(p) if w is None else w
    pred = p[None, :] > np.asarray(thresholds)[:, None]
    pos = (y != 0)[None, :]
    return ((pred & pos) * w).sum(1), ((pred & ~pos) * w).sum(1), ((~pred & ~pos) * w).sum(1), \
        ((~pred & pos) * w).sum(1)


def div(a, b):
    return np.where(b > 0, a / np.where(b > 0, b, 1), 0.0)


def auc_reference(y, p, n=200, curve="ROC", method="interpolation", w=None):
    cuts = [-EPS, *[(i + 1) / (n - 1) for i in range(n - 2)], 1 + EPS]
    tp, fp, tn, fn = confusion(y, p, cuts, w)
    if curve == "PR" and method == "interpolation":
        dtp = tp[:-1] - tp[1:]
        pp = tp + fp
        dp = np.maximum(pp[:-1] - pp[1:], 0)
        slope = div(dtp, dp)
        intercept = tp[1:] - slope * pp[1:]
        ratio = np.where((pp[:-1] > 0) & (pp[1:] > 0), div(pp[:-1], pp[1:]), 1.0)
        numer = slope * (dtp + intercept * np.log(ratio))
        return div(numer, np.maximum(tp[1:] + fn[1:], 0)).sum()
    rec = div(tp, tp + fn)
    x, yy = (div(fp, fp + tn), rec) if curve == "ROC" else (rec, div(tp, tp + fp))
    h = {"interpolation": (yy[:-1] + yy[1:]) / 2, "minoring": np.minimum(yy[:-1], yy[1:]),
         "majoring": np.maximum(yy[:-1], yy[1:])}[method]
    return ((x[:-1] - x[1:]) * h).sum()


@pytest.mark.parametrize("curve, method", [("ROC", "interpolation"), ("ROC", "minoring"), ("ROC", "majoring"),
                                           ("PR", "interpolation"), ("PR", "minoring"), ("PR", "majoring")])
def test_auc_follows_keras_2_3_1_thresholds_and_summation(curve, method):
    m = metrics.AUC(curve=curve, summation_method=method)
    for rows in (slice(0, 128), slice(128, 300)):  # two updates = one pass over everything
        m.update_state(Y[rows], P[rows], sample_weight=W[rows])
    assert m.result() == pytest.approx(auc_reference(Y, P, curve=curve, method=method, w=W), abs=1e-12)
    m.reset_states()
    m.update_state(Y, P)
    assert m.result() == pytest.approx(auc_reference(Y, P, curve=curve, method=method), abs=1e-12)


def test_auc_with_200_thresholds_is_close_to_but_not_the_exact_rank_auc():
    sklearn = pytest.importorskip("sklearn.metrics")
    value = metrics.AUC()(Y, P)
    exact = sklearn.roc_auc_score(Y, P)
    assert value == pytest.approx(exact, abs=5e-3) and value != exact
    assert metrics.AUC(num_thresholds=3)(Y, P) != pytest.approx(value, abs=1e-3)


def test_confusion_counts_precision_recall_thresholds_top_k_class_id():
    tp, fp, tn, fn = confusion(Y, P, [0.5], W)
    for cls, want in ((metrics.TruePositives, tp), (metrics.FalsePositives, fp),
                      (metrics.TrueNegatives, tn), (metrics.FalseNegatives, fn)):
        assert cls()(Y, P, sample_weight=W) == pytest.approx(float(want[0]))
    assert metrics.Precision()(Y, P, sample_weight=W) == pytest.approx(float(tp[0] / (tp[0] + fp[0])))
    assert metrics.Recall()(Y, P, sample_weight=W) == pytest.approx(float(tp[0] / (tp[0] + fn[0])))
    tp, fp, tn, fn = confusion(Y, P, [0.3, 0.6, 0.9])
    np.testing.assert_allclose(metrics.Precision(thresholds=[0.3, 0.6, 0.9])(Y, P), div(tp, tp + fp))
    np.testing.assert_allclose(metrics.Recall(thresholds=[0.3, 0.6, 0.9])(Y, P), div(tp, tp + fn))
    # top_k: only each row's k largest can be positive; class_id: one column
    y3 = np.eye(3)[[0, 1, 2, 2]]
    p3 = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.5, 0.1, 0.4], [0.1, 0.2, 0.7]])
    assert metrics.Precision(top_k=1)(y3, p3) == pytest.approx(3 / 4)
    assert metrics.Recall(top_k=2)(y3, p3) == pytest.approx(4 / 4)
    assert metrics.Precision(class_id=2, thresholds=0.35)(y3, p3) == pytest.approx(2 / 2)
    assert metrics.Recall(class_id=0)(y3, p3) == pytest.approx(1.0)
    assert metrics.Precision()([0, 0], [0.1, 0.2]) == 0.0  # no predicted positive: 0, not nan
    with pytest.raises(ValueError, match="Threshold values must be in \\[0, 1\\]"):
        metrics.Precision(thresholds=[0.5, 1.5])


def test_sensitivity_specificity_at_value_and_mean_iou():
    cuts = [0.0, *[(i + 1) / 199 for i in range(198)], 1.0]
    tp, fp, tn, fn = confusion(Y, P, cuts)
    spec, sens = div(tn, tn + fp), div(tp, tp + fn)
    i = int(np.argmin(np.abs(spec - 0.8)))
    assert metrics.SensitivityAtSpecificity(0.8)(Y, P) == pytest.approx(sens[i])
    j = int(np.argmin(np.abs(sens - 0.7)))
    assert metrics.SpecificityAtSensitivity(0.7)(Y, P) == pytest.approx(spec[j])
    # MeanIoU over the classes present: class 0: 1/1, class 1: 1/2, class 2: 1/2; class 3 absent
    m = metrics.MeanIoU(num_classes=4)
    assert m([0, 1, 2, 2], [0, 1, 1, 2]) == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert m.name.startswith("mean_io_u_")
    m.reset_states()
    assert m([0, 1], [0, 1], sample_weight=[1.0, 0.0]) == pytest.approx(1.0)


def test_names_configs_clone_and_state_protocol():
    # Keras 2.3.1's metrics are Layers: numbered per class (tests/test_metric_names_keras2.py checks
    # these against real Keras)
    K.reset_uids()
    assert [metrics.AUC().name, metrics.Precision().name, metrics.TruePositives().name,
            metrics.SensitivityAtSpecificity(0.5).name, metrics.AUC(name="roc").name, metrics.AUC().name] == [
        "auc_1", "precision_1", "true_positives_1", "sensitivity_at_specificity_1", "roc", "auc_2"]
    a = metrics.AUC(num_thresholds=50, curve="PR", summation_method="majoring")
    b = metrics.clone_metric(a)
    assert type(b) is metrics.AUC and b is not a and b.get_config() == a.get_config()
    assert metrics.Precision.from_config(metrics.Precision(top_k=2).get_config()).top_k == 2
    # the state is sums: two states added give the metric of both batches (what data parallel does)
    first, second = metrics.AUC(), metrics.AUC()
    first.update_state(Y[:100], P[:100])
    second.update_state(Y[100:], P[100:])
    assert first.result_from(first.state() + second.state()) == pytest.approx(metrics.AUC()(Y, P))
    with pytest.raises(ValueError, match="curve"):
        metrics.AUC(curve="DET")


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 5)).astype("float32")
    y = (x[:, 0] + 0.8 * rng.standard_normal(96) > 0).astype("float32")[:, None]
    return x, y


def test_fit_logs_each_metric_over_the_whole_epoch_predictions():
    x, y = _data()
    torch.manual_seed(0)
    model = Sequential([Dense(1, activation="sigmoid", input_shape=(5,))])
    # lr 0: the weights stay, so the epoch's predictions are model.predict(x)
    K.reset_uids()  # a fresh session's names, as Keras 2.3.1 logs them: auc_1, precision_1...
    model.compile(SGD(lr=0.0), "binary_crossentropy",
                  metrics=[metrics.AUC(), metrics.Precision(), metrics.Recall(), metrics.AUC()])
    h = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, validation_data=(x[:40], y[:40]))
    assert list(h.history) == ["loss", "auc_1", "precision_1", "recall_1", "auc_2",
                               "val_loss", "val_auc_1", "val_precision_1", "val_recall_1", "val_auc_2"]
    p = model.predict(x).reshape(-1).astype(np.float64)
    yy = y.reshape(-1)
    tp, fp, _, fn = confusion(yy, p, [0.5])
    want_auc = auc_reference(yy, p)
    for epoch in range(2):  # reset at each epoch start: the same values both epochs
        assert h.history["auc_1"][epoch] == pytest.approx(want_auc, abs=1e-9)
        assert h.history["auc_2"][epoch] == pytest.approx(want_auc, abs=1e-9)
        assert h.history["precision_1"][epoch] == pytest.approx(float(tp[0] / (tp[0] + fp[0])))
        assert h.history["recall_1"][epoch] == pytest.approx(float(tp[0] / (tp[0] + fn[0])))
    assert h.history["val_auc_1"][0] == pytest.approx(auc_reference(yy[:40], p[:40]), abs=1e-9)
    # not the mean of per-batch AUCs
    batch_mean = np.mean([auc_reference(yy[i:i + 16], p[i:i + 16]) for i in range(0, 96, 16)])
    assert abs(batch_mean - want_auc) > 1e-3
    # evaluate: the same accumulation
    logs = model.evaluate(x, y, batch_size=7, verbose=0)
    assert logs[1] == pytest.approx(want_auc, abs=1e-9)


def test_monitor_val_auc_in_callbacks():
    x, y = _data()
    model = Sequential([Dense(1, activation="sigmoid", input_shape=(5,))])
    model.compile(SGD(lr=0.0), "binary_crossentropy", metrics=[metrics.AUC(name="my_auc")])
    stop = EarlyStopping(monitor="val_my_auc", mode="max", patience=1)
    h = model.fit(x, y, epochs=5, verbose=0, validation_split=0.25, callbacks=[stop])
    assert len(h.history["val_my_auc"]) == 2  # no improvement with lr 0: stops after patience 1


def test_mean_metric_wrapper_family_names_values_and_compile():
    y3 = np.eye(3)[[0, 1, 2, 2]]
    p3 = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.5, 0.1, 0.4], [0.1, 0.2, 0.7]])
    w = np.array([1.0, 2.0, 0.0, 1.0])
    m = metrics.CategoricalAccuracy()
    assert m.name == "categorical_accuracy" and m(y3, p3) == pytest.approx(3 / 4)
    assert m(y3, p3, sample_weight=w) == pytest.approx((3 + 4) / (4 + 4))  # accumulates over calls
    m.reset_states()
    assert m(y3, p3, sample_weight=w) == pytest.approx(4 / 4)
    assert metrics.TopKCategoricalAccuracy(k=1)(y3, p3) == pytest.approx(3 / 4)
    assert metrics.SparseTopKCategoricalAccuracy(2)([0, 1, 2, 2], p3) == pytest.approx(1.0)
    assert metrics.BinaryAccuracy(threshold=0.7)([[1.0], [0.0]], [[0.6], [0.6]]) == pytest.approx(0.5)
    assert metrics.MeanSquaredError()(y3, p3) == pytest.approx(((p3 - y3) ** 2).mean())
    cos = (y3 * p3).sum(1) / np.linalg.norm(p3, axis=1)
    assert metrics.CosineSimilarity()(y3, p3) == pytest.approx(cos.mean())
    assert metrics.RootMeanSquaredError()(y3, p3, sample_weight=w) == pytest.approx(
        np.sqrt((((p3 - y3) ** 2) * w[:, None]).sum() / (3 * w.sum())))
    names = [c().name for c in (metrics.Accuracy, metrics.KLDivergence, metrics.LogCoshError,
                                metrics.MeanAbsolutePercentageError, metrics.SparseCategoricalCrossentropy)]
    assert names == ["accuracy", "kullback_leibler_divergence", "logcosh", "mean_absolute_percentage_error",
                     "sparse_categorical_crossentropy"]
    cce = metrics.CategoricalCrossentropy(label_smoothing=0.1)
    assert cce.get_config() == {"name": "categorical_crossentropy", "dtype": None, "from_logits": False,
                                "label_smoothing": 0.1}
    assert metrics.clone_metric(cce).get_config() == cce.get_config()
    s, mean = metrics.Sum(), metrics.Mean()
    assert s([1.0, 2.0], sample_weight=[1.0, 3.0]) == 7.0
    assert mean([1.0, 2.0], sample_weight=[1.0, 3.0]) == 1.75
    # in compile: logged under Keras 2.3.1's names, the same values as the strings
    x, y = _data()
    torch.manual_seed(0)
    model = Sequential([Dense(1, activation="sigmoid", input_shape=(5,))])
    model.compile(SGD(lr=0.0), "binary_crossentropy",
                  metrics=[metrics.BinaryAccuracy(), "binary_accuracy", metrics.MeanSquaredError(),
                           metrics.RootMeanSquaredError()])
    h = model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert list(h.history) == ["loss", "binary_accuracy", "binary_accuracy_1", "mean_squared_error",
                               "root_mean_squared_error"]
    assert h.history["binary_accuracy"] == h.history["binary_accuracy_1"]
    p = model.predict(x).astype(np.float64)
    assert h.history["mean_squared_error"][0] == pytest.approx(((p - y) ** 2).mean())
    assert h.history["root_mean_squared_error"][0] == pytest.approx(np.sqrt(((p - y) ** 2).mean()))


def test_two_outputs_with_loss_objects_and_stateful_metrics():
    from arignote.layers import Input
    from arignote.losses import BinaryCrossentropy, MeanSquaredError
    from arignote.models import Model

    x, y = _data()
    inp = Input((5,))
    a = Dense(1, activation="sigmoid", name="a")(inp)
    b = Dense(1, activation="sigmoid", name="b")(inp)
    model = Model(inp, [a, b])
    model.compile(SGD(lr=0.0), loss=[BinaryCrossentropy(), MeanSquaredError()],
                  metrics={"a": [metrics.AUC(name="auc")], "b": [metrics.Recall(name="recall")]})
    h = model.fit(x, [y, 1 - y], batch_size=16, epochs=1, verbose=0)
    assert list(h.history) == ["loss", "a_loss", "b_loss", "a_auc", "b_recall"]
    pa, pb = (p.reshape(-1).astype(np.float64) for p in model.predict(x))
    assert h.history["a_auc"][0] == pytest.approx(auc_reference(y.reshape(-1), pa), abs=1e-9)
    tp, _, _, fn = confusion(1 - y.reshape(-1), pb, [0.5])
    assert h.history["b_recall"][0] == pytest.approx(float(tp[0] / (tp[0] + fn[0])))
    bce = -np.mean(y.reshape(-1) * np.log(np.clip(pa, 1e-7, 1 - 1e-7))
                   + (1 - y.reshape(-1)) * np.log(1 - np.clip(pa, 1e-7, 1 - 1e-7)))
    assert h.history["a_loss"][0] == pytest.approx(bce, rel=1e-5)


def test_loss_and_metric_objects_survive_save_and_load(tmp_path):
    from arignote.losses import BinaryCrossentropy
    from arignote.models import load_model

    x, y = _data()
    model = Sequential([Dense(1, activation="sigmoid", input_shape=(5,))])
    K.reset_uids()
    model.compile("sgd", BinaryCrossentropy(label_smoothing=0.1),
                  metrics=[metrics.AUC(num_thresholds=50, curve="PR"), metrics.BinaryAccuracy(threshold=0.6),
                           "acc"])
    model.fit(x, y, epochs=1, verbose=0)
    model.save(tmp_path / "m.h5")
    again = load_model(tmp_path / "m.h5")
    assert again.metrics_names == ["loss", "auc_1", "binary_accuracy", "acc"]  # the saved name kept
    assert isinstance(again.loss, BinaryCrossentropy) and again.loss.get_config()["label_smoothing"] == 0.1
    auc = again.metrics_list[0]
    assert (type(auc), auc.num_thresholds, auc.curve) == (metrics.AUC, 50, "PR")
    np.testing.assert_allclose(again.evaluate(x, y, verbose=0), model.evaluate(x, y, verbose=0), rtol=1e-6)
