"""Regenerate tests/fixtures/keras2/metric_names.json: the names real Keras 2.3.1 (Theano backend) gives
metric objects and logs them under, and a few edge cases of its metric and graph utilities.

* ``default_names``: ``.name`` of metric objects made without ``name=`` in a fresh session, in order
  (Keras 2.3.1 metrics are Layers: a class without a default name gets ``<snake_case>_<uid>``, one
  counter per class, so the first ``Precision()`` of a session is ``precision_1``).
* ``single_output`` / ``two_outputs``: ``model.metrics_names`` and the ``History`` keys of a fit after
  ``K.reset_uids()`` with such objects in ``compile(metrics=..., weighted_metrics=...)``.
* ``training_config``: the ``metrics`` / ``weighted_metrics`` Keras writes into a saved file's
  ``training_config`` (``{'class_name', 'config'}`` per metric object; AUC's thresholds left out).
* ``load_user_metric``: what Keras 2.3.1's ``load_model`` does with that file (with and without
  ``custom_objects``).
* ``add_weight_no_initializer``: ``Metric.add_weight(name)`` without an initializer.
* ``get_source_inputs``: what ``keras.utils.get_source_inputs`` returns for a numpy array and for a
  backend placeholder (no ``_keras_history``).

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/metricfix-theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_metric_names_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,I001,F401  (before keras)
import json  # noqa: E402
import tempfile  # noqa: E402

import h5py  # noqa: E402
import numpy as np  # noqa: E402
from keras import backend as K  # noqa: E402
from keras import metrics  # noqa: E402
from keras.layers import Dense, Input  # noqa: E402
from keras.models import Model, Sequential, load_model  # noqa: E402
from keras.utils import get_source_inputs  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "keras2",
                   "metric_names.json")


class BinaryTruePositives(metrics.Metric):
    """A user metric with a default name argument (the Keras 2.3 docs' example)."""

    def __init__(self, name="binary_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_weight(name="tp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        values = K.cast(K.greater(y_true, 0.5), self.dtype) * K.cast(K.greater(y_pred, 0.5), self.dtype)
        if sample_weight is not None:
            values = values * K.reshape(K.cast(sample_weight, self.dtype), K.shape(values))
        return K.update_add(self.true_positives, K.sum(values))

    def result(self):
        return self.true_positives


class PredictedSum(metrics.Metric):
    """A user metric without a name argument (``name=None`` goes to Layer's auto name)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.total = self.add_weight(name="total", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        return K.update_add(self.total, K.sum(y_pred))

    def result(self):
        return self.total


class NoInitializer(metrics.Metric):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.total = self.add_weight(name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        return K.update_add(self.total, K.sum(y_pred))

    def result(self):
        return self.total


def _default_names():
    K.reset_uids()
    made = [
        ("Precision", metrics.Precision()), ("Precision", metrics.Precision()), ("AUC", metrics.AUC()),
        ("Recall", metrics.Recall()), ("TruePositives", metrics.TruePositives()),
        ("FalsePositives", metrics.FalsePositives()), ("TrueNegatives", metrics.TrueNegatives()),
        ("FalseNegatives", metrics.FalseNegatives()),
        ("SensitivityAtSpecificity", metrics.SensitivityAtSpecificity(0.5)),
        ("SpecificityAtSensitivity", metrics.SpecificityAtSensitivity(0.5)),
        ("MeanMetricWrapper", metrics.MeanMetricWrapper(metrics.binary_accuracy)),
        ("MeanMetricWrapper", metrics.MeanMetricWrapper(metrics.binary_accuracy)),
        ("Mean", metrics.Mean()), ("Sum", metrics.Sum()), ("BinaryAccuracy", metrics.BinaryAccuracy()),
        ("RootMeanSquaredError", metrics.RootMeanSquaredError()),
        ("BinaryTruePositives", BinaryTruePositives()), ("PredictedSum", PredictedSum()),
        ("PredictedSum", PredictedSum()), ("AUC", metrics.AUC(name="roc")), ("AUC", metrics.AUC()),
    ]
    out = [[cls, m.name] for cls, m in made]
    K.reset_uids()
    out.append(["Precision (after K.reset_uids())", metrics.Precision().name])
    return out


def _data():
    rng = np.random.RandomState(3)
    x = rng.normal(size=(20, 4)).astype("float32")
    y = (x[:, :1] > 0).astype("float32")
    return x, y


def _single_output(path):
    K.reset_uids()
    x, y = _data()
    model = Sequential([Dense(1, activation="sigmoid", input_shape=(4,))])
    model.compile("sgd", "binary_crossentropy",
                  metrics=[metrics.Precision(), metrics.AUC(), metrics.Recall(), BinaryTruePositives(),
                           PredictedSum(), metrics.AUC(), "acc"],
                  weighted_metrics=[metrics.Precision(), BinaryTruePositives(), metrics.BinaryAccuracy()])
    h = model.fit(x, y, sample_weight=np.ones(len(x)), epochs=1, verbose=0, validation_data=(x, y))
    model.save(path)
    with h5py.File(path, "r") as f:
        raw = f.attrs["training_config"]
    training = json.loads(raw.decode("utf8") if isinstance(raw, bytes) else raw)
    for item in training["metrics"] + training["weighted_metrics"]:
        if isinstance(item, dict) and item["class_name"] == "AUC":
            item["config"].pop("thresholds")  # its 198 inner thresholds
    return ({"metrics_names": model.metrics_names, "history": sorted(h.history)},
            {"metrics": training["metrics"], "weighted_metrics": training["weighted_metrics"]})


def _two_outputs():
    K.reset_uids()
    x, y = _data()
    inp = Input((4,))
    a = Dense(1, activation="sigmoid", name="a")(inp)
    b = Dense(1, activation="sigmoid", name="b")(inp)
    model = Model(inp, [a, b])
    model.compile("sgd", "binary_crossentropy", metrics={"a": [metrics.AUC()], "b": [metrics.Recall()]},
                  weighted_metrics=[metrics.Precision()])
    h = model.fit(x, [y, 1 - y], epochs=1, verbose=0)
    return {"metrics_names": model.metrics_names, "history": sorted(h.history)}


def _load(path):
    out = {}
    for key, custom in (("without_custom_objects", {}),
                        ("with_custom_objects", {"BinaryTruePositives": BinaryTruePositives,
                                                 "PredictedSum": PredictedSum})):
        try:
            out[key] = {"metrics_names": load_model(path, custom_objects=custom).metrics_names}
        except Exception as e:  # noqa: BLE001  (recorded: what Keras 2.3.1 did)
            out[key] = {"error": f"{type(e).__name__}: {str(e)[:160]}"}
    return out


def _add_weight():
    try:
        NoInitializer()
    except Exception as e:  # noqa: BLE001  (recorded)
        return {"error": f"{type(e).__name__}: {e}"}
    return {"error": None}


def _get_source_inputs():
    array = np.zeros(2, "float32")
    got = get_source_inputs(array)
    placeholder = K.placeholder((2,))
    back = get_source_inputs(placeholder)
    return {"numpy": {"type": type(got).__name__, "is_input": got is array},
            "placeholder": {"type": "list" if isinstance(back, list) else "tensor",
                            "is_input": back is placeholder}}


def main():
    out = {"default_names": _default_names()}
    path = os.path.join(tempfile.mkdtemp(), "m.h5")
    out["single_output"], out["training_config"] = _single_output(path)
    out["load_user_metric"] = _load(path)
    out["two_outputs"] = _two_outputs()
    out["add_weight_no_initializer"] = _add_weight()
    out["get_source_inputs"] = _get_source_inputs()
    with open(OUT, "w") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
