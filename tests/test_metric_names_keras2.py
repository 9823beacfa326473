"""The names metric objects get and are logged under, against real Keras 2.3.1
(tests/fixtures/keras2/metric_names.json, made by scripts/make_keras2_metric_names_fixture.py).

Keras 2.3.1's metrics are Layers: a class whose ``name`` defaults to None (``Precision``, ``AUC``,
``Recall``, the confusion counts, ``SensitivityAtSpecificity``..., ``MeanMetricWrapper``, a user's
subclass without a name argument) gets ``<snake_case>_<n>``, one counter per class from 1 in a session
(``K.reset_uids()`` / ``clear_session()`` restart it), so the first ``Precision()`` logs
``precision_1``; a class with a default name (``BinaryAccuracy``, ``Mean``, a user's
``name='binary_true_positives'``) keeps it. Each test restarts the counters first, as the script did.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote import metrics
from arignote.layers import Dense, Input
from arignote.models import Model, Sequential

KERAS = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "metric_names.json").read_text())


class BinaryTruePositives(metrics.Metric):
    """The script's user metric with a default name argument."""

    def __init__(self, name="binary_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_weight(name="tp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        values = K.cast(K.greater(y_true, 0.5), self.dtype) * K.cast(K.greater(y_pred, 0.5), self.dtype)
        if sample_weight is not None:
            values = values * K.reshape(K.cast(sample_weight, self.dtype), K.shape(values))
        self.true_positives.assign_add(K.sum(values))

    def result(self):
        return self.true_positives


class PredictedSum(metrics.Metric):
    """The script's user metric without a name argument."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.total = self.add_weight(name="total", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.total.assign_add(K.sum(y_pred))

    def result(self):
        return self.total


def _made_as_in_the_script():
    return [
        metrics.Precision(), metrics.Precision(), metrics.AUC(), metrics.Recall(), metrics.TruePositives(),
        metrics.FalsePositives(), metrics.TrueNegatives(), metrics.FalseNegatives(),
        metrics.SensitivityAtSpecificity(0.5), metrics.SpecificityAtSensitivity(0.5),
        metrics.MeanMetricWrapper(metrics.binary_accuracy),
        metrics.MeanMetricWrapper(metrics.binary_accuracy),
        metrics.Mean(), metrics.Sum(), metrics.BinaryAccuracy(), metrics.RootMeanSquaredError(),
        BinaryTruePositives(), PredictedSum(), PredictedSum(), metrics.AUC(name="roc"), metrics.AUC(),
    ]


def _data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20, 4)).astype("float32")
    return x, (x[:, :1] > 0).astype("float32")


def test_default_names_count_per_class_from_one_as_keras_layers():
    K.reset_uids()
    made = _made_as_in_the_script()
    want = KERAS["default_names"]
    assert [type(m).__name__ for m in made] == [cls for cls, _ in want[:-1]]
    assert [m.name for m in made] == [name for _, name in want[:-1]]
    K.clear_session()  # restarts the counters too
    assert metrics.Precision().name == want[-1][1] == "precision_1"
    # MeanIoU runs on TensorFlow only in Keras 2.3.1 (not in the fixture); its name=None is Layer's too
    assert metrics.MeanIoU(num_classes=2).name == "mean_io_u_1"


def _single_output():
    K.reset_uids()
    torch.manual_seed(0)
    model = Sequential([Dense(1, activation="sigmoid", input_shape=(4,))])
    model.compile("sgd", "binary_crossentropy",
                  metrics=[metrics.Precision(), metrics.AUC(), metrics.Recall(), BinaryTruePositives(),
                           PredictedSum(), metrics.AUC(), "acc"],
                  weighted_metrics=[metrics.Precision(), BinaryTruePositives(), metrics.BinaryAccuracy()])
    return model


def test_single_output_history_keys_are_keras_2_3_1s():
    x, y = _data()
    model = _single_output()
    h = model.fit(x, y, sample_weight=np.ones(len(x)), epochs=1, verbose=0, validation_data=(x, y))
    want = KERAS["single_output"]
    assert model.metrics_names == want["metrics_names"]
    assert sorted(h.history) == want["history"]
    assert "precision_1" in h.history and "val_auc_1" in h.history and "recall_1" in h.history


def test_saved_training_config_names_the_metrics_as_keras_2_3_1(tmp_path):
    """The objects in training_config carry the names Keras 2.3.1 wrote (the weighted
    BinaryTruePositives renamed to its logged ``binary_true_positives_1``)."""
    import h5py

    from arignote.models import load_model

    model = _single_output()
    path = tmp_path / "m.h5"
    model.save(path)
    with h5py.File(path, "r") as f:
        training = json.loads(f.attrs["training_config"])

    def names(items):
        return [m if isinstance(m, str) else (m["class_name"], m["config"]["name"]) for m in items]

    for key in ("metrics", "weighted_metrics"):
        assert names(training[key]) == names(KERAS["training_config"][key]), key
    # Keras 2.3.1 could not load this file back (recorded in the fixture); arignote does, same names
    assert KERAS["load_user_metric"]["with_custom_objects"]["error"].startswith("ValueError")
    again = load_model(path, custom_objects={"BinaryTruePositives": BinaryTruePositives,
                                             "PredictedSum": PredictedSum})
    assert again.metrics_names == KERAS["single_output"]["metrics_names"]


def test_two_outputs_prefix_the_numbered_names():
    K.reset_uids()
    x, y = _data()
    inp = Input((4,))
    a = Dense(1, activation="sigmoid", name="a")(inp)
    b = Dense(1, activation="sigmoid", name="b")(inp)
    model = Model(inp, [a, b])
    model.compile("sgd", "binary_crossentropy", metrics={"a": [metrics.AUC()], "b": [metrics.Recall()]},
                  weighted_metrics=[metrics.Precision()])
    h = model.fit(x, [y, 1 - y], epochs=1, verbose=0)
    want = KERAS["two_outputs"]
    assert model.metrics_names == want["metrics_names"]
    assert sorted(h.history) == want["history"]


@pytest.mark.parametrize("cls", [metrics.Precision, metrics.AUC, metrics.Recall, metrics.TruePositives])
def test_a_given_name_is_kept_and_takes_no_number(cls):
    K.reset_uids()
    assert cls(name="mine").name == "mine"
    assert cls().name.endswith("_1")  # the given name did not use up the counter


def test_outputs_of_one_shared_layer_keep_their_own_values():
    """Two outputs of one shared model carry the same name (Keras 2.3.1 names both 'sequential_1',
    its metrics_names repeat 'sequential_1_loss'): train_on_batch, test_on_batch and evaluate still
    return each output's own loss, as Keras 2.3.1's lists do (they collapsed into one value before)."""
    torch.manual_seed(0)
    K.reset_uids()
    critic = Sequential([Dense(2, input_shape=(3,)), Dense(1)])
    a, b = Input((3,)), Input((3,))
    model = Model([a, b], [critic(a), critic(b)])
    model.compile("sgd", ["mse", "mae"])
    name = model.output_names[0]
    assert model.output_names == [name, name]
    assert model.metrics_names == ["loss", f"{name}_loss", f"{name}_loss"]
    x = [np.ones((4, 3), "float32"), np.full((4, 3), 2.0, "float32")]
    y = [np.zeros((4, 1), "float32"), np.ones((4, 1), "float32")]
    pa, pb = (critic.predict(v)[:, 0] for v in x)
    expected = [float(np.mean(pa ** 2)), float(np.mean(np.abs(pb - 1)))]
    for got in (model.test_on_batch(x, y), model.evaluate(x, y, verbose=0)):
        np.testing.assert_allclose(got, [sum(expected), *expected], rtol=1e-5)
    trained = model.train_on_batch(x, y)  # the values before the step's update
    np.testing.assert_allclose(trained, [sum(expected), *expected], rtol=1e-5)
