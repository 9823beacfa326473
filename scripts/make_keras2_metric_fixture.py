"""Regenerate tests/fixtures/keras2/metric_classes.json: what real Keras 2.3.1 (Theano backend)
computes for its Loss classes (``loss(y_true, y_pred, sample_weight)`` with each reduction and option)
and its metric classes (stateful AUC/Precision/Recall/..., the MeanMetricWrapper family), the
metrics measured as ``compile(metrics=[...])`` + ``evaluate`` over several batches on an identity
model (the predictions are the inputs), so the epoch accumulation is Keras's own (issue 13 item 5).

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/kmetrics-theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_metric_fixture.py

A metric class that does not run on the Theano backend is recorded with its error under "failed";
tests/test_metric_classes_keras2.py then checks those against its numpy reference only.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,I001,F401  (before keras)
import json  # noqa: E402

import numpy as np  # noqa: E402
from keras import backend as K  # noqa: E402
from keras import layers as L  # noqa: E402
from keras import losses, metrics  # noqa: E402
from keras.models import Sequential  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "keras2",
                   "metric_classes.json")
RNG = np.random.RandomState(2311)

# binary data: 90 rows, one output
YB = (RNG.uniform(size=(90, 1)) < 0.4).astype("float32")
PB = np.clip(0.35 * YB + 0.65 * RNG.uniform(size=(90, 1)), 0, 1).astype("float32")
W = RNG.uniform(0, 2, size=90).astype("float32")
# categorical data: 40 rows, 4 classes
YC = np.eye(4, dtype="float32")[RNG.randint(0, 4, 40)]
E = np.exp(RNG.normal(size=(40, 4)))
PC = (E / E.sum(1, keepdims=True)).astype("float32")
WC = RNG.uniform(0, 2, size=40).astype("float32")

LOSSES = {
    "MeanSquaredError": {}, "MeanAbsoluteError": {}, "MeanAbsolutePercentageError": {},
    "MeanSquaredLogarithmicError": {}, "BinaryCrossentropy": {"label_smoothing": 0.1},
    "CategoricalCrossentropy": {"label_smoothing": 0.2}, "Hinge": {}, "SquaredHinge": {},
    "CategoricalHinge": {}, "Poisson": {}, "LogCosh": {}, "KLDivergence": {}, "Huber": {"delta": 0.3},
}
BINARY = {
    "AUC": {}, "AUC_pr": {"curve": "PR"}, "AUC_minoring": {"summation_method": "minoring"},
    "AUC_pr_majoring": {"curve": "PR", "summation_method": "majoring"}, "Precision": {}, "Recall": {},
    "Precision_thresholds": {"thresholds": [0.3, 0.6]}, "TruePositives": {}, "FalsePositives": {},
    "TrueNegatives": {}, "FalseNegatives": {}, "SensitivityAtSpecificity": {"specificity": 0.8},
    "SpecificityAtSensitivity": {"sensitivity": 0.7}, "BinaryAccuracy": {"threshold": 0.6},
    "MeanSquaredError": {}, "RootMeanSquaredError": {},
}
CATEGORICAL = {
    "CategoricalAccuracy": {}, "TopKCategoricalAccuracy": {"k": 2}, "Precision_top_k": {"top_k": 1},
    "Recall_class_id": {"class_id": 2}, "KLDivergence": {}, "CategoricalCrossentropy": {},
    "CosineSimilarity": {}, "LogCoshError": {}, "CategoricalHinge": {},
}


def evaluate(name, kwargs, y, p, w):
    cls = getattr(metrics, name.split("_")[0])
    model = Sequential([L.Activation("linear", input_shape=p.shape[1:])])
    model.compile("sgd", "mse", metrics=[cls(**kwargs)])
    plain = model.evaluate(p, y, batch_size=16, verbose=0)[1]
    model.compile("sgd", "mse", weighted_metrics=[cls(**kwargs)])
    weighted = model.evaluate(p, y, sample_weight=w, batch_size=16, verbose=0)[1]
    return {"class": cls.__name__, "kwargs": kwargs, "plain": np.asarray(plain).tolist(),
            "weighted": np.asarray(weighted).tolist()}


def main():
    out = {"binary": {"y": YB.tolist(), "p": PB.tolist(), "w": W.tolist()},
           "categorical": {"y": YC.tolist(), "p": PC.tolist(), "w": WC.tolist()},
           "losses": {}, "metrics": {}, "failed": {}}
    for name, kwargs in LOSSES.items():
        cat = name in ("CategoricalCrossentropy", "CategoricalHinge", "KLDivergence")
        y, p, w = (YC, PC, WC) if cat else (YB, PB, W)
        values = {}
        for reduction in ("sum_over_batch_size", "sum", "none"):
            loss = getattr(losses, name)(reduction=reduction, **kwargs)
            values[reduction] = np.asarray(K.eval(loss(K.constant(y), K.constant(p),
                                                       sample_weight=K.constant(w)))).tolist()
        values["unweighted"] = float(K.eval(getattr(losses, name)(**kwargs)(K.constant(y), K.constant(p))))
        out["losses"][name] = {"kwargs": kwargs, "categorical": cat, **values}
    for group, table, data in (("binary", BINARY, (YB, PB, W)), ("categorical", CATEGORICAL, (YC, PC, WC))):
        for name, kwargs in table.items():
            key = f"{group}:{name}"
            try:
                out["metrics"][key] = evaluate(name, kwargs, *data)
            except Exception as e:  # noqa: BLE001  (recorded: the test falls back to numpy)
                out["failed"][key] = f"{type(e).__name__}: {str(e)[:200]}"
                print(key, "failed:", out["failed"][key])
    with open(OUT, "w") as fh:
        json.dump(out, fh)
    print("wrote", OUT, len(out["losses"]), "losses,", len(out["metrics"]), "metrics,", len(out["failed"]),
          "failed")


if __name__ == "__main__":
    main()
