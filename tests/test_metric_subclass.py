"""Keras-2.3-style user metrics (``class M(keras.metrics.Metric)`` with ``add_weight``, ``update_state``
with ``assign_add``, ``result``): standalone, in compile/fit/evaluate (values against numpy, reset at
each epoch, sample weights through weighted_metrics, get_config/from_config), ``Reduce``/``Sum``/``Mean``,
Keras 2.3.1's log names for a name next to an object (``'mse'`` and ``MeanSquaredError()``), and under
data parallel (2 gloo processes) the weights summed over the ranks before ``result()``."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote import metrics
from arignote.layers import Dense, Input
from arignote.models import Sequential
from arignote.optimizers import SGD


class BinaryTruePositives(metrics.Metric):
    """The Keras 2.3 docs' kind of metric: a weighted count of true positives at ``threshold``."""

    def __init__(self, name="binary_true_positives", threshold=0.5, **kwargs):
        super().__init__(name=name, **kwargs)
        self.threshold = threshold
        self.true_positives = self.add_weight(name="tp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = K.cast(y_true, "bool")
        y_pred = K.greater(y_pred, self.threshold)
        values = K.cast(y_true & y_pred, self.dtype)
        if sample_weight is not None:
            values = values * K.reshape(K.cast(sample_weight, self.dtype), K.shape(values))
        self.true_positives.assign_add(K.sum(values))

    def result(self):
        return self.true_positives

    def get_config(self):
        return {**super().get_config(), "threshold": self.threshold}


class MeanAbsoluteGap(metrics.Metric):
    """A mean kept as two weights, with a vector weight (a histogram of the gaps) and an int one."""

    def __init__(self, name="mean_abs_gap", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_weight("total", initializer="zeros")
        self.count = self.add_weight("count", initializer="zeros")
        self.hist = self.add_weight("hist", shape=(2,), initializer="zeros")
        self.batches = self.add_weight("batches", dtype="int32", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        gap = torch.abs(y_pred - y_true.to(y_pred.dtype)).reshape(-1)
        w = torch.ones_like(gap) if sample_weight is None else sample_weight.reshape(-1).to(gap.dtype)
        self.total.assign_add((gap * w).sum())
        self.count.assign_add(w.sum())
        self.hist.assign_add(torch.stack([((gap < 0.5) * w).sum(), ((gap >= 0.5) * w).sum()]))
        self.batches.assign_add(1)

    def result(self):
        return self.total / self.count


def _data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x[:, :1] + 0.5 * rng.normal(size=(n, 1)) > 0).astype("float32")
    return x, y


def _frozen_model(**compile_kwargs):
    """lr=0: the predictions are the same in every epoch, so each epoch's value is the whole data's."""
    torch.manual_seed(0)
    model = Sequential([Dense(1, activation="sigmoid", input_shape=(4,))])
    model.compile(SGD(lr=0.0), "binary_crossentropy", **compile_kwargs)
    return model


# ---------------------------------------------------------------------------------------- standalone


def test_standalone_updates_results_and_reset_match_numpy():
    m = BinaryTruePositives()
    y = np.array([[1.0], [1.0], [0.0], [1.0]])
    p = np.array([[0.9], [0.2], [0.8], [0.7]])
    assert float(m(y, p)) == 2.0
    m.update_state(y, p, sample_weight=np.array([0.5, 1.0, 1.0, 3.0]))
    assert float(m.result()) == 2.0 + 0.5 + 3.0
    assert [w.name for w in m.weights] == ["tp"] and m.trainable_weights == []
    assert m.weights[0].dtype == torch.float32 and m.weights[0].shape == ()
    m.reset_states()
    assert m.get_weights()[0] == 0.0

    g = MeanAbsoluteGap()
    g.update_state(torch.tensor([[0.0], [1.0]]), torch.tensor([[0.25], [0.0]]))
    assert float(g.result()) == pytest.approx(0.625)
    total, count, hist, batches = g.get_weights()
    assert hist.tolist() == [1.0, 1.0] and batches.dtype == np.int32 and int(batches) == 1
    g.reset_states()
    assert [float(np.sum(w)) for w in g.get_weights()] == [0.0, 0.0, 0.0, 0.0]


def test_variables_have_keras_assign_methods_and_copy():
    m = MeanAbsoluteGap()
    assert m.hist.assign([1.0, 2.0]) is m.hist and m.hist.tolist() == [1.0, 2.0]
    m.hist.assign_sub(torch.tensor([1.0, 1.0]))
    m.hist.assign(7.0)  # a scalar fills the weight
    assert m.hist.tolist() == [7.0, 7.0]
    assert type(m.hist * 2) is torch.Tensor  # operations give plain tensors
    clone = copy.deepcopy(m)
    clone.hist.assign_add(1.0)
    assert m.hist.tolist() == [7.0, 7.0] and clone.hist.tolist() == [8.0, 8.0]
    restored = pickle.loads(pickle.dumps(m.hist))
    assert restored.name == "hist" and restored.tolist() == [7.0, 7.0]
    m.set_weights([np.float32(1.0), np.float32(2.0), np.zeros(2, "float32"), np.int32(0)])
    assert float(m.result()) == 0.5
    with pytest.raises(ValueError, match="hist.*shape"):
        m.set_weights([1.0, 2.0, np.zeros(3), 0])


def test_config_round_trip_names_and_bad_arguments():
    m = BinaryTruePositives(threshold=0.7, dtype="float64")
    assert m.get_config() == {"name": "binary_true_positives", "dtype": "float64", "threshold": 0.7}
    again = BinaryTruePositives.from_config(m.get_config())
    assert again.get_config() == m.get_config() and again.true_positives.dtype == torch.float64
    assert float(again([[1.0]], [[0.65]])) == 0.0  # threshold kept
    clone = metrics.clone_metric(m)
    assert clone is not m and clone.get_config() == m.get_config()
    assert metrics.get(m) is m
    assert metrics.serialize(m) == {"class_name": "BinaryTruePositives", "config": m.get_config()}

    class Unnamed(metrics.Metric):
        def update_state(self, y_true, y_pred, sample_weight=None):
            pass

        def result(self):
            return 0.0

    first, second = Unnamed(), Unnamed()
    assert second.name.startswith("unnamed_") and first.name != second.name  # Keras layer naming
    with pytest.raises(TypeError, match="keyword argument not understood: 'treshold'"):
        BinaryTruePositives(name="x", treshold=0.3)

    class NoResult(metrics.Metric):
        def update_state(self, y_true, y_pred, sample_weight=None):
            pass

    with pytest.raises(TypeError, match="abstract"):
        NoResult()
    with pytest.raises(TypeError, match="dtype 'bogus'"):
        Unnamed().add_weight("w", dtype="bogus", initializer="zeros")

    class Early(Unnamed):
        def __init__(self):
            self.w = self.add_weight("w")

    with pytest.raises(RuntimeError, match=r"call super\(\).__init__"):
        Early()

    class StateAttribute(Unnamed):
        def __init__(self):
            super().__init__(name="s")
            self.state = self.add_weight("state", initializer="zeros")

    with pytest.raises(AttributeError, match="'state' is a name arignote's trainer calls"):
        StateAttribute()
    with pytest.raises(TypeError, match="defines 'reset'"):
        type("ResetMetric", (Unnamed,), {"reset": lambda self: None})


def test_add_weight_needs_an_initializer_as_in_keras():
    """Keras 2.3.1's Metric.add_weight has ``initializer=None`` and passes it to ``initializers.get``,
    which refuses None (tests/fixtures/keras2/metric_names.json records the ValueError)."""
    keras = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "metric_names.json").read_text())
    error = keras["add_weight_no_initializer"]["error"]
    assert error.startswith("ValueError: Could not interpret initializer")

    class NoInitializer(metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.total = self.add_weight(name="total")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.total.assign_add(K.sum(y_pred))

        def result(self):
            return self.total

    with pytest.raises(ValueError, match=r"NoInitializer.add_weight\('total'\).*initializer='zeros'"):
        NoInitializer()
    m = metrics.Sum()
    ones = m.add_weight("ones", shape=(2,), initializer="ones")
    assert ones.tolist() == [1.0, 1.0] and [w.name for w in m.weights] == ["total", "ones"]


def test_every_metric_object_is_a_keras_metric():
    for m in (metrics.AUC(), metrics.MeanSquaredError(), metrics.Mean(), metrics.get("mae"),
              BinaryTruePositives()):
        assert isinstance(m, metrics.Metric)
    assert isinstance(metrics.MeanSquaredError(), metrics.Mean)  # Keras: MeanMetricWrapper(Mean)
    assert not isinstance(metrics.AUC(), metrics.Mean)


def test_reduce_sum_and_mean_follow_keras():
    values, w = [1.0, 3.0, 5.0, 7.0], [1.0, 1.0, 0.0, 0.0]
    assert float(metrics.Sum()(values)) == 16.0
    assert float(metrics.Sum()(values, sample_weight=w)) == 4.0
    assert float(metrics.Mean()(values)) == 4.0 and float(metrics.Mean()(values, sample_weight=w)) == 2.0
    over_batch = metrics.Reduce(metrics.Reduction.SUM_OVER_BATCH_SIZE, name="r")
    assert float(over_batch(values, sample_weight=w)) == 1.0  # 4 / number of values
    # per-sample weights broadcast over the values' last axis
    m = metrics.Mean()
    m.update_state(np.array([[1.0, 2.0], [3.0, 4.0]]), sample_weight=np.array([1.0, 0.0]))
    assert float(m.result()) == 1.5 and float(m.count) == 2.0
    assert [w.name for w in metrics.Sum().weights] == ["total"]
    assert metrics.Sum().get_config() == {"name": "sum", "dtype": "float32"}
    assert over_batch.get_config()["reduction"] == "sum_over_batch_size"
    assert np.isnan(float(metrics.Mean().result()))  # 0 / 0, as Keras 2.3.1
    with pytest.raises(ValueError, match="reduction must be one of"):
        metrics.Reduce("mean", name="bad")


# --------------------------------------------------------------------------------------- in training


def test_fit_and_evaluate_log_numpy_values_and_reset_each_epoch():
    x, y = _data()
    tp, gap = BinaryTruePositives(), MeanAbsoluteGap()
    model = _frozen_model(metrics=[tp, gap])
    h = model.fit(x, y, batch_size=10, epochs=3, verbose=0, validation_data=(x[:20], y[:20]))
    assert list(h.history) == ["loss", "binary_true_positives", "mean_abs_gap", "val_loss",
                               "val_binary_true_positives", "val_mean_abs_gap"]
    p = model.predict(x).astype(np.float64)
    want_tp = float(((p > 0.5) & (y > 0.5)).sum())
    want_gap = float(np.abs(p - y).mean())
    # the same value each epoch: the count restarts at every epoch (3 x without the reset)
    assert h.history["binary_true_positives"] == [want_tp] * 3
    np.testing.assert_allclose(h.history["mean_abs_gap"], [want_gap] * 3, rtol=1e-6)
    assert h.history["val_binary_true_positives"][0] == float(((p[:20] > 0.5) & (y[:20] > 0.5)).sum())
    np.testing.assert_allclose(h.history["val_mean_abs_gap"], float(np.abs(p[:20] - y[:20]).mean()),
                               rtol=1e-6)
    loss, got_tp, got_gap = model.evaluate(x, y, batch_size=7, verbose=0)
    assert got_tp == want_tp and got_gap == pytest.approx(want_gap, rel=1e-6)
    assert model.metrics_names == ["loss", "binary_true_positives", "mean_abs_gap"]
    # after evaluate the objects hold evaluate's state (7 batches of up to 7 rows)
    assert float(tp.result()) == want_tp and int(gap.batches) == 7
    assert gap.total.device == torch.device("cpu")


def test_weighted_metrics_get_the_sample_weights():
    x, y = _data()
    w = np.random.default_rng(1).uniform(0, 2, len(x)).astype("float32")
    model = _frozen_model(metrics=[BinaryTruePositives()],
                          weighted_metrics=[BinaryTruePositives(), MeanAbsoluteGap()])
    h = model.fit(x, y, sample_weight=w, batch_size=16, epochs=2, verbose=0)
    assert list(h.history) == ["loss", "binary_true_positives", "binary_true_positives_1", "mean_abs_gap"]
    p = model.predict(x).astype(np.float64)
    hits = ((p > 0.5) & (y > 0.5))[:, 0]
    assert h.history["binary_true_positives"] == [float(hits.sum())] * 2  # plain metrics: no weights
    np.testing.assert_allclose(h.history["binary_true_positives_1"], [float((hits * w).sum())] * 2, rtol=1e-5)
    gap = np.abs(p - y)[:, 0]
    np.testing.assert_allclose(h.history["mean_abs_gap"], [float((gap * w).sum() / w.sum())] * 2, rtol=1e-5)


def test_a_name_and_an_object_of_one_metric_log_under_two_keys():
    """Keras 2.3.1 logs compile's string as written and an object under its name (real Keras 2.3.1
    logs ``['loss', 'mse', 'mean_squared_error']`` and their ``val_`` keys for this compile)."""
    x, y = _data()
    model = _frozen_model(metrics=["mse", metrics.MeanSquaredError()])
    h = model.fit(x, y, batch_size=16, epochs=1, verbose=0, validation_data=(x, y))
    assert list(h.history) == ["loss", "mse", "mean_squared_error", "val_loss", "val_mse",
                               "val_mean_squared_error"]
    p = model.predict(x).astype(np.float64)
    want = float(((p - y) ** 2).mean())
    assert h.history["mse"][0] == pytest.approx(want, rel=1e-6)
    assert h.history["mean_squared_error"][0] == pytest.approx(want, rel=1e-6)


def test_two_outputs_each_get_their_own_copy_of_a_listed_metric():
    from arignote.models import Model

    x, y = _data()
    y2 = 1.0 - y
    inp = Input((4,))
    a = Dense(1, activation="sigmoid", name="a")(inp)
    b = Dense(1, activation="sigmoid", name="b")(inp)
    torch.manual_seed(0)
    model = Model(inp, [a, b])
    tp = BinaryTruePositives(threshold=0.4)
    model.compile(SGD(lr=0.0), "binary_crossentropy", metrics=[tp],
                  weighted_metrics={"b": MeanAbsoluteGap()})
    h = model.fit(x, [y, y2], batch_size=16, epochs=2, verbose=0)
    assert list(h.history) == ["loss", "a_loss", "b_loss", "a_binary_true_positives",
                               "b_binary_true_positives", "b_mean_abs_gap"]
    pa, pb = (p.astype(np.float64) for p in model.predict(x))
    assert h.history["a_binary_true_positives"] == [float(((pa > 0.4) & (y > 0.5)).sum())] * 2
    assert h.history["b_binary_true_positives"] == [float(((pb > 0.4) & (y2 > 0.5)).sum())] * 2
    np.testing.assert_allclose(h.history["b_mean_abs_gap"], [np.abs(pb - y2).mean()] * 2, rtol=1e-6)
    assert tp.name == "binary_true_positives"  # the object given was cloned, not renamed


def test_save_and_load_a_model_compiled_with_a_user_metric(tmp_path):
    pytest.importorskip("h5py")
    from arignote.models import load_model

    x, y = _data()
    model = _frozen_model(metrics=[BinaryTruePositives(threshold=0.6), "acc"])
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    path = str(tmp_path / "m.h5")
    model.save(path)
    loaded = load_model(path, custom_objects={"BinaryTruePositives": BinaryTruePositives})
    assert loaded.metrics_names == ["loss", "binary_true_positives", "acc"]
    assert loaded.metrics_list[0].threshold == 0.6
    np.testing.assert_allclose(loaded.evaluate(x, y, verbose=0), model.evaluate(x, y, verbose=0), rtol=1e-6)
    with pytest.raises(ValueError, match="BinaryTruePositives.*custom_objects"):
        load_model(path)
    assert load_model(path, compile=False).predict(x).shape == (len(x), 1)


def test_weighted_metric_objects_survive_save_and_load(tmp_path):
    """Keras 2.3.1 writes compile's weighted_metrics objects into training_config as it writes the
    metrics ones, ``{'class_name', 'config'}`` (tests/fixtures/keras2/metric_names.json); loading gives
    weighted copies with their configs back (a user's class through custom_objects)."""
    import json

    import h5py

    from arignote.models import Model, load_model

    x, y = _data()
    w = np.random.default_rng(2).uniform(0, 2, len(x)).astype("float32")
    model = _frozen_model(metrics=["acc"], weighted_metrics=[BinaryTruePositives(threshold=0.6),
                                                              metrics.BinaryAccuracy(threshold=0.4), "mae"])
    path = str(tmp_path / "w.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        training = json.loads(f.attrs["training_config"])
    assert training["metrics"] == ["acc"]
    assert training["weighted_metrics"] == [
        {"class_name": "BinaryTruePositives",
         "config": {"name": "binary_true_positives", "dtype": "float32", "threshold": 0.6}},
        {"class_name": "BinaryAccuracy", "config": model.metrics_list[2].get_config()}, "mae"]
    assert training["weighted_metrics"][1]["config"]["threshold"] == 0.4
    loaded = load_model(path, custom_objects={"BinaryTruePositives": BinaryTruePositives})
    assert loaded.metrics_names == model.metrics_names == ["loss", "acc", "binary_true_positives",
                                                           "binary_accuracy", "mae"]
    tp, acc = loaded.metrics_list[1:3]
    assert (type(tp), tp.threshold, tp.weighted) == (BinaryTruePositives, 0.6, True)
    assert (type(acc), acc.get_config()["threshold"], acc.weighted) == (metrics.BinaryAccuracy, 0.4, True)
    np.testing.assert_allclose(loaded.evaluate(x, y, sample_weight=w, verbose=0),
                               model.evaluate(x, y, sample_weight=w, verbose=0), rtol=1e-6)
    with pytest.raises(ValueError, match="BinaryTruePositives.*custom_objects"):
        load_model(path)

    # two outputs, metrics by output name: Keras 2.3.1 renames such an object to its logged name
    # ('b_binary_true_positives') and writes that; loading takes the output's prefix off again
    inp = Input((4,))
    two = Model(inp, [Dense(1, activation="sigmoid", name=n)(inp) for n in "ab"])
    two.compile(SGD(lr=0.0), "binary_crossentropy", metrics={"a": BinaryTruePositives(threshold=0.2)},
                weighted_metrics={"b": [BinaryTruePositives(threshold=0.3)]})
    two.save(path)
    with h5py.File(path, "r") as f:
        training = json.loads(f.attrs["training_config"])
    assert training["weighted_metrics"]["b"][0]["config"]["name"] == "b_binary_true_positives"
    again = load_model(path, custom_objects={"BinaryTruePositives": BinaryTruePositives})
    assert again.metrics_names == two.metrics_names == ["loss", "a_loss", "b_loss", "a_binary_true_positives",
                                                        "b_binary_true_positives"]
    assert [(m.threshold, m.weighted) for m in again.metrics_list[-2:]] == [(0.2, False), (0.3, True)]


# ------------------------------------------------------------------------------------- data parallel

DP_SCRIPT = r'''
import json, os, sys
import numpy as np, torch
import arignote
from arignote.layers import Dense, Input
from arignote.models import Sequential
from arignote.optimizers import SGD

out, procs, tests = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, tests)
from test_metric_subclass import BinaryTruePositives, MeanAbsoluteGap, _data

arignote.configure(device="cpu", cpu_processes=procs, floatX="float64", print_active_device=False)
rank = int(os.environ.get("RANK", "0"))
x, y = _data(70)
torch.manual_seed(0)
tp, gap = BinaryTruePositives(), MeanAbsoluteGap()
model = Sequential([Dense(1, activation="sigmoid", input_shape=(4,))])
model.compile(SGD(lr=0.0), "binary_crossentropy", metrics=[tp, gap])
h = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
result = {"history": h.history, "evaluate": model.evaluate(x, y, batch_size=9, verbose=0),
          "local": [float(tp.true_positives), float(gap.count), int(gap.batches)],
          "predict": model.predict(x).tolist()}
with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
    json.dump(result, fh)
'''


@pytest.mark.multiproc
def test_data_parallel_sums_the_weights_over_ranks(tmp_path):
    import json
    from pathlib import Path

    from parallel_helpers import _run, _write

    script = _write(tmp_path, "metric_subclass.py", DP_SCRIPT)
    runs = {}
    for procs in (1, 2):
        d = tmp_path / str(procs)
        d.mkdir()
        r = _run([str(script), str(d), str(procs), str(Path(__file__).parent)], timeout=400)
        assert r.returncode == 0, r.stderr[-4000:]
        runs[procs] = [json.loads((d / f"rank{i}.json").read_text()) for i in range(procs)]
    one, two = runs[1][0], runs[2]
    x, y = _data(70)
    p = np.array(one["predict"])
    want_tp = float(((p > 0.5) & (y > 0.5)).sum())
    assert one["history"]["binary_true_positives"] == [want_tp, want_tp]
    for rank in two:
        # each rank counted only its rows; the logged values are those of all 70 rows
        assert rank["history"]["binary_true_positives"] == [want_tp, want_tp]
        np.testing.assert_allclose(rank["history"]["mean_abs_gap"], one["history"]["mean_abs_gap"],
                                   rtol=1e-12)
        np.testing.assert_allclose(rank["evaluate"], one["evaluate"], rtol=1e-12)
    # after evaluate, a rank's own weights are its share (left as they were by the sum at log time),
    # and the shares add up to the whole: the SUM over ranks is what result() saw
    local = np.array([rank["local"] for rank in two])
    assert (local[:, 1] > 0).all() and (local[:, 1] < 70).all()
    np.testing.assert_allclose(local[:, :2].sum(axis=0), one["local"][:2], rtol=1e-12)
    assert local[:, 0].sum() == want_tp
    # a count of batches is not additive: each rank ran every one of evaluate's 8 global batches
    assert local[:, 2].tolist() == [8, 8] and one["local"][2] == 8
