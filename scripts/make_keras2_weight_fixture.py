"""Regenerate tests/fixtures/keras2/sample_weights.json: losses and metrics real Keras 2.3.1 (Theano
backend) computes with ``sample_weight``, ``class_weight``, ``sample_weight_mode='temporal'`` and
``weighted_metrics``, and the weights after weighted SGD steps (issue 13 item 5).

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/kw_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_weight_fixture.py

Every case stores its inputs (data, weights, the model's starting weights) and Keras's results, so
tests/test_sample_weights_keras2.py rebuilds the same model in arignote and compares. Numbers are
small on purpose (a few samples, a few units).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import json  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers as L  # noqa: E402
from keras.models import Model, Sequential  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "keras2",
                   "sample_weights.json")
RNG = np.random.RandomState(2023)


def arr(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype("float32")


def randomize(model):
    weights = [arr(*w.shape) for w in model.get_weights()]
    model.set_weights(weights)
    return [w.tolist() for w in weights]


def floats(values):
    values = values if isinstance(values, list) else [values]
    return [float(v) for v in values]


def dense_mse():
    x, y, w = arr(7, 3), arr(7, 2), arr(7, low=0.0, high=2.0)
    m = Sequential([L.Dense(2, input_shape=(3,))])
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.1), "mse", metrics=["mae"], weighted_metrics=["mae", "mse"])
    out = {"evaluate": floats(m.evaluate(x, y, sample_weight=w, batch_size=3, verbose=0)),
           "evaluate_plain": floats(m.evaluate(x, y, batch_size=3, verbose=0)),
           "names": m.metrics_names}
    m.reset_metrics()  # Keras 2.3.1's train_on_batch resets its metrics after the call, not before
    out["train_on_batch"] = floats(m.train_on_batch(x, y, sample_weight=w))
    out["after_step"] = [v.tolist() for v in m.get_weights()]
    return {"x": x.tolist(), "y": y.tolist(), "w": w.tolist(), "start": start, **out}


def softmax_classes(sparse):
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1])
    x = arr(8, 4)
    y = labels if sparse else np.eye(3, dtype="float32")[labels]
    w = arr(8, low=0.0, high=2.0)
    cw = {0: 0.5, 1: 2.0, 2: 1.5}
    m = Sequential([L.Dense(3, activation="softmax", input_shape=(4,))])
    start = randomize(m)
    loss = "sparse_categorical_crossentropy" if sparse else "categorical_crossentropy"
    m.compile(keras.optimizers.SGD(lr=0.2), loss, metrics=["acc"], weighted_metrics=["acc"])
    out = {"evaluate": floats(m.evaluate(x, y, sample_weight=w, batch_size=4, verbose=0)),
           "names": m.metrics_names}
    h = m.fit(x, y, sample_weight=w, class_weight=cw, batch_size=4, epochs=2, shuffle=False, verbose=0)
    out["history"] = {k: floats(v) for k, v in h.history.items()}
    out["after_fit"] = [v.tolist() for v in m.get_weights()]
    return {"x": x.tolist(), "y": y.tolist(), "w": w.tolist(),
            "class_weight": {str(k): v for k, v in cw.items()}, "loss": loss, "start": start, **out}


def temporal():
    x, y, w = arr(5, 4, 3), arr(5, 4, 2), arr(5, 4, low=0.0, high=2.0)
    m = Sequential([L.Dense(2, input_shape=(4, 3))])
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.1), "mae", weighted_metrics=["mse"], sample_weight_mode="temporal")
    out = {"evaluate": floats(m.evaluate(x, y, sample_weight=w, batch_size=2, verbose=0)),
           "names": m.metrics_names}
    m.reset_metrics()  # Keras 2.3.1's train_on_batch resets its metrics after the call, not before
    out["train_on_batch"] = floats(m.train_on_batch(x, y, sample_weight=w))
    out["after_step"] = [v.tolist() for v in m.get_weights()]
    return {"x": x.tolist(), "y": y.tolist(), "w": w.tolist(), "start": start, **out}


def two_outputs():
    x = arr(6, 3)
    ya, yb = arr(6, 2), (arr(6, 1) > 0).astype("float32")
    wa = arr(6, low=0.0, high=2.0)
    inp = L.Input(shape=(3,), name="inp")
    a = L.Dense(2, name="a")(inp)
    b = L.Dense(1, activation="sigmoid", name="b")(inp)
    m = Model(inp, [a, b])
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.1), ["mse", "binary_crossentropy"], loss_weights=[1.0, 0.5],
              weighted_metrics={"b": ["acc"]})
    # batch_size 3 divides 6: Keras 2.3.1's per-output losses are means over batches, its total loss
    # a mean over samples; equal batches make the two agree
    out = {"evaluate": floats(m.evaluate(x, [ya, yb], sample_weight={"a": wa}, batch_size=3, verbose=0)),
           "names": m.metrics_names}
    m.reset_metrics()
    out["train_on_batch"] = floats(m.train_on_batch(x, [ya, yb], sample_weight=[wa, wa[::-1].copy()]))
    out["after_step"] = [v.tolist() for v in m.get_weights()]
    return {"x": x.tolist(), "ya": ya.tolist(), "yb": yb.tolist(), "wa": wa.tolist(), "start": start, **out}


def custom_loss():
    x, y, w = arr(6, 3), arr(6, 2), arr(6, low=0.0, high=2.0)

    def scaled_abs(y_true, y_pred):  # one value per sample, as a Keras 2 custom loss
        return keras.backend.sum(keras.backend.abs(y_pred - y_true), axis=-1) * 0.5

    m = Sequential([L.Dense(2, input_shape=(3,))])
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.1), scaled_abs)
    return {"x": x.tolist(), "y": y.tolist(), "w": w.tolist(), "start": start,
            "evaluate": floats(m.evaluate(x, y, sample_weight=w, batch_size=4, verbose=0))}


def main():
    cases = {"dense_mse": dense_mse(), "sparse_classes": softmax_classes(True),
             "onehot_classes": softmax_classes(False), "temporal": temporal(), "two_outputs": two_outputs(),
             "custom_loss": custom_loss()}
    meta = {"keras": keras.__version__, "backend": keras.backend.backend(),
            "made_by": "scripts/make_keras2_weight_fixture.py"}
    with open(OUT, "w") as f:
        json.dump({"meta": meta, **cases}, f, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
